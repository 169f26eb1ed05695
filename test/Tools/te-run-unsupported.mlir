// RUN: not te-run %s --random-inputs 1 2>&1 | FileCheck %s

// Tests that an op the kernel level does not cover yet is a located error.
// CHECK: te-run-unsupported.mlir:[[@LINE+3]]:{{.*}} error: 'te.adam_step' has no kernel lowering yet
func.func @adam(%p: tensor<64x64xf32>, %g: tensor<64x64xbf16>, %m: tensor<64x64xf32>,
                %v: tensor<64x64xf32>, %lr: tensor<f32>, %step: tensor<i64>) -> tensor<64x64xf32> {
  %p1, %m1, %v1 = te.adam_step %p, %g, %m, %v, %lr, %step
      {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.01, mode = adamw}
      : tensor<64x64xf32>, tensor<64x64xbf16>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<f32>, tensor<i64>
      -> tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
  return %p1 : tensor<64x64xf32>
}
