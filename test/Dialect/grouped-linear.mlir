// RUN: te-opt %s | FileCheck %s
// RUN: te-opt %s | te-opt | FileCheck %s
// RUN: te-opt %s -mlir-print-op-generic | te-opt | FileCheck %s

// Tests that te.grouped_linear and te.grouped_linear_grad round-trip, with
// and without bias, with hybrid recipes, an f32 or weight-typed dW and
// dynamic token counts.

te.recipe @moe {
  te.rule "grouped_linear", "input" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<rht>>
  te.rule "grouped_linear", "weight" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>
  te.rule "grouped_linear", "grad_output" -> #te.nvfp4<rht, sr>
}

// CHECK-LABEL: func.func @forward
// CHECK: te.grouped_linear %arg0, %arg1, %arg2 {recipe = @moe} : tensor<256x1024xbf16>, tensor<8x512x1024xbf16>, tensor<8xi64> -> tensor<256x512xbf16>
func.func @forward(%x: tensor<256x1024xbf16>, %w: tensor<8x512x1024xbf16>, %s: tensor<8xi64>) -> tensor<256x512xbf16> {
  %y = te.grouped_linear %x, %w, %s {recipe = @moe} : tensor<256x1024xbf16>, tensor<8x512x1024xbf16>, tensor<8xi64> -> tensor<256x512xbf16>
  return %y : tensor<256x512xbf16>
}

// CHECK-LABEL: func.func @forward_bias
// CHECK: te.grouped_linear %arg0, %arg1, %arg2 bias %arg3 {recipe = @moe} : tensor<256x1024xf16>, tensor<8x512x1024xf16>, tensor<8xi64>, tensor<8x512xf16> -> tensor<256x512xf16>
func.func @forward_bias(%x: tensor<256x1024xf16>, %w: tensor<8x512x1024xf16>, %s: tensor<8xi64>, %b: tensor<8x512xf16>) -> tensor<256x512xf16> {
  %y = te.grouped_linear %x, %w, %s bias %b {recipe = @moe} : tensor<256x1024xf16>, tensor<8x512x1024xf16>, tensor<8xi64>, tensor<8x512xf16> -> tensor<256x512xf16>
  return %y : tensor<256x512xf16>
}

// The token count (M_total) is known only at run time.
// CHECK-LABEL: func.func @forward_dynamic_tokens
// CHECK: te.grouped_linear %arg0, %arg1, %arg2 {recipe = @moe} : tensor<?x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<?x32xbf16>
func.func @forward_dynamic_tokens(%x: tensor<?x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) -> tensor<?x32xbf16> {
  %y = te.grouped_linear %x, %w, %s {recipe = @moe} : tensor<?x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}

// CHECK-LABEL: func.func @backward
// CHECK: te.grouped_linear_grad %arg0, %arg1, %arg2, %arg3 {recipe = @moe} : tensor<256x512xbf16>, tensor<256x1024xbf16>, tensor<8x512x1024xbf16>, tensor<8xi64> -> tensor<256x1024xbf16>, tensor<8x512x1024xf32>
func.func @backward(%dy: tensor<256x512xbf16>, %x: tensor<256x1024xbf16>, %w: tensor<8x512x1024xbf16>, %s: tensor<8xi64>) -> (tensor<256x1024xbf16>, tensor<8x512x1024xf32>) {
  %dx, %dw = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @moe} : tensor<256x512xbf16>, tensor<256x1024xbf16>, tensor<8x512x1024xbf16>, tensor<8xi64> -> tensor<256x1024xbf16>, tensor<8x512x1024xf32>
  return %dx, %dw : tensor<256x1024xbf16>, tensor<8x512x1024xf32>
}

// dW in the weight's own type; db always f32.
// CHECK-LABEL: func.func @backward_bias
// CHECK: te.grouped_linear_grad %arg0, %arg1, %arg2, %arg3 {bias, recipe = @moe} : tensor<256x512xbf16>, tensor<256x1024xbf16>, tensor<8x512x1024xbf16>, tensor<8xi64> -> tensor<256x1024xbf16>, tensor<8x512x1024xbf16>, tensor<8x512xf32>
func.func @backward_bias(%dy: tensor<256x512xbf16>, %x: tensor<256x1024xbf16>, %w: tensor<8x512x1024xbf16>, %s: tensor<8xi64>) -> (tensor<256x1024xbf16>, tensor<8x512x1024xbf16>, tensor<8x512xf32>) {
  %dx, %dw, %db = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @moe, bias} : tensor<256x512xbf16>, tensor<256x1024xbf16>, tensor<8x512x1024xbf16>, tensor<8xi64> -> tensor<256x1024xbf16>, tensor<8x512x1024xbf16>, tensor<8x512xf32>
  return %dx, %dw, %db : tensor<256x1024xbf16>, tensor<8x512x1024xbf16>, tensor<8x512xf32>
}

// A resolved `schemes` dictionary round-trips.
// CHECK-LABEL: func.func @resolved
// CHECK: te.grouped_linear %arg0, %arg1, %arg2 {recipe = @moe, schemes = {input = #te.mxfp8<e4m3>, weight = #te.mxfp8<e4m3>}}
func.func @resolved(%x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) -> tensor<64x32xbf16> {
  %y = te.grouped_linear %x, %w, %s {recipe = @moe, schemes = {input = #te.mxfp8<e4m3>, weight = #te.mxfp8<e4m3>}} : tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}
