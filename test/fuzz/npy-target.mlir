// The program the fuzz test feeds mutated .npy files to (as arg0): small,
// one quantize kernel with a bias gradient, so every run is quick.
func.func @f(%x: tensor<16x32xbf16>)
    -> (!te.qtensor<16x32xbf16, #te.mxfp8<e4m3>, rowwise>, tensor<32xf32>) {
  %q = te.quantize %x : tensor<16x32xbf16> -> !te.qtensor<16x32xbf16, #te.mxfp8<e4m3>, rowwise>
  %db = te.bias_grad %x : tensor<16x32xbf16> -> tensor<32xf32>
  return %q, %db : !te.qtensor<16x32xbf16, #te.mxfp8<e4m3>, rowwise>, tensor<32xf32>
}
