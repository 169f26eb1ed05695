// RUN: te-opt %s --te-infer-usage=report --split-input-file -verify-diagnostics | FileCheck %s

// Tests that a persistent quantized value (a !te.qtensor argument or result
// marked te.persistent) is stored with the union of the directions every
// declaration lists: the optimizer writes, and the eval step's argument
// holds, the columnwise data the training step reads.

// CHECK-LABEL: func.func @optimizer
// CHECK-SAME: -> (tensor<64x128xf32> {te.persistent = "w.master"}, !te.qtensor<64x128xf32, #te.mxfp8<e4m3>, rowwise|columnwise> {te.persistent = "w"})
// CHECK: te.quantize %{{.*}} : tensor<64x128xf32> -> !te.qtensor<64x128xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
func.func @optimizer(%lr: tensor<f32>, %step: tensor<i64>, %p: tensor<64x128xf32> {te.persistent = "w.master"},
    %g: tensor<64x128xbf16>, %m: tensor<64x128xf32>, %v: tensor<64x128xf32>)
    -> (tensor<64x128xf32> {te.persistent = "w.master"}, !te.qtensor<64x128xf32, #te.mxfp8<e4m3>, rowwise> {te.persistent = "w"}) {
  %p1, %m1, %v1 = te.adam_step %p, %g, %m, %v, %lr, %step
      {beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8, weight_decay = 0.1, mode = adamw}
      : tensor<64x128xf32>, tensor<64x128xbf16>, tensor<64x128xf32>, tensor<64x128xf32>, tensor<f32>, tensor<i64>
      -> tensor<64x128xf32>, tensor<64x128xf32>, tensor<64x128xf32>
  // expected-remark @+1 {{te-infer-usage: writing rowwise|columnwise, adding columnwise (another function reads the persistent 'w')}}
  %q = te.quantize %p1 : tensor<64x128xf32> -> !te.qtensor<64x128xf32, #te.mxfp8<e4m3>, rowwise>
  return %p1, %q : tensor<64x128xf32>, !te.qtensor<64x128xf32, #te.mxfp8<e4m3>, rowwise>
}

// CHECK-LABEL: func.func @eval
// CHECK-SAME: %arg1: !te.qtensor<64x128xf32, #te.mxfp8<e4m3>, rowwise|columnwise> {te.persistent = "w"}
// CHECK: te.gemm %{{.*}}, %arg1 {transpose_b}
func.func @eval(%x: tensor<32x128xbf16>,
    // expected-remark @+1 {{te-infer-usage: argument 1 of 'eval' holds rowwise|columnwise of the persistent 'w' (another function declares columnwise)}}
    %w: !te.qtensor<64x128xf32, #te.mxfp8<e4m3>, rowwise> {te.persistent = "w"}) -> tensor<32x64xbf16> {
  %qx = te.quantize %x : tensor<32x128xbf16> -> !te.qtensor<32x128xbf16, #te.mxfp8<e4m3>, rowwise>
  %y = te.gemm %qx, %w {transpose_b}
      : !te.qtensor<32x128xbf16, #te.mxfp8<e4m3>, rowwise>, !te.qtensor<64x128xf32, #te.mxfp8<e4m3>, rowwise> -> tensor<32x64xbf16>
  return %y : tensor<32x64xbf16>
}

// The training step's declaration already holds both directions.
// CHECK-LABEL: func.func @train
// CHECK-SAME: %arg1: !te.qtensor<64x128xf32, #te.mxfp8<e4m3>, rowwise|columnwise> {te.persistent = "w"}
func.func @train(%dy: tensor<32x64xbf16>,
    %w: !te.qtensor<64x128xf32, #te.mxfp8<e4m3>, rowwise|columnwise> {te.persistent = "w"}) -> tensor<32x128xbf16> {
  %qdy = te.quantize %dy : tensor<32x64xbf16> -> !te.qtensor<32x64xbf16, #te.mxfp8<e4m3>, rowwise>
  %dx = te.gemm %qdy, %w
      : !te.qtensor<32x64xbf16, #te.mxfp8<e4m3>, rowwise>, !te.qtensor<64x128xf32, #te.mxfp8<e4m3>, rowwise|columnwise> -> tensor<32x128xbf16>
  return %dx : tensor<32x128xbf16>
}

// -----

// Declarations of one persistent value agree on shape, element type and scheme.
func.func @writer(%p: tensor<64x128xf32>) -> (!te.qtensor<64x128xf32, #te.mxfp8<e4m3>, rowwise> {te.persistent = "w"}) {
  %q = te.quantize %p : tensor<64x128xf32> -> !te.qtensor<64x128xf32, #te.mxfp8<e4m3>, rowwise>
  return %q : !te.qtensor<64x128xf32, #te.mxfp8<e4m3>, rowwise>
}

// expected-error @+1 {{persistent 'w' is '!te.qtensor<64x128xf32, #te.nvfp4<>, rowwise>' in argument 0 of 'reader' but '!te.qtensor<64x128xf32, #te.mxfp8<e4m3>, rowwise>' in result 0 of 'writer'}}
func.func @reader(%w: !te.qtensor<64x128xf32, #te.nvfp4<>, rowwise> {te.persistent = "w"}) {
  return
}

// -----

// A tensor and a quantized tensor cannot share a name.
func.func @a(%p: tensor<64x128xf32> {te.persistent = "w"}) {
  return
}

// expected-error @+1 {{persistent 'w' is 'tensor<64x128xbf16>' in argument 0 of 'b' but 'tensor<64x128xf32>' in argument 0 of 'a'}}
func.func @b(%p: tensor<64x128xbf16> {te.persistent = "w"}) {
  return
}

// -----

// A function that returns the stored value must write every direction the
// store holds; a value it did not quantize cannot gain one.
func.func @reads_both(%w: !te.qtensor<64x128xf32, #te.mxfp8<e4m3>, rowwise|columnwise> {te.persistent = "w"}) {
  return
}

func.func @passes_rowwise(%q: !te.qtensor<64x128xf32, #te.mxfp8<e4m3>, rowwise>)
    -> (!te.qtensor<64x128xf32, #te.mxfp8<e4m3>, rowwise> {te.persistent = "w"}) {
  // expected-error @+1 {{returns persistent 'w' holding rowwise, but it is stored with rowwise|columnwise (another function declares them); quantize it here with every direction}}
  return %q : !te.qtensor<64x128xf32, #te.mxfp8<e4m3>, rowwise>
}

// -----

// A function takes one stored value once.
func.func @twice(%a: tensor<64x128xf32> {te.persistent = "w"},
    // expected-error @+1 {{persistent 'w' is both argument 0 of 'twice' and argument 1 of 'twice': a function reads (and writes) one value once}}
    %b: tensor<64x128xf32> {te.persistent = "w"}) {
  return
}

// -----

// A declaration (no body) is checked like a definition; its errors point at
// the function.
func.func @defined(%a: tensor<64x128xf32> {te.persistent = "w"}) {
  return
}

// expected-error @+1 {{persistent 'w' is 'tensor<64x128xbf16>' in argument 0 of 'declared' but 'tensor<64x128xf32>' in argument 0 of 'defined'}}
func.func private @declared(tensor<64x128xbf16> {te.persistent = "w"})
