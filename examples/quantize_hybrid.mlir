// Quantize one gradient tensor for both GEMMs that read it: rowwise MXFP8
// (dgrad) and columnwise NVFP4 (wgrad), plus its bias gradient. A later
// pass (te-fuse-quantize) turns this into one kernel that reads dy once.

func.func @quantize_grad(%dy: tensor<16384x8192xbf16>)
    -> (!te.qtensor<16384x8192xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise>,
        tensor<8192xf32>) {
  %q = te.quantize %dy : tensor<16384x8192xbf16>
         -> !te.qtensor<16384x8192xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise>
  %db = te.bias_grad %dy : tensor<16384x8192xbf16> -> tensor<8192xf32>
  return %q, %db : !te.qtensor<16384x8192xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise>,
                   tensor<8192xf32>
}
