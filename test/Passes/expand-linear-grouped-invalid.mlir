// RUN: te-opt %s --te-resolve-recipe --te-expand-linear --split-input-file -verify-diagnostics
// RUN: te-opt %s --te-to-cuda --split-input-file -verify-diagnostics

// Tests that what te-expand-linear cannot lower for grouped layers yet is
// a located error on the layer, directly and through te-to-cuda: schemes
// whose blocks or amax would span experts, 128x128 weight tiles that
// would straddle two experts, and what the backward cannot lower yet.

te.recipe @r {
  te.rule "*", "*" -> #te.nvfp4<rht>
}
func.func @nvfp4_backward_transformed_weight(%dy: tensor<64x128xbf16>, %x: tensor<64x128xbf16>, %w: tensor<2x128x128xbf16>, %s: tensor<2xi64>) -> (tensor<64x128xbf16>, tensor<2x128x128xf32>) {
  // expected-error @+1 {{'te.grouped_linear_grad' op cannot form its dgrad grouped GEMM (dx_g = dy_g W_g: dy rowwise, W columnwise): 'te.grouped_gemm' op quantizes input by #te.nvfp4<rht> and weight by #te.nvfp4<rht>; the dgrad reads each expert's NVFP4 weight columnwise without the random Hadamard transform (which only the wgrad's operands take) and rounded to nearest}}
  %dx, %dw = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @r} : tensor<64x128xbf16>, tensor<64x128xbf16>, tensor<2x128x128xbf16>, tensor<2xi64> -> tensor<64x128xbf16>, tensor<2x128x128xf32>
  return %dx, %dw : tensor<64x128xbf16>, tensor<2x128x128xf32>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.nvfp4<block2d>
}
func.func @nvfp4_2d_tokens(%x: tensor<64x128xbf16>, %w: tensor<2x128x128xbf16>, %s: tensor<2xi64>) -> tensor<64x128xbf16> {
  // expected-error @+1 {{'te.grouped_gemm' op quantizes input by #te.nvfp4<block2d> and weight by #te.nvfp4<block2d>; the tokens' NVFP4 blocks are 1x16 (16x16 blocks would span experts whose rows are not multiples of 16)}}
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
  te.rule "grouped_linear", "weight" -> #te.fp8_block<e4m3, 128x128>
  te.rule "*", "*" -> #te.fp8_block<e4m3, 1x128>
}
func.func @grad_bf16_dw(%dy: tensor<64x128xbf16>, %x: tensor<64x128xbf16>, %w: tensor<2x128x128xbf16>, %s: tensor<2xi64>) -> (tensor<64x128xbf16>, tensor<2x128x128xbf16>) {
  // expected-error @+1 {{'te.grouped_linear_grad' op has a 'bf16' grad_weight; the grouped wgrad writes f32 (a cast to the weight's type is not lowered yet)}}
  %dx, %dw = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @r} : tensor<64x128xbf16>, tensor<64x128xbf16>, tensor<2x128x128xbf16>, tensor<2xi64> -> tensor<64x128xbf16>, tensor<2x128x128xbf16>
  return %dx, %dw : tensor<64x128xbf16>, tensor<2x128x128xbf16>
}

// -----

// E5M2 on both wgrad operands: no FP8 GEMM multiplies e5m2 by e5m2.
te.recipe @r {
  te.rule "grouped_linear", "weight" -> #te.fp8_block<e4m3, 128x128>
  te.rule "*", "*" -> #te.fp8_block<e5m2, 1x128>
}
func.func @grad_e5m2_by_e5m2_wgrad(%dy: tensor<64x128xbf16>, %x: tensor<64x128xbf16>, %w: tensor<2x128x128xbf16>, %s: tensor<2xi64>) -> (tensor<64x128xbf16>, tensor<2x128x128xf32>) {
  // expected-error @+1 {{'te.grouped_linear_grad' op cannot form its wgrad (dW_g = dy_g^T x_g: dy and x columnwise): 'te.grouped_wgrad' op reads grad_output and input columnwise by #te.fp8_block<e5m2, 1x128> and #te.fp8_block<e5m2, 1x128>; no FP8 GEMM multiplies e5m2 by e5m2; use e4m3 for at least one operand}}
  %dx, %dw = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @r} : tensor<64x128xbf16>, tensor<64x128xbf16>, tensor<2x128x128xbf16>, tensor<2xi64> -> tensor<64x128xbf16>, tensor<2x128x128xf32>
  return %dx, %dw : tensor<64x128xbf16>, tensor<2x128x128xf32>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}
func.func @mxfp8_blocks_straddle_experts(%dy: tensor<64x80xbf16>, %x: tensor<64x128xbf16>, %w: tensor<2x80x128xbf16>, %s: tensor<2xi64>) -> (tensor<64x128xbf16>, tensor<2x80x128xf32>) {
  // expected-error @+1 {{'te.grouped_linear_grad' op quantizes its weight by #te.mxfp8<e4m3> with N = 80 output features per expert: columnwise 32x1 blocks of the [G, N, K] stack are each expert's own only when N is a multiple of 32}}
  %dx, %dw = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @r} : tensor<64x80xbf16>, tensor<64x128xbf16>, tensor<2x80x128xbf16>, tensor<2xi64> -> tensor<64x128xbf16>, tensor<2x80x128xf32>
  return %dx, %dw : tensor<64x128xbf16>, tensor<2x80x128xf32>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.fp8_current<e4m3>
}
func.func @current_scaling_n_not_128(%x: tensor<64x128xbf16>, %w: tensor<2x96x128xbf16>, %s: tensor<2xi64>) -> tensor<64x96xbf16> {
  // expected-error @+1 {{'te.grouped_linear' op cannot form its fprop grouped GEMM (y_g = x_g W_g^T, both quantized per expert): 'te.grouped_gemm' op quantizes its weight per expert with N = 96: the GEMM reads each expert's scale over 128x128 tiles of its own, so N must be a multiple of 128}}
  %y = te.grouped_linear %x, %w, %s {recipe = @r} : tensor<64x128xbf16>, tensor<2x96x128xbf16>, tensor<2xi64> -> tensor<64x96xbf16>
  return %y : tensor<64x96xbf16>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.fp8_delayed<e4m3, history = 4>
}
func.func @delayed_without_a_layer_name(%x: tensor<64x128xbf16>, %w: tensor<2x128x128xbf16>, %s: tensor<2xi64>) -> tensor<64x128xbf16> {
  // expected-error @+1 {{'te.grouped_linear' op quantizes its input by #te.fp8_delayed<e4m3, history = 4, algo = max, margin = 0>, whose amax history is kept between calls under the layer's name: name the layer (layer = "...")}}
  %y = te.grouped_linear %x, %w, %s {recipe = @r} : tensor<64x128xbf16>, tensor<2x128x128xbf16>, tensor<2xi64> -> tensor<64x128xbf16>
  return %y : tensor<64x128xbf16>
}

// -----

// 128x128 tiles of the tokens would span experts, beside a per-expert
// weight as anywhere else.
te.recipe @r {
  te.rule "grouped_linear", "weight" -> #te.fp8_current<e4m3>
  te.rule "*", "*" -> #te.fp8_block<e4m3, 128x128>
}
func.func @tokens_in_128x128_tiles(%x: tensor<64x128xbf16>, %w: tensor<2x128x128xbf16>, %s: tensor<2xi64>) -> tensor<64x128xbf16> {
  // expected-error @+1 {{'te.grouped_linear' op quantizes its input by #te.fp8_block<e4m3, 128x128>: the tokens' 128x128 tiles would span experts whose rows are not multiples of 128; quantize them by 1x128 blocks}}
  %y = te.grouped_linear %x, %w, %s {recipe = @r} : tensor<64x128xbf16>, tensor<2x128x128xbf16>, tensor<2xi64> -> tensor<64x128xbf16>
  return %y : tensor<64x128xbf16>
}
