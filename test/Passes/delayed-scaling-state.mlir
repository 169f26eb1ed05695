// RUN: te-opt %s -split-input-file --te-resolve-recipe --te-expand-linear | FileCheck %s --check-prefix=EXPAND
// RUN: te-opt %s -split-input-file --te-resolve-recipe --te-expand-linear --te-infer-usage --te-fuse-quantize | FileCheck %s --check-prefix=FUSE
// RUN: te-opt %s -split-input-file --te-to-cuda | FileCheck %s --check-prefix=KERNELS

// Tests how delayed-scaling states are named and kept apart through the
// pipeline: te-expand-linear names each role's state after the layer,
// te-fuse-quantize merges only quantizations of one type and one state,
// te-fuse-optimizer leaves a delayed quantization of the new weight on its
// own, and te-lower-to-kernels gives every stage its state (a hybrid of two
// delayed schemes: one per direction).

te.recipe @delayed {
  te.rule "linear", "grad_output" -> #te.fp8_delayed<e5m2, history = 16>
  te.rule "linear", "*" -> #te.fp8_delayed<e4m3, history = 16>
}
// EXPAND-LABEL: func.func @two_layers
// EXPAND: te.quantize %arg0 {scaling_state = "fc1.input.delayed_scaling"}
// EXPAND: te.quantize %arg1 {scaling_state = "fc1.weight.delayed_scaling"}
// EXPAND: te.quantize %arg0 {scaling_state = "fc2.input.delayed_scaling"}
// EXPAND: te.quantize %arg2 {scaling_state = "fc2.weight.delayed_scaling"}
// EXPAND: te.quantize %arg3 {scaling_state = "fc1.grad_output.delayed_scaling"}
// EXPAND: te.quantize %arg1 {scaling_state = "fc1.weight.delayed_scaling"}
// EXPAND: te.quantize %arg0 {scaling_state = "fc1.input.delayed_scaling"}
// x feeds two layers: one read of x writes both layers' states' casts,
// which stay two results although their types are equal.
// FUSE-LABEL: func.func @two_layers
// FUSE: te.fused_quantize %arg0 {scaling_states = ["fc1.input.delayed_scaling", "fc2.input.delayed_scaling", "fc1.input.delayed_scaling"]}
// FUSE: te.fused_quantize %arg1 {scaling_states = ["fc1.weight.delayed_scaling", "fc1.weight.delayed_scaling"]}
// FUSE: te.quantize %arg3 {scaling_state = "fc1.grad_output.delayed_scaling"}
// KERNELS-LABEL: func.func @two_layers
// KERNELS: tek.quantize_kernel {{.*}} %arg0 {{.*}}stages = [#tek.stage<0, rowwise, "fc1.input.delayed_scaling">, #tek.stage<1, rowwise, "fc2.input.delayed_scaling">, #tek.stage<2, columnwise, "fc1.input.delayed_scaling">]
func.func @two_layers(%x: tensor<128x128xbf16>, %w1: tensor<64x128xbf16>,
                      %w2: tensor<32x128xbf16>, %dy: tensor<128x64xbf16>)
    -> (tensor<128x64xbf16>, tensor<128x32xbf16>, tensor<128x128xbf16>, tensor<64x128xf32>) {
  %y1 = te.linear %x, %w1 {recipe = @delayed, layer = "fc1"} : tensor<128x128xbf16>, tensor<64x128xbf16> -> tensor<128x64xbf16>
  %y2 = te.linear %x, %w2 {recipe = @delayed, layer = "fc2"} : tensor<128x128xbf16>, tensor<32x128xbf16> -> tensor<128x32xbf16>
  %dx, %dw = te.linear_grad %dy, %x, %w1 {recipe = @delayed, layer = "fc1"} : tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xbf16> -> tensor<128x128xbf16>, tensor<64x128xf32>
  return %y1, %y2, %dx, %dw : tensor<128x64xbf16>, tensor<128x32xbf16>, tensor<128x128xbf16>, tensor<64x128xf32>
}

// -----

// FUSE-LABEL: func.func @requantize_after_adam
// KERNELS-LABEL: func.func @requantize_after_adam
// KERNELS: tek.adam_kernel
// KERNELS: tek.quantize_kernel {{.*}}stages = [#tek.stage<0, rowwise, "w.delayed_scaling">]
func.func @requantize_after_adam(%lr: tensor<f32>, %step: tensor<i64>, %w: tensor<64x128xf32>,
    %g: tensor<64x128xbf16>, %m: tensor<64x128xf32>, %v: tensor<64x128xf32>)
    -> (tensor<64x128xf32>, !te.qtensor<64x128xf32, #te.fp8_delayed<e4m3>, rowwise>) {
  %p, %m1, %v1 = te.adam_step %w, %g, %m, %v, %lr, %step
      {beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8, weight_decay = 0.1, mode = adamw}
      : tensor<64x128xf32>, tensor<64x128xbf16>, tensor<64x128xf32>, tensor<64x128xf32>, tensor<f32>, tensor<i64>
      -> tensor<64x128xf32>, tensor<64x128xf32>, tensor<64x128xf32>
  %q = te.quantize %p {scaling_state = "w.delayed_scaling"} : tensor<64x128xf32> -> !te.qtensor<64x128xf32, #te.fp8_delayed<e4m3>, rowwise>
  return %p, %q : tensor<64x128xf32>, !te.qtensor<64x128xf32, #te.fp8_delayed<e4m3>, rowwise>
}

// -----

// KERNELS-LABEL: func.func @hybrid_two_quantizers
// KERNELS: stages = [#tek.stage<0, rowwise, "x.delayed_scaling.rowwise">, #tek.stage<0, columnwise, "x.delayed_scaling.columnwise">]
func.func @hybrid_two_quantizers(%x: tensor<64x128xbf16>)
    -> !te.qtensor<64x128xbf16, #te.hybrid<rowwise = #te.fp8_delayed<e4m3>, columnwise = #te.fp8_delayed<e5m2>>, rowwise|columnwise> {
  %q = te.quantize %x {scaling_state = "x.delayed_scaling"} : tensor<64x128xbf16>
      -> !te.qtensor<64x128xbf16, #te.hybrid<rowwise = #te.fp8_delayed<e4m3>, columnwise = #te.fp8_delayed<e5m2>>, rowwise|columnwise>
  return %q : !te.qtensor<64x128xbf16, #te.hybrid<rowwise = #te.fp8_delayed<e4m3>, columnwise = #te.fp8_delayed<e5m2>>, rowwise|columnwise>
}
