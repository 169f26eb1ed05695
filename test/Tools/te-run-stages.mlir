// RUN: rm -rf %t.d0 %t.d1 %t.d2 %t.d3
// RUN: te-run %s --backend cpu --random-inputs 4 --dump %t.d0 | FileCheck %s
// RUN: te-opt %s --te-resolve-recipe | te-run - --backend cpu --random-inputs 4 --dump %t.d1 | FileCheck %s
// RUN: te-opt %s --te-resolve-recipe --te-expand-linear --te-infer-usage --te-fuse-quantize | te-run - --backend cpu --random-inputs 4 --dump %t.d2 | FileCheck %s
// RUN: te-opt %s --te-to-cuda | te-run - --backend cpu --random-inputs 4 --dump %t.d3 | FileCheck %s
// RUN: diff -r %t.d0 %t.d1
// RUN: diff -r %t.d0 %t.d2
// RUN: diff -r %t.d0 %t.d3
// RUN: te-translate --te-to-cuda %s > %t.direct
// RUN: te-opt %s --te-resolve-recipe | te-translate --te-to-cuda > %t.resolved
// RUN: te-opt %s --te-to-cuda | te-translate --te-to-cuda > %t.lowered
// RUN: cmp %t.direct %t.resolved
// RUN: cmp %t.direct %t.lowered
// RUN: te-opt %s --te-to-cuda=arch=sm_100a | not te-run - --backend cpu --random-inputs 4 --arch sm_90a 2>&1 | FileCheck %s --check-prefix=ARCH
// RUN: te-opt %s --te-to-cuda=arch=sm_100a | te-translate --te-to-cuda | FileCheck %s --check-prefix=OWNARCH

// Tests that te-run and te-translate take IR at every stage te-opt prints,
// like mlir-opt: the source, a recipe resolved, partly fused, and all at
// the kernel level (tek) give the same kernels and the same results.
// CHECK: result3 ({{.*}}): data[1x64 f32]
// ARCH: error: the module was compiled for sm_100a (its te.target) and cannot be compiled for sm_90a
// OWNARCH: // ===== entry @train_step kernel {{.*}} (sm_100a)

te.recipe @mxfp8_fwd_nvfp4_bwd {
  te.rule "linear", "input" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<rht>>
  te.rule "linear", "weight" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>
  te.rule "linear", "grad_output" -> #te.nvfp4<rht, sr>
}

func.func @train_step(%x: tensor<256x128xbf16>, %w: tensor<64x128xbf16>,
                      %b: tensor<64xbf16>, %dy: tensor<256x64xbf16>)
    -> (tensor<256x64xbf16>, tensor<256x128xbf16>, tensor<64x128xf32>, tensor<64xf32>) {
  %y = te.linear %x, %w bias %b {recipe = @mxfp8_fwd_nvfp4_bwd} : tensor<256x128xbf16>, tensor<64x128xbf16>, tensor<64xbf16> -> tensor<256x64xbf16>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @mxfp8_fwd_nvfp4_bwd, bias} : tensor<256x64xbf16>, tensor<256x128xbf16>, tensor<64x128xbf16> -> tensor<256x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
  return %y, %dx, %dw, %db : tensor<256x64xbf16>, tensor<256x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
}
