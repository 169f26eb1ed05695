// RUN: te-opt %s --te-resolve-recipe --te-expand-linear --split-input-file -verify-diagnostics
// RUN: te-opt %s --te-to-cuda --split-input-file -verify-diagnostics

// Tests that what te-expand-linear cannot lower for grouped layers yet is
// a located error on the layer, directly and through te-to-cuda: schemes
// whose blocks or amax would span experts, 128x128 weight tiles that
// would straddle two experts, and the backward.

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}
func.func @mxfp8(%x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) -> tensor<64x32xbf16> {
  // expected-error @+1 {{'te.grouped_linear' op quantizes its input by #te.mxfp8<e4m3>, which te-expand-linear does not lower for grouped layers yet: identity and block FP8 are lowered (their scaling blocks never span two experts); other schemes need the grouped quantize}}
  %y = te.grouped_linear %x, %w, %s {recipe = @r} : tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}

// -----

te.recipe @r {
  te.rule "grouped_linear", "weight" -> #te.fp8_current<e4m3>
  te.rule "*", "*" -> #te.fp8_block<e4m3, 1x128>
}
func.func @per_tensor_weight(%x: tensor<64x128xbf16>, %w: tensor<2x128x128xbf16>, %s: tensor<2xi64>) -> tensor<64x128xbf16> {
  // expected-error @+1 {{'te.grouped_linear' op quantizes its weight by #te.fp8_current<e4m3>, which te-expand-linear does not lower for grouped layers yet}}
  %y = te.grouped_linear %x, %w, %s {recipe = @r} : tensor<64x128xbf16>, tensor<2x128x128xbf16>, tensor<2xi64> -> tensor<64x128xbf16>
  return %y : tensor<64x128xbf16>
}

// -----

te.recipe @r {
  te.rule "grouped_linear", "weight" -> #te.fp8_block<e4m3, 128x128>
  te.rule "*", "*" -> #te.fp8_block<e4m3, 1x128>
}
func.func @tiles_straddle_experts(%x: tensor<64x128xbf16>, %w: tensor<2x96x128xbf16>, %s: tensor<2xi64>) -> tensor<64x96xbf16> {
  // expected-error @+1 {{'te.grouped_linear' op quantizes its weight by #te.fp8_block<e4m3, 128x128> with N = 96 output features per expert: 128x128 tiles of the [G, N, K] stack are each expert's own only when N is a multiple of 128}}
  %y = te.grouped_linear %x, %w, %s {recipe = @r} : tensor<64x128xbf16>, tensor<2x96x128xbf16>, tensor<2xi64> -> tensor<64x96xbf16>
  return %y : tensor<64x96xbf16>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.fp8_block<e4m3, 1x128>
}
func.func @grad(%dy: tensor<64x128xbf16>, %x: tensor<64x128xbf16>, %w: tensor<2x128x128xbf16>, %s: tensor<2xi64>) -> (tensor<64x128xbf16>, tensor<2x128x128xf32>) {
  // expected-error @+1 {{'te.grouped_linear_grad' op is not lowered by te-expand-linear yet: its wgrad (a K-grouped GEMM) and the grouped quantize of its columnwise operands are not built (its dgrad is te.grouped_gemm {weight_columnwise})}}
  %dx, %dw = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @r} : tensor<64x128xbf16>, tensor<64x128xbf16>, tensor<2x128x128xbf16>, tensor<2xi64> -> tensor<64x128xbf16>, tensor<2x128x128xf32>
  return %dx, %dw : tensor<64x128xbf16>, tensor<2x128x128xf32>
}
