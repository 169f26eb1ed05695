// RUN: te-run %s --random-inputs 2 --entry both,both | FileCheck %s

// Tests double quantization in a linear layer's backward (TransformerEngine's
// columnwise_source = rowwise_dequantized): x's columnwise NVFP4 copy, which
// wgrad reads, is quantized from the values of its rowwise copy (the
// forward's) instead of from x. dgrad does not read x, so dx is the plain
// hybrid's; dW is not. scripts/gpu-run.sh runs the same with --check
// against the GPU.
// CHECK: call 1 both: rms(result0)=[[DX:[0-9.]+]] rms(result1)=[[DW:[0-9.]+]] rms(result2)=[[DX]] rms(result3)=
// CHECK-NOT: [[DW]]
// CHECK: call 2 both:

te.recipe @double {
  te.rule "linear", "input" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>, columnwise_source = rowwise_dequantized>
  te.rule "linear", "grad_output" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>
  te.rule "linear", "*" -> #te.mxfp8<e4m3>
}
te.recipe @original {
  te.rule "linear", "input" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>
  te.rule "linear", "grad_output" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>
  te.rule "linear", "*" -> #te.mxfp8<e4m3>
}

// Both backwards on the same arguments: results 0, 1 double-quantized,
// 2, 3 the plain hybrid.
func.func @both(%dy: tensor<384x256xbf16>, %x: tensor<384x512xbf16>, %w: tensor<256x512xbf16>)
    -> (tensor<384x512xbf16>, tensor<256x512xf32>, tensor<384x512xbf16>, tensor<256x512xf32>) {
  %dx, %dw = te.linear_grad %dy, %x, %w {recipe = @double}
      : tensor<384x256xbf16>, tensor<384x512xbf16>, tensor<256x512xbf16>
      -> tensor<384x512xbf16>, tensor<256x512xf32>
  %dx0, %dw0 = te.linear_grad %dy, %x, %w {recipe = @original}
      : tensor<384x256xbf16>, tensor<384x512xbf16>, tensor<256x512xbf16>
      -> tensor<384x512xbf16>, tensor<256x512xf32>
  return %dx, %dw, %dx0, %dw0 : tensor<384x512xbf16>, tensor<256x512xf32>,
                                tensor<384x512xbf16>, tensor<256x512xf32>
}
