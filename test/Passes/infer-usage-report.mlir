// The `report` option explains each narrowing as a remark at the quantize.
// RUN: te-opt %s -split-input-file --pass-pipeline='builtin.module(te-infer-usage{report=true})' -verify-diagnostics -o /dev/null

func.func @reported(%x: tensor<64x128xbf16>, %w: tensor<32x128xbf16>) -> tensor<64x32xbf16> {
  // expected-remark @+1 {{te-infer-usage: keeping rowwise, dropping columnwise (no user reads it)}}
  %qx = te.quantize %x : tensor<64x128xbf16> -> !te.qtensor<64x128xbf16, #te.fp8_current<e4m3>, rowwise|columnwise>
  %qw = te.quantize %w : tensor<32x128xbf16> -> !te.qtensor<32x128xbf16, #te.fp8_current<e4m3>, rowwise>
  %y = te.gemm %qx, %qw {transpose_b} : !te.qtensor<64x128xbf16, #te.fp8_current<e4m3>, rowwise|columnwise>, !te.qtensor<32x128xbf16, #te.fp8_current<e4m3>, rowwise> -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}

// -----

// Nothing to drop: no remark.
func.func @no_remark(%x: tensor<64x128xbf16>) -> tensor<64x128xf32> {
  %q = te.quantize %x : tensor<64x128xbf16> -> !te.qtensor<64x128xbf16, #te.fp8_current<e4m3>, rowwise>
  %y = te.dequantize %q rowwise : !te.qtensor<64x128xbf16, #te.fp8_current<e4m3>, rowwise> -> tensor<64x128xf32>
  return %y : tensor<64x128xf32>
}
