// RUN: te-opt %s -split-input-file -verify-diagnostics

// Tests every verifier error of the tek ops, one function each.

func.func @dynamic(%x: tensor<?x128xbf16>) {
  // expected-error @+1 {{'tek.quantize_kernel' op needs a statically shaped input of rank >= 1, got 'tensor<?x128xbf16>'}}
  %r = tek.quantize_kernel "k" %x {stages = [#tek.stage<0, rowwise>], grid = array<i64: 2, 1>, threads = 256 : i64, tile = array<i64: 128, 128>} : tensor<?x128xbf16> -> !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>
  return
}

// -----

func.func @element(%x: tensor<256x128xi8>) {
  // expected-error @+1 {{'tek.quantize_kernel' op quantizes bf16, f16 or f32 tensors, not 'i8'}}
  %r = tek.quantize_kernel "k" %x {stages = [#tek.stage<0, rowwise>], grid = array<i64: 2, 1>, threads = 256 : i64, tile = array<i64: 128, 128>} : tensor<256x128xi8> -> !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>
  return
}

// -----

func.func @tile(%x: tensor<256x128xbf16>) {
  // expected-error @+1 {{'tek.quantize_kernel' op tile must be [128, 128] (the device library's tile kernel)}}
  %r = tek.quantize_kernel "k" %x {stages = [#tek.stage<0, rowwise>], grid = array<i64: 2, 1>, threads = 256 : i64, tile = array<i64: 64, 64>} : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>
  return
}

// -----

func.func @grid(%x: tensor<256x128xbf16>) {
  // expected-error @+1 {{'tek.quantize_kernel' op grid must be [2, 1] tiles for a 256x128 input}}
  %r = tek.quantize_kernel "k" %x {stages = [#tek.stage<0, rowwise>], grid = array<i64: 1, 1>, threads = 256 : i64, tile = array<i64: 128, 128>} : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>
  return
}

// -----

func.func @threads(%x: tensor<256x128xbf16>) {
  // expected-error @+1 {{'tek.quantize_kernel' op threads must be 256 (the device library's block size), got 128}}
  %r = tek.quantize_kernel "k" %x {stages = [#tek.stage<0, rowwise>], grid = array<i64: 2, 1>, threads = 128 : i64, tile = array<i64: 128, 128>} : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>
  return
}

// -----

func.func @bias_type(%x: tensor<256x128xbf16>) {
  // expected-error @+1 {{'tek.quantize_kernel' op bias gradient must be tensor<128xf32>, got 'tensor<64xf32>'}}
  %r = tek.quantize_kernel "k" %x {bias_grad, stages = [], grid = array<i64: 2, 1>, threads = 256 : i64, tile = array<i64: 128, 128>} : tensor<256x128xbf16> -> tensor<64xf32>
  return
}

// -----

func.func @bias_missing(%x: tensor<256x128xbf16>) {
  // expected-error @+1 {{'tek.quantize_kernel' op with bias_grad needs the bias gradient as its last result}}
  "tek.quantize_kernel"(%x) <{bias_grad, kernel_name = "k", stages = [], grid = array<i64: 2, 1>, threads = 256 : i64, tile = array<i64: 128, 128>}> : (tensor<256x128xbf16>) -> ()
  return
}

// -----

func.func @not_qtensor(%x: tensor<256x128xbf16>) {
  // expected-error @+1 {{'tek.quantize_kernel' op result 0 must be a !te.qtensor, got 'tensor<256x128xbf16>'}}
  %r = tek.quantize_kernel "k" %x {stages = [#tek.stage<0, rowwise>], grid = array<i64: 2, 1>, threads = 256 : i64, tile = array<i64: 128, 128>} : tensor<256x128xbf16> -> tensor<256x128xbf16>
  return
}

// -----

func.func @shape(%x: tensor<256x128xbf16>) {
  // expected-error @+1 {{'tek.quantize_kernel' op result 0 quantizes another shape or element type than the input}}
  %r = tek.quantize_kernel "k" %x {stages = [#tek.stage<0, rowwise>], grid = array<i64: 2, 1>, threads = 256 : i64, tile = array<i64: 128, 128>} : tensor<256x128xbf16> -> !te.qtensor<128x128xbf16, #te.mxfp8<e4m3>, rowwise>
  return
}

// -----

func.func @empty(%x: tensor<256x128xbf16>) {
  // expected-error @+1 {{'tek.quantize_kernel' op has neither stages nor a bias gradient}}
  "tek.quantize_kernel"(%x) <{kernel_name = "k", stages = [], grid = array<i64: 2, 1>, threads = 256 : i64, tile = array<i64: 128, 128>}> : (tensor<256x128xbf16>) -> ()
  return
}

// -----

func.func @stage_range(%x: tensor<256x128xbf16>) {
  // expected-error @+1 {{'tek.quantize_kernel' op stage #tek.stage<1, rowwise> names result 1, but there are 1 quantized results}}
  %r = tek.quantize_kernel "k" %x {stages = [#tek.stage<0, rowwise>, #tek.stage<1, rowwise>], grid = array<i64: 2, 1>, threads = 256 : i64, tile = array<i64: 128, 128>} : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>
  return
}

// -----

func.func @stage_dir(%x: tensor<256x128xbf16>) {
  // expected-error @+1 {{'tek.quantize_kernel' op stage #tek.stage<0, columnwise> writes the columnwise direction, which result 0 does not hold}}
  %r = tek.quantize_kernel "k" %x {stages = [#tek.stage<0, rowwise>, #tek.stage<0, columnwise>], grid = array<i64: 2, 1>, threads = 256 : i64, tile = array<i64: 128, 128>} : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>
  return
}

// -----

func.func @stage_twice(%x: tensor<256x128xbf16>) {
  // expected-error @+1 {{'tek.quantize_kernel' op stage #tek.stage<0, rowwise> appears twice}}
  %r = tek.quantize_kernel "k" %x {stages = [#tek.stage<0, rowwise>, #tek.stage<0, rowwise>], grid = array<i64: 2, 1>, threads = 256 : i64, tile = array<i64: 128, 128>} : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>
  return
}

// -----

func.func @stage_missing(%x: tensor<256x128xbf16>) {
  // expected-error @+1 {{'tek.quantize_kernel' op no stage writes the columnwise direction of result 0}}
  %r = tek.quantize_kernel "k" %x {stages = [#tek.stage<0, rowwise>], grid = array<i64: 2, 1>, threads = 256 : i64, tile = array<i64: 128, 128>} : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>
  return
}

// -----

func.func @amax_missing(%x: tensor<256x128xbf16>) {
  // expected-error @+1 {{'tek.quantize_kernel' op needs amax_prepass: a stage scales by the tensor amax}}
  %r = tek.quantize_kernel "k" %x {stages = [#tek.stage<0, rowwise>], grid = array<i64: 2, 1>, threads = 256 : i64, tile = array<i64: 128, 128>} : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.fp8_current<e4m3>, rowwise>
  return
}

// -----

func.func @amax_extra(%x: tensor<256x128xbf16>) {
  // expected-error @+1 {{'tek.quantize_kernel' op has amax_prepass, but no stage scales by the tensor amax}}
  %r = tek.quantize_kernel "k" %x {amax_prepass, stages = [#tek.stage<0, rowwise>], grid = array<i64: 2, 1>, threads = 256 : i64, tile = array<i64: 128, 128>} : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>
  return
}

// -----

func.func @dq_input(%x: tensor<256x128xbf16>) {
  // expected-error @+1 {{'tek.dequantize_kernel' op reads a !te.qtensor, got 'tensor<256x128xbf16>'}}
  %r = tek.dequantize_kernel "k" %x rowwise {grid = array<i64: 128>, threads = 256 : i64} : tensor<256x128xbf16> -> tensor<256x128xf32>
  return
}

// -----

func.func @dq_dir(%x: !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>) {
  // expected-error @+1 {{'tek.dequantize_kernel' op reads the columnwise direction, which the input does not hold}}
  %r = tek.dequantize_kernel "k" %x columnwise {grid = array<i64: 128>, threads = 256 : i64} : !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise> -> tensor<256x128xf32>
  return
}

// -----

func.func @dq_shape(%x: !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>) {
  // expected-error @+1 {{'tek.dequantize_kernel' op result shape differs from the quantized shape}}
  %r = tek.dequantize_kernel "k" %x rowwise {grid = array<i64: 128>, threads = 256 : i64} : !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise> -> tensor<128x128xf32>
  return
}

// -----

func.func @dq_elem(%x: !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>) {
  // expected-error @+1 {{'tek.dequantize_kernel' op writes bf16, f16 or f32, not 'i8'}}
  %r = tek.dequantize_kernel "k" %x rowwise {grid = array<i64: 128>, threads = 256 : i64} : !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise> -> tensor<256x128xi8>
  return
}

// -----

func.func @dq_grid(%x: !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>) {
  // expected-error @+1 {{'tek.dequantize_kernel' op grid must be [128] CTAs for 32768 elements}}
  %r = tek.dequantize_kernel "k" %x rowwise {grid = array<i64: 7>, threads = 256 : i64} : !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise> -> tensor<256x128xf32>
  return
}

// -----

func.func @dq_threads(%x: !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>) {
  // expected-error @+1 {{'tek.dequantize_kernel' op threads must be 256 (the device library's block size), got 512}}
  %r = tek.dequantize_kernel "k" %x rowwise {grid = array<i64: 128>, threads = 512 : i64} : !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise> -> tensor<256x128xf32>
  return
}

// -----

func.func @adam_operands(%lr: tensor<f32>, %step: tensor<i64>, %p: tensor<64x64xf32>, %g: tensor<64x64xbf16>, %m: tensor<64x64xf32>, %v: tensor<64x64xf32>, %g16: tensor<64x64xf16>) {
  // expected-error @+1 {{'tek.adam_kernel' op needs (param, grad, exp_avg, exp_avg_sq) of at least one parameter, got 3 tensors}}
  %r:3 = tek.adam_kernel "k" %lr, %step, (%p, %g, %m) {beta1 = 0.9 : f32, beta2 = 0.999 : f32, eps = 1.0e-8 : f32, grid = 1 : i64, mode = 1 : i32, stages = [], threads = 256 : i64, tile = array<i64: 128, 128>, weight_decay = 0.0 : f32}
      : tensor<f32>, tensor<i64>, (tensor<64x64xf32>, tensor<64x64xbf16>, tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>)
  return
}

// -----

func.func @adam_results(%lr: tensor<f32>, %step: tensor<i64>, %p: tensor<64x64xf32>, %g: tensor<64x64xbf16>, %m: tensor<64x64xf32>, %v: tensor<64x64xf32>, %g16: tensor<64x64xf16>) {
  // expected-error @+1 {{'tek.adam_kernel' op needs (new_param, new_exp_avg, new_exp_avg_sq, quantized...) of each of its 1 parameters, got 2 results}}
  %r:2 = tek.adam_kernel "k" %lr, %step, (%p, %g, %m, %v) {beta1 = 0.9 : f32, beta2 = 0.999 : f32, eps = 1.0e-8 : f32, grid = 1 : i64, mode = 1 : i32, stages = [], threads = 256 : i64, tile = array<i64: 128, 128>, weight_decay = 0.0 : f32}
      : tensor<f32>, tensor<i64>, (tensor<64x64xf32>, tensor<64x64xbf16>, tensor<64x64xf32>, tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>)
  return
}

// -----

func.func @adam_tile(%lr: tensor<f32>, %step: tensor<i64>, %p: tensor<64x64xf32>, %g: tensor<64x64xbf16>, %m: tensor<64x64xf32>, %v: tensor<64x64xf32>, %g16: tensor<64x64xf16>) {
  // expected-error @+1 {{'tek.adam_kernel' op tile must be [128, 128] (the device library's tile)}}
  %r:3 = tek.adam_kernel "k" %lr, %step, (%p, %g, %m, %v) {beta1 = 0.9 : f32, beta2 = 0.999 : f32, eps = 1.0e-8 : f32, grid = 1 : i64, mode = 1 : i32, stages = [], threads = 256 : i64, tile = array<i64: 64, 64>, weight_decay = 0.0 : f32}
      : tensor<f32>, tensor<i64>, (tensor<64x64xf32>, tensor<64x64xbf16>, tensor<64x64xf32>, tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>)
  return
}

// -----

func.func @adam_threads(%lr: tensor<f32>, %step: tensor<i64>, %p: tensor<64x64xf32>, %g: tensor<64x64xbf16>, %m: tensor<64x64xf32>, %v: tensor<64x64xf32>, %g16: tensor<64x64xf16>) {
  // expected-error @+1 {{'tek.adam_kernel' op threads must be 256 (the device library's block size), got 128}}
  %r:3 = tek.adam_kernel "k" %lr, %step, (%p, %g, %m, %v) {beta1 = 0.9 : f32, beta2 = 0.999 : f32, eps = 1.0e-8 : f32, grid = 1 : i64, mode = 1 : i32, stages = [], threads = 128 : i64, tile = array<i64: 128, 128>, weight_decay = 0.0 : f32}
      : tensor<f32>, tensor<i64>, (tensor<64x64xf32>, tensor<64x64xbf16>, tensor<64x64xf32>, tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>)
  return
}

// -----

func.func @adam_beta1(%lr: tensor<f32>, %step: tensor<i64>, %p: tensor<64x64xf32>, %g: tensor<64x64xbf16>, %m: tensor<64x64xf32>, %v: tensor<64x64xf32>, %g16: tensor<64x64xf16>) {
  // expected-error @+1 {{'tek.adam_kernel' op beta1 must be in [0, 1), got 1}}
  %r:3 = tek.adam_kernel "k" %lr, %step, (%p, %g, %m, %v) {beta1 = 1.0 : f32, beta2 = 0.999 : f32, eps = 1.0e-8 : f32, grid = 1 : i64, mode = 1 : i32, stages = [], threads = 256 : i64, tile = array<i64: 128, 128>, weight_decay = 0.0 : f32}
      : tensor<f32>, tensor<i64>, (tensor<64x64xf32>, tensor<64x64xbf16>, tensor<64x64xf32>, tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>)
  return
}

// -----

func.func @adam_grid(%lr: tensor<f32>, %step: tensor<i64>, %p: tensor<64x64xf32>, %g: tensor<64x64xbf16>, %m: tensor<64x64xf32>, %v: tensor<64x64xf32>, %g16: tensor<64x64xf16>) {
  // expected-error @+1 {{'tek.adam_kernel' op grid must be 1 tiles (every tile of every parameter), got 4}}
  %r:3 = tek.adam_kernel "k" %lr, %step, (%p, %g, %m, %v) {beta1 = 0.9 : f32, beta2 = 0.999 : f32, eps = 1.0e-8 : f32, grid = 4 : i64, mode = 1 : i32, stages = [], threads = 256 : i64, tile = array<i64: 128, 128>, weight_decay = 0.0 : f32}
      : tensor<f32>, tensor<i64>, (tensor<64x64xf32>, tensor<64x64xbf16>, tensor<64x64xf32>, tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>)
  return
}

// -----

func.func @adam_grad_types(%lr: tensor<f32>, %step: tensor<i64>, %p: tensor<64x64xf32>, %g: tensor<64x64xbf16>, %m: tensor<64x64xf32>, %v: tensor<64x64xf32>, %g16: tensor<64x64xf16>) {
  // expected-error @+1 {{'tek.adam_kernel' op gradients must share one element type (one kernel), gradient 1 is 'f16'}}
  %r:6 = tek.adam_kernel "k" %lr, %step, (%p, %g, %m, %v, %p, %g16, %m, %v) {beta1 = 0.9 : f32, beta2 = 0.999 : f32, eps = 1.0e-8 : f32, grid = 2 : i64, mode = 1 : i32, stages = [], threads = 256 : i64, tile = array<i64: 128, 128>, weight_decay = 0.0 : f32}
      : tensor<f32>, tensor<i64>, (tensor<64x64xf32>, tensor<64x64xbf16>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf16>, tensor<64x64xf32>, tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>)
  return
}

// -----

func.func @adam_moment(%lr: tensor<f32>, %step: tensor<i64>, %p: tensor<64x64xf32>, %g: tensor<64x64xbf16>, %m: tensor<64x64xf32>, %v: tensor<64x64xf32>, %g16: tensor<64x64xf16>) {
  // expected-error @+1 {{'tek.adam_kernel' op moment 0 of parameter 0 must have type 'tensor<64x64xf32>'}}
  %r:3 = tek.adam_kernel "k" %lr, %step, (%p, %g, %g, %v) {beta1 = 0.9 : f32, beta2 = 0.999 : f32, eps = 1.0e-8 : f32, grid = 1 : i64, mode = 1 : i32, stages = [], threads = 256 : i64, tile = array<i64: 128, 128>, weight_decay = 0.0 : f32}
      : tensor<f32>, tensor<i64>, (tensor<64x64xf32>, tensor<64x64xbf16>, tensor<64x64xbf16>, tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>)
  return
}

// -----

func.func @adam_stage_slot(%lr: tensor<f32>, %step: tensor<i64>, %p: tensor<64x64xf32>, %g: tensor<64x64xbf16>, %m: tensor<64x64xf32>, %v: tensor<64x64xf32>, %g16: tensor<64x64xf16>) {
  // expected-error @+1 {{'tek.adam_kernel' op stage #tek.stage<1, rowwise> names quantized result 1, but each parameter has 1}}
  %r:4 = tek.adam_kernel "k" %lr, %step, (%p, %g, %m, %v) {beta1 = 0.9 : f32, beta2 = 0.999 : f32, eps = 1.0e-8 : f32, grid = 1 : i64, mode = 1 : i32, stages = [#tek.stage<1, rowwise>], threads = 256 : i64, tile = array<i64: 128, 128>, weight_decay = 0.0 : f32}
      : tensor<f32>, tensor<i64>, (tensor<64x64xf32>, tensor<64x64xbf16>, tensor<64x64xf32>, tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, !te.qtensor<64x64xf32, #te.mxfp8<e4m3>, rowwise>)
  return
}

// -----

func.func @adam_unwritten(%lr: tensor<f32>, %step: tensor<i64>, %p: tensor<64x64xf32>, %g: tensor<64x64xbf16>, %m: tensor<64x64xf32>, %v: tensor<64x64xf32>, %g16: tensor<64x64xf16>) {
  // expected-error @+1 {{'tek.adam_kernel' op quantized result 0 holds rowwise but no stage writes it}}
  %r:4 = tek.adam_kernel "k" %lr, %step, (%p, %g, %m, %v) {beta1 = 0.9 : f32, beta2 = 0.999 : f32, eps = 1.0e-8 : f32, grid = 1 : i64, mode = 1 : i32, stages = [], threads = 256 : i64, tile = array<i64: 128, 128>, weight_decay = 0.0 : f32}
      : tensor<f32>, tensor<i64>, (tensor<64x64xf32>, tensor<64x64xbf16>, tensor<64x64xf32>, tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, !te.qtensor<64x64xf32, #te.mxfp8<e4m3>, rowwise>)
  return
}

// -----

func.func @adam_amax(%lr: tensor<f32>, %step: tensor<i64>, %p: tensor<64x64xf32>, %g: tensor<64x64xbf16>, %m: tensor<64x64xf32>, %v: tensor<64x64xf32>, %g16: tensor<64x64xf16>) {
  // expected-error @+1 {{'tek.adam_kernel' op needs requantize_after: a stage scales by the tensor amax}}
  %r:4 = tek.adam_kernel "k" %lr, %step, (%p, %g, %m, %v) {beta1 = 0.9 : f32, beta2 = 0.999 : f32, eps = 1.0e-8 : f32, grid = 1 : i64, mode = 1 : i32, stages = [#tek.stage<0, rowwise>], threads = 256 : i64, tile = array<i64: 128, 128>, weight_decay = 0.0 : f32}
      : tensor<f32>, tensor<i64>, (tensor<64x64xf32>, tensor<64x64xbf16>, tensor<64x64xf32>, tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, !te.qtensor<64x64xf32, #te.fp8_current<e4m3>, rowwise>)
  return
}

// -----

func.func @adam_no_amax(%lr: tensor<f32>, %step: tensor<i64>, %p: tensor<64x64xf32>, %g: tensor<64x64xbf16>, %m: tensor<64x64xf32>, %v: tensor<64x64xf32>, %g16: tensor<64x64xf16>) {
  // expected-error @+1 {{'tek.adam_kernel' op has requantize_after but no stage scales by the tensor amax}}
  %r:3 = tek.adam_kernel "k" %lr, %step, (%p, %g, %m, %v) {beta1 = 0.9 : f32, beta2 = 0.999 : f32, eps = 1.0e-8 : f32, grid = 1 : i64, mode = 1 : i32, requantize_after, stages = [], threads = 256 : i64, tile = array<i64: 128, 128>, weight_decay = 0.0 : f32}
      : tensor<f32>, tensor<i64>, (tensor<64x64xf32>, tensor<64x64xbf16>, tensor<64x64xf32>, tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>)
  return
}
