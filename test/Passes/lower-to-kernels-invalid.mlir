// RUN: te-opt %s --te-lower-to-kernels --split-input-file -verify-diagnostics

// Tests that an op without a kernel lowering is a located error, not a skip:
// a linear layer must be expanded first (te-expand-linear).
te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}
func.func @linear(%x: tensor<64x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<64x32xbf16> {
  // expected-error @+1 {{'te.linear' has no kernel lowering yet: kernels exist for te.quantize, te.fused_quantize, te.bias_grad, te.dequantize, te.gemm, te.grouped_gemm, te.grouped_wgrad, te.all_gather, te.quantize_shards, te.adam_step and te.fused_adam}}
  %y = te.linear %x, %w {recipe = @r} : tensor<64x64xbf16>, tensor<32x64xbf16> -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}
