// Malformed input never crashes te-opt: every case below must end in a
// located "error:" and a non-zero exit, with no stack dump or LLVM ERROR.
// RUN: not te-opt %s -split-input-file 2>&1 | FileCheck %s --implicit-check-not="Stack dump" --implicit-check-not="LLVM ERROR" --implicit-check-not="PLEASE submit"

// CHECK: malformed.mlir:[[@LINE+1]]:{{[0-9]+}}: error:
func.func private @truncated(!te.qtensor<16x16xbf16, #te.mxfp8<e4m3

// -----

// CHECK: malformed.mlir:[[@LINE+1]]:{{[0-9]+}}: error:
func.func private @unbalanced(!te.qtensor<16x16xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>>, rowwise>)

// -----

// CHECK: malformed.mlir:[[@LINE+1]]:{{[0-9]+}}: error:
func.func private @huge_history(!te.qtensor<16x16xbf16, #te.fp8_delayed<e4m3, history = 99999999999999999999999>, rowwise>)

// -----

// CHECK: malformed.mlir:[[@LINE+1]]:{{[0-9]+}}: error: {{.*}}too large
func.func private @overflow(!te.qtensor<9223372036854775807x9223372036854775807x4xbf16, #te.mxfp8<e4m3>, rowwise>)

// -----

// CHECK: malformed.mlir:[[@LINE+1]]:{{[0-9]+}}: error:
func.func private @dynamic(!te.qtensor<?x16xbf16, #te.mxfp8<e4m3>, rowwise>)

// -----

// CHECK: malformed.mlir:[[@LINE+1]]:{{[0-9]+}}: error:
func.func private @no_directions(!te.qtensor<16x16xbf16, #te.mxfp8<e4m3>, >)

// -----

// CHECK: malformed.mlir:[[@LINE+1]]:{{[0-9]+}}: error:
func.func private @empty_hybrid(!te.qtensor<16x16xbf16, #te.hybrid<>, rowwise>)

// -----

// CHECK: malformed.mlir:[[@LINE+1]]:{{[0-9]+}}: error:
func.func private @unknown_attr(!te.qtensor<16x16xbf16, #te.fp16_magic<e4m3>, rowwise>)

// -----

// CHECK: malformed.mlir:[[@LINE+1]]:{{[0-9]+}}: error:
func.func private @unknown_type(!te.tensor<16x16xbf16>)

// -----

// CHECK: malformed.mlir:[[@LINE+1]]:{{[0-9]+}}: error:
func.func private @eps_word(!te.qtensor<16x16xbf16, #te.fp8_current<e4m3, eps = tiny>, rowwise>)

// -----

// CHECK: malformed.mlir:[[@LINE+1]]:{{[0-9]+}}: error:
func.func private @tile_dynamic(!te.qtensor<16x16xbf16, #te.fp8_block<e4m3, ?x128>, rowwise>)

// -----

func.func @gemm_missing_operand(%a: tensor<4x4xbf16>) {
  // CHECK: malformed.mlir:[[@LINE+1]]:{{[0-9]+}}: error:
  %y = te.gemm %a : tensor<4x4xbf16> -> tensor<4x4xbf16>
  return
}

// -----

func.func @linear_no_recipe_attr(%x: tensor<4x4xbf16>, %w: tensor<4x4xbf16>) {
  // CHECK: malformed.mlir:[[@LINE+1]]:{{[0-9]+}}: error:
  %y = te.linear %x, %w : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16>
  return
}

// -----

func.func @adam_types(%p: tensor<4xf32>) {
  // CHECK: malformed.mlir:[[@LINE+1]]:{{[0-9]+}}: error:
  %a, %b, %c = te.adam_step %p, %p, %p, %p, %p, %p : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  return
}

// -----

// CHECK: malformed.mlir:[[@LINE+1]]:{{[0-9]+}}: error:
te.recipe @r { te.rule "linear" -> #te.mxfp8<e4m3> }

// -----

// CHECK: malformed.mlir:[[@LINE+1]]:{{[0-9]+}}: error:
func.func private @garbage(!te.qtensor<<<>>>)
