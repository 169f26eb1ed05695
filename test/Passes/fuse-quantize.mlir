// RUN: te-opt %s -split-input-file --te-fuse-quantize | FileCheck %s

// Tests that two quantizations of one gradient (MXFP8 rowwise for dgrad,
// NVFP4 columnwise for wgrad) and its bias gradient become one kernel.
// CHECK-LABEL: func.func @grad_hybrid_with_dbias
// CHECK: %[[F:.*]]:3 = te.fused_quantize %{{.*}} {bias_grad} : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>, !te.qtensor<256x128xbf16, #te.nvfp4<rht, sr>, columnwise>, tensor<128xf32>
// CHECK-NOT: te.quantize
// CHECK-NOT: te.bias_grad
// CHECK: return %[[F]]#0, %[[F]]#1, %[[F]]#2
func.func @grad_hybrid_with_dbias(%dy: tensor<256x128xbf16>)
    -> (!te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>,
        !te.qtensor<256x128xbf16, #te.nvfp4<rht, sr>, columnwise>, tensor<128xf32>) {
  %r = te.quantize %dy : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>
  %c = te.quantize %dy : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.nvfp4<rht, sr>, columnwise>
  %db = te.bias_grad %dy : tensor<256x128xbf16> -> tensor<128xf32>
  return %r, %c, %db : !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>,
                       !te.qtensor<256x128xbf16, #te.nvfp4<rht, sr>, columnwise>, tensor<128xf32>
}

// -----

// Tests that a quantize and a bias gradient fuse even when unrelated ops
// stand between them, and that the fused op takes the first one's place.
// CHECK-LABEL: func.func @fused_at_first
// CHECK: %[[F:.*]]:2 = te.fused_quantize %arg0 {bias_grad}
// CHECK: te.gemm %[[F]]#0
// CHECK: return {{.*}}, %[[F]]#1
func.func @fused_at_first(%x: tensor<64x128xbf16>, %w: !te.qtensor<32x128xbf16, #te.mxfp8<e4m3>, rowwise>)
    -> (tensor<64x32xbf16>, tensor<128xf32>) {
  %q = te.quantize %x : tensor<64x128xbf16> -> !te.qtensor<64x128xbf16, #te.mxfp8<e4m3>, rowwise>
  %y = te.gemm %q, %w {transpose_b} : !te.qtensor<64x128xbf16, #te.mxfp8<e4m3>, rowwise>, !te.qtensor<32x128xbf16, #te.mxfp8<e4m3>, rowwise> -> tensor<64x32xbf16>
  %db = te.bias_grad %x : tensor<64x128xbf16> -> tensor<128xf32>
  return %y, %db : tensor<64x32xbf16>, tensor<128xf32>
}

// -----

// Tests that identical quantizations share one result and two inputs give
// two kernels.
// CHECK-LABEL: func.func @dedupe_and_separate_inputs
// CHECK: %[[A:.*]]:2 = te.fused_quantize %arg0 : tensor<64x64xbf16> -> !te.qtensor<64x64xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>, !te.qtensor<64x64xbf16, #te.fp8_current<e4m3>, rowwise>
// CHECK: %[[B:.*]]:2 = te.fused_quantize %arg1 {bias_grad}
// CHECK: return %[[A]]#0, %[[A]]#0, %[[A]]#1, %[[B]]#0, %[[B]]#1
func.func @dedupe_and_separate_inputs(%x: tensor<64x64xbf16>, %z: tensor<64x64xbf16>)
    -> (!te.qtensor<64x64xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>,
        !te.qtensor<64x64xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>,
        !te.qtensor<64x64xbf16, #te.fp8_current<e4m3>, rowwise>,
        !te.qtensor<64x64xbf16, #te.mxfp8<e4m3>, columnwise>, tensor<64xf32>) {
  %a = te.quantize %x : tensor<64x64xbf16> -> !te.qtensor<64x64xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>
  %b = te.quantize %x : tensor<64x64xbf16> -> !te.qtensor<64x64xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>
  %c = te.quantize %x : tensor<64x64xbf16> -> !te.qtensor<64x64xbf16, #te.fp8_current<e4m3>, rowwise>
  %d = te.quantize %z : tensor<64x64xbf16> -> !te.qtensor<64x64xbf16, #te.mxfp8<e4m3>, columnwise>
  %e = te.bias_grad %z : tensor<64x64xbf16> -> tensor<64xf32>
  return %a, %b, %c, %d, %e : !te.qtensor<64x64xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>,
      !te.qtensor<64x64xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>,
      !te.qtensor<64x64xbf16, #te.fp8_current<e4m3>, rowwise>,
      !te.qtensor<64x64xbf16, #te.mxfp8<e4m3>, columnwise>, tensor<64xf32>
}

// -----

// Tests that a lone quantize (already one kernel) and a lone bias gradient
// stay as they are.
// CHECK-LABEL: func.func @no_fusion_alone
// CHECK-NOT: te.fused_quantize
// CHECK: te.quantize
// CHECK: te.bias_grad
func.func @no_fusion_alone(%x: tensor<64x64xbf16>, %z: tensor<64x64xbf16>)
    -> (!te.qtensor<64x64xbf16, #te.mxfp8<e4m3>, rowwise>, tensor<64xf32>) {
  %q = te.quantize %x : tensor<64x64xbf16> -> !te.qtensor<64x64xbf16, #te.mxfp8<e4m3>, rowwise>
  %db = te.bias_grad %z : tensor<64x64xbf16> -> tensor<64xf32>
  return %q, %db : !te.qtensor<64x64xbf16, #te.mxfp8<e4m3>, rowwise>, tensor<64xf32>
}
