// RUN: te-opt %s --te-resolve-recipe --te-expand-linear --split-input-file -verify-diagnostics

// Tests that a recipe whose dgrad operands do not pair is an error on the
// layer naming the GEMM: dy rowwise is MXFP8, W columnwise is identity
// (quantized operands of two families pair: gemm-mixed-families.mlir).
te.recipe @mismatched {
  te.rule "linear", "weight" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.identity<bf16>>
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}
func.func @dgrad_pairing(%dy: tensor<256x64xbf16>, %x: tensor<256x128xbf16>, %w: tensor<64x128xbf16>)
    -> (tensor<256x128xbf16>, tensor<64x128xf32>) {
  // expected-error @+1 {{'te.linear_grad' op cannot form its dgrad GEMM (dx = dy W: dy rowwise, W columnwise): 'te.gemm' op operand 'b' is a high-precision tensor but operand 'a' is quantized by #te.mxfp8<e4m3>; quantize both, or keep both in high precision}}
  %dx, %dw = te.linear_grad %dy, %x, %w {recipe = @mismatched} : tensor<256x64xbf16>, tensor<256x128xbf16>, tensor<64x128xbf16> -> tensor<256x128xbf16>, tensor<64x128xf32>
  return %dx, %dw : tensor<256x128xbf16>, tensor<64x128xf32>
}

// -----

// Tests that a wgrad GEMM whose gradient carries the random Hadamard
// transform but whose input does not is an error on the layer.
te.recipe @rht_one_side {
  te.rule "linear", "grad_output" -> #te.nvfp4<rht>
  te.rule "*", "*" -> #te.nvfp4<>
}
func.func @wgrad_rht(%dy: tensor<256x64xbf16>, %x: tensor<256x128xbf16>, %w: tensor<64x128xbf16>)
    -> (tensor<256x128xbf16>, tensor<64x128xf32>) {
  // expected-error @+1 {{'te.linear_grad' op cannot form its wgrad GEMM}}
  %dx, %dw = te.linear_grad %dy, %x, %w {recipe = @rht_one_side} : tensor<256x64xbf16>, tensor<256x128xbf16>, tensor<64x128xbf16> -> tensor<256x128xbf16>, tensor<64x128xf32>
  return %dx, %dw : tensor<256x128xbf16>, tensor<64x128xf32>
}

// -----

// Tests that a high-precision input cannot meet a quantized weight.
te.recipe @half {
  te.rule "linear", "input" -> #te.identity<bf16>
  te.rule "linear", "weight" -> #te.mxfp8<e4m3>
}
func.func @fprop_pairing(%x: tensor<64x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<64x32xbf16> {
  // expected-error @+1 {{'te.linear' op cannot form its fprop GEMM (y = x W^T: x rowwise, W rowwise): 'te.gemm' op operand 'a' is a high-precision tensor but operand 'b' is quantized by #te.mxfp8<e4m3>}}
  %y = te.linear %x, %w {recipe = @half} : tensor<64x64xbf16>, tensor<32x64xbf16> -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}

// -----

// Tests that a shape the scheme cannot hold is reported on the layer.
te.recipe @mxfp8 {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}
func.func @block_shape(%x: tensor<64x48xbf16>, %w: tensor<32x48xbf16>) -> tensor<64x32xbf16> {
  // expected-error @+1 {{'te.linear' op cannot quantize its input by #te.mxfp8<e4m3>: !te.qtensor<2-D> mxfp8 rowwise blocks run along the last dimension: its size 48 must be a multiple of the block size 32}}
  %y = te.linear %x, %w {recipe = @mxfp8} : tensor<64x48xbf16>, tensor<32x48xbf16> -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}

// -----

// Tests that a 3-D input is refused with the way out.
te.recipe @mxfp8 {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}
func.func @rank3(%x: tensor<2x64x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<2x64x32xbf16> {
  // expected-error @+1 {{'te.linear' op has a 3-D input; te-expand-linear handles 2-D [tokens, features] tensors (flatten the leading dimensions first)}}
  %y = te.linear %x, %w {recipe = @mxfp8} : tensor<2x64x64xbf16>, tensor<32x64xbf16> -> tensor<2x64x32xbf16>
  return %y : tensor<2x64x32xbf16>
}
