// RUN: rm -rf %t && mkdir -p %t
// RUN: te-run %s --ranks 2 --backend cpu --random-inputs 4 --dump '%t/out{rank}' | FileCheck %s
// RUN: diff -r %t/out0 %t/out1
// RUN: not te-run %s --backend cpu --random-inputs 4 2>&1 | FileCheck %s --check-prefix=ALONE

// Tests te.quantize_shards with one process per rank (te-run --ranks 2):
// each rank passes its own shard of the FP32 master (rank 0 the first
// 12768 elements, rank 1 the other 20000, split inside a row and inside
// 32- and 16-element blocks), and each ends up holding the quantization of
// the whole master - both ranks' dumps are the same files (scripts/gpu-run.sh
// runs it with --check on 2 GPUs, each rank's GPU result against its CPU
// backend).
// CHECK: == rank 0 of 2 (exit 0) ==
// CHECK: result0 ({{.*}}): rowwise.data[256x128 e4m3] rowwise.scale_inv[256x4 e8m0] columnwise.data[128x128 e2m1x2] columnwise.scale_inv[128x16 e4m3] columnwise.amax[1x1 f32]
// CHECK: == rank 1 of 2 (exit 0) ==
// CHECK: result0 ({{.*}}): rowwise.data[256x128 e4m3] rowwise.scale_inv[256x4 e8m0] columnwise.data[128x128 e2m1x2] columnwise.scale_inv[128x16 e4m3] columnwise.amax[1x1 f32]
// ALONE: te_quantize_shards_0 works on master shards of 2 ranks, but this run has no ranks (te-run --ranks 2)

func.func @update(%mine: tensor<20000xf32>)
    -> !te.qtensor<256x128xf32, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise> {
  %w = te.quantize_shards %mine {rank_offsets = array<i64: 0, 12768, 32768>}
         : tensor<20000xf32>
        -> !te.qtensor<256x128xf32, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise>
  return %w : !te.qtensor<256x128xf32, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise>
}
