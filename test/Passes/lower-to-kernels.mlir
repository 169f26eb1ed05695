// RUN: te-opt %s --te-lower-to-kernels --split-input-file | FileCheck %s
// RUN: te-opt %s --te-lower-to-kernels --split-input-file | te-opt --split-input-file | FileCheck %s

// Tests that a fused quantization becomes one kernel with one stage per held
// direction, the bias gradient and, for NVFP4's tensor scale, the amax
// pre-pass; the grid is ceil(256/128) x ceil(128/128) tiles.
// CHECK-LABEL: func.func @hybrid
// CHECK: %[[K:.*]]:2 = tek.quantize_kernel "te_fused_quantize_0" %arg0 {amax_prepass, bias_grad, grid = array<i64: 2, 1>, stages = [#tek.stage<0, rowwise>, #tek.stage<0, columnwise>], threads = 256 : i64, tile = array<i64: 128, 128>}
// CHECK: return %[[K]]#0, %[[K]]#1
func.func @hybrid(%dy: tensor<256x128xbf16>)
    -> (!te.qtensor<256x128xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise>, tensor<128xf32>) {
  %q, %db = te.fused_quantize %dy {bias_grad} : tensor<256x128xbf16>
      -> !te.qtensor<256x128xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise>, tensor<128xf32>
  return %q, %db : !te.qtensor<256x128xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise>, tensor<128xf32>
}

// -----

// Tests kernels named in program order, a partial tile grid (200 x 130 ->
// 2 x 2 tiles), no pre-pass for block scaling, a bias gradient alone, and a
// dequantize with its grid-stride launch (200 * 130 / 256 -> 102 CTAs).
// CHECK-LABEL: func.func @sequence
// CHECK: %[[Q:.*]] = tek.quantize_kernel "te_quantize_0" %arg0 {grid = array<i64: 2, 2>, stages = [#tek.stage<0, rowwise>, #tek.stage<0, columnwise>], threads = 256 : i64, tile = array<i64: 128, 128>}
// CHECK: %[[DB:.*]] = tek.quantize_kernel "te_bias_grad_1" %arg0 {bias_grad, grid = array<i64: 2, 2>, stages = [], threads = 256 : i64, tile = array<i64: 128, 128>} : tensor<200x130xbf16> -> tensor<130xf32>
// CHECK: %[[Y:.*]] = tek.dequantize_kernel "te_dequantize_2" %[[Q]] columnwise {grid = array<i64: 102>, threads = 256 : i64}
// CHECK: return %[[DB]], %[[Y]]
func.func @sequence(%x: tensor<200x130xbf16>) -> (tensor<130xf32>, tensor<200x130xf32>) {
  %q = te.quantize %x : tensor<200x130xbf16> -> !te.qtensor<200x130xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>
  %db = te.bias_grad %x : tensor<200x130xbf16> -> tensor<130xf32>
  %y = te.dequantize %q columnwise : !te.qtensor<200x130xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise> -> tensor<200x130xf32>
  return %db, %y : tensor<130xf32>, tensor<200x130xf32>
}

// -----

// Tests that per-tensor current scaling asks for the amax pre-pass and
// delayed scaling does not.
// CHECK-LABEL: func.func @per_tensor
// CHECK: tek.quantize_kernel "te_quantize_0" %arg0 {amax_prepass, grid = array<i64: 1, 1>
// CHECK: tek.quantize_kernel "te_quantize_1" %arg0 {grid = array<i64: 1, 1>, stages = [#tek.stage<0, rowwise, "x.delayed_scaling">]
func.func @per_tensor(%x: tensor<64x64xbf16>)
    -> (!te.qtensor<64x64xbf16, #te.fp8_current<e4m3>, rowwise>,
        !te.qtensor<64x64xbf16, #te.fp8_delayed<e4m3, history = 16>, rowwise>) {
  %a = te.quantize %x : tensor<64x64xbf16> -> !te.qtensor<64x64xbf16, #te.fp8_current<e4m3>, rowwise>
  %b = te.quantize %x {scaling_state = "x.delayed_scaling"} : tensor<64x64xbf16> -> !te.qtensor<64x64xbf16, #te.fp8_delayed<e4m3, history = 16>, rowwise>
  return %a, %b : !te.qtensor<64x64xbf16, #te.fp8_current<e4m3>, rowwise>,
                  !te.qtensor<64x64xbf16, #te.fp8_delayed<e4m3, history = 16>, rowwise>
}

// -----

// Tests GEMMs: a native block-FP8 GEMM is one gemm_call on the quantized
// operands; an emulated MXFP8 one (te-legalize-target's path on sm_90)
// dequantizes each operand, in the direction the GEMM reads, to bf16 first.
// CHECK-LABEL: func.func @gemms
// CHECK: %[[N:.*]] = tek.gemm_call "te_gemm_0" %arg0, %arg1 {transpose_b} : !te.qtensor<128x128xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>, !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise> -> tensor<128x64xbf16>
// CHECK: %[[A:.*]] = tek.dequantize_kernel "te_dequantize_1" %arg2 rowwise {grid = array<i64: 64>, threads = 256 : i64} : !te.qtensor<128x128xbf16, #te.mxfp8<e4m3>, rowwise> -> tensor<128x128xbf16>
// CHECK: %[[B:.*]] = tek.dequantize_kernel "te_dequantize_2" %arg3 columnwise {grid = array<i64: 64>, threads = 256 : i64} : !te.qtensor<128x128xbf16, #te.mxfp8<e4m3>, columnwise> -> tensor<128x128xbf16>
// CHECK: %[[E:.*]] = tek.gemm_call "te_gemm_3" %[[A]], %[[B]] : tensor<128x128xbf16>, tensor<128x128xbf16> -> tensor<128x128xf32>
// CHECK: return %[[N]], %[[E]]
func.func @gemms(%x: !te.qtensor<128x128xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>,
                 %w: !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>,
                 %a: !te.qtensor<128x128xbf16, #te.mxfp8<e4m3>, rowwise>,
                 %b: !te.qtensor<128x128xbf16, #te.mxfp8<e4m3>, columnwise>)
    -> (tensor<128x64xbf16>, tensor<128x128xf32>) {
  %y = te.gemm %x, %w {transpose_b, path = #te.gemm_path<cublaslt>} : !te.qtensor<128x128xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>, !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise> -> tensor<128x64xbf16>
  %z = te.gemm %a, %b {path = #te.gemm_path<emulated>} : !te.qtensor<128x128xbf16, #te.mxfp8<e4m3>, rowwise>, !te.qtensor<128x128xbf16, #te.mxfp8<e4m3>, columnwise> -> tensor<128x128xf32>
  return %y, %z : tensor<128x64xbf16>, tensor<128x128xf32>
}

// -----

// Tests the dequantize grid rule (te/formats/Launch.h): one CTA per 8192
// elements for a large tensor (8192 x 8192 -> 8192 CTAs), a full wave of
// 132 x 8 CTAs where that gives fewer (2048 x 2048 -> 1056).
// CHECK-LABEL: func.func @dequantize_grids
// CHECK: tek.dequantize_kernel "te_dequantize_0" %arg0 rowwise {grid = array<i64: 8192>, threads = 256 : i64}
// CHECK: tek.dequantize_kernel "te_dequantize_1" %arg1 rowwise {grid = array<i64: 1056>, threads = 256 : i64}
func.func @dequantize_grids(%a: !te.qtensor<8192x8192xbf16, #te.mxfp8<e4m3>, rowwise>,
                            %b: !te.qtensor<2048x2048xbf16, #te.mxfp8<e4m3>, rowwise>)
    -> (tensor<8192x8192xbf16>, tensor<2048x2048xbf16>) {
  %y = te.dequantize %a rowwise : !te.qtensor<8192x8192xbf16, #te.mxfp8<e4m3>, rowwise> -> tensor<8192x8192xbf16>
  %z = te.dequantize %b rowwise : !te.qtensor<2048x2048xbf16, #te.mxfp8<e4m3>, rowwise> -> tensor<2048x2048xbf16>
  return %y, %z : tensor<8192x8192xbf16>, tensor<2048x2048xbf16>
}
