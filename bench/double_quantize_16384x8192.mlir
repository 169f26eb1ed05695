// Double quantization (columnwise_source = rowwise_dequantized) of a
// 16384x8192 bf16 tensor, both directions, against the same hybrid
// quantized from the tensor alone (te-run --entry NAME --bench N):
// mxfp8_mxfp8 and nvfp4_mxfp8 run in one read (DoubleQuantizeKernel.cuh),
// mxfp8_nvfp4 needs the whole dequantized tensor's amax: three kernels.

func.func @plain_mxfp8_mxfp8(%x: tensor<16384x8192xbf16>) -> !te.qtensor<16384x8192xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.mxfp8<e4m3>>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<16384x8192xbf16> -> !te.qtensor<16384x8192xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.mxfp8<e4m3>>, rowwise|columnwise>
  return %q : !te.qtensor<16384x8192xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.mxfp8<e4m3>>, rowwise|columnwise>
}

func.func @doubled_mxfp8_mxfp8(%x: tensor<16384x8192xbf16>) -> !te.qtensor<16384x8192xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.mxfp8<e4m3>, columnwise_source = rowwise_dequantized>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<16384x8192xbf16> -> !te.qtensor<16384x8192xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.mxfp8<e4m3>, columnwise_source = rowwise_dequantized>, rowwise|columnwise>
  return %q : !te.qtensor<16384x8192xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.mxfp8<e4m3>, columnwise_source = rowwise_dequantized>, rowwise|columnwise>
}

func.func @plain_nvfp4_mxfp8(%x: tensor<16384x8192xbf16>) -> !te.qtensor<16384x8192xbf16, #te.hybrid<rowwise = #te.nvfp4<>, columnwise = #te.mxfp8<e4m3>>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<16384x8192xbf16> -> !te.qtensor<16384x8192xbf16, #te.hybrid<rowwise = #te.nvfp4<>, columnwise = #te.mxfp8<e4m3>>, rowwise|columnwise>
  return %q : !te.qtensor<16384x8192xbf16, #te.hybrid<rowwise = #te.nvfp4<>, columnwise = #te.mxfp8<e4m3>>, rowwise|columnwise>
}

func.func @doubled_nvfp4_mxfp8(%x: tensor<16384x8192xbf16>) -> !te.qtensor<16384x8192xbf16, #te.hybrid<rowwise = #te.nvfp4<>, columnwise = #te.mxfp8<e4m3>, columnwise_source = rowwise_dequantized>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<16384x8192xbf16> -> !te.qtensor<16384x8192xbf16, #te.hybrid<rowwise = #te.nvfp4<>, columnwise = #te.mxfp8<e4m3>, columnwise_source = rowwise_dequantized>, rowwise|columnwise>
  return %q : !te.qtensor<16384x8192xbf16, #te.hybrid<rowwise = #te.nvfp4<>, columnwise = #te.mxfp8<e4m3>, columnwise_source = rowwise_dequantized>, rowwise|columnwise>
}

func.func @plain_mxfp8_nvfp4(%x: tensor<16384x8192xbf16>) -> !te.qtensor<16384x8192xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<16384x8192xbf16> -> !te.qtensor<16384x8192xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise>
  return %q : !te.qtensor<16384x8192xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise>
}

func.func @doubled_mxfp8_nvfp4(%x: tensor<16384x8192xbf16>) -> !te.qtensor<16384x8192xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>, columnwise_source = rowwise_dequantized>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<16384x8192xbf16> -> !te.qtensor<16384x8192xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>, columnwise_source = rowwise_dequantized>, rowwise|columnwise>
  return %q : !te.qtensor<16384x8192xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>, columnwise_source = rowwise_dequantized>, rowwise|columnwise>
}
