// A linear layer trained in a loop under FP8 delayed scaling, the classic
// TransformerEngine recipe, with its state kept by the runtime: each of the
// layer's quantized roles casts with the scale its amax history gave, its
// casts record this step's amax, and when the step ends the history rolls
// and the next scale is computed on the device (docs/Numerics.md §4).
// The layer's name keys the state: fc1.input.delayed_scaling,
// fc1.weight.delayed_scaling and fc1.grad_output.delayed_scaling, shared by
// te.linear and te.linear_grad and kept between calls like the master
// weight and moments (te.persistent).
//
//   te-run examples/delayed_scaling_loop.mlir --random-inputs 1 --steps 8
//
// prints each state's scale after every step: the weight's follows the
// amax of the master weight AdamW moves (history of 16 steps, max).

te.recipe @fp8_delayed {
  te.rule "linear", "grad_output" -> #te.fp8_delayed<e5m2, history = 16>
  te.rule "linear", "*"           -> #te.fp8_delayed<e4m3, history = 16>
}

func.func @train_step(%x: tensor<256x512xbf16>, %dy: tensor<256x1024xbf16>,
    %lr: tensor<f32>, %step: tensor<i64>,
    %w: tensor<1024x512xf32> {te.persistent = "fc1.master"},
    %m: tensor<1024x512xf32> {te.persistent = "fc1.exp_avg"},
    %v: tensor<1024x512xf32> {te.persistent = "fc1.exp_avg_sq"})
    -> (tensor<256x1024xbf16>, tensor<256x512xbf16>,
        tensor<1024x512xf32> {te.persistent = "fc1.master"},
        tensor<1024x512xf32> {te.persistent = "fc1.exp_avg"},
        tensor<1024x512xf32> {te.persistent = "fc1.exp_avg_sq"}) {
  %y = te.linear %x, %w {recipe = @fp8_delayed, layer = "fc1"}
      : tensor<256x512xbf16>, tensor<1024x512xf32> -> tensor<256x1024xbf16>
  %dx, %dw = te.linear_grad %dy, %x, %w {recipe = @fp8_delayed, layer = "fc1"}
      : tensor<256x1024xbf16>, tensor<256x512xbf16>, tensor<1024x512xf32>
      -> tensor<256x512xbf16>, tensor<1024x512xf32>
  %p1, %m1, %v1 = te.adam_step %w, %dw, %m, %v, %lr, %step
      {beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8, weight_decay = 0.1, mode = adamw}
      : tensor<1024x512xf32>, tensor<1024x512xf32>, tensor<1024x512xf32>,
        tensor<1024x512xf32>, tensor<f32>, tensor<i64>
      -> tensor<1024x512xf32>, tensor<1024x512xf32>, tensor<1024x512xf32>
  return %y, %dx, %p1, %m1, %v1
      : tensor<256x1024xbf16>, tensor<256x512xbf16>, tensor<1024x512xf32>,
        tensor<1024x512xf32>, tensor<1024x512xf32>
}
