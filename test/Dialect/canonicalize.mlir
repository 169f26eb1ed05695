// RUN: te-opt %s --canonicalize --split-input-file | FileCheck %s

// Tests that a round trip through #te.identity of the tensor's own element
// type folds to the tensor: the direction read stores it unchanged.
// CHECK-LABEL: func.func @identity_round_trip
// CHECK-NOT: te.quantize
// CHECK-NOT: te.dequantize
// CHECK: return %arg0 : tensor<64x64xbf16>
func.func @identity_round_trip(%x: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  %q = te.quantize %x : tensor<64x64xbf16> -> !te.qtensor<64x64xbf16, #te.identity<bf16>, rowwise>
  %y = te.dequantize %q rowwise : !te.qtensor<64x64xbf16, #te.identity<bf16>, rowwise> -> tensor<64x64xbf16>
  return %y : tensor<64x64xbf16>
}

// -----

// Tests the fold through a te.fused_quantize and through the identity side
// of a hybrid scheme; the quantization stays for its other user.
// CHECK-LABEL: func.func @hybrid_identity_side
// CHECK: %[[Q:.*]]:2 = te.fused_quantize %arg0
// CHECK: return %arg0, %[[Q]]#1
func.func @hybrid_identity_side(%x: tensor<64x64xf32>)
    -> (tensor<64x64xf32>, !te.qtensor<64x64xf32, #te.mxfp8<e4m3>, rowwise>) {
  %q, %m = te.fused_quantize %x : tensor<64x64xf32>
      -> !te.qtensor<64x64xf32, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.identity<f32>>, columnwise>,
         !te.qtensor<64x64xf32, #te.mxfp8<e4m3>, rowwise>
  %y = te.dequantize %q columnwise : !te.qtensor<64x64xf32, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.identity<f32>>, columnwise> -> tensor<64x64xf32>
  return %y, %m : tensor<64x64xf32>, !te.qtensor<64x64xf32, #te.mxfp8<e4m3>, rowwise>
}

// -----

// Tests that a lossy round trip never folds: MXFP8 rounds.
// CHECK-LABEL: func.func @no_fold_lossy
// CHECK: %[[Q:.*]] = te.quantize %arg0
// CHECK: %[[Y:.*]] = te.dequantize %[[Q]] rowwise
// CHECK: return %[[Y]]
func.func @no_fold_lossy(%x: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  %q = te.quantize %x : tensor<64x64xbf16> -> !te.qtensor<64x64xbf16, #te.mxfp8<e4m3>, rowwise>
  %y = te.dequantize %q rowwise : !te.qtensor<64x64xbf16, #te.mxfp8<e4m3>, rowwise> -> tensor<64x64xbf16>
  return %y : tensor<64x64xbf16>
}

// -----

// Tests that identity of a narrower type never folds: f32 -> bf16 rounds.
// CHECK-LABEL: func.func @no_fold_narrowing_identity
// CHECK: %[[Q:.*]] = te.quantize %arg0
// CHECK: %[[Y:.*]] = te.dequantize %[[Q]] rowwise
// CHECK: return %[[Y]]
func.func @no_fold_narrowing_identity(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %q = te.quantize %x : tensor<64x64xf32> -> !te.qtensor<64x64xf32, #te.identity<bf16>, rowwise>
  %y = te.dequantize %q rowwise : !te.qtensor<64x64xf32, #te.identity<bf16>, rowwise> -> tensor<64x64xf32>
  return %y : tensor<64x64xf32>
}

// -----

// Tests that a round trip into another type never folds to the input (the
// fold must keep the result's type).
// CHECK-LABEL: func.func @no_fold_other_result_type
// CHECK: te.quantize
// CHECK: %[[Y:.*]] = te.dequantize
// CHECK: return %[[Y]] : tensor<64x64xf32>
func.func @no_fold_other_result_type(%x: tensor<64x64xbf16>) -> tensor<64x64xf32> {
  %q = te.quantize %x : tensor<64x64xbf16> -> !te.qtensor<64x64xbf16, #te.identity<bf16>, rowwise>
  %y = te.dequantize %q rowwise : !te.qtensor<64x64xbf16, #te.identity<bf16>, rowwise> -> tensor<64x64xf32>
  return %y : tensor<64x64xf32>
}

// -----

// Tests that dead te ops are erased: they are Pure (no side effects).
// CHECK-LABEL: func.func @dead_pure_ops
// CHECK-NOT: te.
// CHECK: return %arg0
func.func @dead_pure_ops(%x: tensor<64x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<64x64xbf16> {
  %q = te.quantize %x : tensor<64x64xbf16> -> !te.qtensor<64x64xbf16, #te.mxfp8<e4m3>, rowwise>
  %g = te.gemm %x, %w {transpose_b} : tensor<64x64xbf16>, tensor<32x64xbf16> -> tensor<64x32xbf16>
  %db = te.bias_grad %x : tensor<64x64xbf16> -> tensor<64xf32>
  return %x : tensor<64x64xbf16>
}
