// Round trip of every scheme attribute with every option (IR.md).
// RUN: te-opt %s | FileCheck %s
// RUN: te-opt %s | te-opt | FileCheck %s
// RUN: te-opt %s --mlir-print-op-generic | te-opt | FileCheck %s
// RUN: te-opt %s > %t.1 && te-opt %t.1 > %t.2 && diff %t.1 %t.2
// RUN: te-opt %s --mlir-print-op-generic > %t.g1 && te-opt %t.g1 --mlir-print-op-generic > %t.g2 && diff %t.g1 %t.g2

// CHECK-LABEL: te.recipe @fp8_current
te.recipe @fp8_current {
  // CHECK: te.rule "linear", "input" -> #te.fp8_current<e4m3>
  te.rule "linear", "input" -> #te.fp8_current<e4m3>
  // CHECK: te.rule "linear", "weight" -> #te.fp8_current<e5m2, pow2, eps = 1.0e-12>
  te.rule "linear", "weight" -> #te.fp8_current<e5m2, pow2, eps = 1.0e-12>
  // Options in any order print canonically.
  // CHECK: te.rule "linear", "output" -> #te.fp8_current<e4m3, pow2, eps = 5.0e-01>
  te.rule "linear", "output" -> #te.fp8_current<e4m3, eps = 0.5, pow2>
}

// CHECK-LABEL: te.recipe @fp8_delayed
te.recipe @fp8_delayed {
  // CHECK: te.rule "linear", "input" -> #te.fp8_delayed<e4m3, history = 1024, algo = max, margin = 0>
  te.rule "linear", "input" -> #te.fp8_delayed<e4m3, history = 1024, algo = max, margin = 0>
  // Defaults are printed explicitly.
  // CHECK: te.rule "linear", "weight" -> #te.fp8_delayed<e4m3, history = 1024, algo = max, margin = 0>
  te.rule "linear", "weight" -> #te.fp8_delayed<e4m3>
  // CHECK: te.rule "linear", "grad_output" -> #te.fp8_delayed<e5m2, history = 16, algo = most_recent, margin = 3>
  te.rule "linear", "grad_output" -> #te.fp8_delayed<e5m2, margin = 3, algo = most_recent, history = 16>
  // pow2 prints last, and only when set.
  // CHECK: te.rule "grouped_linear", "input" -> #te.fp8_delayed<e4m3, history = 8, algo = max, margin = 0, pow2>
  te.rule "grouped_linear", "input" -> #te.fp8_delayed<e4m3, pow2, history = 8>
}

// CHECK-LABEL: te.recipe @mx_nv
te.recipe @mx_nv {
  // CHECK: te.rule "linear", "input" -> #te.mxfp8<e4m3>
  te.rule "linear", "input" -> #te.mxfp8<e4m3>
  // CHECK: te.rule "linear", "grad_output" -> #te.mxfp8<e5m2>
  te.rule "linear", "grad_output" -> #te.mxfp8<e5m2>
  // CHECK: te.rule "grouped_linear", "input" -> #te.nvfp4<>
  te.rule "grouped_linear", "input" -> #te.nvfp4<>
  // CHECK: te.rule "grouped_linear", "weight" -> #te.nvfp4<rht, sr, block2d>
  te.rule "grouped_linear", "weight" -> #te.nvfp4<rht, sr, block2d>
  // CHECK: te.rule "grouped_linear", "grad_output" -> #te.nvfp4<rht, sr>
  te.rule "grouped_linear", "grad_output" -> #te.nvfp4<sr, rht>
  // CHECK: te.rule "grouped_linear", "output" -> #te.nvfp4<block2d>
  te.rule "grouped_linear", "output" -> #te.nvfp4<block2d>
}

// CHECK-LABEL: te.recipe @block
te.recipe @block {
  // CHECK: te.rule "linear", "input" -> #te.fp8_block<e4m3, 1x128>
  te.rule "linear", "input" -> #te.fp8_block<e4m3, 1x128>
  // eps = 0.0 is the default and is not printed.
  // CHECK: te.rule "linear", "weight" -> #te.fp8_block<e4m3, 128x128, pow2>
  te.rule "linear", "weight" -> #te.fp8_block<e4m3, 128x128, pow2, eps = 0.0>
  // CHECK: te.rule "linear", "grad_output" -> #te.fp8_block<e5m2, 1x128, eps = 1.0e-04>
  te.rule "linear", "grad_output" -> #te.fp8_block<e5m2, 1x128, eps = 1.0e-4>
}

// CHECK-LABEL: te.recipe @identity_hybrid
te.recipe @identity_hybrid {
  // CHECK: te.rule "linear", "input" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>
  te.rule "linear", "input" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>
  // Double quantization: columnwise from the dequantized rowwise values
  // ('original', the default, prints nothing).
  // CHECK: te.rule "linear", "grad_output" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.mxfp8<e4m3>, columnwise_source = rowwise_dequantized>
  te.rule "linear", "grad_output" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.mxfp8<e4m3>, columnwise_source = rowwise_dequantized>
  // CHECK: te.rule "grouped_linear", "input" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>
  te.rule "grouped_linear", "input" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>, columnwise_source = original>
  // CHECK: te.rule "linear", "weight" -> #te.hybrid<rowwise = #te.fp8_block<e4m3, 128x128>, columnwise = #te.identity<f32>>
  te.rule "linear", "weight" -> #te.hybrid<rowwise = #te.fp8_block<e4m3, 128x128>, columnwise = #te.identity<f32>>
  // CHECK: te.rule "linear", "grad_output" -> #te.identity<f16>
  te.rule "linear", "grad_output" -> #te.identity<f16>
  // CHECK: te.rule "*", "*" -> #te.identity<bf16>
  te.rule "*", "*" -> #te.identity<bf16>
}
