// The master-shard quantize of one 8192x8192 FP32 weight split between 2
// ranks at element 33554437 (inside a row, inside a block), MXFP8 both
// directions: `ranks` with one process per rank (NCCL all-reduces of the
// amax table and of the ranks' outputs), `one_process` with one process
// playing both ranks. docs/Performance.md records:
//
//   te-run bench/quantize_rank_shards_8192.mlir --ranks 2 --entry ranks --random-inputs 1 --bench 20
//   te-run bench/quantize_rank_shards_8192.mlir --entry one_process --random-inputs 1 --bench 20

func.func @ranks(%mine: tensor<33554437xf32>)
    -> !te.qtensor<8192x8192xf32, #te.mxfp8<e4m3>, rowwise|columnwise> {
  %w = te.quantize_shards %mine {rank_offsets = array<i64: 0, 33554437, 67108864>}
         : tensor<33554437xf32> -> !te.qtensor<8192x8192xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
  return %w : !te.qtensor<8192x8192xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
}

func.func @one_process(%s0: tensor<33554437xf32>, %s1: tensor<33554427xf32>)
    -> !te.qtensor<8192x8192xf32, #te.mxfp8<e4m3>, rowwise|columnwise> {
  %w = te.quantize_shards %s0, %s1 : tensor<33554437xf32>, tensor<33554427xf32>
         -> !te.qtensor<8192x8192xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
  return %w : !te.qtensor<8192x8192xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
}
