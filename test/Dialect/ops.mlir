// Round trip of every te op, in custom and generic form.
// RUN: te-opt %s | FileCheck %s
// RUN: te-opt %s | te-opt | FileCheck %s
// RUN: te-opt %s --mlir-print-op-generic | te-opt | FileCheck %s
// RUN: te-opt %s > %t.1 && te-opt %t.1 > %t.2 && diff %t.1 %t.2
// RUN: te-opt %s --mlir-print-op-generic > %t.g1 && te-opt %t.g1 --mlir-print-op-generic > %t.g2 && diff %t.g1 %t.g2
// RUN: te-opt %s --verify-roundtrip

// CHECK-LABEL: te.recipe @r
// CHECK-NEXT: te.rule "linear", "input" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<rht>>
// CHECK-NEXT: te.rule "linear", "grad_output" -> #te.nvfp4<rht, sr>
// CHECK-NEXT: te.rule "*", "*" -> #te.identity<bf16>
te.recipe @r {
  te.rule "linear", "input" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<rht>>
  te.rule "linear", "grad_output" -> #te.nvfp4<rht, sr>
  te.rule "*", "*" -> #te.identity<bf16>
}

// CHECK-LABEL: func.func @quantize_dequantize
// CHECK-SAME: (%[[X:.*]]: tensor<256x128xbf16>)
func.func @quantize_dequantize(%x: tensor<256x128xbf16>) -> tensor<256x128xf32> {
  // CHECK: %[[Q:.*]] = te.quantize %[[X]] : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>
  %q = te.quantize %x : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>
  // CHECK: te.dequantize %[[Q]] columnwise : !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise|columnwise> -> tensor<256x128xf32>
  %y = te.dequantize %q columnwise : !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise|columnwise> -> tensor<256x128xf32>
  return %y : tensor<256x128xf32>
}

// CHECK-LABEL: func.func @gemms
func.func @gemms(%x: tensor<256x128xbf16>, %w: tensor<64x128xbf16>, %b: tensor<64xf32>)
    -> (tensor<256x64xbf16>, tensor<256x64xf32>, tensor<256x128xbf16>, tensor<64x128xf32>) {
  %qx = te.quantize %x : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>
  %qw = te.quantize %w : tensor<64x128xbf16> -> !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>
  // fprop: x rowwise, W rowwise.
  // CHECK: te.gemm %{{.*}}, %{{.*}} {transpose_b} : !te.qtensor<256x128xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>, !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise> -> tensor<256x64xbf16>
  %y = te.gemm %qx, %qw {transpose_b} : !te.qtensor<256x128xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>, !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise> -> tensor<256x64xbf16>
  // High precision with a bias epilogue.
  // CHECK: te.gemm %{{.*}}, %{{.*}} bias %{{.*}} {transpose_b} : tensor<256x128xbf16>, tensor<64x128xbf16>, tensor<64xf32> -> tensor<256x64xf32>
  %yb = te.gemm %x, %w bias %b {transpose_b} : tensor<256x128xbf16>, tensor<64x128xbf16>, tensor<64xf32> -> tensor<256x64xf32>
  // dgrad: dy rowwise, W columnwise.
  %dy = te.quantize %yb : tensor<256x64xf32> -> !te.qtensor<256x64xf32, #te.fp8_current<e5m2>, rowwise|columnwise>
  %qw2 = te.quantize %w {scaling_state = "w.delayed_scaling"} : tensor<64x128xbf16> -> !te.qtensor<64x128xbf16, #te.fp8_delayed<e4m3, history = 16>, columnwise>
  // CHECK: te.gemm %{{.*}}, %{{.*}} : !te.qtensor<256x64xf32, #te.fp8_current<e5m2>, rowwise|columnwise>, !te.qtensor<64x128xbf16, #te.fp8_delayed<e4m3, history = 16, algo = max, margin = 0>, columnwise> -> tensor<256x128xbf16>
  %dx = te.gemm %dy, %qw2 : !te.qtensor<256x64xf32, #te.fp8_current<e5m2>, rowwise|columnwise>, !te.qtensor<64x128xbf16, #te.fp8_delayed<e4m3, history = 16>, columnwise> -> tensor<256x128xbf16>
  // wgrad: dy columnwise, x columnwise (1x128 x 1x128 block FP8).
  %dyb = te.quantize %yb : tensor<256x64xf32> -> !te.qtensor<256x64xf32, #te.fp8_block<e4m3, 1x128>, columnwise>
  // CHECK: te.gemm %{{.*}}, %{{.*}} {transpose_a} : !te.qtensor<256x64xf32, #te.fp8_block<e4m3, 1x128>, columnwise>, !te.qtensor<256x128xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise> -> tensor<64x128xf32>
  %dw = te.gemm %dyb, %qx {transpose_a} : !te.qtensor<256x64xf32, #te.fp8_block<e4m3, 1x128>, columnwise>, !te.qtensor<256x128xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise> -> tensor<64x128xf32>
  return %y, %yb, %dx, %dw : tensor<256x64xbf16>, tensor<256x64xf32>, tensor<256x128xbf16>, tensor<64x128xf32>
}

// An identity direction pairs with a high-precision tensor.
// CHECK-LABEL: func.func @gemm_identity
func.func @gemm_identity(%a: tensor<32x16xbf16>, %b: tensor<16x8xbf16>) -> tensor<32x8xbf16> {
  %qa = te.quantize %a : tensor<32x16xbf16> -> !te.qtensor<32x16xbf16, #te.hybrid<rowwise = #te.identity<bf16>, columnwise = #te.mxfp8<e4m3>>, rowwise>
  // CHECK: te.gemm
  %d = te.gemm %qa, %b : !te.qtensor<32x16xbf16, #te.hybrid<rowwise = #te.identity<bf16>, columnwise = #te.mxfp8<e4m3>>, rowwise>, tensor<16x8xbf16> -> tensor<32x8xbf16>
  return %d : tensor<32x8xbf16>
}

// CHECK-LABEL: func.func @fused_quantize
func.func @fused_quantize(%dy: tensor<256x128xbf16>) -> tensor<128xf32> {
  // CHECK: %{{.*}}:3 = te.fused_quantize %{{.*}} {bias_grad} : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>, !te.qtensor<256x128xbf16, #te.nvfp4<rht, sr>, columnwise>, tensor<128xf32>
  %r, %c, %db = te.fused_quantize %dy {bias_grad} : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>, !te.qtensor<256x128xbf16, #te.nvfp4<rht, sr>, columnwise>, tensor<128xf32>
  // CHECK: te.fused_quantize %{{.*}} : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.fp8_current<e4m3>, rowwise>
  %q = te.fused_quantize %dy : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.fp8_current<e4m3>, rowwise>
  return %db : tensor<128xf32>
}

// CHECK-LABEL: func.func @bias_grad
func.func @bias_grad(%dy: tensor<4x32x64xbf16>) -> tensor<64xf32> {
  // CHECK: te.bias_grad %{{.*}} : tensor<4x32x64xbf16> -> tensor<64xf32>
  %db = te.bias_grad %dy : tensor<4x32x64xbf16> -> tensor<64xf32>
  return %db : tensor<64xf32>
}

// CHECK-LABEL: func.func @linear
func.func @linear(%x: tensor<2x128x64xbf16>, %w: tensor<32x64xbf16>, %b: tensor<32xbf16>, %dy: tensor<2x128x32xbf16>)
    -> (tensor<2x128x32xbf16>, tensor<2x128x64xbf16>, tensor<32x64xf32>, tensor<32xf32>, tensor<2x128x64xbf16>, tensor<32x64xbf16>) {
  // CHECK: te.linear %{{.*}}, %{{.*}} bias %{{.*}} {recipe = @r} : tensor<2x128x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16> -> tensor<2x128x32xbf16>
  %y = te.linear %x, %w bias %b {recipe = @r} : tensor<2x128x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16> -> tensor<2x128x32xbf16>
  // CHECK: te.linear_grad %{{.*}}, %{{.*}}, %{{.*}} {bias, recipe = @r} : tensor<2x128x32xbf16>, tensor<2x128x64xbf16>, tensor<32x64xbf16> -> tensor<2x128x64xbf16>, tensor<32x64xf32>, tensor<32xf32>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @r, bias} : tensor<2x128x32xbf16>, tensor<2x128x64xbf16>, tensor<32x64xbf16> -> tensor<2x128x64xbf16>, tensor<32x64xf32>, tensor<32xf32>
  // Without the bias flag there is no grad_bias result.
  // CHECK: te.linear_grad %{{.*}}, %{{.*}}, %{{.*}} {recipe = @r} : tensor<2x128x32xbf16>, tensor<2x128x64xbf16>, tensor<32x64xbf16> -> tensor<2x128x64xbf16>, tensor<32x64xbf16>
  %dx2, %dw2 = te.linear_grad %dy, %x, %w {recipe = @r} : tensor<2x128x32xbf16>, tensor<2x128x64xbf16>, tensor<32x64xbf16> -> tensor<2x128x64xbf16>, tensor<32x64xbf16>
  return %y, %dx, %dw, %db, %dx2, %dw2 : tensor<2x128x32xbf16>, tensor<2x128x64xbf16>, tensor<32x64xf32>, tensor<32xf32>, tensor<2x128x64xbf16>, tensor<32x64xbf16>
}

// CHECK-LABEL: func.func @adam
func.func @adam(%p: tensor<64x32xf32>, %g: tensor<64x32xbf16>, %m: tensor<64x32xf32>, %v: tensor<64x32xf32>, %lr: tensor<f32>, %step: tensor<i64>)
    -> (tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>) {
  // CHECK: te.adam_step %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {beta1 = 9.0e-01, beta2 = 9.99e-01, eps = 1.0e-08, weight_decay = 1.0e-02, mode = adamw} : tensor<64x32xf32>, tensor<64x32xbf16>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<f32>, tensor<i64> -> tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>
  %p1, %m1, %v1 = te.adam_step %p, %g, %m, %v, %lr, %step {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.01, mode = adamw} : tensor<64x32xf32>, tensor<64x32xbf16>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<f32>, tensor<i64> -> tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>
  // Omitted hyper-parameters take FusedAdam's defaults and are printed.
  // CHECK: te.adam_step {{.*}} {beta1 = 9.0e-01, beta2 = 9.99e-01, eps = 1.0e-08, weight_decay = 0.0e+00, mode = adam}
  %p2, %m2, %v2 = te.adam_step %p1, %g, %m1, %v1, %lr, %step {mode = adam} : tensor<64x32xf32>, tensor<64x32xbf16>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<f32>, tensor<i64> -> tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>
  // TE's fast-math arithmetic is a flag among the hyper-parameters.
  // CHECK: te.adam_step {{.*}} {beta1 = 9.0e-01, beta2 = 9.5e-01, eps = 1.0e-08, weight_decay = 0.0e+00, mode = adamw, fast_math}
  %p3, %m3, %v3 = te.adam_step %p2, %g, %m2, %v2, %lr, %step {fast_math, beta2 = 0.95} : tensor<64x32xf32>, tensor<64x32xbf16>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<f32>, tensor<i64> -> tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>
  return %p3, %m3, %v3 : tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>
}

// Persistent values: te.persistent on tensor and !te.qtensor arguments and
// on results (a declaration keeps them too).
// CHECK-LABEL: func.func @persistent
// CHECK-SAME: (%{{.*}}: tensor<64x32xf32> {te.persistent = "w.master"}, %{{.*}}: !te.qtensor<64x32xf32, #te.mxfp8<e4m3>, rowwise> {te.persistent = "w"})
// CHECK-SAME: -> (tensor<64x32xf32> {te.persistent = "w.master"}, !te.qtensor<64x32xf32, #te.mxfp8<e4m3>, rowwise> {te.persistent = "w"})
func.func @persistent(%p: tensor<64x32xf32> {te.persistent = "w.master"},
    %w: !te.qtensor<64x32xf32, #te.mxfp8<e4m3>, rowwise> {te.persistent = "w"})
    -> (tensor<64x32xf32> {te.persistent = "w.master"}, !te.qtensor<64x32xf32, #te.mxfp8<e4m3>, rowwise> {te.persistent = "w"}) {
  return %p, %w : tensor<64x32xf32>, !te.qtensor<64x32xf32, #te.mxfp8<e4m3>, rowwise>
}
// CHECK-LABEL: func.func private @persistent_decl
// CHECK-SAME: -> (tensor<64x32xf32> {te.persistent = "w.master"})
func.func private @persistent_decl(tensor<64x32xf32> {te.persistent = "w.master"}) -> (tensor<64x32xf32> {te.persistent = "w.master"})
