// RUN: te-opt %s --te-resolve-recipe --te-expand-linear --te-infer-usage=report --split-input-file -verify-diagnostics | FileCheck %s

// Tests that a persistent weight's quantization holds what every function
// reads of it: the training step reads W rowwise (fprop) and columnwise
// (dgrad), so the inference function's W quantization keeps columnwise
// too; the input x (not persistent) is narrowed per function.
te.recipe @mxfp8 {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// CHECK-LABEL: func.func @infer
// CHECK: te.quantize %arg0 : tensor<128x64xbf16> -> !te.qtensor<128x64xbf16, #te.mxfp8<e4m3>, rowwise>
// CHECK: te.quantize %arg1 : tensor<32x64xbf16> -> !te.qtensor<32x64xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>
func.func @infer(%x: tensor<128x64xbf16>, %w: tensor<32x64xbf16> {te.persistent = "fc1.weight"}) -> tensor<128x32xbf16> {
  // expected-remark @+1 {{te-infer-usage: keeping rowwise|columnwise, adding columnwise (another function reads it of the persistent 'fc1.weight')}}
  %y = te.linear %x, %w {recipe = @mxfp8} : tensor<128x64xbf16>, tensor<32x64xbf16> -> tensor<128x32xbf16>
  return %y : tensor<128x32xbf16>
}

// CHECK-LABEL: func.func @train
// CHECK: te.quantize %arg1 : tensor<32x64xbf16> -> !te.qtensor<32x64xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>
// CHECK: te.quantize %arg1 : tensor<32x64xbf16> -> !te.qtensor<32x64xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>
func.func @train(%x: tensor<128x64xbf16>, %w: tensor<32x64xbf16> {te.persistent = "fc1.weight"}, %dy: tensor<128x32xbf16>)
    -> (tensor<128x32xbf16>, tensor<128x64xbf16>, tensor<32x64xf32>) {
  // expected-remark @+1 {{te-infer-usage: keeping rowwise|columnwise, adding columnwise (another function reads it of the persistent 'fc1.weight')}}
  %y = te.linear %x, %w {recipe = @mxfp8} : tensor<128x64xbf16>, tensor<32x64xbf16> -> tensor<128x32xbf16>
  // expected-remark @+1 {{te-infer-usage: keeping rowwise|columnwise, adding rowwise (another function reads it of the persistent 'fc1.weight')}}
  %dx, %dw = te.linear_grad %dy, %x, %w {recipe = @mxfp8} : tensor<128x32xbf16>, tensor<128x64xbf16>, tensor<32x64xbf16> -> tensor<128x64xbf16>, tensor<32x64xf32>
  return %y, %dx, %dw : tensor<128x32xbf16>, tensor<128x64xbf16>, tensor<32x64xf32>
}
