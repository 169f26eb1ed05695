// RUN: te-opt %s --te-resolve-recipe --te-expand-linear --te-infer-usage --te-fuse-quantize --canonicalize --cse | FileCheck %s
// RUN: te-opt %s --te-resolve-recipe --te-expand-linear --te-infer-usage --te-fuse-quantize --canonicalize --cse | grep -c "= te.fused_quantize" | FileCheck %s --check-prefix=KERNELS
// RUN: te-opt %s --te-resolve-recipe --te-expand-linear --te-infer-usage --te-fuse-quantize --canonicalize --cse | grep -c "= te.gemm" | FileCheck %s --check-prefix=GEMMS

// Tests fusion across forward and backward of one layer under the hybrid
// MXFP8-forward / NVFP4-backward recipe: x, W and dy are each read once by
// one kernel producing every direction the three GEMMs read (dy's kernel
// also computes the bias gradient) - 3 quantize kernels, 3 GEMMs.

te.recipe @mxfp8_fwd_nvfp4_bwd {
  te.rule "linear", "input" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<rht>>
  te.rule "linear", "weight" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>
  te.rule "linear", "grad_output" -> #te.nvfp4<rht, sr>
}

// KERNELS: 3
// GEMMS: 3
// CHECK-LABEL: func.func @train_step
// CHECK-NOT: te.quantize
// CHECK: %[[X:.*]]:2 = te.fused_quantize %arg0 :
// CHECK: %[[W:.*]]:2 = te.fused_quantize %arg1 :
// CHECK: te.gemm %[[X]]#0, %[[W]]#0 bias %arg2 {transpose_b}
// CHECK: %[[DY:.*]]:2 = te.fused_quantize %arg3 {bias_grad}
// CHECK: te.gemm %[[DY]]#0, %[[W]]#1 :
// CHECK: te.gemm %[[DY]]#0, %[[X]]#1 {transpose_a}
// CHECK-NOT: te.quantize
// CHECK-NOT: te.bias_grad
// CHECK: return
func.func @train_step(%x: tensor<256x128xbf16>, %w: tensor<64x128xbf16>, %b: tensor<64xbf16>, %dy: tensor<256x64xbf16>)
    -> (tensor<256x64xbf16>, tensor<256x128xbf16>, tensor<64x128xf32>, tensor<64xf32>) {
  %y = te.linear %x, %w bias %b {recipe = @mxfp8_fwd_nvfp4_bwd} : tensor<256x128xbf16>, tensor<64x128xbf16>, tensor<64xbf16> -> tensor<256x64xbf16>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @mxfp8_fwd_nvfp4_bwd, bias} : tensor<256x64xbf16>, tensor<256x128xbf16>, tensor<64x128xbf16> -> tensor<256x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
  return %y, %dx, %dw, %db : tensor<256x64xbf16>, tensor<256x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
}
