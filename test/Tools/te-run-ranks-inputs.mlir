// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/npy.py %t/w0.npy '<u2' 128x256 1.0
// RUN: %python %S/Inputs/npy.py %t/w1.npy '<u2' 128x256 2.0
// RUN: te-run %s --ranks 2 --backend cpu --input 'arg0=%t/w{rank}.npy' --entry gather,gather --dump '%t/out{rank}' | FileCheck %s
// RUN: ls %t/out0 %t/out1 | FileCheck %s --check-prefix=DUMP

// Tests that each rank of `te-run --ranks` reads its own --input file and
// writes its own --dump directory ("{rank}" in the path): rank 0's shard
// is all 1.0, rank 1's all 2.0, so each rank's gathered weight is half of
// each and its RMS sqrt((1 + 4) / 2).
// CHECK: == rank 0 of 2 (exit 0) ==
// CHECK: call 2 gather: rms(result0)=1.5811
// CHECK: == rank 1 of 2 (exit 0) ==
// CHECK: call 2 gather: rms(result0)=1.5811
// DUMP: result0.npy
// DUMP: result0.npy

func.func @gather(%w: tensor<128x256xbf16>) -> tensor<256x256xbf16> {
  %g = te.all_gather %w {ranks = 2} : tensor<128x256xbf16> -> tensor<256x256xbf16>
  return %g : tensor<256x256xbf16>
}
