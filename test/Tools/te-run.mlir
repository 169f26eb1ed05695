// RUN: te-run %s --random-inputs 7 --check-if-gpu --dump %t | FileCheck %s
// RUN: ls %t | FileCheck %s --check-prefix=FILES
// RUN: not te-run %s 2>&1 | FileCheck %s --check-prefix=NODATA
// RUN: not te-run %s --input arg0=%t/missing.npy 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not te-run %s --input arg0=%t/result1.npy 2>&1 | FileCheck %s --check-prefix=SHAPE
// RUN: not te-run %s --entry nope --random-inputs 1 2>&1 | FileCheck %s --check-prefix=ENTRY

// Tests te-run on the hybrid quantize + bias gradient of one tensor: it
// compiles the fused kernel with NVRTC (GPU or not), runs it (on the CPU
// without a GPU, comparing against the CUDA backend with one), and dumps
// every storage buffer with the shapes of docs/Numerics.md §2.
// CHECK: running the CPU backend
// CHECK: result0 ({{.*}}): rowwise.data[256x128 e4m3] rowwise.scale_inv[256x4 e8m0] columnwise.data[128x128 e2m1x2] columnwise.scale_inv[128x16 e4m3] columnwise.amax[1x1 f32]
// CHECK: result1 ({{.*}}): data[1x128 f32]
// CHECK: dumped 2 result(s)
// FILES: result0.columnwise.amax.npy
// FILES: result0.columnwise.data.npy
// FILES: result0.columnwise.scale_inv.npy
// FILES: result0.rowwise.data.npy
// FILES: result0.rowwise.scale_inv.npy
// FILES: result1.npy
// NODATA: te-run: argument 'arg0' of 'quantize_grad' has no data: give --input arg0=FILE.npy or --random-inputs SEED
// MISSING: te-run: cannot open '{{.*}}missing.npy'
// SHAPE: te-run: '{{.*}}result1.npy' has shape 128, argument 'arg0' needs 256x128
// ENTRY: te-run: no function 'nope'
func.func @quantize_grad(%dy: tensor<256x128xbf16>)
    -> (!te.qtensor<256x128xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise>,
        tensor<128xf32>) {
  %q = te.quantize %dy : tensor<256x128xbf16>
         -> !te.qtensor<256x128xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise>
  %db = te.bias_grad %dy : tensor<256x128xbf16> -> tensor<128xf32>
  return %q, %db : !te.qtensor<256x128xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise>,
                   tensor<128xf32>
}
