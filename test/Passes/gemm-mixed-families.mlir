// RUN: te-opt %s --te-legalize-target | FileCheck %s --check-prefix=SM90
// RUN: te-opt %s --pass-pipeline='builtin.module(te-legalize-target{arch=sm_100a})' | FileCheck %s --check-prefix=SM100
// RUN: te-opt %s --te-legalize-target --te-lower-to-kernels | FileCheck %s --check-prefix=KERNELS

// Tests GEMMs whose operands are quantized by two scheme families (what a
// hybrid recipe gives when, say, its weight is MXFP8 and its gradient
// NVFP4): no kernel of any target reads such a pair as stored, so
// te-legalize-target records the `emulated` path on sm_90 and on sm_100
// alike, and te-lower-to-kernels dequantizes each operand to bf16 in the
// direction the GEMM reads before the bf16 GEMM. Across families the
// e5m2 x e5m2 rule of the FP8 kernels does not apply (the BF16 GEMM reads
// the values). Grouped GEMMs: gemm-mixed-families-grouped.mlir.

// SM90-LABEL: func.func @dense
// SM100-LABEL: func.func @dense
// KERNELS-LABEL: func.func @dense
func.func @dense(%mx: !te.qtensor<128x256xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>,
                 %nv: !te.qtensor<64x256xbf16, #te.nvfp4<>, rowwise>,
                 %blk: !te.qtensor<64x256xbf16, #te.fp8_block<e5m2, 128x128>, rowwise>,
                 %cur: !te.qtensor<64x256xbf16, #te.fp8_current<e5m2>, rowwise>,
                 %mx5: !te.qtensor<128x256xbf16, #te.mxfp8<e5m2>, rowwise>,
                 %mxc: !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, columnwise>) {
  // SM90: te.gemm {{.*}}path = #te.gemm_path<emulated>{{.*}}#te.mxfp8<e4m3>{{.*}}#te.nvfp4<>
  // SM100: te.gemm {{.*}}path = #te.gemm_path<emulated>{{.*}}#te.mxfp8<e4m3>{{.*}}#te.nvfp4<>
  // KERNELS: %[[A:.*]] = tek.dequantize_kernel "te_dequantize_0" %arg0 rowwise {{.*}} -> tensor<128x256xbf16>
  // KERNELS: %[[B:.*]] = tek.dequantize_kernel "te_dequantize_1" %arg1 rowwise {{.*}} -> tensor<64x256xbf16>
  // KERNELS: tek.gemm_call "te_gemm_2" %[[A]], %[[B]] {transpose_b} : tensor<128x256xbf16>, tensor<64x256xbf16> -> tensor<128x64xbf16>
  %0 = te.gemm %mx, %nv {transpose_b} : !te.qtensor<128x256xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>, !te.qtensor<64x256xbf16, #te.nvfp4<>, rowwise> -> tensor<128x64xbf16>
  // FP8 block (128x128 tiles, e5m2) by MXFP8 (e5m2): a family each.
  // SM90: te.gemm {{.*}}path = #te.gemm_path<emulated>{{.*}}#te.mxfp8<e5m2>{{.*}}#te.fp8_block<e5m2, 128x128>
  // SM100: te.gemm {{.*}}path = #te.gemm_path<emulated>{{.*}}#te.mxfp8<e5m2>{{.*}}#te.fp8_block<e5m2, 128x128>
  // KERNELS: tek.dequantize_kernel "te_dequantize_3" %arg4 rowwise
  // KERNELS: tek.dequantize_kernel "te_dequantize_4" %arg2 rowwise
  // KERNELS: tek.gemm_call "te_gemm_5"
  %1 = te.gemm %mx5, %blk {transpose_b} : !te.qtensor<128x256xbf16, #te.mxfp8<e5m2>, rowwise>, !te.qtensor<64x256xbf16, #te.fp8_block<e5m2, 128x128>, rowwise> -> tensor<128x64xbf16>
  // Per-tensor FP8 by MXFP8 read columnwise (b contracted along its rows),
  // the dequantize in the direction read.
  // SM90: te.gemm {{.*}}path = #te.gemm_path<emulated>{{.*}}#te.fp8_current<e5m2>
  // SM100: te.gemm {{.*}}path = #te.gemm_path<emulated>{{.*}}#te.fp8_current<e5m2>
  // KERNELS: tek.dequantize_kernel "te_dequantize_6" %arg3 rowwise
  // KERNELS: tek.dequantize_kernel "te_dequantize_7" %arg5 columnwise
  // KERNELS: tek.gemm_call "te_gemm_8" {{.*}} : tensor<64x256xbf16>, tensor<256x128xbf16> -> tensor<64x128xbf16>
  %2 = te.gemm %cur, %mxc : !te.qtensor<64x256xbf16, #te.fp8_current<e5m2>, rowwise>, !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, columnwise> -> tensor<64x128xbf16>
  // One family: MXFP8 by MXFP8 keeps its per-target path.
  // SM90: te.gemm {{.*}}path = #te.gemm_path<emulated>
  // SM100: te.gemm {{.*}}path = #te.gemm_path<cublaslt>
  %3 = te.gemm %mx, %mx5 {transpose_b} : !te.qtensor<128x256xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>, !te.qtensor<128x256xbf16, #te.mxfp8<e5m2>, rowwise> -> tensor<128x128xbf16>
  return
}
