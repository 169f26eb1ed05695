// RUN: te-opt %s --te-resolve-recipe --te-expand-linear --split-input-file | FileCheck %s
// RUN: te-opt %s --te-resolve-recipe --te-expand-linear --split-input-file | te-opt --split-input-file | FileCheck %s

te.recipe @mxfp8 {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// Tests fprop: x and W quantized rowwise, y = x W^T with the bias.
// CHECK-LABEL: func.func @fprop
// CHECK: %[[X:.*]] = te.quantize %arg0 : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>
// CHECK: %[[W:.*]] = te.quantize %arg1 : tensor<64x128xbf16> -> !te.qtensor<64x128xbf16, #te.mxfp8<e4m3>, rowwise>
// CHECK: %[[Y:.*]] = te.gemm %[[X]], %[[W]] bias %arg2 {transpose_b}
// CHECK-NOT: te.linear
// CHECK: return %[[Y]]
func.func @fprop(%x: tensor<256x128xbf16>, %w: tensor<64x128xbf16>, %b: tensor<64xbf16>) -> tensor<256x64xbf16> {
  %y = te.linear %x, %w bias %b {recipe = @mxfp8} : tensor<256x128xbf16>, tensor<64x128xbf16>, tensor<64xbf16> -> tensor<256x64xbf16>
  return %y : tensor<256x64xbf16>
}

// -----

te.recipe @deepseek {
  te.rule "linear", "weight" -> #te.fp8_block<e4m3, 128x128, pow2>
  te.rule "*", "*" -> #te.fp8_block<e4m3, 1x128, pow2>
}

// Tests dgrad and wgrad: dy in both directions, W and x columnwise;
// dx = dy W, dW = dy^T x, db from dy.
// CHECK-LABEL: func.func @backward
// CHECK: %[[DY:.*]] = te.quantize %arg0 : tensor<256x64xbf16> -> !te.qtensor<256x64xbf16, #te.fp8_block<e4m3, 1x128, pow2>, rowwise|columnwise>
// CHECK: %[[W:.*]] = te.quantize %arg2 : tensor<64x128xbf16> -> !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 128x128, pow2>, columnwise>
// CHECK: %[[X:.*]] = te.quantize %arg1 : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.fp8_block<e4m3, 1x128, pow2>, columnwise>
// CHECK: %[[DX:.*]] = te.gemm %[[DY]], %[[W]] : {{.*}} -> tensor<256x128xbf16>
// CHECK: %[[DW:.*]] = te.gemm %[[DY]], %[[X]] {transpose_a} : {{.*}} -> tensor<64x128xf32>
// CHECK: %[[DB:.*]] = te.bias_grad %arg0 : tensor<256x64xbf16> -> tensor<64xf32>
// CHECK: return %[[DX]], %[[DW]], %[[DB]]
func.func @backward(%dy: tensor<256x64xbf16>, %x: tensor<256x128xbf16>, %w: tensor<64x128xbf16>)
    -> (tensor<256x128xbf16>, tensor<64x128xf32>, tensor<64xf32>) {
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @deepseek, bias} : tensor<256x64xbf16>, tensor<256x128xbf16>, tensor<64x128xbf16> -> tensor<256x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
  return %dx, %dw, %db : tensor<256x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
}

// -----

te.recipe @bf16 {
  te.rule "*", "*" -> #te.identity<bf16>
}

// Tests that identity of the tensor's own type reads it in high precision,
// with no copy.
// CHECK-LABEL: func.func @high_precision
// CHECK-NOT: te.quantize
// CHECK: te.gemm %arg0, %arg1 {transpose_b} : tensor<32x16xbf16>, tensor<8x16xbf16> -> tensor<32x8xbf16>
func.func @high_precision(%x: tensor<32x16xbf16>, %w: tensor<8x16xbf16>) -> tensor<32x8xbf16> {
  %y = te.linear %x, %w {recipe = @bf16} : tensor<32x16xbf16>, tensor<8x16xbf16> -> tensor<32x8xbf16>
  return %y : tensor<32x8xbf16>
}
