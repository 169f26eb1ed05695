// RUN: te-opt %s --te-legalize-target | FileCheck %s --check-prefix=SM90
// RUN: te-opt %s --te-legalize-target --te-lower-to-kernels | FileCheck %s --check-prefix=KERNELS

// Tests grouped GEMMs whose operands are quantized by two scheme families
// (gemm-mixed-families.mlir has the dense ones): the GEMM engine has no
// kernel for such a pair, so te-legalize-target records the `emulated`
// path and te-lower-to-kernels dequantizes the tokens and the stack, in
// the direction each is read, before the engine's BF16 kernel. The grouped
// wgrad quantizes its own operands, so its pairs need no dequantize kernel.

// SM90-LABEL: func.func @grouped
// KERNELS-LABEL: func.func @grouped
func.func @grouped(%x: !te.qtensor<512x256xbf16, #te.mxfp8<e4m3>, rowwise>,
                   %w: !te.qtensor<4x128x256xbf16, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>,
                   %dy: !te.qtensor<512x128xbf16, #te.nvfp4<>, rowwise>,
                   %s: tensor<4xi64>) {
  // SM90: te.grouped_gemm {{.*}}path = #te.gemm_path<emulated>{{.*}}#te.mxfp8<e4m3>
  // KERNELS: %[[X:.*]] = tek.dequantize_kernel "te_dequantize_0" %arg0 rowwise {{.*}} -> tensor<512x256xbf16>
  // KERNELS: %[[W:.*]] = tek.dequantize_kernel "te_dequantize_1" %arg1 rowwise {{.*}} -> tensor<4x128x256xbf16>
  // KERNELS: tek.grouped_gemm "te_grouped_gemm_2" %[[X]], %[[W]], %arg3 : tensor<512x256xbf16>, tensor<4x128x256xbf16>
  %0 = te.grouped_gemm %x, %w, %s : !te.qtensor<512x256xbf16, #te.mxfp8<e4m3>, rowwise>, !te.qtensor<4x128x256xbf16, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>, tensor<4xi64> -> tensor<512x128xbf16>
  // The dgrad: NVFP4 dy by the block-FP8 stack read columnwise.
  // SM90: te.grouped_gemm {{.*}}path = #te.gemm_path<emulated>{{.*}}weight_columnwise
  // KERNELS: tek.dequantize_kernel "te_dequantize_3" %arg2 rowwise
  // KERNELS: tek.dequantize_kernel "te_dequantize_4" %arg1 columnwise
  // KERNELS: tek.grouped_gemm "te_grouped_gemm_5" {{.*}}weight_columnwise
  %1 = te.grouped_gemm %dy, %w, %s {weight_columnwise} : !te.qtensor<512x128xbf16, #te.nvfp4<>, rowwise>, !te.qtensor<4x128x256xbf16, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>, tensor<4xi64> -> tensor<512x256xbf16>
  return
}

// The grouped wgrad pairs two families as the BF16 GEMM of each expert's
// dequantized values: block-FP8 dy (its codes laid out as their values)
// with MXFP8 x, per-tensor FP8 dy with NVFP4 x.
// SM90-LABEL: func.func @wgrad
// KERNELS-LABEL: func.func @wgrad
func.func @wgrad(%dy: tensor<512x128xbf16>, %x: tensor<512x256xbf16>, %s: tensor<4xi64>) {
  // KERNELS: tek.grouped_wgrad "te_grouped_wgrad_0" {{.*}}grad_output_scheme = #te.fp8_block<e5m2, 1x128>, input_scheme = #te.mxfp8<e4m3>
  %0 = te.grouped_wgrad %dy, %x, %s {grad_output_scheme = #te.fp8_block<e5m2, 1x128>, input_scheme = #te.mxfp8<e4m3>} : tensor<512x128xbf16>, tensor<512x256xbf16>, tensor<4xi64> -> tensor<4x128x256xf32>
  // KERNELS: tek.grouped_wgrad "te_grouped_wgrad_1" {{.*}}grad_output_scheme = #te.fp8_current<e5m2>, input_scheme = #te.nvfp4<>
  %1 = te.grouped_wgrad %dy, %x, %s {grad_output_scheme = #te.fp8_current<e5m2>, input_scheme = #te.nvfp4<>} : tensor<512x128xbf16>, tensor<512x256xbf16>, tensor<4xi64> -> tensor<4x128x256xf32>
  return
}
