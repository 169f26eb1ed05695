// RUN: te-opt %s | FileCheck %s
// RUN: te-opt %s | te-opt | FileCheck %s

// Tests the kernel-level ops round-trip.

// CHECK-LABEL: func.func @quantize
// CHECK: %[[K:.*]]:2 = tek.quantize_kernel "k0" %arg0 {amax_prepass, bias_grad, grid = array<i64: 2, 1>, stages = [#tek.stage<0, rowwise>, #tek.stage<0, columnwise>], threads = 256 : i64, tile = array<i64: 128, 128>} : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise>, tensor<128xf32>
func.func @quantize(%x: tensor<256x128xbf16>) -> tensor<128xf32> {
  %q, %db = tek.quantize_kernel "k0" %x {amax_prepass, bias_grad, grid = array<i64: 2, 1>, stages = [#tek.stage<0, rowwise>, #tek.stage<0, columnwise>], threads = 256 : i64, tile = array<i64: 128, 128>}
      : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise>, tensor<128xf32>
  return %db : tensor<128xf32>
}

// CHECK-LABEL: func.func @two_results_and_dequantize
// CHECK: tek.quantize_kernel "k1" %arg0 {grid = array<i64: 3, 1>, stages = [#tek.stage<1, rowwise>, #tek.stage<0, columnwise>], threads = 256 : i64, tile = array<i64: 128, 128>} : tensor<3x100x64xf16>
// CHECK: tek.dequantize_kernel "k2" %{{.*}}#1 rowwise {grid = array<i64: 75>, threads = 256 : i64} : !te.qtensor<3x100x64xf16, #te.mxfp8<e5m2>, rowwise> -> tensor<3x100x64xf32>
func.func @two_results_and_dequantize(%x: tensor<3x100x64xf16>) -> tensor<3x100x64xf32> {
  %a, %b = tek.quantize_kernel "k1" %x {grid = array<i64: 3, 1>, stages = [#tek.stage<1, rowwise>, #tek.stage<0, columnwise>], threads = 256 : i64, tile = array<i64: 128, 128>}
      : tensor<3x100x64xf16> -> !te.qtensor<3x100x64xf16, #te.fp8_block<e4m3, 128x128>, columnwise>, !te.qtensor<3x100x64xf16, #te.mxfp8<e5m2>, rowwise>
  %y = tek.dequantize_kernel "k2" %b rowwise {grid = array<i64: 75>, threads = 256 : i64}
      : !te.qtensor<3x100x64xf16, #te.mxfp8<e5m2>, rowwise> -> tensor<3x100x64xf32>
  return %y : tensor<3x100x64xf32>
}

// CHECK-LABEL: func.func @adam_kernel
// CHECK: tek.adam_kernel "k3" %arg0, %arg1, (%arg2, %arg3, %arg4, %arg5, %arg6, %arg7, %arg8, %arg9) {beta1 = 0.899999976 : f32, beta2 = 9.990000e-01 : f32, eps = 9.99999993E-9 : f32, fast_math, grid = 3 : i64, mode = 1 : i32, requantize_after, stages = [#tek.stage<0, rowwise>, #tek.stage<0, columnwise>], threads = 256 : i64, tile = array<i64: 128, 128>, weight_decay = 0.00999999977 : f32} : tensor<f32>, tensor<i64>, (tensor<256x64xf32>, tensor<256x64xbf16>, tensor<256x64xf32>, tensor<256x64xf32>, tensor<32x64xf32>, tensor<32x64xbf16>, tensor<32x64xf32>, tensor<32x64xf32>) -> (tensor<256x64xf32>, tensor<256x64xf32>, tensor<256x64xf32>, !te.qtensor<256x64xf32, #te.hybrid<rowwise = #te.fp8_current<e4m3>, columnwise = #te.fp8_block<e4m3, 1x128>>, rowwise|columnwise>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, !te.qtensor<32x64xf32, #te.hybrid<rowwise = #te.fp8_current<e4m3>, columnwise = #te.fp8_block<e4m3, 1x128>>, rowwise|columnwise>)
func.func @adam_kernel(%lr: tensor<f32>, %step: tensor<i64>,
    %p: tensor<256x64xf32>, %g: tensor<256x64xbf16>, %m: tensor<256x64xf32>, %v: tensor<256x64xf32>,
    %p2: tensor<32x64xf32>, %g2: tensor<32x64xbf16>, %m2: tensor<32x64xf32>, %v2: tensor<32x64xf32>) {
  %r:8 = tek.adam_kernel "k3" %lr, %step, (%p, %g, %m, %v, %p2, %g2, %m2, %v2) {requantize_after, beta1 = 0.9 : f32, beta2 = 0.999 : f32, eps = 1.0e-8 : f32, fast_math, grid = 3 : i64, mode = 1 : i32, stages = [#tek.stage<0, rowwise>, #tek.stage<0, columnwise>], threads = 256 : i64, tile = array<i64: 128, 128>, weight_decay = 0.01 : f32}
      : tensor<f32>, tensor<i64>, (tensor<256x64xf32>, tensor<256x64xbf16>, tensor<256x64xf32>, tensor<256x64xf32>, tensor<32x64xf32>, tensor<32x64xbf16>, tensor<32x64xf32>, tensor<32x64xf32>)
      -> (tensor<256x64xf32>, tensor<256x64xf32>, tensor<256x64xf32>, !te.qtensor<256x64xf32, #te.hybrid<rowwise = #te.fp8_current<e4m3>, columnwise = #te.fp8_block<e4m3, 1x128>>, rowwise|columnwise>,
          tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, !te.qtensor<32x64xf32, #te.hybrid<rowwise = #te.fp8_current<e4m3>, columnwise = #te.fp8_block<e4m3, 1x128>>, rowwise|columnwise>)
  return
}
