// Sizes the runtime cannot address: a tensor or !te.qtensor whose element
// count overflows int64, or whose size (or that of one storage buffer of its
// scheme) exceeds 2^48 bytes, is an error on every te and tek op and on the
// !te.qtensor type itself.
// RUN: te-opt %s -split-input-file -verify-diagnostics
// RUN: te-opt %s -split-input-file -verify-diagnostics --te-to-cuda

// 4e9 x 4e9 elements: the count overflows int64.
func.func @count_overflows(%dy: tensor<4000000000x4000000000xbf16>) {
  // expected-error @+1 {{'te.bias_grad' op operand #0 'tensor<4000000000x4000000000xbf16>' is too large for the runtime: its element count overflows a 64-bit integer}}
  %db = te.bias_grad %dy : tensor<4000000000x4000000000xbf16> -> tensor<4000000000xf32>
  return
}

// -----

// 2^48 f32 elements: the count fits, the 2^50 bytes do not.
func.func @bytes_exceed(%a: tensor<16777216x16777216xf32>, %b: tensor<64x16777216xf32>) {
  // expected-error @+1 {{'te.gemm' op operand #0 'tensor<16777216x16777216xf32>' is too large for the runtime: its 281474976710656 elements of 4 bytes exceed the 2^48 bytes one buffer may hold}}
  %y = te.gemm %a, %b {transpose_b} : tensor<16777216x16777216xf32>, tensor<64x16777216xf32> -> tensor<16777216x64xf32>
  return
}

// -----

// A result counts as well (the qtensor, 2^48 bytes of f16 source, fits).
func.func @result_exceeds(%q: !te.qtensor<8388608x16777216xf16, #te.mxfp8<e4m3>, rowwise>) {
  // expected-error @+1 {{'te.dequantize' op result #0 'tensor<8388608x16777216xf32>' is too large for the runtime: its 140737488355328 elements of 4 bytes exceed the 2^48 bytes one buffer may hold}}
  %y = te.dequantize %q rowwise : !te.qtensor<8388608x16777216xf16, #te.mxfp8<e4m3>, rowwise> -> tensor<8388608x16777216xf32>
  return
}

// -----

// expected-error @+1 {{!te.qtensor<2-D> is too large for the runtime: its element count overflows a 64-bit integer}}
func.func private @qtensor_count(!te.qtensor<4000000000x4000000000xbf16, #te.fp8_current<e4m3>, rowwise>)

// -----

// The data (2^47 bytes) fits, but MXFP8 pads the rowwise scales to 128 rows:
// 128 x 2^42 E8M0 bytes = 2^49.
// expected-error @+1 {{!te.qtensor<2-D> is too large for the runtime: its rowwise mxfp8 scale_inv buffer (128 x 4398046511104 e8m0) exceeds the 2^48 bytes one buffer may hold}}
func.func private @qtensor_scales(!te.qtensor<1x140737488355328xbf16, #te.mxfp8<e4m3>, rowwise>)

// -----

// tek ops carry the same check.
func.func @tek_too_large(%x: tensor<4000000000x4000000000xbf16>) {
  // expected-error @+1 {{'tek.dequantize_kernel' op operand #0 'tensor<4000000000x4000000000xbf16>' is too large for the runtime: its element count overflows a 64-bit integer}}
  %r = tek.dequantize_kernel "k" %x rowwise {grid = array<i64: 128>, threads = 256 : i64} : tensor<4000000000x4000000000xbf16> -> tensor<4000000000x4000000000xf32>
  return
}
