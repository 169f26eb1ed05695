// RUN: te-opt %s --te-fuse-quantize --te-fuse-optimizer --split-input-file | FileCheck %s
// RUN: te-opt %s --te-fuse-quantize --te-fuse-optimizer --split-input-file | te-opt --split-input-file | FileCheck %s

// Tests that the step and both quantizations of the new weight (merged by
// te-fuse-quantize) become one fused_adam; the returned new parameter and
// moments come from it.
// CHECK-LABEL: func.func @adam_then_quantize
// CHECK: %[[P:.*]], %[[M:.*]], %[[V:.*]], %[[Q:.*]]:2 = te.fused_adam %arg0, %arg1, %arg2, %arg3, %arg4, %arg5 {beta1 = 9.0e-01, beta2 = 9.99e-01, eps = 1.0e-08, weight_decay = 1.0e-02, mode = adamw}
// CHECK-SAME: -> tensor<256x128xf32>, tensor<256x128xf32>, tensor<256x128xf32>, !te.qtensor<256x128xf32, #te.mxfp8<e4m3>, rowwise>, !te.qtensor<256x128xf32, #te.nvfp4<>, columnwise>
// CHECK-NOT: te.adam_step
// CHECK-NOT: te.quantize
// CHECK-NOT: te.fused_quantize
// CHECK: return %[[P]], %[[M]], %[[V]], %[[Q]]#0, %[[Q]]#1
func.func @adam_then_quantize(%p: tensor<256x128xf32>, %g: tensor<256x128xbf16>, %m: tensor<256x128xf32>,
                              %v: tensor<256x128xf32>, %lr: tensor<f32>, %step: tensor<i64>)
    -> (tensor<256x128xf32>, tensor<256x128xf32>, tensor<256x128xf32>,
        !te.qtensor<256x128xf32, #te.mxfp8<e4m3>, rowwise>, !te.qtensor<256x128xf32, #te.nvfp4<>, columnwise>) {
  %p1, %m1, %v1 = te.adam_step %p, %g, %m, %v, %lr, %step
      {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.01, mode = adamw}
      : tensor<256x128xf32>, tensor<256x128xbf16>, tensor<256x128xf32>, tensor<256x128xf32>, tensor<f32>, tensor<i64>
      -> tensor<256x128xf32>, tensor<256x128xf32>, tensor<256x128xf32>
  %r = te.quantize %p1 : tensor<256x128xf32> -> !te.qtensor<256x128xf32, #te.mxfp8<e4m3>, rowwise>
  %c = te.quantize %p1 : tensor<256x128xf32> -> !te.qtensor<256x128xf32, #te.nvfp4<>, columnwise>
  return %p1, %m1, %v1, %r, %c : tensor<256x128xf32>, tensor<256x128xf32>, tensor<256x128xf32>,
      !te.qtensor<256x128xf32, #te.mxfp8<e4m3>, rowwise>, !te.qtensor<256x128xf32, #te.nvfp4<>, columnwise>
}

// -----

// Tests that a step whose new weight is not quantized stays as it is.
// CHECK-LABEL: func.func @plain_step
// CHECK: te.adam_step
// CHECK-NOT: te.fused_adam
func.func @plain_step(%p: tensor<64x64xf32>, %g: tensor<64x64xf32>, %m: tensor<64x64xf32>,
                      %v: tensor<64x64xf32>, %lr: tensor<f32>, %step: tensor<i64>) -> tensor<64x64xf32> {
  %p1, %m1, %v1 = te.adam_step %p, %g, %m, %v, %lr, %step
      {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, mode = adam}
      : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<f32>, tensor<i64>
      -> tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
  return %p1 : tensor<64x64xf32>
}

// -----

// Tests that a quantization of the old parameter is not absorbed (the
// fused kernel writes the new one), while the new one's is.
// CHECK-LABEL: func.func @old_and_new
// CHECK: te.quantize %arg0
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}, %[[NEW:.*]] = te.fused_adam
// CHECK-SAME: !te.qtensor<64x64xf32, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>
// CHECK: return %{{.*}}, %[[NEW]]
func.func @old_and_new(%p: tensor<64x64xf32>, %g: tensor<64x64xbf16>, %m: tensor<64x64xf32>,
                       %v: tensor<64x64xf32>, %lr: tensor<f32>, %step: tensor<i64>)
    -> (!te.qtensor<64x64xf32, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>,
        !te.qtensor<64x64xf32, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>) {
  %old = te.quantize %p : tensor<64x64xf32> -> !te.qtensor<64x64xf32, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>
  %p1, %m1, %v1 = te.adam_step %p, %g, %m, %v, %lr, %step
      {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, mode = adamw}
      : tensor<64x64xf32>, tensor<64x64xbf16>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<f32>, tensor<i64>
      -> tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
  %new = te.quantize %p1 : tensor<64x64xf32> -> !te.qtensor<64x64xf32, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>
  return %old, %new : !te.qtensor<64x64xf32, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>,
                      !te.qtensor<64x64xf32, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>
}

// -----

// Tests that a grouped layer's stacked expert weights [G, N, K] fuse like
// any weight: the fused step requantizes the stack as one [G·N, K] matrix,
// which for 128x128 tiles and N a multiple of 128 is each expert quantized
// alone (test/unittests/Runtime/StackedWeightTest.cpp).
// CHECK-LABEL: func.func @stacked_expert_weights
// CHECK: %[[P:.*]], %[[M:.*]], %[[V:.*]], %[[Q:.*]] = te.fused_adam %arg0, %arg1, %arg2, %arg3, %arg4, %arg5
// CHECK-SAME: -> tensor<4x256x128xf32>, tensor<4x256x128xf32>, tensor<4x256x128xf32>, !te.qtensor<4x256x128xf32, #te.fp8_block<e4m3, 128x128, pow2>, rowwise|columnwise>
// CHECK-NOT: te.adam_step
// CHECK-NOT: te.quantize
// CHECK: return %[[P]], %[[M]], %[[V]], %[[Q]]
func.func @stacked_expert_weights(%p: tensor<4x256x128xf32>, %g: tensor<4x256x128xbf16>, %m: tensor<4x256x128xf32>,
                                  %v: tensor<4x256x128xf32>, %lr: tensor<f32>, %step: tensor<i64>)
    -> (tensor<4x256x128xf32>, tensor<4x256x128xf32>, tensor<4x256x128xf32>,
        !te.qtensor<4x256x128xf32, #te.fp8_block<e4m3, 128x128, pow2>, rowwise|columnwise>) {
  %p1, %m1, %v1 = te.adam_step %p, %g, %m, %v, %lr, %step
      {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.01, mode = adamw}
      : tensor<4x256x128xf32>, tensor<4x256x128xbf16>, tensor<4x256x128xf32>, tensor<4x256x128xf32>, tensor<f32>, tensor<i64>
      -> tensor<4x256x128xf32>, tensor<4x256x128xf32>, tensor<4x256x128xf32>
  %q = te.quantize %p1 : tensor<4x256x128xf32> -> !te.qtensor<4x256x128xf32, #te.fp8_block<e4m3, 128x128, pow2>, rowwise|columnwise>
  return %p1, %m1, %v1, %q : tensor<4x256x128xf32>, tensor<4x256x128xf32>, tensor<4x256x128xf32>,
      !te.qtensor<4x256x128xf32, #te.fp8_block<e4m3, 128x128, pow2>, rowwise|columnwise>
}

// -----

// Tests that a double-quantized requantization (columnwise from the
// dequantized rowwise values) stays a te.quantize of its own: the rowwise
// result must exist before the columnwise one, which one fused pass cannot
// give.
// CHECK-LABEL: func.func @double_quantized_weight
// CHECK: te.adam_step
// CHECK-NOT: te.fused_adam
// CHECK: te.quantize %{{.*}} : tensor<256x128xf32> -> !te.qtensor<256x128xf32, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>, columnwise_source = rowwise_dequantized>, rowwise|columnwise>
func.func @double_quantized_weight(%p: tensor<256x128xf32>, %g: tensor<256x128xbf16>, %m: tensor<256x128xf32>,
                                   %v: tensor<256x128xf32>, %lr: tensor<f32>, %step: tensor<i64>)
    -> !te.qtensor<256x128xf32, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>, columnwise_source = rowwise_dequantized>, rowwise|columnwise> {
  %p1, %m1, %v1 = te.adam_step %p, %g, %m, %v, %lr, %step
      {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.01, mode = adamw}
      : tensor<256x128xf32>, tensor<256x128xbf16>, tensor<256x128xf32>, tensor<256x128xf32>, tensor<f32>, tensor<i64>
      -> tensor<256x128xf32>, tensor<256x128xf32>, tensor<256x128xf32>
  %q = te.quantize %p1 : tensor<256x128xf32>
         -> !te.qtensor<256x128xf32, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>, columnwise_source = rowwise_dequantized>, rowwise|columnwise>
  return %q : !te.qtensor<256x128xf32, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>, columnwise_source = rowwise_dequantized>, rowwise|columnwise>
}
