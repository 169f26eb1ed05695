// A layer that changes its recipe for the last part of training: NVFP4
// first, MXFP8 at the end (an open item of TransformerEngine's hybrid
// quantization work). The weight lives only in quantized form next to its
// FP32 master, as in examples/quantized_weight_adamw.mlir; the layer is
// named, so a session can give it another recipe of the module:
//
//   te-run examples/recipe_switch.mlir --random-inputs 1 \
//     --entry init,train_step,optimizer_step,train_step,optimizer_step,train_step \
//     --switch-recipe 4:fc1=mxfp8
//
// Before call 4 the module is compiled again with fc1 on @mxfp8: every
// declaration of the persistent weight fc1.weight becomes MXFP8, and the
// stored NVFP4 weight is re-quantized from fc1.master (the tensor @init and
// @optimizer_step quantize it from), so no call reads a stale weight or one
// in the old format. In C++: api::CompileOptions::layerRecipes and
// Session::switchModule (docs/Guide.md §7.2).

te.recipe @nvfp4 {
  te.rule "*", "*" -> #te.nvfp4<>
}
te.recipe @mxfp8 {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

func.func @init(%master: tensor<1024x512xf32> {te.persistent = "fc1.master"})
    -> (!te.qtensor<1024x512xf32, #te.nvfp4<>, rowwise|columnwise> {te.persistent = "fc1.weight"}) {
  %q = te.quantize %master : tensor<1024x512xf32> -> !te.qtensor<1024x512xf32, #te.nvfp4<>, rowwise|columnwise>
  return %q : !te.qtensor<1024x512xf32, #te.nvfp4<>, rowwise|columnwise>
}

// y = x W^T; dx = dy W, dW = dy^T x, with W the stored weight.
func.func @train_step(%x: tensor<256x512xbf16>, %dy: tensor<256x1024xbf16>,
    %w: !te.qtensor<1024x512xf32, #te.nvfp4<>, rowwise|columnwise> {te.persistent = "fc1.weight"})
    -> (tensor<256x1024xbf16>, tensor<256x512xbf16>, tensor<1024x512xf32> {te.persistent = "fc1.grad"}) {
  %y = te.linear %x, %w {recipe = @nvfp4, layer = "fc1"}
      : tensor<256x512xbf16>, !te.qtensor<1024x512xf32, #te.nvfp4<>, rowwise|columnwise>
      -> tensor<256x1024xbf16>
  %dx, %dw = te.linear_grad %dy, %x, %w {recipe = @nvfp4, layer = "fc1"}
      : tensor<256x1024xbf16>, tensor<256x512xbf16>, !te.qtensor<1024x512xf32, #te.nvfp4<>, rowwise|columnwise>
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
        !te.qtensor<1024x512xf32, #te.nvfp4<>, rowwise|columnwise> {te.persistent = "fc1.weight"}) {
  %p1, %m1, %v1 = te.adam_step %p, %g, %m, %v, %lr, %step
      {beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8, weight_decay = 0.1, mode = adamw}
      : tensor<1024x512xf32>, tensor<1024x512xf32>, tensor<1024x512xf32>, tensor<1024x512xf32>, tensor<f32>, tensor<i64>
      -> tensor<1024x512xf32>, tensor<1024x512xf32>, tensor<1024x512xf32>
  %q = te.quantize %p1 : tensor<1024x512xf32> -> !te.qtensor<1024x512xf32, #te.nvfp4<>, rowwise|columnwise>
  return %p1, %m1, %v1, %q : tensor<1024x512xf32>, tensor<1024x512xf32>, tensor<1024x512xf32>,
      !te.qtensor<1024x512xf32, #te.nvfp4<>, rowwise|columnwise>
}
