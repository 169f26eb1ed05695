// RUN: te-run %s --random-inputs 1 2>&1 | FileCheck %s

// Tests that a kernel the CUDA backend has no plan for - an FP8 GEMM with a
// bias and an f32 output, for which cuBLASLt has no kernel - is named, with
// the reason, and the CPU backend still runs (no GPU in CI).
// CHECK: te_gemm_2: FP8 GEMMs with a bias need a bf16 or f16 output (cuBLASLt has no FP8 kernel with a bias epilogue and an f32 output); running the CPU backend
// CHECK: result0 ({{.*}}): data[64x64 f32]
func.func @fp8_bias_f32(%a: tensor<64x64xbf16>, %b: tensor<64x64xbf16>, %bias: tensor<64xf32>) -> tensor<64x64xf32> {
  %qa = te.quantize %a : tensor<64x64xbf16> -> !te.qtensor<64x64xbf16, #te.fp8_current<e4m3>, rowwise>
  %qb = te.quantize %b : tensor<64x64xbf16> -> !te.qtensor<64x64xbf16, #te.fp8_current<e4m3>, rowwise>
  %y = te.gemm %qa, %qb bias %bias {transpose_b}
      : !te.qtensor<64x64xbf16, #te.fp8_current<e4m3>, rowwise>, !te.qtensor<64x64xbf16, #te.fp8_current<e4m3>, rowwise>, tensor<64xf32>
      -> tensor<64x64xf32>
  return %y : tensor<64x64xf32>
}
