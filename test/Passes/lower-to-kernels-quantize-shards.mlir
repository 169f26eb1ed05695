// RUN: te-opt %s --te-infer-usage --te-fuse-quantize --te-fuse-optimizer --te-lower-to-kernels --split-input-file | FileCheck %s

// Tests te.quantize_shards down to the kernel level: one
// tek.quantize_shards_kernel over every shard in rank order, after the
// optimizer steps that produce the shards (te-fuse-optimizer folds no
// sharded quantize into a step: its tiles span ranks), and a persistent
// weight written from shards gaining the directions another function reads.

// CHECK-LABEL: func.func @step
// CHECK: %[[A:.*]]:6 = tek.adam_kernel
// CHECK: %[[W:.*]] = tek.quantize_shards_kernel "te_quantize_shards_0" %[[A]]#0, %[[A]]#3 {stages = [#tek.stage<0, rowwise>]} : tensor<3000xf32>, tensor<5192xf32> -> !te.qtensor<64x128xf32, #te.nvfp4<>, rowwise>
// CHECK: return %[[W]]
func.func @step(%p0: tensor<3000xf32>, %g0: tensor<3000xf32>, %m0: tensor<3000xf32>, %v0: tensor<3000xf32>,
                %p1: tensor<5192xf32>, %g1: tensor<5192xf32>, %m1: tensor<5192xf32>, %v1: tensor<5192xf32>,
                %lr: tensor<f32>, %t: tensor<i64>)
    -> !te.qtensor<64x128xf32, #te.nvfp4<>, rowwise> {
  %a0, %b0, %c0 = te.adam_step %p0, %g0, %m0, %v0, %lr, %t
      : tensor<3000xf32>, tensor<3000xf32>, tensor<3000xf32>, tensor<3000xf32>, tensor<f32>, tensor<i64>
      -> tensor<3000xf32>, tensor<3000xf32>, tensor<3000xf32>
  %a1, %b1, %c1 = te.adam_step %p1, %g1, %m1, %v1, %lr, %t
      : tensor<5192xf32>, tensor<5192xf32>, tensor<5192xf32>, tensor<5192xf32>, tensor<f32>, tensor<i64>
      -> tensor<5192xf32>, tensor<5192xf32>, tensor<5192xf32>
  %w = te.quantize_shards %a0, %a1 : tensor<3000xf32>, tensor<5192xf32>
         -> !te.qtensor<64x128xf32, #te.nvfp4<>, rowwise>
  return %w : !te.qtensor<64x128xf32, #te.nvfp4<>, rowwise>
}

// -----

// CHECK-LABEL: func.func @update
// CHECK: tek.quantize_shards_kernel "te_quantize_shards_0" %arg0, %arg1, %arg2 {stages = [#tek.stage<0, rowwise>, #tek.stage<0, columnwise>]} : tensor<100xf32>, tensor<8000xf32>, tensor<92xf32> -> !te.qtensor<64x128xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
func.func @update(%s0: tensor<100xf32>, %s1: tensor<8000xf32>, %s2: tensor<92xf32>)
    -> (!te.qtensor<64x128xf32, #te.mxfp8<e4m3>, rowwise> {te.persistent = "w"}) {
  %w = te.quantize_shards %s0, %s1, %s2 : tensor<100xf32>, tensor<8000xf32>, tensor<92xf32>
         -> !te.qtensor<64x128xf32, #te.mxfp8<e4m3>, rowwise>
  return %w : !te.qtensor<64x128xf32, #te.mxfp8<e4m3>, rowwise>
}

// CHECK-LABEL: func.func @backward
// CHECK: tek.dequantize_kernel "te_dequantize_0" %arg0 columnwise
func.func @backward(%w: !te.qtensor<64x128xf32, #te.mxfp8<e4m3>, columnwise> {te.persistent = "w"})
    -> tensor<64x128xbf16> {
  %d = te.dequantize %w columnwise
         : !te.qtensor<64x128xf32, #te.mxfp8<e4m3>, columnwise> -> tensor<64x128xbf16>
  return %d : tensor<64x128xbf16>
}

// -----

// A delayed-scaling weight names its state; a hybrid of two delayed
// schemes casts each direction with its own quantizer's state.
// CHECK-LABEL: func.func @delayed
// CHECK: tek.quantize_shards_kernel "te_quantize_shards_0" %arg0, %arg1 {stages = [#tek.stage<0, rowwise, "w.delayed_scaling.rowwise">, #tek.stage<0, columnwise, "w.delayed_scaling.columnwise">]}
func.func @delayed(%s0: tensor<777xf32>, %s1: tensor<7415xf32>)
    -> !te.qtensor<64x128xf32, #te.hybrid<rowwise = #te.fp8_delayed<e4m3, history = 4>, columnwise = #te.fp8_delayed<e5m2, history = 4>>, rowwise|columnwise> {
  %w = te.quantize_shards %s0, %s1 {scaling_state = "w.delayed_scaling"} : tensor<777xf32>, tensor<7415xf32>
         -> !te.qtensor<64x128xf32, #te.hybrid<rowwise = #te.fp8_delayed<e4m3, history = 4>, columnwise = #te.fp8_delayed<e5m2, history = 4>>, rowwise|columnwise>
  return %w : !te.qtensor<64x128xf32, #te.hybrid<rowwise = #te.fp8_delayed<e4m3, history = 4>, columnwise = #te.fp8_delayed<e5m2, history = 4>>, rowwise|columnwise>
}

// -----

// One process per rank: the kernel op carries every rank's offsets.
// CHECK-LABEL: func.func @rank_update
// CHECK: tek.quantize_shards_kernel "te_quantize_shards_0" %arg0 {rank_offsets = array<i64: 0, 3000, 8192>, stages = [#tek.stage<0, rowwise>]} : tensor<5192xf32> -> !te.qtensor<64x128xf32, #te.nvfp4<>, rowwise>
func.func @rank_update(%mine: tensor<5192xf32>)
    -> !te.qtensor<64x128xf32, #te.nvfp4<>, rowwise> {
  %w = te.quantize_shards %mine {rank_offsets = array<i64: 0, 3000, 8192>}
         : tensor<5192xf32> -> !te.qtensor<64x128xf32, #te.nvfp4<>, rowwise>
  return %w : !te.qtensor<64x128xf32, #te.nvfp4<>, rowwise>
}
