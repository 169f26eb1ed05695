// Quantizing an 8192x8192 FP32 tensor (an FP32 master weight, or any f32
// activation) for the schemes of bench/gen_sharded_master.py, from one tensor
// instead of shards: the f32 tile kernel on its own (te-run --entry NAME
// --random-inputs 1 --bench N; docs/Performance.md).

func.func @mxfp8_both(%x: tensor<8192x8192xf32>) -> !te.qtensor<8192x8192xf32, #te.mxfp8<e4m3>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<8192x8192xf32> -> !te.qtensor<8192x8192xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
  return %q : !te.qtensor<8192x8192xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
}

func.func @block_128x128_rowwise(%x: tensor<8192x8192xf32>) -> !te.qtensor<8192x8192xf32, #te.fp8_block<e4m3, 128x128>, rowwise> {
  %q = te.quantize %x : tensor<8192x8192xf32> -> !te.qtensor<8192x8192xf32, #te.fp8_block<e4m3, 128x128>, rowwise>
  return %q : !te.qtensor<8192x8192xf32, #te.fp8_block<e4m3, 128x128>, rowwise>
}

func.func @block_1x128_both(%x: tensor<8192x8192xf32>) -> !te.qtensor<8192x8192xf32, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<8192x8192xf32> -> !te.qtensor<8192x8192xf32, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>
  return %q : !te.qtensor<8192x8192xf32, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>
}

func.func @current_rowwise(%x: tensor<8192x8192xf32>) -> !te.qtensor<8192x8192xf32, #te.fp8_current<e4m3>, rowwise> {
  %q = te.quantize %x : tensor<8192x8192xf32> -> !te.qtensor<8192x8192xf32, #te.fp8_current<e4m3>, rowwise>
  return %q : !te.qtensor<8192x8192xf32, #te.fp8_current<e4m3>, rowwise>
}

func.func @nvfp4_rowwise(%x: tensor<8192x8192xf32>) -> !te.qtensor<8192x8192xf32, #te.nvfp4<>, rowwise> {
  %q = te.quantize %x : tensor<8192x8192xf32> -> !te.qtensor<8192x8192xf32, #te.nvfp4<>, rowwise>
  return %q : !te.qtensor<8192x8192xf32, #te.nvfp4<>, rowwise>
}
