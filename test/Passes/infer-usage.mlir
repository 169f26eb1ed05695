// RUN: te-opt %s -split-input-file --te-infer-usage | FileCheck %s

// Tests that a quantized input read only by the fprop GEMM (x rowwise)
// drops its columnwise storage.
// CHECK-LABEL: func.func @fprop_reads_rowwise
// CHECK: te.quantize %{{.*}} -> !te.qtensor<64x128xbf16, #te.mxfp8<e4m3>, rowwise>
// CHECK: te.quantize %{{.*}} -> !te.qtensor<32x128xbf16, #te.mxfp8<e4m3>, rowwise>
func.func @fprop_reads_rowwise(%x: tensor<64x128xbf16>, %w: tensor<32x128xbf16>) -> tensor<64x32xbf16> {
  %qx = te.quantize %x : tensor<64x128xbf16> -> !te.qtensor<64x128xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>
  %qw = te.quantize %w : tensor<32x128xbf16> -> !te.qtensor<32x128xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>
  %y = te.gemm %qx, %qw {transpose_b} : !te.qtensor<64x128xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>, !te.qtensor<32x128xbf16, #te.mxfp8<e4m3>, rowwise|columnwise> -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}

// -----

// Tests that dgrad (W read columnwise) and wgrad (dy read columnwise) keep
// what they read, and that one value read rowwise by one GEMM and
// columnwise by another keeps both.
// CHECK-LABEL: func.func @backward_union
// CHECK: %[[DY:.*]] = te.quantize %{{.*}} -> !te.qtensor<64x32xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>
// CHECK: %[[W:.*]] = te.quantize %{{.*}} -> !te.qtensor<32x128xbf16, #te.fp8_block<e4m3, 128x128>, columnwise>
// CHECK: %[[X:.*]] = te.quantize %{{.*}} -> !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 1x128>, columnwise>
func.func @backward_union(%dy: tensor<64x32xbf16>, %w: tensor<32x128xbf16>, %x: tensor<64x128xbf16>)
    -> (tensor<64x128xbf16>, tensor<32x128xf32>) {
  %qdy = te.quantize %dy : tensor<64x32xbf16> -> !te.qtensor<64x32xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>
  %qw = te.quantize %w : tensor<32x128xbf16> -> !te.qtensor<32x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>
  %qx = te.quantize %x : tensor<64x128xbf16> -> !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>
  // dgrad: dx = dy W
  %dx = te.gemm %qdy, %qw : !te.qtensor<64x32xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>, !te.qtensor<32x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise> -> tensor<64x128xbf16>
  // wgrad: dW = dy^T x
  %dw = te.gemm %qdy, %qx {transpose_a} : !te.qtensor<64x32xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>, !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise> -> tensor<32x128xf32>
  return %dx, %dw : tensor<64x128xbf16>, tensor<32x128xf32>
}

// -----

// Tests that a dequantize keeps exactly the direction it reads.
// CHECK-LABEL: func.func @dequantize_reads_one
// CHECK: te.quantize %{{.*}} -> !te.qtensor<64x64xbf16, #te.nvfp4<>, columnwise>
func.func @dequantize_reads_one(%x: tensor<64x64xbf16>) -> tensor<64x64xf32> {
  %q = te.quantize %x : tensor<64x64xbf16> -> !te.qtensor<64x64xbf16, #te.nvfp4<>, rowwise|columnwise>
  %y = te.dequantize %q columnwise : !te.qtensor<64x64xbf16, #te.nvfp4<>, rowwise|columnwise> -> tensor<64x64xf32>
  return %y : tensor<64x64xf32>
}

// -----

// Tests that a quantized function result keeps what the signature says,
// even when another user needs less.
// CHECK-LABEL: func.func @no_narrowing_of_results
// CHECK: te.quantize %{{.*}} -> !te.qtensor<64x64xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>
func.func @no_narrowing_of_results(%x: tensor<64x64xbf16>)
    -> (!te.qtensor<64x64xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>, tensor<64x64xf32>) {
  %q = te.quantize %x : tensor<64x64xbf16> -> !te.qtensor<64x64xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>
  %y = te.dequantize %q rowwise : !te.qtensor<64x64xbf16, #te.mxfp8<e4m3>, rowwise|columnwise> -> tensor<64x64xf32>
  return %q, %y : !te.qtensor<64x64xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>, tensor<64x64xf32>
}

// -----

// Tests that an unused quantize is left for dead-code elimination.
// CHECK-LABEL: func.func @no_users
// CHECK: te.quantize %{{.*}} -> !te.qtensor<64x64xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>
func.func @no_users(%x: tensor<64x64xbf16>) {
  %q = te.quantize %x : tensor<64x64xbf16> -> !te.qtensor<64x64xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>
  return
}

// -----

// Tests that a hybrid keeps only the direction (and so the scheme) read.
// CHECK-LABEL: func.func @hybrid_keeps_one_scheme
// CHECK: te.quantize %{{.*}} -> !te.qtensor<64x128xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise>
func.func @hybrid_keeps_one_scheme(%x: tensor<64x128xbf16>, %w: tensor<32x128xbf16>) -> tensor<64x32xbf16> {
  %qx = te.quantize %x : tensor<64x128xbf16> -> !te.qtensor<64x128xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise>
  %qw = te.quantize %w : tensor<32x128xbf16> -> !te.qtensor<32x128xbf16, #te.mxfp8<e4m3>, rowwise>
  %y = te.gemm %qx, %qw {transpose_b} : !te.qtensor<64x128xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise>, !te.qtensor<32x128xbf16, #te.mxfp8<e4m3>, rowwise> -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}
