// RUN: te-opt %s --te-resolve-recipe --te-expand-linear --split-input-file | FileCheck %s
// RUN: te-opt %s --te-resolve-recipe --te-expand-linear --split-input-file | te-opt --split-input-file | FileCheck %s
// RUN: te-opt %s --te-resolve-recipe --te-expand-linear --te-infer-usage --split-input-file | FileCheck %s --check-prefix=USAGE

// Tests quantized primary weights (TransformerEngine's quantized model
// init): a !te.qtensor weight is read by the layer's GEMMs as stored - no
// te.quantize of W - in the directions each GEMM contracts, and its
// gradient has the high-precision shape of the tensor it quantizes.

te.recipe @mxfp8 {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// fprop reads the stored W rowwise; only x is quantized.
// CHECK-LABEL: func.func @fprop
// CHECK: %[[X:.*]] = te.quantize %arg0 : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>
// CHECK-NOT: te.quantize
// CHECK: %[[Y:.*]] = te.gemm %[[X]], %arg1 bias %arg2 {transpose_b} : !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>, !te.qtensor<64x128xbf16, #te.mxfp8<e4m3>, rowwise>, tensor<64xbf16> -> tensor<256x64xbf16>
// CHECK: return %[[Y]]
func.func @fprop(%x: tensor<256x128xbf16>, %w: !te.qtensor<64x128xbf16, #te.mxfp8<e4m3>, rowwise>, %b: tensor<64xbf16>) -> tensor<256x64xbf16> {
  %y = te.linear %x, %w bias %b {recipe = @mxfp8} : tensor<256x128xbf16>, !te.qtensor<64x128xbf16, #te.mxfp8<e4m3>, rowwise>, tensor<64xbf16> -> tensor<256x64xbf16>
  return %y : tensor<256x64xbf16>
}

// -----

te.recipe @hybrid {
  te.rule "linear", "weight" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>
  te.rule "linear", "grad_output" -> #te.nvfp4<rht, sr>
  te.rule "*", "*" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<rht>>
}

// dgrad reads the stored W columnwise (NVFP4 of the hybrid); wgrad does not
// read W and yields dW of the weight's [out, in] shape, here in f32.
// CHECK-LABEL: func.func @backward
// CHECK: %[[DY:.*]] = te.quantize %arg0 : tensor<256x64xbf16> -> !te.qtensor<256x64xbf16, #te.nvfp4<rht, sr>, rowwise|columnwise>
// CHECK: %[[X:.*]] = te.quantize %arg1 : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<rht>>, columnwise>
// CHECK-NOT: te.quantize
// CHECK: %[[DX:.*]] = te.gemm %[[DY]], %arg2 : !te.qtensor<256x64xbf16, #te.nvfp4<rht, sr>, rowwise|columnwise>, !te.qtensor<64x128xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise> -> tensor<256x128xbf16>
// CHECK: %[[DW:.*]] = te.gemm %[[DY]], %[[X]] {transpose_a} : {{.*}} -> tensor<64x128xf32>
// CHECK: %[[DB:.*]] = te.bias_grad %arg0
// CHECK: return %[[DX]], %[[DW]], %[[DB]]
func.func @backward(%dy: tensor<256x64xbf16>, %x: tensor<256x128xbf16>,
    %w: !te.qtensor<64x128xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise>)
    -> (tensor<256x128xbf16>, tensor<64x128xf32>, tensor<64xf32>) {
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @hybrid, bias}
      : tensor<256x64xbf16>, tensor<256x128xbf16>, !te.qtensor<64x128xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise>
      -> tensor<256x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
  return %dx, %dw, %db : tensor<256x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
}

// -----

te.recipe @fp8 {
  te.rule "linear", "weight" -> #te.fp8_current<e4m3>
  te.rule "linear", "grad_output" -> #te.fp8_current<e5m2>
  te.rule "*", "*" -> #te.fp8_current<e4m3>
}

// A persistent quantized weight with an FP32 master: the evaluation step
// declares it rowwise, the training step rowwise|columnwise, the optimizer
// step writes it rowwise. te-infer-usage widens every declaration - and the
// optimizer's te.quantize - to what every function reads, so the stored
// weight keeps the columnwise data dgrad needs. The gradient is of the
// weight's element type, f32 here.
// CHECK-LABEL: func.func @eval_step
// CHECK: te.gemm %{{.*}}, %arg1 {transpose_b}
// USAGE-LABEL: func.func @eval_step
// USAGE-SAME: !te.qtensor<32x64xf32, #te.fp8_current<e4m3>, rowwise|columnwise> {te.persistent = "fc1.weight"}
func.func @eval_step(%x: tensor<128x64xbf16>, %w: !te.qtensor<32x64xf32, #te.fp8_current<e4m3>, rowwise> {te.persistent = "fc1.weight"}) -> tensor<128x32xbf16> {
  %y = te.linear %x, %w {recipe = @fp8} : tensor<128x64xbf16>, !te.qtensor<32x64xf32, #te.fp8_current<e4m3>, rowwise> -> tensor<128x32xbf16>
  return %y : tensor<128x32xbf16>
}

// CHECK-LABEL: func.func @train_step
// CHECK: te.gemm %{{.*}}, %arg1 {transpose_b}
// CHECK: te.gemm %{{.*}}, %arg1 :
// CHECK: te.gemm %{{.*}}, %{{.*}} {transpose_a} : {{.*}} -> tensor<32x64xf32>
// USAGE-LABEL: func.func @train_step
func.func @train_step(%x: tensor<128x64xbf16>,
    %w: !te.qtensor<32x64xf32, #te.fp8_current<e4m3>, rowwise|columnwise> {te.persistent = "fc1.weight"},
    %dy: tensor<128x32xbf16>)
    -> (tensor<128x32xbf16>, tensor<32x64xf32> {te.persistent = "fc1.grad"}) {
  %y = te.linear %x, %w {recipe = @fp8} : tensor<128x64xbf16>, !te.qtensor<32x64xf32, #te.fp8_current<e4m3>, rowwise|columnwise> -> tensor<128x32xbf16>
  %dx, %dw = te.linear_grad %dy, %x, %w {recipe = @fp8}
      : tensor<128x32xbf16>, tensor<128x64xbf16>, !te.qtensor<32x64xf32, #te.fp8_current<e4m3>, rowwise|columnwise>
      -> tensor<128x64xbf16>, tensor<32x64xf32>
  return %y, %dw : tensor<128x32xbf16>, tensor<32x64xf32>
}

// USAGE-LABEL: func.func @optimizer_step
// USAGE-SAME: !te.qtensor<32x64xf32, #te.fp8_current<e4m3>, rowwise|columnwise> {te.persistent = "fc1.weight"})
// USAGE: te.quantize %{{.*}} : tensor<32x64xf32> -> !te.qtensor<32x64xf32, #te.fp8_current<e4m3>, rowwise|columnwise>
func.func @optimizer_step(%lr: tensor<f32>, %step: tensor<i64>,
    %p: tensor<32x64xf32> {te.persistent = "fc1.master"},
    %g: tensor<32x64xf32> {te.persistent = "fc1.grad"},
    %m: tensor<32x64xf32> {te.persistent = "fc1.m"},
    %v: tensor<32x64xf32> {te.persistent = "fc1.v"})
    -> (tensor<32x64xf32> {te.persistent = "fc1.master"}, tensor<32x64xf32> {te.persistent = "fc1.m"},
        tensor<32x64xf32> {te.persistent = "fc1.v"},
        !te.qtensor<32x64xf32, #te.fp8_current<e4m3>, rowwise> {te.persistent = "fc1.weight"}) {
  %p1, %m1, %v1 = te.adam_step %p, %g, %m, %v, %lr, %step
      {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.01, mode = adamw}
      : tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<f32>, tensor<i64>
      -> tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>
  %q = te.quantize %p1 : tensor<32x64xf32> -> !te.qtensor<32x64xf32, #te.fp8_current<e4m3>, rowwise>
  return %p1, %m1, %v1, %q : tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, !te.qtensor<32x64xf32, #te.fp8_current<e4m3>, rowwise>
}
