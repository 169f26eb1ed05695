// RUN: te-opt %s -split-input-file -verify-diagnostics
// RUN: te-opt %s -split-input-file -verify-diagnostics --te-resolve-recipe

// Tests the rules for a quantized primary weight (a !te.qtensor weight of
// te.linear / te.linear_grad): its GEMMs read it as stored, so it must hold
// each direction read and be quantized as the recipe's weight rule says.

te.recipe @mxfp8 {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

func.func @fprop_other_scheme(%x: tensor<64x64xbf16>, %w: !te.qtensor<32x64xbf16, #te.nvfp4<>, rowwise>) -> tensor<64x32xbf16> {
  // expected-error @+1 {{'te.linear' op has a quantized weight whose rowwise scheme #te.nvfp4<> differs from the recipe's ("linear", "weight") rule, #te.mxfp8<e4m3> (fprop y = x W^T reads W rowwise): the layer reads the stored weight as is, so it must be quantized as the recipe says}}
  %y = te.linear %x, %w {recipe = @mxfp8} : tensor<64x64xbf16>, !te.qtensor<32x64xbf16, #te.nvfp4<>, rowwise> -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}

// -----

te.recipe @mxfp8 {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

func.func @dgrad_missing_direction(%dy: tensor<64x32xbf16>, %x: tensor<64x64xbf16>, %w: !te.qtensor<32x64xbf16, #te.mxfp8<e4m3>, rowwise>) -> (tensor<64x64xbf16>, tensor<32x64xf32>) {
  // expected-error @+1 {{'te.linear_grad' op reads its quantized weight columnwise (dgrad dx = dy W reads W columnwise), but the weight holds only rowwise}}
  %dx, %dw = te.linear_grad %dy, %x, %w {recipe = @mxfp8} : tensor<64x32xbf16>, tensor<64x64xbf16>, !te.qtensor<32x64xbf16, #te.mxfp8<e4m3>, rowwise> -> tensor<64x64xbf16>, tensor<32x64xf32>
  return %dx, %dw : tensor<64x64xbf16>, tensor<32x64xf32>
}

// -----

// Only the directions read must agree: dgrad reads the columnwise NVFP4 of
// the hybrid, which the rule's columnwise scheme (MXFP8) is not.
te.recipe @hybrid_w {
  te.rule "linear", "weight" -> #te.mxfp8<e4m3>
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

func.func @dgrad_other_scheme(%dy: tensor<64x32xbf16>, %x: tensor<64x64xbf16>, %w: !te.qtensor<32x64xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise>) -> (tensor<64x64xbf16>, tensor<32x64xf32>) {
  // expected-error @+1 {{'te.linear_grad' op has a quantized weight whose columnwise scheme #te.nvfp4<> differs from the recipe's ("linear", "weight") rule, #te.mxfp8<e4m3>}}
  %dx, %dw = te.linear_grad %dy, %x, %w {recipe = @hybrid_w} : tensor<64x32xbf16>, tensor<64x64xbf16>, !te.qtensor<32x64xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise> -> tensor<64x64xbf16>, tensor<32x64xf32>
  return %dx, %dw : tensor<64x64xbf16>, tensor<32x64xf32>
}

// -----

te.recipe @mxfp8 {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// The gradient is of the tensor the weight quantizes: f32 or its element type.
func.func @grad_type(%dy: tensor<64x32xbf16>, %x: tensor<64x64xbf16>, %w: !te.qtensor<32x64xf32, #te.mxfp8<e4m3>, columnwise>) -> (tensor<64x64xbf16>, tensor<32x64xbf16>) {
  // expected-error @+1 {{'te.linear_grad' op grad_weight must be f32 or the weight's element type 'f32', got 'bf16'}}
  %dx, %dw = te.linear_grad %dy, %x, %w {recipe = @mxfp8} : tensor<64x32xbf16>, tensor<64x64xbf16>, !te.qtensor<32x64xf32, #te.mxfp8<e4m3>, columnwise> -> tensor<64x64xbf16>, tensor<32x64xbf16>
  return %dx, %dw : tensor<64x64xbf16>, tensor<32x64xbf16>
}

// -----

te.recipe @mxfp8 {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// The logical shape of a quantized weight is checked like a tensor's.
func.func @shape(%x: tensor<64x64xbf16>, %w: !te.qtensor<32x128xbf16, #te.mxfp8<e4m3>, rowwise>) -> tensor<64x32xbf16> {
  // expected-error @+1 {{'te.linear' op input features 64 differ from the weight's input features 128 (weight is [out, in] = 32x128)}}
  %y = te.linear %x, %w {recipe = @mxfp8} : tensor<64x64xbf16>, !te.qtensor<32x128xbf16, #te.mxfp8<e4m3>, rowwise> -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}
