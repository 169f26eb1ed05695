// RUN: te-run %s --random-inputs 1 --steps 3 | FileCheck %s
// RUN: not te-run %te_src_root/examples/quantize_hybrid.mlir --random-inputs 1 --steps 2 2>&1 | FileCheck %s --check-prefix=NOSTATE

// Tests that --steps runs an optimizer step three times, the new weight and
// moments feeding the next call and the step counting up, printing the
// weight's RMS after each step (CPU backend in CI).
// CHECK: step 1: rms(result0)=
// CHECK-NEXT: step 2: rms(result0)=
// CHECK-NEXT: step 3: rms(result0)=
// CHECK: result0 ({{.*}}): data[96x160 f32]
// CHECK: result1 ({{.*}}): rowwise.data[96x160 e4m3]

// Tests that --steps needs optimizer state to carry.
// NOSTATE: te-run: --steps carries optimizer and delayed-scaling state, but 'quantize_grad' updates no argument with an optimizer step and has no delayed-scaling state
func.func @step(%lr: tensor<f32>, %step: tensor<i64>,
    %w: tensor<96x160xf32>, %g: tensor<96x160xbf16>, %m: tensor<96x160xf32>, %v: tensor<96x160xf32>)
    -> (tensor<96x160xf32>, !te.qtensor<96x160xf32, #te.mxfp8<e4m3>, rowwise>) {
  %p, %n, %s = te.adam_step %w, %g, %m, %v, %lr, %step
      {beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8, weight_decay = 0.1, mode = adamw}
      : tensor<96x160xf32>, tensor<96x160xbf16>, tensor<96x160xf32>, tensor<96x160xf32>, tensor<f32>, tensor<i64>
      -> tensor<96x160xf32>, tensor<96x160xf32>, tensor<96x160xf32>
  %q = te.quantize %p : tensor<96x160xf32> -> !te.qtensor<96x160xf32, #te.mxfp8<e4m3>, rowwise>
  return %p, %q : tensor<96x160xf32>, !te.qtensor<96x160xf32, #te.mxfp8<e4m3>, rowwise>
}
