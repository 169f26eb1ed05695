// RUN: te-run %s --random-inputs 1 2>&1 | FileCheck %s

// Tests that a kernel the CUDA backend cannot generate yet is named, with
// the reason, and the CPU backend still runs (no GPU in CI).
// CHECK: te_quantize_0: nvfp4 with the random Hadamard transform (rht) and 16x16 blocks has no CUDA kernel yet; running the CPU backend
// CHECK: result0 ({{.*}}): columnwise.data[64x32 e2m1x2]
func.func @rht2d(%x: tensor<64x64xbf16>) -> !te.qtensor<64x64xbf16, #te.nvfp4<rht, block2d>, columnwise> {
  %q = te.quantize %x : tensor<64x64xbf16> -> !te.qtensor<64x64xbf16, #te.nvfp4<rht, block2d>, columnwise>
  return %q : !te.qtensor<64x64xbf16, #te.nvfp4<rht, block2d>, columnwise>
}
