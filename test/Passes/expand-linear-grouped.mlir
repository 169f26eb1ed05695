// RUN: te-opt %s --te-resolve-recipe --te-expand-linear --split-input-file | FileCheck %s
// RUN: te-opt %s --te-resolve-recipe --te-expand-linear --split-input-file | te-opt --split-input-file | FileCheck %s
// RUN: te-opt %s --split-input-file --te-to-cuda | FileCheck %s --check-prefix=KERNELS

// Tests that te.grouped_linear becomes the rowwise quantizations of its
// tokens and stacked weight and one te.grouped_gemm, and through te-to-cuda
// one tek.grouped_gemm reading the quantize kernels' results (MXFP8: their
// dequantized values); and that
// te.grouped_linear_grad becomes the dgrad grouped GEMM and te.grouped_wgrad.

te.recipe @deepseek {
  te.rule "grouped_linear", "weight" -> #te.fp8_block<e4m3, 128x128>
  te.rule "*", "*" -> #te.fp8_block<e4m3, 1x128>
}

// CHECK-LABEL: func.func @block_fp8
// CHECK: %[[X:.*]] = te.quantize %arg0 : tensor<512x256xbf16> -> !te.qtensor<512x256xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>
// CHECK: %[[W:.*]] = te.quantize %arg1 : tensor<4x128x256xbf16> -> !te.qtensor<4x128x256xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>
// CHECK: %[[Y:.*]] = te.grouped_gemm %[[X]], %[[W]], %arg2 : {{.*}} -> tensor<512x128xbf16>
// CHECK-NOT: te.grouped_linear
// CHECK: return %[[Y]]
// KERNELS-LABEL: func.func @block_fp8
// KERNELS: %[[X:.*]] = tek.quantize_kernel "te_quantize_0" %arg0
// KERNELS: %[[W:.*]] = tek.quantize_kernel "te_quantize_1" %arg1
// KERNELS: %[[Y:.*]] = tek.grouped_gemm "te_grouped_gemm_2" %[[X]], %[[W]], %arg2 : !te.qtensor<512x256xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>, !te.qtensor<4x128x256xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>, tensor<4xi64> -> tensor<512x128xbf16>
// KERNELS: return %[[Y]]
func.func @block_fp8(%x: tensor<512x256xbf16>, %w: tensor<4x128x256xbf16>, %s: tensor<4xi64>) -> tensor<512x128xbf16> {
  %y = te.grouped_linear %x, %w, %s {recipe = @deepseek} : tensor<512x256xbf16>, tensor<4x128x256xbf16>, tensor<4xi64> -> tensor<512x128xbf16>
  return %y : tensor<512x128xbf16>
}

// -----

te.recipe @mx {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// MXFP8's 1x32 blocks run along K, inside each expert's rows: the tokens and
// the stack are quantized as one tensor each. te-legalize-target picks how
// the grouped GEMM reads them (its cost model, docs/Performance.md): here,
// with few tokens per expert and a narrow weight, the engine's MXFP8 kernel
// reads both as they are (no dequantize kernel).
// CHECK-LABEL: func.func @mxfp8
// CHECK: %[[X:.*]] = te.quantize %arg0 : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>
// CHECK: %[[W:.*]] = te.quantize %arg1 : tensor<2x64x128xbf16> -> !te.qtensor<2x64x128xbf16, #te.mxfp8<e4m3>, rowwise>
// CHECK: te.grouped_gemm %[[X]], %[[W]], %arg2 : {{.*}} -> tensor<256x64xbf16>
// KERNELS-LABEL: func.func @mxfp8
// KERNELS: %[[X:.*]] = tek.quantize_kernel "te_quantize_0" %arg0
// KERNELS: %[[W:.*]] = tek.quantize_kernel "te_quantize_1" %arg1
// KERNELS-NOT: tek.dequantize_kernel
// KERNELS: %[[Y:.*]] = tek.grouped_gemm "te_grouped_gemm_2" %[[X]], %[[W]], %arg2 : !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>, !te.qtensor<2x64x128xbf16, #te.mxfp8<e4m3>, rowwise>, tensor<2xi64> -> tensor<256x64xbf16>
// KERNELS: return %[[Y]]
func.func @mxfp8(%x: tensor<256x128xbf16>, %w: tensor<2x64x128xbf16>, %s: tensor<2xi64>) -> tensor<256x64xbf16> {
  %y = te.grouped_linear %x, %w, %s {recipe = @mx} : tensor<256x128xbf16>, tensor<2x64x128xbf16>, tensor<2xi64> -> tensor<256x64xbf16>
  return %y : tensor<256x64xbf16>
}

// With 4096 tokens per expert and N = 4096 the dequantized path is cheaper:
// both operands are dequantized to bf16 and the bf16 grouped GEMM runs (the
// emulated path of te.gemm on sm_90).
// CHECK-LABEL: func.func @mxfp8_many_tokens
// KERNELS-LABEL: func.func @mxfp8_many_tokens
// KERNELS: %[[X:.*]] = tek.quantize_kernel "te_quantize_0" %arg0
// KERNELS: %[[W:.*]] = tek.quantize_kernel "te_quantize_1" %arg1
// KERNELS: %[[DX:.*]] = tek.dequantize_kernel "te_dequantize_2" %[[X]] rowwise {{.*}} -> tensor<8192x128xbf16>
// KERNELS: %[[DW:.*]] = tek.dequantize_kernel "te_dequantize_3" %[[W]] rowwise {{.*}} -> tensor<2x4096x128xbf16>
// KERNELS: %[[Y:.*]] = tek.grouped_gemm "te_grouped_gemm_4" %[[DX]], %[[DW]], %arg2 : tensor<8192x128xbf16>, tensor<2x4096x128xbf16>, tensor<2xi64> -> tensor<8192x4096xbf16>
// KERNELS: return %[[Y]]
func.func @mxfp8_many_tokens(%x: tensor<8192x128xbf16>, %w: tensor<2x4096x128xbf16>, %s: tensor<2xi64>) -> tensor<8192x4096xbf16> {
  %y = te.grouped_linear %x, %w, %s {recipe = @mx} : tensor<8192x128xbf16>, tensor<2x4096x128xbf16>, tensor<2xi64> -> tensor<8192x4096xbf16>
  return %y : tensor<8192x4096xbf16>
}

// -----

te.recipe @bf16 {
  te.rule "*", "*" -> #te.identity<bf16>
}

// Identity of the tensors' own type: read as they are, no copy; the bias
// goes to the grouped GEMM's epilogue.
// CHECK-LABEL: func.func @high_precision
// CHECK-NOT: te.quantize
// CHECK: te.grouped_gemm %arg0, %arg1, %arg2 bias %arg3 : tensor<300x128xbf16>, tensor<3x256x128xbf16>, tensor<3xi64>, tensor<3x256xbf16> -> tensor<300x256xbf16>
// KERNELS-LABEL: func.func @high_precision
// KERNELS-NEXT: tek.grouped_gemm "te_grouped_gemm_0" %arg0, %arg1, %arg2 bias %arg3
func.func @high_precision(%x: tensor<300x128xbf16>, %w: tensor<3x256x128xbf16>, %s: tensor<3xi64>, %b: tensor<3x256xbf16>) -> tensor<300x256xbf16> {
  %y = te.grouped_linear %x, %w, %s bias %b {recipe = @bf16} : tensor<300x128xbf16>, tensor<3x256x128xbf16>, tensor<3xi64>, tensor<3x256xbf16> -> tensor<300x256xbf16>
  return %y : tensor<300x256xbf16>
}

// -----

te.recipe @current {
  te.rule "grouped_linear", "weight" -> #te.fp8_current<e4m3>
  te.rule "grouped_linear", "input" -> #te.fp8_current<e5m2, pow2>
}

// Per-tensor FP8 current scaling needs one amax per expert: no te.quantize
// (its one amax would span the experts); the grouped GEMM takes the bf16
// tokens and stack and the two schemes, and quantizes both itself.
// CHECK-LABEL: func.func @current_scaling
// CHECK-NOT: te.quantize
// CHECK: %[[Y:.*]] = te.grouped_gemm %arg0, %arg1, %arg2 bias %arg3 {input_scheme = #te.fp8_current<e5m2, pow2>, weight_scheme = #te.fp8_current<e4m3>} : tensor<300x128xbf16>, tensor<3x256x128xbf16>, tensor<3xi64>, tensor<3x256xbf16> -> tensor<300x256xbf16>
// CHECK: return %[[Y]]
// KERNELS-LABEL: func.func @current_scaling
// KERNELS-NEXT: tek.grouped_gemm "te_grouped_gemm_0" %arg0, %arg1, %arg2 bias %arg3 {input_scheme = #te.fp8_current<e5m2, pow2>, weight_scheme = #te.fp8_current<e4m3>}
func.func @current_scaling(%x: tensor<300x128xbf16>, %w: tensor<3x256x128xbf16> {te.persistent = "experts.w"}, %s: tensor<3xi64>, %b: tensor<3x256xbf16>) -> tensor<300x256xbf16> {
  %y = te.grouped_linear %x, %w, %s bias %b {recipe = @current} : tensor<300x128xbf16>, tensor<3x256x128xbf16>, tensor<3xi64>, tensor<3x256xbf16> -> tensor<300x256xbf16>
  return %y : tensor<300x256xbf16>
}

// -----

te.recipe @deepseek {
  te.rule "grouped_linear", "weight" -> #te.fp8_block<e4m3, 128x128>
  te.rule "*", "*" -> #te.fp8_block<e4m3, 1x128>
}

// te-infer-usage narrows a quantization read by a grouped GEMM to rowwise,
// and te-fuse-quantize then shares one quantize kernel between a dense
// layer and an MoE layer reading the same tokens.
// KERNELS-LABEL: func.func @shared_tokens
// KERNELS: tek.quantize_kernel "te_fused_quantize_0" %arg0 {{.*}}stages = [#tek.stage<0, rowwise>]
// KERNELS-NOT: tek.quantize_kernel {{.*}} %arg0
// KERNELS: tek.grouped_gemm
func.func @shared_tokens(%x: tensor<512x256xbf16>, %w: tensor<4x128x256xbf16>, %s: tensor<4xi64>, %wd: tensor<128x256xbf16>) -> (tensor<512x128xbf16>, tensor<512x128xbf16>) {
  %y = te.grouped_linear %x, %w, %s {recipe = @deepseek} : tensor<512x256xbf16>, tensor<4x128x256xbf16>, tensor<4xi64> -> tensor<512x128xbf16>
  %z = te.linear %x, %wd {recipe = @deepseek} : tensor<512x256xbf16>, tensor<128x256xbf16> -> tensor<512x128xbf16>
  return %y, %z : tensor<512x128xbf16>, tensor<512x128xbf16>
}

// -----

te.recipe @deepseek {
  te.rule "grouped_linear", "weight" -> #te.fp8_block<e4m3, 128x128>
  te.rule "*", "*" -> #te.fp8_block<e4m3, 1x128>
}

// The backward: dgrad reads dy rowwise and the stack columnwise; the
// grouped wgrad takes dy and x as they are (it quantizes them per expert)
// and gives each expert's bias gradient.
// CHECK-LABEL: func.func @backward
// CHECK: %[[DY:.*]] = te.quantize %arg0 : tensor<512x128xbf16> -> !te.qtensor<512x128xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>
// CHECK: %[[W:.*]] = te.quantize %arg2 : tensor<4x128x256xbf16> -> !te.qtensor<4x128x256xbf16, #te.fp8_block<e4m3, 128x128>, columnwise>
// CHECK: %[[DX:.*]] = te.grouped_gemm %[[DY]], %[[W]], %arg3 {weight_columnwise} : {{.*}} -> tensor<512x256xbf16>
// CHECK: %[[DW:.*]], %[[DB:.*]] = te.grouped_wgrad %arg0, %arg1, %arg3 {grad_output_scheme = #te.fp8_block<e4m3, 1x128>, input_scheme = #te.fp8_block<e4m3, 1x128>} : tensor<512x128xbf16>, tensor<512x256xbf16>, tensor<4xi64> -> tensor<4x128x256xf32>, tensor<4x128xf32>
// CHECK: return %[[DX]], %[[DW]], %[[DB]]
// KERNELS-LABEL: func.func @backward
// KERNELS: tek.grouped_gemm "te_grouped_gemm_2" {{.*}} {weight_columnwise}
// KERNELS: tek.grouped_wgrad "te_grouped_wgrad_3" %arg0, %arg1, %arg3
func.func @backward(%dy: tensor<512x128xbf16>, %x: tensor<512x256xbf16>, %w: tensor<4x128x256xbf16>, %s: tensor<4xi64>)
    -> (tensor<512x256xbf16>, tensor<4x128x256xf32>, tensor<4x128xf32>) {
  %dx, %dw, %db = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @deepseek, bias}
      : tensor<512x128xbf16>, tensor<512x256xbf16>, tensor<4x128x256xbf16>, tensor<4xi64>
      -> tensor<512x256xbf16>, tensor<4x128x256xf32>, tensor<4x128xf32>
  return %dx, %dw, %db : tensor<512x256xbf16>, tensor<4x128x256xf32>, tensor<4x128xf32>
}

// -----

// TE's hybrid format: E5M2 gradients, E4M3 weights and activations. The
// dgrad multiplies E5M2 dy codes by the E4M3 stack, the wgrad quantizes dy
// to E5M2 and x to E4M3 per expert.
te.recipe @hybrid {
  te.rule "grouped_linear", "weight" -> #te.fp8_block<e4m3, 128x128, pow2>
  te.rule "grouped_linear", "grad_output" -> #te.fp8_block<e5m2, 1x128, pow2>
  te.rule "*", "*" -> #te.fp8_block<e4m3, 1x128, pow2>
}

// CHECK-LABEL: func.func @backward_hybrid
// CHECK: %[[DY:.*]] = te.quantize %arg0 : tensor<512x128xbf16> -> !te.qtensor<512x128xbf16, #te.fp8_block<e5m2, 1x128, pow2>, rowwise>
// CHECK: %[[W:.*]] = te.quantize %arg2 : tensor<4x128x256xbf16> -> !te.qtensor<4x128x256xbf16, #te.fp8_block<e4m3, 128x128, pow2>, columnwise>
// CHECK: %[[DX:.*]] = te.grouped_gemm %[[DY]], %[[W]], %arg3 {weight_columnwise}
// CHECK: te.grouped_wgrad %arg0, %arg1, %arg3 {grad_output_scheme = #te.fp8_block<e5m2, 1x128, pow2>, input_scheme = #te.fp8_block<e4m3, 1x128, pow2>}
// KERNELS-LABEL: func.func @backward_hybrid
// KERNELS: tek.grouped_gemm "te_grouped_gemm_2" {{.*}} {weight_columnwise} : !te.qtensor<512x128xbf16, #te.fp8_block<e5m2, 1x128, pow2>, rowwise>
// KERNELS: tek.grouped_wgrad "te_grouped_wgrad_3" %arg0, %arg1, %arg3 {grad_output_scheme = #te.fp8_block<e5m2, 1x128, pow2>, input_scheme = #te.fp8_block<e4m3, 1x128, pow2>}
func.func @backward_hybrid(%dy: tensor<512x128xbf16>, %x: tensor<512x256xbf16>, %w: tensor<4x128x256xbf16>, %s: tensor<4xi64>)
    -> (tensor<512x256xbf16>, tensor<4x128x256xf32>) {
  %dx, %dw = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @hybrid}
      : tensor<512x128xbf16>, tensor<512x256xbf16>, tensor<4x128x256xbf16>, tensor<4xi64>
      -> tensor<512x256xbf16>, tensor<4x128x256xf32>
  return %dx, %dw : tensor<512x256xbf16>, tensor<4x128x256xf32>
}

// -----

te.recipe @bf16 {
  te.rule "*", "*" -> #te.identity<bf16>
}

// The backward of a BF16 layer: the dgrad reads the stack itself along N
// (no copy, no transposed storage); the wgrad reads dy and x as they are.
// CHECK-LABEL: func.func @backward_bf16
// CHECK-NOT: te.quantize
// CHECK: %[[DX:.*]] = te.grouped_gemm %arg0, %arg2, %arg3 {weight_columnwise} : tensor<512x128xbf16>, tensor<4x128x256xbf16>, tensor<4xi64> -> tensor<512x256xbf16>
// CHECK: %[[DW:.*]], %[[DB:.*]] = te.grouped_wgrad %arg0, %arg1, %arg3 {grad_output_scheme = #te.identity<bf16>, input_scheme = #te.identity<bf16>}
// CHECK: return %[[DX]], %[[DW]], %[[DB]]
// KERNELS-LABEL: func.func @backward_bf16
// KERNELS: tek.grouped_gemm "te_grouped_gemm_0" %arg0, %arg2, %arg3 {weight_columnwise}
// KERNELS: tek.grouped_wgrad "te_grouped_wgrad_1" %arg0, %arg1, %arg3
func.func @backward_bf16(%dy: tensor<512x128xbf16>, %x: tensor<512x256xbf16>, %w: tensor<4x128x256xbf16>, %s: tensor<4xi64>)
    -> (tensor<512x256xbf16>, tensor<4x128x256xf32>, tensor<4x128xf32>) {
  %dx, %dw, %db = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @bf16, bias}
      : tensor<512x128xbf16>, tensor<512x256xbf16>, tensor<4x128x256xbf16>, tensor<4xi64>
      -> tensor<512x256xbf16>, tensor<4x128x256xf32>, tensor<4x128xf32>
  return %dx, %dw, %db : tensor<512x256xbf16>, tensor<4x128x256xf32>, tensor<4x128xf32>
}

// -----

te.recipe @mx {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// The MXFP8 backward on Hopper: the dgrad's operands are dequantized (dy
// rowwise, the stack columnwise, 32 x 1 blocks within each expert's N
// rows) for the BF16 dgrad; the wgrad quantizes and dequantizes each
// expert's rows of dy and x in its grouped pass for the BF16 wgrad GEMM.
// CHECK-LABEL: func.func @backward_mxfp8
// CHECK: %[[DY:.*]] = te.quantize %arg0 : tensor<512x128xbf16> -> !te.qtensor<512x128xbf16, #te.mxfp8<e4m3>, rowwise>
// CHECK: %[[W:.*]] = te.quantize %arg2 : tensor<4x128x256xbf16> -> !te.qtensor<4x128x256xbf16, #te.mxfp8<e4m3>, columnwise>
// CHECK: %[[DX:.*]] = te.grouped_gemm %[[DY]], %[[W]], %arg3 {weight_columnwise}
// CHECK: %[[DW:.*]], %[[DB:.*]] = te.grouped_wgrad %arg0, %arg1, %arg3 {grad_output_scheme = #te.mxfp8<e4m3>, input_scheme = #te.mxfp8<e4m3>}
// CHECK: return %[[DX]], %[[DW]], %[[DB]]
// KERNELS-LABEL: func.func @backward_mxfp8
// KERNELS: %[[DYQ:.*]] = tek.dequantize_kernel "te_dequantize_2" %{{.*}} rowwise {{.*}} -> tensor<512x128xbf16>
// KERNELS: %[[WQ:.*]] = tek.dequantize_kernel "te_dequantize_3" %{{.*}} columnwise {{.*}} -> tensor<4x128x256xbf16>
// KERNELS: tek.grouped_gemm "te_grouped_gemm_4" %[[DYQ]], %[[WQ]], %arg3 {weight_columnwise} : tensor<512x128xbf16>, tensor<4x128x256xbf16>
// KERNELS: tek.grouped_wgrad "te_grouped_wgrad_5" %arg0, %arg1, %arg3 {grad_output_scheme = #te.mxfp8<e4m3>, input_scheme = #te.mxfp8<e4m3>}
func.func @backward_mxfp8(%dy: tensor<512x128xbf16>, %x: tensor<512x256xbf16>, %w: tensor<4x128x256xbf16>, %s: tensor<4xi64>)
    -> (tensor<512x256xbf16>, tensor<4x128x256xf32>, tensor<4x128xf32>) {
  %dx, %dw, %db = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @mx, bias}
      : tensor<512x128xbf16>, tensor<512x256xbf16>, tensor<4x128x256xbf16>, tensor<4xi64>
      -> tensor<512x256xbf16>, tensor<4x128x256xf32>, tensor<4x128xf32>
  return %dx, %dw, %db : tensor<512x256xbf16>, tensor<4x128x256xf32>, tensor<4x128xf32>
}

// -----

te.recipe @current_bwd {
  te.rule "grouped_linear", "grad_output" -> #te.fp8_current<e5m2>
  te.rule "*", "*" -> #te.fp8_current<e4m3>
}

// The per-tensor FP8 backward: the dgrad's grouped GEMM quantizes dy and
// the stack's columnwise copy itself (one amax per expert), the grouped
// wgrad dy and x (its amax pass, then the grouped columnwise layout).
// CHECK-LABEL: func.func @backward_current
// CHECK-NOT: te.quantize
// CHECK: %[[DX:.*]] = te.grouped_gemm %arg0, %arg2, %arg3 {input_scheme = #te.fp8_current<e5m2>, weight_columnwise, weight_scheme = #te.fp8_current<e4m3>}
// CHECK: %[[DW:.*]], %[[DB:.*]] = te.grouped_wgrad %arg0, %arg1, %arg3 {grad_output_scheme = #te.fp8_current<e5m2>, input_scheme = #te.fp8_current<e4m3>}
// CHECK: return %[[DX]], %[[DW]], %[[DB]]
// KERNELS-LABEL: func.func @backward_current
// KERNELS-NEXT: tek.grouped_gemm "te_grouped_gemm_0" %arg0, %arg2, %arg3 {input_scheme = #te.fp8_current<e5m2>, weight_columnwise, weight_scheme = #te.fp8_current<e4m3>}
// KERNELS-NEXT: tek.grouped_wgrad "te_grouped_wgrad_1" %arg0, %arg1, %arg3 {grad_output_scheme = #te.fp8_current<e5m2>, input_scheme = #te.fp8_current<e4m3>}
func.func @backward_current(%dy: tensor<512x128xbf16>, %x: tensor<512x256xbf16>, %w: tensor<4x128x256xbf16>, %s: tensor<4xi64>)
    -> (tensor<512x256xbf16>, tensor<4x128x256xf32>, tensor<4x128xf32>) {
  %dx, %dw, %db = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @current_bwd, bias}
      : tensor<512x128xbf16>, tensor<512x256xbf16>, tensor<4x128x256xbf16>, tensor<4xi64>
      -> tensor<512x256xbf16>, tensor<4x128x256xf32>, tensor<4x128xf32>
  return %dx, %dw, %db : tensor<512x256xbf16>, tensor<4x128x256xf32>, tensor<4x128xf32>
}

// -----

te.recipe @nv {
  te.rule "grouped_linear", "weight" -> #te.nvfp4<block2d>
  te.rule "grouped_linear", "input" -> #te.nvfp4<>
}

// NVFP4's tensor scale is each expert's too: the grouped GEMM takes the
// bf16 tensors and the schemes (its plan quantizes each expert's rows,
// 16x16 blocks for the stack); at 100 tokens an expert te-legalize-target
// has the engine's NVFP4 kernel read their codes (nvfp4_codes).
// CHECK-LABEL: func.func @nvfp4
// CHECK-NOT: te.quantize
// CHECK: te.grouped_gemm %arg0, %arg1, %arg2 {input_scheme = #te.nvfp4<>, weight_scheme = #te.nvfp4<block2d>}
// KERNELS-LABEL: func.func @nvfp4
// KERNELS-NEXT: tek.grouped_gemm "te_grouped_gemm_0" %arg0, %arg1, %arg2 {input_scheme = #te.nvfp4<>, nvfp4_codes, weight_scheme = #te.nvfp4<block2d>}
func.func @nvfp4(%x: tensor<300x128xbf16>, %w: tensor<3x256x128xbf16>, %s: tensor<3xi64>) -> tensor<300x256xbf16> {
  %y = te.grouped_linear %x, %w, %s {recipe = @nv} : tensor<300x128xbf16>, tensor<3x256x128xbf16>, tensor<3xi64> -> tensor<300x256xbf16>
  return %y : tensor<300x256xbf16>
}

// -----

te.recipe @nv_train {
  te.rule "grouped_linear", "weight" -> #te.nvfp4<block2d>
  te.rule "grouped_linear", "input" -> #te.nvfp4<rht>
  te.rule "grouped_linear", "grad_output" -> #te.nvfp4<rht, sr>
}

// The NVFP4 backward (TE's recipe: dy stochastically rounded, the wgrad's
// operands Hadamard-transformed): the dgrad's grouped GEMM quantizes dy
// and the stack per expert (16x16 blocks, the same values in both
// directions), the grouped wgrad dy and x columnwise per expert.
// CHECK-LABEL: func.func @backward_nvfp4
// CHECK-NOT: te.quantize
// CHECK: %[[DX:.*]] = te.grouped_gemm %arg0, %arg2, %arg3 {input_scheme = #te.nvfp4<rht, sr>, weight_columnwise, weight_scheme = #te.nvfp4<block2d>}
// CHECK: %[[DW:.*]], %[[DB:.*]] = te.grouped_wgrad %arg0, %arg1, %arg3 {grad_output_scheme = #te.nvfp4<rht, sr>, input_scheme = #te.nvfp4<rht>}
// CHECK: return %[[DX]], %[[DW]], %[[DB]]
// KERNELS-LABEL: func.func @backward_nvfp4
// KERNELS-NEXT: tek.grouped_gemm "te_grouped_gemm_0" %arg0, %arg2, %arg3 {input_scheme = #te.nvfp4<rht, sr>, weight_columnwise, weight_scheme = #te.nvfp4<block2d>}
// KERNELS-NEXT: tek.grouped_wgrad "te_grouped_wgrad_1" %arg0, %arg1, %arg3 {grad_output_scheme = #te.nvfp4<rht, sr>, input_scheme = #te.nvfp4<rht>}
func.func @backward_nvfp4(%dy: tensor<512x128xbf16>, %x: tensor<512x256xbf16>, %w: tensor<4x128x256xbf16>, %s: tensor<4xi64>)
    -> (tensor<512x256xbf16>, tensor<4x128x256xf32>, tensor<4x128xf32>) {
  %dx, %dw, %db = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @nv_train, bias}
      : tensor<512x128xbf16>, tensor<512x256xbf16>, tensor<4x128x256xbf16>, tensor<4xi64>
      -> tensor<512x256xbf16>, tensor<4x128x256xf32>, tensor<4x128xf32>
  return %dx, %dw, %db : tensor<512x256xbf16>, tensor<4x128x256xf32>, tensor<4x128xf32>
}

// -----

te.recipe @mx_nv {
  te.rule "grouped_linear", "input" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<rht>>
  te.rule "grouped_linear", "weight" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>
  te.rule "grouped_linear", "grad_output" -> #te.nvfp4<rht, sr>
}

// The hybrid MXFP8 forward / NVFP4 backward: the dgrad reads each expert's
// weight through its own 16x1 NVFP4 column blocks, the wgrad the NVFP4
// columnwise halves of the hybrids.
// CHECK-LABEL: func.func @backward_mxfp8_nvfp4
// CHECK-NOT: te.quantize
// CHECK: te.grouped_gemm %arg0, %arg2, %arg3 {input_scheme = #te.nvfp4<rht, sr>, weight_columnwise, weight_scheme = #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>}
// CHECK: te.grouped_wgrad %arg0, %arg1, %arg3 {grad_output_scheme = #te.nvfp4<rht, sr>, input_scheme = #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<rht>>}
func.func @backward_mxfp8_nvfp4(%dy: tensor<512x128xbf16>, %x: tensor<512x256xbf16>, %w: tensor<4x128x256xbf16>, %s: tensor<4xi64>)
    -> (tensor<512x256xbf16>, tensor<4x128x256xf32>) {
  %dx, %dw = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @mx_nv}
      : tensor<512x128xbf16>, tensor<512x256xbf16>, tensor<4x128x256xbf16>, tensor<4xi64>
      -> tensor<512x256xbf16>, tensor<4x128x256xf32>
  return %dx, %dw : tensor<512x256xbf16>, tensor<4x128x256xf32>
}

// -----

te.recipe @delayed {
  te.rule "grouped_linear", "grad_output" -> #te.fp8_delayed<e5m2, history = 4>
  te.rule "*", "*" -> #te.fp8_delayed<e4m3, history = 4>
}

// Delayed scaling: each expert keeps its own amax history, so the grouped
// GEMMs quantize per expert and name the layer's state of each role
// (expert g's is "<state>.expert<g>").
// CHECK-LABEL: func.func @delayed_train
// CHECK-NOT: te.quantize
// CHECK: te.grouped_gemm %arg0, %arg1, %arg2 {input_scheme = #te.fp8_delayed<e4m3, history = 4, algo = max, margin = 0>, input_state = "moe.input.delayed_scaling", weight_scheme = #te.fp8_delayed<e4m3, history = 4, algo = max, margin = 0>, weight_state = "moe.weight.delayed_scaling"}
// CHECK: te.grouped_gemm %arg3, %arg1, %arg2 {input_scheme = #te.fp8_delayed<e5m2, history = 4, algo = max, margin = 0>, input_state = "moe.grad_output.delayed_scaling", weight_columnwise, weight_scheme = #te.fp8_delayed<e4m3, history = 4, algo = max, margin = 0>, weight_state = "moe.weight.delayed_scaling"}
// CHECK: te.grouped_wgrad %arg3, %arg0, %arg2 {grad_output_scheme = #te.fp8_delayed<e5m2, history = 4, algo = max, margin = 0>, grad_output_state = "moe.grad_output.delayed_scaling", input_scheme = #te.fp8_delayed<e4m3, history = 4, algo = max, margin = 0>, input_state = "moe.input.delayed_scaling"}
// KERNELS-LABEL: func.func @delayed_train
// KERNELS-NEXT: tek.grouped_gemm "te_grouped_gemm_0" {{.*}}input_state = "moe.input.delayed_scaling"{{.*}}weight_state = "moe.weight.delayed_scaling"}
// KERNELS-NEXT: tek.grouped_gemm "te_grouped_gemm_1" {{.*}}input_state = "moe.grad_output.delayed_scaling"{{.*}}weight_state = "moe.weight.delayed_scaling"}
// KERNELS-NEXT: tek.grouped_wgrad "te_grouped_wgrad_2" {{.*}}grad_output_state = "moe.grad_output.delayed_scaling"{{.*}}input_state = "moe.input.delayed_scaling"}
func.func @delayed_train(%x: tensor<300x128xbf16>, %w: tensor<3x256x128xbf16>, %s: tensor<3xi64>, %dy: tensor<300x256xbf16>)
    -> (tensor<300x256xbf16>, tensor<300x128xbf16>, tensor<3x256x128xf32>) {
  %y = te.grouped_linear %x, %w, %s {recipe = @delayed, layer = "moe"}
      : tensor<300x128xbf16>, tensor<3x256x128xbf16>, tensor<3xi64> -> tensor<300x256xbf16>
  %dx, %dw = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @delayed, layer = "moe"}
      : tensor<300x256xbf16>, tensor<300x128xbf16>, tensor<3x256x128xbf16>, tensor<3xi64>
      -> tensor<300x128xbf16>, tensor<3x256x128xf32>
  return %y, %dx, %dw : tensor<300x256xbf16>, tensor<300x128xbf16>, tensor<3x256x128xf32>
}

// -----

te.recipe @hy {
  te.rule "grouped_linear", "weight" -> #te.fp8_block<e4m3, 128x128>
  te.rule "grouped_linear", "*" -> #te.hybrid<rowwise = #te.fp8_block<e4m3, 1x128>, columnwise = #te.fp8_delayed<e4m3, history = 4>>
}

// A hybrid of block FP8 rowwise and delayed scaling columnwise: the dgrad
// reads dy's block-FP8 direction (a te.quantize naming the layer's state,
// as a dense layer's would), the wgrad quantizes dy and x per expert with
// each expert's delayed-scaling state.
// CHECK-LABEL: func.func @hybrid_delayed_grad
// CHECK: te.quantize %arg0 {scaling_state = "moe.grad_output.delayed_scaling"}
// CHECK: te.grouped_gemm %{{.*}} {weight_columnwise}
// CHECK: te.grouped_wgrad %arg0, %arg1, %arg3 {{{.*}}grad_output_state = "moe.grad_output.delayed_scaling"{{.*}}input_state = "moe.input.delayed_scaling"}
func.func @hybrid_delayed_grad(%dy: tensor<512x128xbf16>, %x: tensor<512x256xbf16>, %w: tensor<4x128x256xbf16>, %s: tensor<4xi64>)
    -> (tensor<512x256xbf16>, tensor<4x128x256xf32>) {
  %dx, %dw = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @hy, layer = "moe"}
      : tensor<512x128xbf16>, tensor<512x256xbf16>, tensor<4x128x256xbf16>, tensor<4xi64>
      -> tensor<512x256xbf16>, tensor<4x128x256xf32>
  return %dx, %dw : tensor<512x256xbf16>, tensor<4x128x256xf32>
}
