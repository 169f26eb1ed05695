// RUN: te-opt %s --te-fuse-optimizer --te-lower-to-kernels --split-input-file | FileCheck %s

// Tests that optimizer steps with the same hyper-parameters, lr, step,
// gradient type and requantization become one multi-tensor kernel: three
// parameters of three shapes, one launch over all their tiles (2 + 1 + 4),
// each new parameter requantized in MXFP8 both directions by the same
// stages.
// CHECK-LABEL: func.func @three_params
// CHECK: %[[K:.*]]:12 = tek.adam_kernel "te_adam_0" %arg0, %arg1, (%arg2, %arg3, %arg4, %arg5, %arg6, %arg7, %arg8, %arg9, %arg10, %arg11, %arg12, %arg13)
// CHECK-SAME: grid = 7 : i64
// CHECK-SAME: stages = [#tek.stage<0, rowwise>, #tek.stage<0, columnwise>]
// CHECK-NOT: tek.adam_kernel
// CHECK: return %[[K]]#3, %[[K]]#7, %[[K]]#11
func.func @three_params(%lr: tensor<f32>, %step: tensor<i64>,
    %p0: tensor<256x64xf32>, %g0: tensor<256x64xbf16>, %m0: tensor<256x64xf32>, %v0: tensor<256x64xf32>,
    %p1: tensor<64x64xf32>, %g1: tensor<64x64xbf16>, %m1: tensor<64x64xf32>, %v1: tensor<64x64xf32>,
    %p2: tensor<256x256xf32>, %g2: tensor<256x256xbf16>, %m2: tensor<256x256xf32>, %v2: tensor<256x256xf32>)
    -> (!te.qtensor<256x64xf32, #te.mxfp8<e4m3>, rowwise|columnwise>,
        !te.qtensor<64x64xf32, #te.mxfp8<e4m3>, rowwise|columnwise>,
        !te.qtensor<256x256xf32, #te.mxfp8<e4m3>, rowwise|columnwise>) {
  %a0, %b0, %c0 = te.adam_step %p0, %g0, %m0, %v0, %lr, %step {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.01, mode = adamw}
      : tensor<256x64xf32>, tensor<256x64xbf16>, tensor<256x64xf32>, tensor<256x64xf32>, tensor<f32>, tensor<i64> -> tensor<256x64xf32>, tensor<256x64xf32>, tensor<256x64xf32>
  %q0 = te.quantize %a0 : tensor<256x64xf32> -> !te.qtensor<256x64xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
  %a1, %b1, %c1 = te.adam_step %p1, %g1, %m1, %v1, %lr, %step {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.01, mode = adamw}
      : tensor<64x64xf32>, tensor<64x64xbf16>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<f32>, tensor<i64> -> tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
  %q1 = te.quantize %a1 : tensor<64x64xf32> -> !te.qtensor<64x64xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
  %a2, %b2, %c2 = te.adam_step %p2, %g2, %m2, %v2, %lr, %step {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.01, mode = adamw}
      : tensor<256x256xf32>, tensor<256x256xbf16>, tensor<256x256xf32>, tensor<256x256xf32>, tensor<f32>, tensor<i64> -> tensor<256x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>
  %q2 = te.quantize %a2 : tensor<256x256xf32> -> !te.qtensor<256x256xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
  return %q0, %q1, %q2 : !te.qtensor<256x64xf32, #te.mxfp8<e4m3>, rowwise|columnwise>,
        !te.qtensor<64x64xf32, #te.mxfp8<e4m3>, rowwise|columnwise>,
        !te.qtensor<256x256xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
}

// -----

// Tests what keeps steps apart: another weight decay, fast-math arithmetic,
// another requantization (none, or another scheme) - four launches for
// five parameters, the two plain AdamW steps of the same shape-free key
// sharing one.
// CHECK-LABEL: func.func @keys
// CHECK: tek.adam_kernel "te_adam_1" %arg0, %arg1, (%arg6, %arg7, %arg8, %arg9) {{.*}}weight_decay = 1.000000e-01
// CHECK: tek.adam_kernel "te_adam_2" %arg0, %arg1, (%arg10, %arg11, %arg12, %arg13) {{.*}}fast_math
// CHECK: tek.adam_kernel "te_adam_3" %arg0, %arg1, (%arg14, %arg15, %arg16, %arg17) {{.*}}requantize_after, stages = [#tek.stage<0, rowwise>]
// CHECK: tek.adam_kernel "te_adam_0" %arg0, %arg1, (%arg2, %arg3, %arg4, %arg5, %arg18, %arg19, %arg20, %arg21) {{.*}}weight_decay = 0.00999999977
// CHECK-NOT: tek.adam_kernel
func.func @keys(%lr: tensor<f32>, %step: tensor<i64>,
    %p0: tensor<64x64xf32>, %g0: tensor<64x64xbf16>, %m0: tensor<64x64xf32>, %v0: tensor<64x64xf32>,
    %p1: tensor<64x64xf32>, %g1: tensor<64x64xbf16>, %m1: tensor<64x64xf32>, %v1: tensor<64x64xf32>,
    %p2: tensor<64x64xf32>, %g2: tensor<64x64xbf16>, %m2: tensor<64x64xf32>, %v2: tensor<64x64xf32>,
    %p3: tensor<64x64xf32>, %g3: tensor<64x64xbf16>, %m3: tensor<64x64xf32>, %v3: tensor<64x64xf32>,
    %p4: tensor<32x64xf32>, %g4: tensor<32x64xbf16>, %m4: tensor<32x64xf32>, %v4: tensor<32x64xf32>)
    -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>,
        !te.qtensor<64x64xf32, #te.fp8_current<e4m3>, rowwise>, tensor<32x64xf32>) {
  %a0, %b0, %c0 = te.adam_step %p0, %g0, %m0, %v0, %lr, %step {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.01, mode = adamw}
      : tensor<64x64xf32>, tensor<64x64xbf16>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<f32>, tensor<i64> -> tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
  %a1, %b1, %c1 = te.adam_step %p1, %g1, %m1, %v1, %lr, %step {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.1, mode = adamw}
      : tensor<64x64xf32>, tensor<64x64xbf16>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<f32>, tensor<i64> -> tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
  %a2, %b2, %c2 = te.adam_step %p2, %g2, %m2, %v2, %lr, %step {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.01, mode = adamw, fast_math}
      : tensor<64x64xf32>, tensor<64x64xbf16>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<f32>, tensor<i64> -> tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
  %a3, %b3, %c3 = te.adam_step %p3, %g3, %m3, %v3, %lr, %step {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.01, mode = adamw}
      : tensor<64x64xf32>, tensor<64x64xbf16>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<f32>, tensor<i64> -> tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
  %q3 = te.quantize %a3 : tensor<64x64xf32> -> !te.qtensor<64x64xf32, #te.fp8_current<e4m3>, rowwise>
  %a4, %b4, %c4 = te.adam_step %p4, %g4, %m4, %v4, %lr, %step {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.01, mode = adamw}
      : tensor<32x64xf32>, tensor<32x64xbf16>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<f32>, tensor<i64> -> tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>
  return %a0, %a1, %a2, %q3, %a4 : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>,
        !te.qtensor<64x64xf32, #te.fp8_current<e4m3>, rowwise>, tensor<32x64xf32>
}

// -----

// Tests that a step whose result is read before the next step of its key
// starts a new launch (the kernel sits at its group's last step).
// CHECK-LABEL: func.func @used_between
// CHECK: %[[A:.*]]:3 = tek.adam_kernel "te_adam_{{[0-9]+}}" %arg0, %arg1, (%arg2, %arg3, %arg4, %arg5)
// CHECK: tek.quantize_kernel {{.*}} %[[A]]#0
// CHECK: tek.adam_kernel "te_adam_{{[0-9]+}}" %arg0, %arg1, (%arg6, %arg7, %arg8, %arg9)
func.func @used_between(%lr: tensor<f32>, %step: tensor<i64>,
    %p0: tensor<64x64xf32>, %g0: tensor<64x64xbf16>, %m0: tensor<64x64xf32>, %v0: tensor<64x64xf32>,
    %p1: tensor<64x64xf32>, %g1: tensor<64x64xbf16>, %m1: tensor<64x64xf32>, %v1: tensor<64x64xf32>)
    -> (tensor<64x64xf32>, !te.qtensor<64x64xf32, #te.mxfp8<e4m3>, rowwise>, tensor<64x64xf32>) {
  %a0, %b0, %c0 = te.adam_step %p0, %g0, %m0, %v0, %lr, %step {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.01, mode = adamw}
      : tensor<64x64xf32>, tensor<64x64xbf16>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<f32>, tensor<i64> -> tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
  %s:2 = te.fused_quantize %a0 {bias_grad} : tensor<64x64xf32> -> !te.qtensor<64x64xf32, #te.mxfp8<e4m3>, rowwise>, tensor<64xf32>
  %a1, %b1, %c1 = te.adam_step %p1, %g1, %m1, %v1, %lr, %step {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.01, mode = adamw}
      : tensor<64x64xf32>, tensor<64x64xbf16>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<f32>, tensor<i64> -> tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
  return %a0, %s#0, %a1 : tensor<64x64xf32>, !te.qtensor<64x64xf32, #te.mxfp8<e4m3>, rowwise>, tensor<64x64xf32>
}

// -----

// Tests that a step reading an earlier step's results (two steps on one
// parameter) is not grouped with it: the second kernel reads the first's.
// CHECK-LABEL: func.func @two_steps_in_a_row
// CHECK: %[[A:.*]]:3 = tek.adam_kernel "te_adam_{{[0-9]+}}" %arg0, %arg1, (%arg2, %arg3, %arg4, %arg5)
// CHECK: tek.adam_kernel "te_adam_{{[0-9]+}}" %arg0, %arg1, (%[[A]]#0, %arg3, %[[A]]#1, %[[A]]#2)
func.func @two_steps_in_a_row(%lr: tensor<f32>, %step: tensor<i64>,
    %p: tensor<64x64xf32>, %g: tensor<64x64xbf16>, %m: tensor<64x64xf32>, %v: tensor<64x64xf32>)
    -> tensor<64x64xf32> {
  %a0, %b0, %c0 = te.adam_step %p, %g, %m, %v, %lr, %step {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.01, mode = adamw}
      : tensor<64x64xf32>, tensor<64x64xbf16>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<f32>, tensor<i64> -> tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
  %a1, %b1, %c1 = te.adam_step %a0, %g, %b0, %c0, %lr, %step {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.01, mode = adamw}
      : tensor<64x64xf32>, tensor<64x64xbf16>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<f32>, tensor<i64> -> tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
  return %a1 : tensor<64x64xf32>
}
