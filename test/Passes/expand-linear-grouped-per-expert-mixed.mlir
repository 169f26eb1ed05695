// RUN: te-opt %s --te-resolve-recipe --te-expand-linear --split-input-file | FileCheck %s
// RUN: te-opt %s --te-to-cuda --split-input-file | FileCheck %s --check-prefix=KERNELS

// Tests grouped layers whose GEMM meets a tensor-wide scheme (per-tensor
// FP8 or NVFP4: one amax per expert) on one operand and a scheme of another
// family on the other: the grouped GEMM quantizes the tensor-wide operand
// per expert itself (input_scheme or weight_scheme), te-expand-linear
// quantizes the other as for any grouped layer, and te-to-cuda dequantizes
// that one before the engine's BF16 kernel reads both as values.

te.recipe @r {
  te.rule "grouped_linear", "weight" -> #te.fp8_current<e4m3>
  te.rule "*", "*" -> #te.fp8_block<e4m3, 1x128>
}
// CHECK-LABEL: func.func @current_weight_block_tokens
// CHECK: %[[X:.*]] = te.quantize %arg0 : tensor<64x128xbf16> -> !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>
// CHECK: te.grouped_gemm %[[X]], %arg1, %arg2 {weight_scheme = #te.fp8_current<e4m3>}
// KERNELS-LABEL: func.func @current_weight_block_tokens
// KERNELS: %[[Q:.*]] = tek.quantize_kernel "te_quantize_0" %arg0
// KERNELS: %[[V:.*]] = tek.dequantize_kernel "te_dequantize_1" %[[Q]] rowwise
// KERNELS: tek.grouped_gemm "te_grouped_gemm_2" %[[V]], %arg1, %arg2 {weight_scheme = #te.fp8_current<e4m3>} : tensor<64x128xbf16>, tensor<2x128x128xbf16>
func.func @current_weight_block_tokens(%x: tensor<64x128xbf16>, %w: tensor<2x128x128xbf16>, %s: tensor<2xi64>) -> tensor<64x128xbf16> {
  %y = te.grouped_linear %x, %w, %s {recipe = @r} : tensor<64x128xbf16>, tensor<2x128x128xbf16>, tensor<2xi64> -> tensor<64x128xbf16>
  return %y : tensor<64x128xbf16>
}

// -----

// The hybrid backward: NVFP4 gradients by an MXFP8 weight read columnwise.
te.recipe @r {
  te.rule "grouped_linear", "grad_output" -> #te.nvfp4<sr>
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}
// CHECK-LABEL: func.func @nvfp4_dy_mxfp8_weight
// CHECK: %[[W:.*]] = te.quantize %arg2 : tensor<2x128x128xbf16> -> !te.qtensor<2x128x128xbf16, #te.mxfp8<e4m3>, columnwise>
// CHECK: te.grouped_gemm %arg0, %[[W]], %arg3 {input_scheme = #te.nvfp4<sr>, weight_columnwise}
// CHECK: te.grouped_wgrad %arg0, %arg1, %arg3 {grad_output_scheme = #te.nvfp4<sr>, input_scheme = #te.mxfp8<e4m3>}
// KERNELS-LABEL: func.func @nvfp4_dy_mxfp8_weight
// KERNELS: %[[Q:.*]] = tek.quantize_kernel "te_quantize_0" %arg2
// KERNELS: %[[V:.*]] = tek.dequantize_kernel "te_dequantize_1" %[[Q]] columnwise
// KERNELS: tek.grouped_gemm "te_grouped_gemm_2" %arg0, %[[V]], %arg3 {input_scheme = #te.nvfp4<sr>, weight_columnwise}
func.func @nvfp4_dy_mxfp8_weight(%dy: tensor<64x128xbf16>, %x: tensor<64x128xbf16>, %w: tensor<2x128x128xbf16>, %s: tensor<2xi64>) -> (tensor<64x128xbf16>, tensor<2x128x128xf32>) {
  %dx, %dw = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @r} : tensor<64x128xbf16>, tensor<64x128xbf16>, tensor<2x128x128xbf16>, tensor<2xi64> -> tensor<64x128xbf16>, tensor<2x128x128xf32>
  return %dx, %dw : tensor<64x128xbf16>, tensor<2x128x128xf32>
}

// -----

// Per-tensor FP8 gradients by a 128x128 block-FP8 weight.
te.recipe @r {
  te.rule "grouped_linear", "weight" -> #te.fp8_block<e4m3, 128x128>
  te.rule "*", "*" -> #te.fp8_current<e4m3>
}
// CHECK-LABEL: func.func @current_dy_block_weight
// CHECK: %[[W:.*]] = te.quantize %arg2 : tensor<2x128x128xbf16> -> !te.qtensor<2x128x128xbf16, #te.fp8_block<e4m3, 128x128>, columnwise>
// CHECK: te.grouped_gemm %arg0, %[[W]], %arg3 {input_scheme = #te.fp8_current<e4m3>, weight_columnwise}
// KERNELS-LABEL: func.func @current_dy_block_weight
// KERNELS: tek.dequantize_kernel "te_dequantize_1" {{.*}} columnwise
// KERNELS: tek.grouped_gemm "te_grouped_gemm_2" %arg0, {{.*}} {input_scheme = #te.fp8_current<e4m3>, weight_columnwise}
func.func @current_dy_block_weight(%dy: tensor<64x128xbf16>, %x: tensor<64x128xbf16>, %w: tensor<2x128x128xbf16>, %s: tensor<2xi64>) -> (tensor<64x128xbf16>, tensor<2x128x128xf32>) {
  %dx, %dw = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @r} : tensor<64x128xbf16>, tensor<64x128xbf16>, tensor<2x128x128xbf16>, tensor<2xi64> -> tensor<64x128xbf16>, tensor<2x128x128xf32>
  return %dx, %dw : tensor<64x128xbf16>, tensor<2x128x128xf32>
}

// -----

// Two tensor-wide families: both quantized per expert, read as values.
te.recipe @r {
  te.rule "grouped_linear", "weight" -> #te.fp8_current<e4m3>
  te.rule "*", "*" -> #te.nvfp4<>
}
// CHECK-LABEL: func.func @nvfp4_tokens_current_weight
// CHECK-NOT: te.quantize
// CHECK: te.grouped_gemm %arg0, %arg1, %arg2 {input_scheme = #te.nvfp4<>, weight_scheme = #te.fp8_current<e4m3>}
// KERNELS-LABEL: func.func @nvfp4_tokens_current_weight
// KERNELS-NOT: tek.dequantize_kernel
// KERNELS: tek.grouped_gemm "te_grouped_gemm_0" %arg0, %arg1, %arg2 {input_scheme = #te.nvfp4<>, weight_scheme = #te.fp8_current<e4m3>}
func.func @nvfp4_tokens_current_weight(%x: tensor<64x128xbf16>, %w: tensor<2x128x128xbf16>, %s: tensor<2xi64>) -> tensor<64x128xbf16> {
  %y = te.grouped_linear %x, %w, %s {recipe = @r} : tensor<64x128xbf16>, tensor<2x128x128xbf16>, tensor<2xi64> -> tensor<64x128xbf16>
  return %y : tensor<64x128xbf16>
}

// -----

// Delayed-scaling tokens beside a block-FP8 weight: each expert's amax
// history under the layer's name.
te.recipe @r {
  te.rule "grouped_linear", "input" -> #te.fp8_delayed<e4m3, history = 4>
  te.rule "*", "*" -> #te.fp8_block<e4m3, 128x128>
}
// CHECK-LABEL: func.func @delayed_tokens_block_weight
// CHECK: %[[W:.*]] = te.quantize %arg1 : tensor<2x128x128xbf16> -> !te.qtensor<2x128x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>
// CHECK: te.grouped_gemm %arg0, %[[W]], %arg2 {input_scheme = #te.fp8_delayed<e4m3, history = 4, algo = max, margin = 0>, input_state = "moe.input.delayed_scaling"}
// KERNELS-LABEL: func.func @delayed_tokens_block_weight
// KERNELS: tek.dequantize_kernel "te_dequantize_1" {{.*}} rowwise
// KERNELS: tek.grouped_gemm "te_grouped_gemm_2" %arg0, {{.*}}input_state = "moe.input.delayed_scaling"
func.func @delayed_tokens_block_weight(%x: tensor<64x128xbf16>, %w: tensor<2x128x128xbf16>, %s: tensor<2xi64>) -> tensor<64x128xbf16> {
  %y = te.grouped_linear %x, %w, %s {recipe = @r, layer = "moe"} : tensor<64x128xbf16>, tensor<2x128x128xbf16>, tensor<2xi64> -> tensor<64x128xbf16>
  return %y : tensor<64x128xbf16>
}
