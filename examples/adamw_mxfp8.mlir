// One AdamW step over three FP32 master weights, each new weight
// requantized to MXFP8 in both directions for the next forward and
// backward GEMMs. te-fuse-optimizer folds each quantize into its step and
// te-lower-to-kernels groups the three steps (same hyper-parameters, lr,
// step and scheme) into one multi-tensor kernel: one launch reads p, g, m,
// v once and writes p, m, v and both MXFP8 directions of every weight.
// lr and step are run-time scalars (tensor<f32>, tensor<i64>).
//
//   te-opt examples/adamw_mxfp8.mlir --te-to-cuda
//   te-run examples/adamw_mxfp8.mlir --random-inputs 1 --check

func.func @optimizer_step(%lr: tensor<f32>, %step: tensor<i64>,
    %w1: tensor<1024x512xf32>, %g1: tensor<1024x512xbf16>, %m1: tensor<1024x512xf32>, %v1: tensor<1024x512xf32>,
    %w2: tensor<512x1024xf32>, %g2: tensor<512x1024xbf16>, %m2: tensor<512x1024xf32>, %v2: tensor<512x1024xf32>,
    %w3: tensor<96x160xf32>, %g3: tensor<96x160xbf16>, %m3: tensor<96x160xf32>, %v3: tensor<96x160xf32>)
    -> (tensor<1024x512xf32>, tensor<1024x512xf32>, tensor<1024x512xf32>,
        !te.qtensor<1024x512xf32, #te.mxfp8<e4m3>, rowwise|columnwise>,
        tensor<512x1024xf32>, tensor<512x1024xf32>, tensor<512x1024xf32>,
        !te.qtensor<512x1024xf32, #te.mxfp8<e4m3>, rowwise|columnwise>,
        tensor<96x160xf32>, tensor<96x160xf32>, tensor<96x160xf32>,
        !te.qtensor<96x160xf32, #te.mxfp8<e4m3>, rowwise|columnwise>) {
  %p1, %n1, %s1 = te.adam_step %w1, %g1, %m1, %v1, %lr, %step
      {beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8, weight_decay = 0.1, mode = adamw}
      : tensor<1024x512xf32>, tensor<1024x512xbf16>, tensor<1024x512xf32>, tensor<1024x512xf32>, tensor<f32>, tensor<i64>
      -> tensor<1024x512xf32>, tensor<1024x512xf32>, tensor<1024x512xf32>
  %q1 = te.quantize %p1 : tensor<1024x512xf32> -> !te.qtensor<1024x512xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
  %p2, %n2, %s2 = te.adam_step %w2, %g2, %m2, %v2, %lr, %step
      {beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8, weight_decay = 0.1, mode = adamw}
      : tensor<512x1024xf32>, tensor<512x1024xbf16>, tensor<512x1024xf32>, tensor<512x1024xf32>, tensor<f32>, tensor<i64>
      -> tensor<512x1024xf32>, tensor<512x1024xf32>, tensor<512x1024xf32>
  %q2 = te.quantize %p2 : tensor<512x1024xf32> -> !te.qtensor<512x1024xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
  %p3, %n3, %s3 = te.adam_step %w3, %g3, %m3, %v3, %lr, %step
      {beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8, weight_decay = 0.1, mode = adamw}
      : tensor<96x160xf32>, tensor<96x160xbf16>, tensor<96x160xf32>, tensor<96x160xf32>, tensor<f32>, tensor<i64>
      -> tensor<96x160xf32>, tensor<96x160xf32>, tensor<96x160xf32>
  %q3 = te.quantize %p3 : tensor<96x160xf32> -> !te.qtensor<96x160xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
  return %p1, %n1, %s1, %q1, %p2, %n2, %s2, %q2, %p3, %n3, %s3, %q3
      : tensor<1024x512xf32>, tensor<1024x512xf32>, tensor<1024x512xf32>,
        !te.qtensor<1024x512xf32, #te.mxfp8<e4m3>, rowwise|columnwise>,
        tensor<512x1024xf32>, tensor<512x1024xf32>, tensor<512x1024xf32>,
        !te.qtensor<512x1024xf32, #te.mxfp8<e4m3>, rowwise|columnwise>,
        tensor<96x160xf32>, tensor<96x160xf32>, tensor<96x160xf32>,
        !te.qtensor<96x160xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
}
