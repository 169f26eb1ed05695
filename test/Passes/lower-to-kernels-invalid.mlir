// RUN: te-opt %s --te-lower-to-kernels --split-input-file -verify-diagnostics

// Tests that an op without a kernel lowering is a located error, not a skip.
func.func @gemm(%a: !te.qtensor<128x128xbf16, #te.mxfp8<e4m3>, rowwise>,
                %b: !te.qtensor<128x128xbf16, #te.mxfp8<e4m3>, rowwise>) -> tensor<128x128xbf16> {
  // expected-error @+1 {{'te.gemm' has no kernel lowering yet: kernels exist for te.quantize, te.fused_quantize, te.bias_grad and te.dequantize}}
  %y = te.gemm %a, %b {transpose_b} : !te.qtensor<128x128xbf16, #te.mxfp8<e4m3>, rowwise>, !te.qtensor<128x128xbf16, #te.mxfp8<e4m3>, rowwise> -> tensor<128x128xbf16>
  return %y : tensor<128x128xbf16>
}
