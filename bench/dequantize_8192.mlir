// Benchmark: the dequantize kernels (the Hopper fallback of MXFP8 / NVFP4
// GEMMs, and te.dequantize) on an 8192 x 8192 tensor, both directions of
// each format, bf16 out; te-run --bench gives each kernel's share of the
// copy ceiling.
//
//   te-run bench/dequantize_8192.mlir --random-inputs 1 --bench 20

func.func @dequantize(%x: tensor<8192x8192xbf16>)
    -> (tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) {
  %mx = te.quantize %x : tensor<8192x8192xbf16> -> !te.qtensor<8192x8192xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>
  %mx_r = te.dequantize %mx rowwise : !te.qtensor<8192x8192xbf16, #te.mxfp8<e4m3>, rowwise|columnwise> -> tensor<8192x8192xbf16>
  %mx_c = te.dequantize %mx columnwise : !te.qtensor<8192x8192xbf16, #te.mxfp8<e4m3>, rowwise|columnwise> -> tensor<8192x8192xbf16>
  %nv = te.quantize %x : tensor<8192x8192xbf16> -> !te.qtensor<8192x8192xbf16, #te.nvfp4<>, rowwise|columnwise>
  %nv_r = te.dequantize %nv rowwise : !te.qtensor<8192x8192xbf16, #te.nvfp4<>, rowwise|columnwise> -> tensor<8192x8192xbf16>
  %nv_c = te.dequantize %nv columnwise : !te.qtensor<8192x8192xbf16, #te.nvfp4<>, rowwise|columnwise> -> tensor<8192x8192xbf16>
  %blk = te.quantize %x : tensor<8192x8192xbf16> -> !te.qtensor<8192x8192xbf16, #te.fp8_block<e4m3, 1x128, pow2>, rowwise|columnwise>
  %blk_r = te.dequantize %blk rowwise : !te.qtensor<8192x8192xbf16, #te.fp8_block<e4m3, 1x128, pow2>, rowwise|columnwise> -> tensor<8192x8192xbf16>
  %blk_c = te.dequantize %blk columnwise : !te.qtensor<8192x8192xbf16, #te.fp8_block<e4m3, 1x128, pow2>, rowwise|columnwise> -> tensor<8192x8192xbf16>
  %pt = te.quantize %x : tensor<8192x8192xbf16> -> !te.qtensor<8192x8192xbf16, #te.fp8_current<e4m3>, rowwise|columnwise>
  %pt_r = te.dequantize %pt rowwise : !te.qtensor<8192x8192xbf16, #te.fp8_current<e4m3>, rowwise|columnwise> -> tensor<8192x8192xbf16>
  %pt_c = te.dequantize %pt columnwise : !te.qtensor<8192x8192xbf16, #te.fp8_current<e4m3>, rowwise|columnwise> -> tensor<8192x8192xbf16>
  return %mx_r, %mx_c, %nv_r, %nv_c, %blk_r, %blk_c, %pt_r, %pt_c
      : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xbf16>
}
