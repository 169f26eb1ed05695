// A layer whose weight lives only in quantized form, next to its FP32
// master (TransformerEngine's quantized model init, `fp8_model_init`): no
// bf16 copy of the weight exists. The persistent values:
//   fc1.master, fc1.exp_avg, fc1.exp_avg_sq  FP32 master weight and moments
//   fc1.weight                               the MXFP8 weight, both directions
//   fc1.grad                                 the FP32 weight gradient
// @init quantizes the master once. @train_step runs te.linear and
// te.linear_grad on the quantized weight itself: te-expand-linear reads it
// as stored - rowwise for fprop, columnwise for dgrad - and quantizes only
// x and dy; the gradient has the weight's high-precision type (f32, the
// element type of the !te.qtensor). The weight's scheme must match the
// recipe's ("linear", "weight") rule in each direction read. @optimizer_step
// updates the master and moments and requantizes the weight, all in one
// fused kernel (te.adam_step + te.quantize -> te.fused_adam).
//
//   te-opt examples/quantized_weight_adamw.mlir --te-to-cuda
//   te-run examples/quantized_weight_adamw.mlir --random-inputs 1 \
//     --entry init,train_step,optimizer_step,train_step

te.recipe @mxfp8 {
  te.rule "linear", "weight" -> #te.mxfp8<e4m3>
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

func.func @init(%master: tensor<1024x512xf32> {te.persistent = "fc1.master"})
    -> (!te.qtensor<1024x512xf32, #te.mxfp8<e4m3>, rowwise|columnwise> {te.persistent = "fc1.weight"}) {
  %q = te.quantize %master : tensor<1024x512xf32> -> !te.qtensor<1024x512xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
  return %q : !te.qtensor<1024x512xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
}

// y = x W^T; dx = dy W, dW = dy^T x, with W the stored MXFP8 weight.
func.func @train_step(%x: tensor<256x512xbf16>, %dy: tensor<256x1024xbf16>,
    %w: !te.qtensor<1024x512xf32, #te.mxfp8<e4m3>, rowwise|columnwise> {te.persistent = "fc1.weight"})
    -> (tensor<256x1024xbf16>, tensor<256x512xbf16>, tensor<1024x512xf32> {te.persistent = "fc1.grad"}) {
  %y = te.linear %x, %w {recipe = @mxfp8}
      : tensor<256x512xbf16>, !te.qtensor<1024x512xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
      -> tensor<256x1024xbf16>
  %dx, %dw = te.linear_grad %dy, %x, %w {recipe = @mxfp8}
      : tensor<256x1024xbf16>, tensor<256x512xbf16>, !te.qtensor<1024x512xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
      -> tensor<256x512xbf16>, tensor<1024x512xf32>
  return %y, %dx, %dw : tensor<256x1024xbf16>, tensor<256x512xbf16>, tensor<1024x512xf32>
}

func.func @optimizer_step(%lr: tensor<f32>, %step: tensor<i64>,
    %p: tensor<1024x512xf32> {te.persistent = "fc1.master"},
    %g: tensor<1024x512xf32> {te.persistent = "fc1.grad"},
    %m: tensor<1024x512xf32> {te.persistent = "fc1.exp_avg"},
    %v: tensor<1024x512xf32> {te.persistent = "fc1.exp_avg_sq"})
    -> (tensor<1024x512xf32> {te.persistent = "fc1.master"},
        tensor<1024x512xf32> {te.persistent = "fc1.exp_avg"},
        tensor<1024x512xf32> {te.persistent = "fc1.exp_avg_sq"},
        !te.qtensor<1024x512xf32, #te.mxfp8<e4m3>, rowwise|columnwise> {te.persistent = "fc1.weight"}) {
  %p1, %m1, %v1 = te.adam_step %p, %g, %m, %v, %lr, %step
      {beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8, weight_decay = 0.1, mode = adamw}
      : tensor<1024x512xf32>, tensor<1024x512xf32>, tensor<1024x512xf32>, tensor<1024x512xf32>, tensor<f32>, tensor<i64>
      -> tensor<1024x512xf32>, tensor<1024x512xf32>, tensor<1024x512xf32>
  %q = te.quantize %p1 : tensor<1024x512xf32> -> !te.qtensor<1024x512xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
  return %p1, %m1, %v1, %q : tensor<1024x512xf32>, tensor<1024x512xf32>, tensor<1024x512xf32>,
      !te.qtensor<1024x512xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
}
