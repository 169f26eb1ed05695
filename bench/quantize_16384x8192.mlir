// Rowwise + columnwise quantization of a 16384x8192 bf16 tensor for each
// scheme of the issue's benchmark (te-run --entry NAME --bench N).

func.func @mxfp8(%x: tensor<16384x8192xbf16>) -> !te.qtensor<16384x8192xbf16, #te.mxfp8<e4m3>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<16384x8192xbf16> -> !te.qtensor<16384x8192xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>
  return %q : !te.qtensor<16384x8192xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>
}

func.func @fp8_block_1x128(%x: tensor<16384x8192xbf16>) -> !te.qtensor<16384x8192xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<16384x8192xbf16> -> !te.qtensor<16384x8192xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>
  return %q : !te.qtensor<16384x8192xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>
}

func.func @fp8_block_128x128(%x: tensor<16384x8192xbf16>) -> !te.qtensor<16384x8192xbf16, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<16384x8192xbf16> -> !te.qtensor<16384x8192xbf16, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>
  return %q : !te.qtensor<16384x8192xbf16, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>
}

func.func @nvfp4(%x: tensor<16384x8192xbf16>) -> !te.qtensor<16384x8192xbf16, #te.nvfp4<>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<16384x8192xbf16> -> !te.qtensor<16384x8192xbf16, #te.nvfp4<>, rowwise|columnwise>
  return %q : !te.qtensor<16384x8192xbf16, #te.nvfp4<>, rowwise|columnwise>
}

func.func @fp8_current(%x: tensor<16384x8192xbf16>) -> !te.qtensor<16384x8192xbf16, #te.fp8_current<e4m3>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<16384x8192xbf16> -> !te.qtensor<16384x8192xbf16, #te.fp8_current<e4m3>, rowwise|columnwise>
  return %q : !te.qtensor<16384x8192xbf16, #te.fp8_current<e4m3>, rowwise|columnwise>
}

// NVFP4 as the NVFP4 training recipe stores a wgrad operand: rowwise plain,
// columnwise with the random Hadamard transform (its own amax pre-pass).
func.func @nvfp4_rht(%x: tensor<16384x8192xbf16>) -> !te.qtensor<16384x8192xbf16, #te.nvfp4<rht>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<16384x8192xbf16> -> !te.qtensor<16384x8192xbf16, #te.nvfp4<rht>, rowwise|columnwise>
  return %q : !te.qtensor<16384x8192xbf16, #te.nvfp4<rht>, rowwise|columnwise>
}
