// RUN: te-run %s --ranks 2 --backend cpu --random-inputs 3 --entry forward,backward | FileCheck %s
// RUN: not te-run %s --backend cpu --random-inputs 3 --entry forward 2>&1 | FileCheck %s --check-prefix=ALONE

// Tests te-run's launcher: two ranks (processes) meet in a rendezvous
// directory, each quantizes its 128-row shard of a weight with the tensor
// amax reduced over both (NVFP4 forward, MXFP8 backward of one hybrid
// recipe) and gathers the direction the phase reads; every rank prints the
// whole 256-row weight (scripts/gpu-run.sh runs it with --check on 2 GPUs).
// CHECK: == rank 0 of 2 (exit 0) ==
// CHECK: call 1 forward:
// CHECK: call 2 backward:
// CHECK: result0 ({{.*}}): columnwise.data[256x256 e4m3] columnwise.scale_inv[8x256 e8m0]
// CHECK: == rank 1 of 2 (exit 0) ==
// CHECK: call 2 backward:
// CHECK: result0 ({{.*}}): columnwise.data[256x256 e4m3] columnwise.scale_inv[8x256 e8m0]
// ALONE: te_quantize_0 works on row shards of 2 ranks, but this run has no ranks (te-run --ranks 2)

func.func @forward(%w: tensor<128x256xbf16>)
    -> !te.qtensor<256x256xbf16, #te.nvfp4<>, rowwise> {
  %q = te.quantize %w {amax_ranks = 2} : tensor<128x256xbf16>
         -> !te.qtensor<128x256xbf16, #te.nvfp4<>, rowwise>
  %g = te.all_gather %q {ranks = 2}
         : !te.qtensor<128x256xbf16, #te.nvfp4<>, rowwise>
        -> !te.qtensor<256x256xbf16, #te.nvfp4<>, rowwise>
  return %g : !te.qtensor<256x256xbf16, #te.nvfp4<>, rowwise>
}

func.func @backward(%w: tensor<128x256xbf16>)
    -> !te.qtensor<256x256xbf16, #te.mxfp8<e4m3>, columnwise> {
  %q = te.quantize %w : tensor<128x256xbf16>
         -> !te.qtensor<128x256xbf16, #te.mxfp8<e4m3>, columnwise>
  %g = te.all_gather %q {ranks = 2}
         : !te.qtensor<128x256xbf16, #te.mxfp8<e4m3>, columnwise>
        -> !te.qtensor<256x256xbf16, #te.mxfp8<e4m3>, columnwise>
  return %g : !te.qtensor<256x256xbf16, #te.mxfp8<e4m3>, columnwise>
}
