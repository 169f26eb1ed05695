// RUN: te-run %s --backend cpu --random-inputs 4 | FileCheck %s

// Tests that a whole linear train step (forward and backward) under the
// hybrid MXFP8-forward / NVFP4-backward recipe runs on the CPU backend:
// 3 fused quantize kernels, 6 dequantize kernels (sm_90 emulates MXFP8 and
// NVFP4 GEMMs) and 3 GEMMs (docs/Guide.md).
// CHECK: result0 ({{.*}}): data[256x64 bf16]
// CHECK: result1 ({{.*}}): data[256x128 bf16]
// CHECK: result2 ({{.*}}): data[64x128 f32]
// CHECK: result3 ({{.*}}): data[1x64 f32]

te.recipe @mxfp8_fwd_nvfp4_bwd {
  te.rule "linear", "input" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<rht>>
  te.rule "linear", "weight" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>
  te.rule "linear", "grad_output" -> #te.nvfp4<rht, sr>
}

func.func @train_step(%x: tensor<256x128xbf16>, %w: tensor<64x128xbf16> {te.persistent = "fc1.weight"},
                      %b: tensor<64xbf16>, %dy: tensor<256x64xbf16>)
    -> (tensor<256x64xbf16>, tensor<256x128xbf16>, tensor<64x128xf32>, tensor<64xf32>) {
  %y = te.linear %x, %w bias %b {recipe = @mxfp8_fwd_nvfp4_bwd} : tensor<256x128xbf16>, tensor<64x128xbf16>, tensor<64xbf16> -> tensor<256x64xbf16>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @mxfp8_fwd_nvfp4_bwd, bias} : tensor<256x64xbf16>, tensor<256x128xbf16>, tensor<64x128xbf16> -> tensor<256x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
  return %y, %dx, %dw, %db : tensor<256x64xbf16>, tensor<256x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
}
