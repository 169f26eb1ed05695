// Every example of the surface-syntax contract (shared/design/IR.md), as
// written there ("..." types filled in), parses, verifies and round-trips.
// RUN: te-opt %s | te-opt | FileCheck %s
// RUN: te-opt %s > %t.1 && te-opt %t.1 > %t.2 && diff %t.1 %t.2
// RUN: te-opt %s --mlir-print-op-generic | te-opt --mlir-print-op-generic > %t.g && te-opt %t.g | te-opt | FileCheck %s

// CHECK-LABEL: te.recipe @mxfp8_fwd_nvfp4_bwd
te.recipe @mxfp8_fwd_nvfp4_bwd {
  te.rule "linear", "input"       -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>
  te.rule "linear", "weight"      -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>
  te.rule "linear", "grad_output" -> #te.nvfp4<rht, sr>
  te.rule "*", "*"                -> #te.identity<bf16>
}

// The scheme examples of IR.md, one rule each.
// CHECK-LABEL: te.recipe @schemes
// CHECK: #te.fp8_current<e4m3>
// CHECK: #te.fp8_current<e5m2, pow2, eps = 1.0e-12>
// CHECK: #te.fp8_delayed<e4m3, history = 1024, algo = max, margin = 0>
// CHECK: #te.mxfp8<e4m3>
// CHECK: #te.nvfp4<>
// CHECK: #te.nvfp4<rht, sr, block2d>
// CHECK: #te.fp8_block<e4m3, 1x128>
// CHECK: #te.fp8_block<e4m3, 128x128, pow2>
// CHECK: #te.identity<bf16>
// CHECK: #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>
te.recipe @schemes {
  te.rule "linear", "input" -> #te.fp8_current<e4m3>                              // per-tensor current scaling
  te.rule "linear", "weight" -> #te.fp8_current<e5m2, pow2, eps = 1.0e-12>          // options: power-of-2 scales, amax epsilon
  te.rule "linear", "output" -> #te.fp8_delayed<e4m3, history = 1024, algo = max, margin = 0>   // algo: max | most_recent
  te.rule "linear", "grad_output" -> #te.mxfp8<e4m3>                                    // 32-element blocks, E8M0 scales (also e5m2)
  te.rule "linear", "grad_input" -> #te.nvfp4<>                                        // E2M1, 16-element blocks, E4M3 block scales + FP32 tensor scale
  te.rule "grouped_linear", "input" -> #te.nvfp4<rht, sr, block2d>                         // random Hadamard transform, stochastic rounding, 16x16 blocks
  te.rule "grouped_linear", "weight" -> #te.fp8_block<e4m3, 1x128>                         // FP8 block scaling, 1x128 tiles (activations, gradients)
  te.rule "grouped_linear", "output" -> #te.fp8_block<e4m3, 128x128, pow2, eps = 0.0>      // 128x128 tiles (weights)
  te.rule "grouped_linear", "grad_output" -> #te.identity<bf16>                                 // no quantization: high-precision passthrough
  te.rule "grouped_linear", "grad_input" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>   // one scheme per direction
}

// CHECK-LABEL: func.func private @types
// CHECK-SAME: !te.qtensor<4096x1024xbf16, #te.mxfp8<e4m3>, rowwise>
// CHECK-SAME: !te.qtensor<4096x1024xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>
func.func private @types(!te.qtensor<4096x1024xbf16, #te.mxfp8<e4m3>, rowwise>,
                         !te.qtensor<4096x1024xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>)

// CHECK-LABEL: func.func @ops
func.func @ops(%x: tensor<4096x1024xbf16>, %w: tensor<4096x1024xbf16>, %b: tensor<4096xbf16>,
               %bias: tensor<4096xbf16>, %dy: tensor<4096x4096xbf16>,
               %p: tensor<4096x1024xf32>, %g: tensor<4096x1024xbf16>, %m: tensor<4096x1024xf32>,
               %v: tensor<4096x1024xf32>, %lr: tensor<f32>, %step: tensor<i64>) {
  // Quantize into the directions named by the result type.
  // CHECK: te.quantize
  %q = te.quantize %x : tensor<4096x1024xbf16> -> !te.qtensor<4096x1024xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>

  // Back to high precision, reading one direction.
  // CHECK: te.dequantize %{{.*}} rowwise
  %y = te.dequantize %q rowwise : !te.qtensor<4096x1024xbf16, #te.mxfp8<e4m3>, rowwise|columnwise> -> tensor<4096x1024xbf16>

  // D = op(A) * op(B) [+ bias].
  %a = te.quantize %x : tensor<4096x1024xbf16> -> !te.qtensor<4096x1024xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>
  %bq = te.quantize %w : tensor<4096x1024xbf16> -> !te.qtensor<4096x1024xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>
  // CHECK: te.gemm %{{.*}}, %{{.*}} {transpose_b}
  %d = te.gemm %a, %bq {transpose_b} : !te.qtensor<4096x1024xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>, !te.qtensor<4096x1024xbf16, #te.mxfp8<e4m3>, rowwise|columnwise> -> tensor<4096x4096xbf16>
  // CHECK: te.gemm %{{.*}}, %{{.*}} bias %{{.*}} {transpose_b}
  %d2 = te.gemm %a, %bq bias %bias {transpose_b} : !te.qtensor<4096x1024xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>, !te.qtensor<4096x1024xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>, tensor<4096xbf16> -> tensor<4096x4096xbf16>

  // Column sums of a gradient (the bias gradient).
  // CHECK: te.bias_grad
  %db0 = te.bias_grad %dy : tensor<4096x4096xbf16> -> tensor<4096xf32>

  // A linear layer y = x W^T + b and its backward, quantized by a recipe.
  // CHECK: te.linear
  %yl = te.linear %x, %w bias %b {recipe = @mxfp8_fwd_nvfp4_bwd}
         : tensor<4096x1024xbf16>, tensor<4096x1024xbf16>, tensor<4096xbf16> -> tensor<4096x4096xbf16>
  // CHECK: te.linear_grad
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @mxfp8_fwd_nvfp4_bwd, bias}
         : tensor<4096x4096xbf16>, tensor<4096x1024xbf16>, tensor<4096x1024xbf16>
         -> tensor<4096x1024xbf16>, tensor<4096x1024xf32>, tensor<4096xf32>

  // One Adam/AdamW step on FP32 master weights.
  // CHECK: te.adam_step {{.*}} {beta1 = 9.0e-01, beta2 = 9.99e-01, eps = 1.0e-08, weight_decay = 1.0e-02, mode = adamw}
  %p1, %m1, %v1 = te.adam_step %p, %g, %m, %v, %lr, %step
         {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.01, mode = adamw}
         : tensor<4096x1024xf32>, tensor<4096x1024xbf16>, tensor<4096x1024xf32>, tensor<4096x1024xf32>, tensor<f32>, tensor<i64>
         -> tensor<4096x1024xf32>, tensor<4096x1024xf32>, tensor<4096x1024xf32>
  return
}
