// A distributed optimizer's step, one process playing its 4 ranks: the FP32
// master of a 256x512 weight is flattened and split into 4 contiguous shards
// at offsets that fall inside rows (30000, 65613, 98305). Each rank applies
// AdamW to its shard (the four steps become one multi-tensor launch), then
// quantizes it straight into the whole weight's MXFP8 layout, both copies
// (the forward reads the rowwise one, dgrad the columnwise one). The amaxes
// of the blocks two ranks share are max-reduced first, so the weight is bit
// for bit the quantization of the whole updated master (docs/Numerics.md
// §17, docs/Guide.md §7.3).
//
//   te-run examples/sharded_master_update.mlir --random-inputs 1 --check --steps 3

func.func @step(%lr: tensor<f32>, %step: tensor<i64>,
    %p0: tensor<30000xf32>, %p1: tensor<35613xf32>, %p2: tensor<32692xf32>, %p3: tensor<32767xf32>,
    %g0: tensor<30000xbf16>, %g1: tensor<35613xbf16>, %g2: tensor<32692xbf16>, %g3: tensor<32767xbf16>,
    %m0: tensor<30000xf32>, %m1: tensor<35613xf32>, %m2: tensor<32692xf32>, %m3: tensor<32767xf32>,
    %v0: tensor<30000xf32>, %v1: tensor<35613xf32>, %v2: tensor<32692xf32>, %v3: tensor<32767xf32>)
    -> (tensor<30000xf32>, tensor<30000xf32>, tensor<30000xf32>,
        tensor<35613xf32>, tensor<35613xf32>, tensor<35613xf32>,
        tensor<32692xf32>, tensor<32692xf32>, tensor<32692xf32>,
        tensor<32767xf32>, tensor<32767xf32>, tensor<32767xf32>,
        !te.qtensor<256x512xf32, #te.mxfp8<e4m3>, rowwise|columnwise>) {
  %np0, %nm0, %nv0 = te.adam_step %p0, %g0, %m0, %v0, %lr, %step
      {beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8, weight_decay = 0.1, mode = adamw}
      : tensor<30000xf32>, tensor<30000xbf16>, tensor<30000xf32>, tensor<30000xf32>, tensor<f32>, tensor<i64>
      -> tensor<30000xf32>, tensor<30000xf32>, tensor<30000xf32>
  %np1, %nm1, %nv1 = te.adam_step %p1, %g1, %m1, %v1, %lr, %step
      {beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8, weight_decay = 0.1, mode = adamw}
      : tensor<35613xf32>, tensor<35613xbf16>, tensor<35613xf32>, tensor<35613xf32>, tensor<f32>, tensor<i64>
      -> tensor<35613xf32>, tensor<35613xf32>, tensor<35613xf32>
  %np2, %nm2, %nv2 = te.adam_step %p2, %g2, %m2, %v2, %lr, %step
      {beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8, weight_decay = 0.1, mode = adamw}
      : tensor<32692xf32>, tensor<32692xbf16>, tensor<32692xf32>, tensor<32692xf32>, tensor<f32>, tensor<i64>
      -> tensor<32692xf32>, tensor<32692xf32>, tensor<32692xf32>
  %np3, %nm3, %nv3 = te.adam_step %p3, %g3, %m3, %v3, %lr, %step
      {beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8, weight_decay = 0.1, mode = adamw}
      : tensor<32767xf32>, tensor<32767xbf16>, tensor<32767xf32>, tensor<32767xf32>, tensor<f32>, tensor<i64>
      -> tensor<32767xf32>, tensor<32767xf32>, tensor<32767xf32>
  %w = te.quantize_shards %np0, %np1, %np2, %np3
      : tensor<30000xf32>, tensor<35613xf32>, tensor<32692xf32>, tensor<32767xf32>
      -> !te.qtensor<256x512xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
  return %np0, %nm0, %nv0, %np1, %nm1, %nv1, %np2, %nm2, %nv2, %np3, %nm3, %nv3, %w
      : tensor<30000xf32>, tensor<30000xf32>, tensor<30000xf32>,
        tensor<35613xf32>, tensor<35613xf32>, tensor<35613xf32>,
        tensor<32692xf32>, tensor<32692xf32>, tensor<32692xf32>,
        tensor<32767xf32>, tensor<32767xf32>, tensor<32767xf32>,
        !te.qtensor<256x512xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
}
