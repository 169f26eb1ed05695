// One layer trained in a loop with its state kept by the runtime between
// calls. Four functions share the persistent values, named by
// te.persistent on their arguments and results:
//   fc1.master, fc1.exp_avg, fc1.exp_avg_sq  FP32 master weight and moments
//   fc1.weight                               the MXFP8 weight the GEMMs read
//   fc1.grad                                 the FP32 weight gradient
// @init quantizes the master weight once; @train_step reads the weight
// rowwise (fprop) and columnwise (dgrad) and writes the gradient;
// @optimizer_step updates the master and moments in place and requantizes
// the weight; @eval_step reads the weight rowwise only.
//
// @optimizer_step and @eval_step declare the weight rowwise only, as code
// written from the inference side would: the runtime stores one copy of it,
// so te-infer-usage gives every declaration the union of the directions any
// function lists, and the optimizer writes the columnwise data the next
// training step reads. An eval step can no longer leave the weight without
// it (the alternating train/eval bug class).
//
//   te-run examples/train_loop_mxfp8.mlir --random-inputs 1 --check \
//     --entry init,train_step,optimizer_step,eval_step,train_step,optimizer_step,eval_step,train_step

func.func @init(%master: tensor<1024x512xf32> {te.persistent = "fc1.master"})
    -> (!te.qtensor<1024x512xf32, #te.mxfp8<e4m3>, rowwise|columnwise> {te.persistent = "fc1.weight"}) {
  %q = te.quantize %master : tensor<1024x512xf32> -> !te.qtensor<1024x512xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
  return %q : !te.qtensor<1024x512xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
}

// y = x W^T, dx = dy W, dW = dy^T x.
func.func @train_step(%x: tensor<256x512xbf16>, %dy: tensor<256x1024xbf16>,
    %w: !te.qtensor<1024x512xf32, #te.mxfp8<e4m3>, rowwise|columnwise> {te.persistent = "fc1.weight"})
    -> (tensor<256x1024xbf16>, tensor<256x512xbf16>, tensor<1024x512xf32> {te.persistent = "fc1.grad"}) {
  %qx = te.quantize %x : tensor<256x512xbf16> -> !te.qtensor<256x512xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>
  %qdy = te.quantize %dy : tensor<256x1024xbf16> -> !te.qtensor<256x1024xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>
  %y = te.gemm %qx, %w {transpose_b}
      : !te.qtensor<256x512xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>,
        !te.qtensor<1024x512xf32, #te.mxfp8<e4m3>, rowwise|columnwise> -> tensor<256x1024xbf16>
  %dx = te.gemm %qdy, %w
      : !te.qtensor<256x1024xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>,
        !te.qtensor<1024x512xf32, #te.mxfp8<e4m3>, rowwise|columnwise> -> tensor<256x512xbf16>
  %dw = te.gemm %qdy, %qx {transpose_a}
      : !te.qtensor<256x1024xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>,
        !te.qtensor<256x512xbf16, #te.mxfp8<e4m3>, rowwise|columnwise> -> tensor<1024x512xf32>
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
        !te.qtensor<1024x512xf32, #te.mxfp8<e4m3>, rowwise> {te.persistent = "fc1.weight"}) {
  %p1, %m1, %v1 = te.adam_step %p, %g, %m, %v, %lr, %step
      {beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8, weight_decay = 0.1, mode = adamw}
      : tensor<1024x512xf32>, tensor<1024x512xf32>, tensor<1024x512xf32>, tensor<1024x512xf32>, tensor<f32>, tensor<i64>
      -> tensor<1024x512xf32>, tensor<1024x512xf32>, tensor<1024x512xf32>
  %q = te.quantize %p1 : tensor<1024x512xf32> -> !te.qtensor<1024x512xf32, #te.mxfp8<e4m3>, rowwise>
  return %p1, %m1, %v1, %q : tensor<1024x512xf32>, tensor<1024x512xf32>, tensor<1024x512xf32>,
      !te.qtensor<1024x512xf32, #te.mxfp8<e4m3>, rowwise>
}

func.func @eval_step(%x: tensor<256x512xbf16>,
    %w: !te.qtensor<1024x512xf32, #te.mxfp8<e4m3>, rowwise> {te.persistent = "fc1.weight"})
    -> tensor<256x1024xbf16> {
  %qx = te.quantize %x : tensor<256x512xbf16> -> !te.qtensor<256x512xbf16, #te.mxfp8<e4m3>, rowwise>
  %y = te.gemm %qx, %w {transpose_b}
      : !te.qtensor<256x512xbf16, #te.mxfp8<e4m3>, rowwise>,
        !te.qtensor<1024x512xf32, #te.mxfp8<e4m3>, rowwise> -> tensor<256x1024xbf16>
  return %y : tensor<256x1024xbf16>
}
