// A distributed optimizer's step with one process per rank (te-run --ranks
// 2): the FP32 master of a 256x512 weight is flattened and split between 2
// ranks at element 65613, inside a row and inside a block. Each process
// holds only its own piece (rank 0 the first 65613 elements, rank 1 the
// other 65459 in the first elements of the same 65613-element buffer),
// applies AdamW to it, then quantizes it into the whole weight's MXFP8
// layout, both copies. The amaxes of the blocks the two ranks share are
// all-reduced over NCCL before the cast and the ranks' codes and scales
// merged after it, so every rank holds the quantization of the whole
// updated master, bit for bit (docs/Numerics.md §17, docs/Guide.md §7.3).
// examples/sharded_master_update.mlir is the same step with one process
// playing every rank.
//
//   te-run examples/sharded_master_ranks.mlir --ranks 2 --random-inputs 1 --check --steps 3

func.func @step(%lr: tensor<f32>, %step: tensor<i64>, %p: tensor<65613xf32>,
                %g: tensor<65613xbf16>, %m: tensor<65613xf32>, %v: tensor<65613xf32>)
    -> (tensor<65613xf32>, tensor<65613xf32>, tensor<65613xf32>,
        !te.qtensor<256x512xf32, #te.mxfp8<e4m3>, rowwise|columnwise>) {
  %np, %nm, %nv = te.adam_step %p, %g, %m, %v, %lr, %step
      {beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8, weight_decay = 0.1, mode = adamw}
      : tensor<65613xf32>, tensor<65613xbf16>, tensor<65613xf32>, tensor<65613xf32>, tensor<f32>, tensor<i64>
      -> tensor<65613xf32>, tensor<65613xf32>, tensor<65613xf32>
  %w = te.quantize_shards %np {rank_offsets = array<i64: 0, 65613, 131072>}
      : tensor<65613xf32> -> !te.qtensor<256x512xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
  return %np, %nm, %nv, %w
      : tensor<65613xf32>, tensor<65613xf32>, tensor<65613xf32>,
        !te.qtensor<256x512xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
}
