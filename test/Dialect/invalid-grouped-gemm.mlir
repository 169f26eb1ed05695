// RUN: te-opt %s -split-input-file -verify-diagnostics

// Tests every rule of te.grouped_gemm (and of tek.grouped_gemm, which
// checks the same rules and that the engine's kernel reads its operands):
// shapes, split sizes, the rowwise directions both operands are read in,
// and the pairing of their schemes.

func.func @input_not_2d(%x: tensor<2x64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op input must be 2-D ([M_total, K], rows sorted by expert), got 2x64x64}}
  %y = te.grouped_gemm %x, %w, %s : tensor<2x64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<64x32xbf16>
  return
}

// -----

func.func @weight_not_3d(%x: tensor<64x64xbf16>, %w: tensor<32x64xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op weight must be 3-D ([G, N, K], one [N, K] weight per expert), got 32x64}}
  %y = te.grouped_gemm %x, %w, %s : tensor<64x64xbf16>, tensor<32x64xbf16>, tensor<2xi64> -> tensor<64x32xbf16>
  return
}

// -----

func.func @features_differ(%x: tensor<64x128xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op input features 128 differ from the weight's K = 64 (weight is [G, N, K] = 2x32x64)}}
  %y = te.grouped_gemm %x, %w, %s : tensor<64x128xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<64x32xbf16>
  return
}

// -----

func.func @split_count(%x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<3xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op split sizes must be tensor<2xi64> (one row count per expert), got 'tensor<3xi64>'}}
  %y = te.grouped_gemm %x, %w, %s : tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<3xi64> -> tensor<64x32xbf16>
  return
}

// -----

func.func @split_type(%x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi32>) {
  // expected-error @+1 {{'te.grouped_gemm' op split sizes must be tensor<2xi64> (one row count per expert), got 'tensor<2xi32>'}}
  %y = te.grouped_gemm %x, %w, %s : tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi32> -> tensor<64x32xbf16>
  return
}

// -----

func.func @result_shape(%x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op result must be [M_total, N] = 64x32, got 64x64}}
  %y = te.grouped_gemm %x, %w, %s : tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<64x64xbf16>
  return
}

// -----

func.func @columnwise_only(%x: !te.qtensor<256x128xbf16, #te.fp8_block<e4m3, 1x128>, columnwise>,
                           %w: !te.qtensor<2x128x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op operand 'a' is read rowwise (op(a) contracts its last dimension) but its type holds only columnwise storage}}
  %y = te.grouped_gemm %x, %w, %s : !te.qtensor<256x128xbf16, #te.fp8_block<e4m3, 1x128>, columnwise>, !te.qtensor<2x128x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>, tensor<2xi64> -> tensor<256x128xbf16>
  return
}

// -----

func.func @identity_with_quantized(%x: !te.qtensor<256x128xbf16, #te.identity<bf16>, rowwise>,
                          %w: !te.qtensor<2x128x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op operand 'a' is #te.identity<bf16> (high precision) but operand 'b' is quantized by #te.fp8_block<e4m3, 128x128>}}
  %y = te.grouped_gemm %x, %w, %s : !te.qtensor<256x128xbf16, #te.identity<bf16>, rowwise>, !te.qtensor<2x128x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>, tensor<2xi64> -> tensor<256x128xbf16>
  return
}

// -----

func.func @high_precision_with_quantized(%x: tensor<256x128xbf16>,
                                         %w: !te.qtensor<2x128x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op operand 'a' is a high-precision tensor but operand 'b' is quantized by #te.fp8_block<e4m3, 128x128>}}
  %y = te.grouped_gemm %x, %w, %s : tensor<256x128xbf16>, !te.qtensor<2x128x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>, tensor<2xi64> -> tensor<256x128xbf16>
  return
}

// -----

func.func @tek_rules(%x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'tek.grouped_gemm' op result must be [M_total, N] = 64x32, got 32x32}}
  %y = tek.grouped_gemm "g" %x, %w, %s : tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<32x32xbf16>
  return
}

// -----

func.func @tek_reads_what_the_kernel_reads(%x: !te.qtensor<64x32xbf16, #te.mxfp8<e4m3>, rowwise>, %w: !te.qtensor<2x32x64xbf16, #te.mxfp8<e4m3>, columnwise>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'tek.grouped_gemm' op operands '!te.qtensor<64x32xbf16, #te.mxfp8<e4m3>, rowwise>' and '!te.qtensor<2x32x64xbf16, #te.mxfp8<e4m3>, columnwise>' (the weight read columnwise) are not what the GEMM engine's kernel reads (high-precision tensors and block FP8, or MXFP8 x MXFP8 with the weight read rowwise and K a multiple of 128); te-lower-to-kernels dequantizes such operands first}}
  %y = tek.grouped_gemm "g" %x, %w, %s {weight_columnwise} : !te.qtensor<64x32xbf16, #te.mxfp8<e4m3>, rowwise>, !te.qtensor<2x32x64xbf16, #te.mxfp8<e4m3>, columnwise>, tensor<2xi64> -> tensor<64x64xbf16>
  return
}

// -----

func.func @tek_mxfp8_whole_stages(%x: !te.qtensor<64x96xbf16, #te.mxfp8<e4m3>, rowwise>, %w: !te.qtensor<2x32x96xbf16, #te.mxfp8<e4m3>, rowwise>, %s: tensor<2xi64>) {
  // expected-error @+1 {{are not what the GEMM engine's kernel reads (high-precision tensors and block FP8, or MXFP8 x MXFP8 with the weight read rowwise and K a multiple of 128)}}
  %y = tek.grouped_gemm "g" %x, %w, %s : !te.qtensor<64x96xbf16, #te.mxfp8<e4m3>, rowwise>, !te.qtensor<2x32x96xbf16, #te.mxfp8<e4m3>, rowwise>, tensor<2xi64> -> tensor<64x32xbf16>
  return
}

// -----

func.func @columnwise_contracts_n(%x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op input features 64 differ from the weight's N = 32 (weight is [G, N, K] = 2x32x64; weight_columnwise contracts N)}}
  %y = te.grouped_gemm %x, %w, %s {weight_columnwise} : tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<64x64xbf16>
  return
}

// -----

func.func @columnwise_result(%x: tensor<64x32xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op result must be [M_total, K] = 64x64, got 64x32}}
  %y = te.grouped_gemm %x, %w, %s {weight_columnwise} : tensor<64x32xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<64x32xbf16>
  return
}

// -----

func.func @columnwise_not_held(%x: !te.qtensor<256x128xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>,
                               %w: !te.qtensor<2x128x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op operand 'b' is read columnwise (op(b) contracts its first dimension) but its type holds only rowwise storage}}
  %y = te.grouped_gemm %x, %w, %s {weight_columnwise} : !te.qtensor<256x128xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>, !te.qtensor<2x128x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>, tensor<2xi64> -> tensor<256x128xbf16>
  return
}

// -----

func.func @bias_shape(%x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>, %b: tensor<32xbf16>) {
  // expected-error @+1 {{'te.grouped_gemm' op bias must be [G, N] = 2x32, got 32}}
  %y = te.grouped_gemm %x, %w, %s bias %b : tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64>, tensor<32xbf16> -> tensor<64x32xbf16>
  return
}

// -----

func.func @bias_type(%x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>, %b: tensor<2x32xf32>) {
  // expected-error @+1 {{'te.grouped_gemm' op bias element type 'f32' must be the result's ('bf16'): the GEMM epilogue adds it in that type}}
  %y = te.grouped_gemm %x, %w, %s bias %b : tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64>, tensor<2x32xf32> -> tensor<64x32xbf16>
  return
}

// -----

func.func @bias_with_dgrad(%x: tensor<64x32xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>, %b: tensor<2x64xbf16>) {
  // expected-error @+1 {{'te.grouped_gemm' op takes no bias with weight_columnwise (dgrad)}}
  %y = te.grouped_gemm %x, %w, %s bias %b {weight_columnwise} : tensor<64x32xbf16>, tensor<2x32x64xbf16>, tensor<2xi64>, tensor<2x64xbf16> -> tensor<64x64xbf16>
  return
}

// -----

func.func @wgrad_rows(%dy: tensor<64x32xbf16>, %x: tensor<60x64xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_wgrad' op grad_output has 64 rows but input has 60}}
  %dw = te.grouped_wgrad %dy, %x, %s {grad_output_scheme = #te.identity<bf16>, input_scheme = #te.identity<bf16>} : tensor<64x32xbf16>, tensor<60x64xbf16>, tensor<2xi64> -> tensor<2x32x64xf32>
  return
}

// -----

func.func @wgrad_dw_shape(%dy: tensor<64x32xbf16>, %x: tensor<64x64xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_wgrad' op grad_weight must be [G, N, K] = 2x32x64, got 2x64x32}}
  %dw = te.grouped_wgrad %dy, %x, %s {grad_output_scheme = #te.identity<bf16>, input_scheme = #te.identity<bf16>} : tensor<64x32xbf16>, tensor<64x64xbf16>, tensor<2xi64> -> tensor<2x64x32xf32>
  return
}

// -----

func.func @wgrad_db_shape(%dy: tensor<64x32xbf16>, %x: tensor<64x64xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_wgrad' op grad_bias must be [G, N] = 2x32, got 32}}
  %dw, %db = te.grouped_wgrad %dy, %x, %s {grad_output_scheme = #te.identity<bf16>, input_scheme = #te.identity<bf16>} : tensor<64x32xbf16>, tensor<64x64xbf16>, tensor<2xi64> -> tensor<2x32x64xf32>, tensor<32xf32>
  return
}

// -----

func.func @wgrad_f16(%dy: tensor<64x32xf16>, %x: tensor<64x64xf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_wgrad' op grad_output and input must be bf16, got 'f16' and 'f16'}}
  %dw = te.grouped_wgrad %dy, %x, %s {grad_output_scheme = #te.identity<bf16>, input_scheme = #te.identity<bf16>} : tensor<64x32xf16>, tensor<64x64xf16>, tensor<2xi64> -> tensor<2x32x64xf32>
  return
}

// -----

// 128x128 tiles would span experts' tokens.
func.func @wgrad_schemes(%dy: tensor<64x32xbf16>, %x: tensor<64x64xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_wgrad' op reads grad_output and input columnwise by #te.mxfp8<e4m3> and #te.fp8_block<e4m3, 128x128>; the grouped wgrad reads each operand as identity of bf16, block FP8 1x128, per-tensor FP8 (current or delayed scaling, one tensor scale per expert), MXFP8 or NVFP4 with 1x16 blocks}}
  %dw = te.grouped_wgrad %dy, %x, %s {grad_output_scheme = #te.mxfp8<e4m3>, input_scheme = #te.fp8_block<e4m3, 128x128>} : tensor<64x32xbf16>, tensor<64x64xbf16>, tensor<2xi64> -> tensor<2x32x64xf32>
  return
}

// -----

func.func @wgrad_e5m2_by_e5m2(%dy: tensor<64x32xbf16>, %x: tensor<64x64xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_wgrad' op reads grad_output and input columnwise by #te.fp8_block<e5m2, 1x128> and #te.fp8_block<e5m2, 1x128>; no FP8 GEMM multiplies e5m2 by e5m2; use e4m3 for at least one operand}}
  %dw = te.grouped_wgrad %dy, %x, %s {grad_output_scheme = #te.fp8_block<e5m2, 1x128>, input_scheme = #te.fp8_block<e5m2, 1x128>} : tensor<64x32xbf16>, tensor<64x64xbf16>, tensor<2xi64> -> tensor<2x32x64xf32>
  return
}

// -----

// Across families too the Hadamard transform must be on both sides.
func.func @wgrad_block_with_rht(%dy: tensor<64x32xbf16>, %x: tensor<64x64xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_wgrad' op reads grad_output and input columnwise by #te.fp8_block<e5m2, 1x128> and #te.nvfp4<rht>; one operand is read in the random-Hadamard-transformed domain and the other is not; the transform cancels only when both apply it}}
  %dw = te.grouped_wgrad %dy, %x, %s {grad_output_scheme = #te.fp8_block<e5m2, 1x128>, input_scheme = #te.nvfp4<rht>} : tensor<64x32xbf16>, tensor<64x64xbf16>, tensor<2xi64> -> tensor<2x32x64xf32>
  return
}

// -----

func.func @tek_wgrad_rules(%dy: tensor<64x32xbf16>, %x: tensor<64x64xbf16>, %s: tensor<3xi64>) {
  // expected-error @+1 {{'tek.grouped_wgrad' op grad_weight must be [G, N, K] = 3x32x64, got 2x32x64}}
  %dw = tek.grouped_wgrad "w" %dy, %x, %s {grad_output_scheme = #te.identity<bf16>, input_scheme = #te.identity<bf16>} : tensor<64x32xbf16>, tensor<64x64xbf16>, tensor<3xi64> -> tensor<2x32x64xf32>
  return
}

// -----

// Operands the op quantizes per expert (input_scheme / weight_scheme). One
// of them alone pairs only with a quantized operand.
func.func @per_expert_one_scheme(%x: tensor<64x64xbf16>, %w: tensor<2x128x64xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op quantizes its input per expert by #te.fp8_current<e4m3>, so its weight must be quantized too (a GEMM multiplies two quantized operands or two high-precision ones), got 'tensor<2x128x64xbf16>'}}
  %y = te.grouped_gemm %x, %w, %s {input_scheme = #te.fp8_current<e4m3>} : tensor<64x64xbf16>, tensor<2x128x64xbf16>, tensor<2xi64> -> tensor<64x128xbf16>
  return
}

// -----

func.func @per_expert_quantized_operand(%x: !te.qtensor<64x64xbf16, #te.fp8_current<e4m3>, rowwise>, %w: tensor<2x128x64xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op quantizes its input per expert, so it must be a bf16 tensor, got '!te.qtensor<64x64xbf16, #te.fp8_current<e4m3>, rowwise>'}}
  %y = te.grouped_gemm %x, %w, %s {input_scheme = #te.fp8_current<e4m3>, weight_scheme = #te.fp8_current<e4m3>} : !te.qtensor<64x64xbf16, #te.fp8_current<e4m3>, rowwise>, tensor<2x128x64xbf16>, tensor<2xi64> -> tensor<64x128xbf16>
  return
}

// -----

func.func @per_expert_f32(%x: tensor<64x64xf32>, %w: tensor<2x128x64xf32>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op quantizes its input per expert, so it must be a bf16 tensor, got 'tensor<64x64xf32>'}}
  %y = te.grouped_gemm %x, %w, %s {input_scheme = #te.fp8_current<e4m3>, weight_scheme = #te.fp8_current<e4m3>} : tensor<64x64xf32>, tensor<2x128x64xf32>, tensor<2xi64> -> tensor<64x128xf32>
  return
}

// -----

func.func @per_expert_block_scheme(%x: tensor<64x64xbf16>, %w: tensor<2x128x64xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op quantizes input by #te.fp8_block<e4m3, 1x128> and weight by #te.fp8_current<e4m3>; a grouped GEMM quantizes an operand per expert (one tensor scale per expert) by per-tensor FP8 (current or delayed scaling; e4m3 or e5m2) or by NVFP4, not by fp8_block}}
  %y = te.grouped_gemm %x, %w, %s {input_scheme = #te.fp8_block<e4m3, 1x128>, weight_scheme = #te.fp8_current<e4m3>} : tensor<64x64xbf16>, tensor<2x128x64xbf16>, tensor<2xi64> -> tensor<64x128xbf16>
  return
}

// -----

func.func @per_expert_e5m2_both(%x: tensor<64x64xbf16>, %w: tensor<2x128x64xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op quantizes input by #te.fp8_current<e5m2> and weight by #te.fp8_current<e5m2>; no FP8 GEMM multiplies e5m2 by e5m2}}
  %y = te.grouped_gemm %x, %w, %s {input_scheme = #te.fp8_current<e5m2>, weight_scheme = #te.fp8_current<e5m2>} : tensor<64x64xbf16>, tensor<2x128x64xbf16>, tensor<2xi64> -> tensor<64x128xbf16>
  return
}

// -----

func.func @per_expert_tiles_straddle(%x: tensor<64x64xbf16>, %w: tensor<2x96x64xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op quantizes its weight per expert with N = 96: the GEMM reads each expert's scale over 128x128 tiles of its own, so N must be a multiple of 128}}
  %y = te.grouped_gemm %x, %w, %s {input_scheme = #te.fp8_current<e4m3>, weight_scheme = #te.fp8_current<e4m3>} : tensor<64x64xbf16>, tensor<2x96x64xbf16>, tensor<2xi64> -> tensor<64x96xbf16>
  return
}

// -----

// In tek the operand beside one quantized per expert is already dequantized.
func.func @tek_per_expert_beside_codes(%x: !te.qtensor<64x64xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>, %w: tensor<2x128x64xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'tek.grouped_gemm' op quantizes one operand per expert and reads the other's dequantized values, so its input must be a bf16 tensor, got '!te.qtensor<64x64xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>'}}
  %y = tek.grouped_gemm "g" %x, %w, %s {weight_scheme = #te.fp8_current<e4m3>} : !te.qtensor<64x64xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>, tensor<2x128x64xbf16>, tensor<2xi64> -> tensor<64x128xbf16>
  return
}

// -----

// Per-tensor FP8 of E5M2 on both sides: the FP8 kernel's pairing rule.
func.func @wgrad_current_e5m2_by_e5m2(%dy: tensor<64x128xbf16>, %x: tensor<64x256xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_wgrad' op reads grad_output and input columnwise by #te.fp8_current<e5m2> and #te.fp8_current<e5m2>; no FP8 GEMM multiplies e5m2 by e5m2}}
  %dw = te.grouped_wgrad %dy, %x, %s {grad_output_scheme = #te.fp8_current<e5m2>, input_scheme = #te.fp8_current<e5m2>} : tensor<64x128xbf16>, tensor<64x256xbf16>, tensor<2xi64> -> tensor<2x128x256xf32>
  return
}

// -----

func.func @per_expert_k_not_128(%x: tensor<64x96xbf16>, %w: tensor<2x128x96xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op quantizes its operands per expert with K = 96: the per-expert GEMMs contract whole 128-element blocks, so K must be a multiple of 128}}
  %y = te.grouped_gemm %x, %w, %s {input_scheme = #te.fp8_current<e4m3>, weight_scheme = #te.fp8_current<e4m3>} : tensor<64x96xbf16>, tensor<2x128x96xbf16>, tensor<2xi64> -> tensor<64x128xbf16>
  return
}

// -----

func.func @per_expert_dgrad_k_not_8(%dy: tensor<64x128xbf16>, %w: tensor<2x128x60xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op quantizes its weight per expert with K = 60: the quantize reads 16-byte pieces of each row, so K must be a multiple of 8}}
  %y = te.grouped_gemm %dy, %w, %s {weight_columnwise, input_scheme = #te.fp8_current<e4m3>, weight_scheme = #te.fp8_current<e4m3>} : tensor<64x128xbf16>, tensor<2x128x60xbf16>, tensor<2xi64> -> tensor<64x60xbf16>
  return
}

// -----

func.func @per_expert_nvfp4_dgrad_rht_weight(%dy: tensor<64x128xbf16>, %w: tensor<2x128x128xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op quantizes input by #te.nvfp4<sr> and weight by #te.nvfp4<rht>; the dgrad reads each expert's NVFP4 weight columnwise without the random Hadamard transform (which only the wgrad's operands take) and rounded to nearest}}
  %y = te.grouped_gemm %dy, %w, %s {weight_columnwise, input_scheme = #te.nvfp4<sr>, weight_scheme = #te.nvfp4<rht>} : tensor<64x128xbf16>, tensor<2x128x128xbf16>, tensor<2xi64> -> tensor<64x128xbf16>
  return
}

// -----

func.func @per_expert_nvfp4_dgrad_stochastic_tiles(%dy: tensor<64x128xbf16>, %w: tensor<2x128x128xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op quantizes input by #te.nvfp4<> and weight by #te.nvfp4<sr, block2d>; the dgrad reads each expert's NVFP4 weight columnwise without the random Hadamard transform (which only the wgrad's operands take) and rounded to nearest}}
  %y = te.grouped_gemm %dy, %w, %s {weight_columnwise, input_scheme = #te.nvfp4<>, weight_scheme = #te.nvfp4<sr, block2d>} : tensor<64x128xbf16>, tensor<2x128x128xbf16>, tensor<2xi64> -> tensor<64x128xbf16>
  return
}

// -----

func.func @per_expert_nvfp4_dgrad_stochastic_columns(%dy: tensor<64x128xbf16>, %w: tensor<2x128x128xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op quantizes input by #te.nvfp4<> and weight by #te.nvfp4<sr>; the dgrad reads each expert's NVFP4 weight columnwise without the random Hadamard transform (which only the wgrad's operands take) and rounded to nearest}}
  %y = te.grouped_gemm %dy, %w, %s {weight_columnwise, input_scheme = #te.nvfp4<>, weight_scheme = #te.nvfp4<sr>} : tensor<64x128xbf16>, tensor<2x128x128xbf16>, tensor<2xi64> -> tensor<64x128xbf16>
  return
}

// -----

func.func @per_expert_nvfp4_dgrad_n_not_64(%dy: tensor<64x80xbf16>, %w: tensor<2x80x128xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op quantizes its operands per expert with N = 80: the BF16 GEMM contracts 64-element slabs, so it must be a multiple of 64}}
  %y = te.grouped_gemm %dy, %w, %s {weight_columnwise, input_scheme = #te.nvfp4<>, weight_scheme = #te.nvfp4<block2d>} : tensor<64x80xbf16>, tensor<2x80x128xbf16>, tensor<2xi64> -> tensor<64x128xbf16>
  return
}

// -----

func.func @per_expert_nvfp4_k_not_16(%x: tensor<64x72xbf16>, %w: tensor<2x128x72xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op quantizes its weight per expert by NVFP4 with [N, K] = 128x72: each expert's 16x16 blocks are its own only when N and K are multiples of 16}}
  %y = te.grouped_gemm %x, %w, %s {input_scheme = #te.nvfp4<>, weight_scheme = #te.nvfp4<block2d>} : tensor<64x72xbf16>, tensor<2x128x72xbf16>, tensor<2xi64> -> tensor<64x128xbf16>
  return
}

// -----

func.func @wgrad_nvfp4_one_sided_rht(%dy: tensor<64x128xbf16>, %x: tensor<64x256xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_wgrad' op reads grad_output and input columnwise by #te.nvfp4<rht, sr> and #te.nvfp4<>; one operand is read in the random-Hadamard-transformed domain and the other is not; the transform cancels only when both apply it}}
  %dw = te.grouped_wgrad %dy, %x, %s {grad_output_scheme = #te.nvfp4<rht, sr>, input_scheme = #te.nvfp4<>} : tensor<64x128xbf16>, tensor<64x256xbf16>, tensor<2xi64> -> tensor<2x128x256xf32>
  return
}

// -----

func.func @wgrad_nvfp4_2d_tokens(%dy: tensor<64x128xbf16>, %x: tensor<64x256xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_wgrad' op reads grad_output and input columnwise by #te.nvfp4<block2d> and #te.nvfp4<block2d>; the grouped wgrad reads each operand as identity of bf16, block FP8 1x128}}
  %dw = te.grouped_wgrad %dy, %x, %s {grad_output_scheme = #te.nvfp4<block2d>, input_scheme = #te.nvfp4<block2d>} : tensor<64x128xbf16>, tensor<64x256xbf16>, tensor<2xi64> -> tensor<2x128x256xf32>
  return
}

// -----

func.func @wgrad_nvfp4_features_not_16(%dy: tensor<64x40xbf16>, %x: tensor<64x256xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_wgrad' op quantizes grad_output by #te.nvfp4<> with 40 features: NVFP4 quantizes each expert as a tensor of whole 16-element blocks, so they must be a multiple of 16}}
  %dw = te.grouped_wgrad %dy, %x, %s {grad_output_scheme = #te.nvfp4<>, input_scheme = #te.nvfp4<>} : tensor<64x40xbf16>, tensor<64x256xbf16>, tensor<2xi64> -> tensor<2x40x256xf32>
  return
}

// -----

// A tensor-wide scheme beside one quantized per expert: one amax over all
// experts would not be each expert's.
func.func @per_expert_nvfp4_beside_tensor_scaled(%x: tensor<64x128xbf16>, %w: !te.qtensor<2x128x128xbf16, #te.fp8_current<e4m3>, rowwise>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op quantizes its input per expert by #te.nvfp4<> and reads its weight as #te.fp8_current<e4m3>; the other operand is quantized by per-tensor FP8, a tensor-wide scale: quantize it per expert too}}
  %y = te.grouped_gemm %x, %w, %s {input_scheme = #te.nvfp4<>} : tensor<64x128xbf16>, !te.qtensor<2x128x128xbf16, #te.fp8_current<e4m3>, rowwise>, tensor<2xi64> -> tensor<64x128xbf16>
  return
}

// -----

func.func @per_expert_weight_direction_missing(%dy: tensor<64x128xbf16>, %w: !te.qtensor<2x128x128xbf16, #te.mxfp8<e4m3>, rowwise>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op reads its weight columnwise, but '!te.qtensor<2x128x128xbf16, #te.mxfp8<e4m3>, rowwise>' does not hold that direction}}
  %y = te.grouped_gemm %dy, %w, %s {weight_columnwise, input_scheme = #te.nvfp4<>} : tensor<64x128xbf16>, !te.qtensor<2x128x128xbf16, #te.mxfp8<e4m3>, rowwise>, tensor<2xi64> -> tensor<64x128xbf16>
  return
}

// -----

func.func @per_expert_delayed_without_state(%x: tensor<64x128xbf16>, %w: tensor<2x128x128xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op quantizes per expert by #te.fp8_delayed<e4m3, history = 4, algo = max, margin = 0>, whose scales come from amax histories kept between calls: name their state (input_state = "..."; expert g keeps "<name>.expert<g>")}}
  %y = te.grouped_gemm %x, %w, %s {input_scheme = #te.fp8_delayed<e4m3, history = 4>, weight_scheme = #te.fp8_delayed<e4m3, history = 4>, weight_state = "moe.weight"} : tensor<64x128xbf16>, tensor<2x128x128xbf16>, tensor<2xi64> -> tensor<64x128xbf16>
  return
}

// -----

func.func @per_expert_state_without_delayed(%x: tensor<64x128xbf16>, %w: tensor<2x128x128xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op names the delayed-scaling state "moe.weight" in weight_state, but that operand is not quantized by #te.fp8_delayed}}
  %y = te.grouped_gemm %x, %w, %s {input_scheme = #te.fp8_current<e4m3>, weight_scheme = #te.fp8_current<e4m3>, weight_state = "moe.weight"} : tensor<64x128xbf16>, tensor<2x128x128xbf16>, tensor<2xi64> -> tensor<64x128xbf16>
  return
}

// -----

func.func @wgrad_empty_state(%dy: tensor<64x128xbf16>, %x: tensor<64x256xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_wgrad' op grad_output_state must name a state, not be empty}}
  %dw = te.grouped_wgrad %dy, %x, %s {grad_output_scheme = #te.fp8_delayed<e5m2, history = 4>, grad_output_state = "", input_scheme = #te.fp8_delayed<e4m3, history = 4>, input_state = "moe.input"} : tensor<64x128xbf16>, tensor<64x256xbf16>, tensor<2xi64> -> tensor<2x128x256xf32>
  return
}

// -----

func.func @tek_nvfp4_codes_need_schemes(%x: tensor<64x64xbf16>, %w: tensor<2x128x64xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'tek.grouped_gemm' op reads NVFP4 codes (nvfp4_codes), but does not quantize both operands per expert}}
  %y = tek.grouped_gemm "g" %x, %w, %s {nvfp4_codes} : tensor<64x64xbf16>, tensor<2x128x64xbf16>, tensor<2xi64> -> tensor<64x128xbf16>
  return
}

// -----

func.func @tek_nvfp4_codes_are_nvfp4(%x: tensor<64x128xbf16>, %w: tensor<2x128x128xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'tek.grouped_gemm' op reads NVFP4 codes (nvfp4_codes): the NVFP4 kernel reads operands quantized per expert by NVFP4}}
  %y = tek.grouped_gemm "g" %x, %w, %s {input_scheme = #te.fp8_current<e4m3>, weight_scheme = #te.fp8_current<e4m3>, nvfp4_codes} : tensor<64x128xbf16>, tensor<2x128x128xbf16>, tensor<2xi64> -> tensor<64x128xbf16>
  return
}

// -----

func.func @tek_nvfp4_codes_fprop_only(%dy: tensor<64x128xbf16>, %w: tensor<2x128x64xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'tek.grouped_gemm' op reads NVFP4 codes (nvfp4_codes): the NVFP4 kernel reads the weight rowwise (the fprop); the dgrad runs on each expert's dequantized values}}
  %y = tek.grouped_gemm "g" %dy, %w, %s {input_scheme = #te.nvfp4<>, weight_scheme = #te.nvfp4<block2d>, weight_columnwise, nvfp4_codes} : tensor<64x128xbf16>, tensor<2x128x64xbf16>, tensor<2xi64> -> tensor<64x64xbf16>
  return
}

// -----

func.func @tek_epilogue_quantize_not_qtensor(%x: tensor<64x64xbf16>, %w: tensor<2x128x64xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'tek.grouped_gemm' op quantizes its result in the epilogue into 'tensor<64x128xbf16>', not a !te.qtensor}}
  %y, %q = tek.grouped_gemm "g" %x, %w, %s : tensor<64x64xbf16>, tensor<2x128x64xbf16>, tensor<2xi64> -> tensor<64x128xbf16>, tensor<64x128xbf16>
  return
}

// -----

func.func @tek_epilogue_quantize_shape(%x: tensor<64x64xbf16>, %w: tensor<2x128x64xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'tek.grouped_gemm' op quantizes its result in the epilogue as '!te.qtensor<64x256xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>', which is not the bf16 result 'tensor<64x128xbf16>' held rowwise only}}
  %y, %q = tek.grouped_gemm "g" %x, %w, %s : tensor<64x64xbf16>, tensor<2x128x64xbf16>, tensor<2xi64> -> tensor<64x128xbf16>, !te.qtensor<64x256xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>
  return
}

// -----

func.func @tek_epilogue_quantize_rowwise_only(%x: tensor<64x64xbf16>, %w: tensor<2x128x64xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'tek.grouped_gemm' op quantizes its result in the epilogue as '!te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>', which is not the bf16 result 'tensor<64x128xbf16>' held rowwise only}}
  %y, %q = tek.grouped_gemm "g" %x, %w, %s : tensor<64x64xbf16>, tensor<2x128x64xbf16>, tensor<2xi64> -> tensor<64x128xbf16>, !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>
  return
}

// -----

func.func @tek_epilogue_quantize_scheme(%x: tensor<64x64xbf16>, %w: tensor<2x128x64xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'tek.grouped_gemm' op quantizes its result in the epilogue: the grouped GEMM's epilogue quantizes its output by FP8 block scaling with 1x128 blocks only, not mxfp8}}
  %y, %q = tek.grouped_gemm "g" %x, %w, %s : tensor<64x64xbf16>, tensor<2x128x64xbf16>, tensor<2xi64> -> tensor<64x128xbf16>, !te.qtensor<64x128xbf16, #te.mxfp8<e4m3>, rowwise>
  return
}

// -----

func.func @tek_epilogue_quantize_tiles(%x: tensor<64x64xbf16>, %w: tensor<2x128x64xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'tek.grouped_gemm' op quantizes its result in the epilogue: the grouped GEMM's epilogue quantizes its output by FP8 block scaling with 1x128 blocks only, not fp8_block with 128x128 tiles}}
  %y, %q = tek.grouped_gemm "g" %x, %w, %s : tensor<64x64xbf16>, tensor<2x128x64xbf16>, tensor<2xi64> -> tensor<64x128xbf16>, !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>
  return
}

// -----

// Values read by the BF16 kernel beside another family: the per-expert
// cast's and the kernel's shape rules.
func.func @per_expert_nvfp4_tokens_not_16(%x: tensor<64x72xbf16>, %w: !te.qtensor<2x128x72xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op quantizes its input per expert by NVFP4 with 72 columns: each row's 1x16 blocks need a multiple of 16}}
  %y = te.grouped_gemm %x, %w, %s {input_scheme = #te.nvfp4<>} : tensor<64x72xbf16>, !te.qtensor<2x128x72xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>, tensor<2xi64> -> tensor<64x128xbf16>
  return
}

// -----

func.func @per_expert_values_rows_not_8(%x: tensor<64x100xbf16>, %w: !te.qtensor<2x128x100xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op quantizes its input per expert with rows of 100 elements: the quantize reads 16-byte pieces of each row, so they must be a multiple of 8}}
  %y = te.grouped_gemm %x, %w, %s {input_scheme = #te.fp8_current<e4m3>} : tensor<64x100xbf16>, !te.qtensor<2x128x100xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>, tensor<2xi64> -> tensor<64x128xbf16>
  return
}

// -----

func.func @per_expert_values_k_not_64(%x: tensor<64x96xbf16>, %w: !te.qtensor<2x128x96xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op quantizes its operands per expert with K = 96: the BF16 GEMM contracts 64-element slabs, so it must be a multiple of 64}}
  %y = te.grouped_gemm %x, %w, %s {input_scheme = #te.fp8_current<e4m3>} : tensor<64x96xbf16>, !te.qtensor<2x128x96xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>, tensor<2xi64> -> tensor<64x128xbf16>
  return
}

// -----

func.func @per_expert_weight_beside_tiled_tokens(%x: !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>, %w: tensor<2x128x128xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'te.grouped_gemm' op quantizes its weight per expert by #te.fp8_current<e4m3> and reads its input as #te.fp8_block<e4m3, 128x128>; the tokens' 128x128 tiles would span experts whose rows are not multiples of 128: quantize them by 1x128 blocks}}
  %y = te.grouped_gemm %x, %w, %s {weight_scheme = #te.fp8_current<e4m3>} : !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>, tensor<2x128x128xbf16>, tensor<2xi64> -> tensor<64x128xbf16>
  return
}
