// RUN: te-opt %s --te-lower-to-kernels --split-input-file -verify-diagnostics

// Tests that grouped linear layers reaching the kernel level unexpanded
// (te-expand-linear lowers them; expand-linear-grouped*.mlir) are a
// located error, never a silent skip.
te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}
func.func @grouped_linear(%x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) -> tensor<64x32xbf16> {
  // expected-error @+1 {{'te.grouped_linear' has no kernel lowering yet: kernels exist for te.quantize, te.fused_quantize, te.bias_grad, te.dequantize, te.gemm, te.grouped_gemm, te.grouped_wgrad, te.all_gather, te.quantize_shards, te.adam_step and te.fused_adam}}
  %y = te.grouped_linear %x, %w, %s {recipe = @r} : tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}
func.func @grouped_linear_grad(%dy: tensor<64x32xbf16>, %x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) -> (tensor<64x64xbf16>, tensor<2x32x64xf32>) {
  // expected-error @+1 {{'te.grouped_linear_grad' has no kernel lowering yet: kernels exist for te.quantize, te.fused_quantize, te.bias_grad, te.dequantize, te.gemm, te.grouped_gemm, te.grouped_wgrad, te.all_gather, te.quantize_shards, te.adam_step and te.fused_adam}}
  %dx, %dw = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @r} : tensor<64x32xbf16>, tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<64x64xbf16>, tensor<2x32x64xf32>
  return %dx, %dw : tensor<64x64xbf16>, tensor<2x32x64xf32>
}
