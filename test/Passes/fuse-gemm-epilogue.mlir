// RUN: te-opt %s --te-fuse-gemm-epilogue | FileCheck %s

// Tests that a quantize kernel over a grouped GEMM's result whose only
// stage is the rowwise direction by 1x128 FP8 block scaling becomes the
// GEMM's second result (its epilogue writes the codes and scales), the
// GEMM's first result still serving its other users; and that quantize
// kernels the epilogue cannot take over stay as they are.

// CHECK-LABEL: func.func @fused
// CHECK-NEXT: %[[Y:.*]], %[[Q:.*]] = tek.grouped_gemm "g" %arg0, %arg1, %arg2 : tensor<64x64xbf16>, tensor<2x128x64xbf16>, tensor<2xi64> -> tensor<64x128xbf16>, !te.qtensor<64x128xbf16, #te.fp8_block<e5m2, 1x128, pow2>, rowwise>
// CHECK-NOT: tek.quantize_kernel
// CHECK: return %[[Y]], %[[Q]]
func.func @fused(%x: tensor<64x64xbf16>, %w: tensor<2x128x64xbf16>, %s: tensor<2xi64>)
    -> (tensor<64x128xbf16>, !te.qtensor<64x128xbf16, #te.fp8_block<e5m2, 1x128, pow2>, rowwise>) {
  %y = tek.grouped_gemm "g" %x, %w, %s : tensor<64x64xbf16>, tensor<2x128x64xbf16>, tensor<2xi64> -> tensor<64x128xbf16>
  %q = tek.quantize_kernel "q" %y {grid = array<i64: 1, 1>, stages = [#tek.stage<0, rowwise>], threads = 256 : i64, tile = array<i64: 128, 128>} : tensor<64x128xbf16> -> !te.qtensor<64x128xbf16, #te.fp8_block<e5m2, 1x128, pow2>, rowwise>
  return %y, %q : tensor<64x128xbf16>, !te.qtensor<64x128xbf16, #te.fp8_block<e5m2, 1x128, pow2>, rowwise>
}

// Both directions (the columnwise blocks run down the rows): not fused.
// CHECK-LABEL: func.func @two_directions
// CHECK: tek.grouped_gemm "g" {{.*}} -> tensor<64x128xbf16>{{$}}
// CHECK: tek.quantize_kernel "q"
func.func @two_directions(%x: tensor<64x64xbf16>, %w: tensor<2x128x64xbf16>, %s: tensor<2xi64>)
    -> !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise> {
  %y = tek.grouped_gemm "g" %x, %w, %s : tensor<64x64xbf16>, tensor<2x128x64xbf16>, tensor<2xi64> -> tensor<64x128xbf16>
  %q = tek.quantize_kernel "q" %y {grid = array<i64: 1, 1>, stages = [#tek.stage<0, rowwise>, #tek.stage<0, columnwise>], threads = 256 : i64, tile = array<i64: 128, 128>} : tensor<64x128xbf16> -> !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>
  return %q : !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>
}

// Schemes the epilogue does not apply (128x128 tiles, MXFP8): not fused.
// CHECK-LABEL: func.func @other_schemes
// CHECK: tek.grouped_gemm "g" {{.*}} -> tensor<64x128xbf16>{{$}}
// CHECK: tek.quantize_kernel "tiles"
// CHECK: tek.quantize_kernel "mx"
func.func @other_schemes(%x: tensor<64x64xbf16>, %w: tensor<2x128x64xbf16>, %s: tensor<2xi64>)
    -> (!te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>,
        !te.qtensor<64x128xbf16, #te.mxfp8<e4m3>, rowwise>) {
  %y = tek.grouped_gemm "g" %x, %w, %s : tensor<64x64xbf16>, tensor<2x128x64xbf16>, tensor<2xi64> -> tensor<64x128xbf16>
  %t = tek.quantize_kernel "tiles" %y {grid = array<i64: 1, 1>, stages = [#tek.stage<0, rowwise>], threads = 256 : i64, tile = array<i64: 128, 128>} : tensor<64x128xbf16> -> !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>
  %m = tek.quantize_kernel "mx" %y {grid = array<i64: 1, 1>, stages = [#tek.stage<0, rowwise>], threads = 256 : i64, tile = array<i64: 128, 128>} : tensor<64x128xbf16> -> !te.qtensor<64x128xbf16, #te.mxfp8<e4m3>, rowwise>
  return %t, %m : !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>, !te.qtensor<64x128xbf16, #te.mxfp8<e4m3>, rowwise>
}

// A bias gradient in the same read, or an input no GEMM produced: not fused.
// CHECK-LABEL: func.func @not_the_gemms
// CHECK: tek.grouped_gemm "g" {{.*}} -> tensor<64x128xbf16>{{$}}
// CHECK: tek.quantize_kernel "with_db"
// CHECK: tek.quantize_kernel "argument"
func.func @not_the_gemms(%x: tensor<64x64xbf16>, %w: tensor<2x128x64xbf16>, %s: tensor<2xi64>, %a: tensor<64x128xbf16>)
    -> (!te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>, tensor<128xf32>,
        !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>) {
  %y = tek.grouped_gemm "g" %x, %w, %s : tensor<64x64xbf16>, tensor<2x128x64xbf16>, tensor<2xi64> -> tensor<64x128xbf16>
  %q, %db = tek.quantize_kernel "with_db" %y {bias_grad, grid = array<i64: 1, 1>, stages = [#tek.stage<0, rowwise>], threads = 256 : i64, tile = array<i64: 128, 128>} : tensor<64x128xbf16> -> !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>, tensor<128xf32>
  %p = tek.quantize_kernel "argument" %a {grid = array<i64: 1, 1>, stages = [#tek.stage<0, rowwise>], threads = 256 : i64, tile = array<i64: 128, 128>} : tensor<64x128xbf16> -> !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>
  return %q, %db, %p : !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>, tensor<128xf32>, !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>
}
