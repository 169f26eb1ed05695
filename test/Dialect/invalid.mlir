// Op verifier diagnostics.
// RUN: te-opt %s -split-input-file -verify-diagnostics

func.func @quantize_shape(%x: tensor<64x32xbf16>) {
  // expected-error @+1 {{'te.quantize' op input shape 64x32 differs from the quantized shape 64x64}}
  %q = te.quantize %x : tensor<64x32xbf16> -> !te.qtensor<64x64xbf16, #te.fp8_current<e4m3>, rowwise>
  return
}

// -----

func.func @quantize_type(%x: tensor<64x64xf32>) {
  // expected-error @+1 {{'te.quantize' op input element type 'f32' differs from the quantized tensor's source type 'bf16'}}
  %q = te.quantize %x : tensor<64x64xf32> -> !te.qtensor<64x64xbf16, #te.fp8_current<e4m3>, rowwise>
  return
}

// -----

func.func @dequantize_missing_direction(%q: !te.qtensor<64x64xbf16, #te.mxfp8<e4m3>, rowwise>) {
  // expected-error @+1 {{'te.dequantize' op reads the columnwise direction, but the operand holds only rowwise}}
  %y = te.dequantize %q columnwise : !te.qtensor<64x64xbf16, #te.mxfp8<e4m3>, rowwise> -> tensor<64x64xbf16>
  return
}

// -----

func.func @dequantize_shape(%q: !te.qtensor<64x64xbf16, #te.mxfp8<e4m3>, rowwise>) {
  // expected-error @+1 {{'te.dequantize' op result shape 32x64 differs from the quantized shape 64x64}}
  %y = te.dequantize %q rowwise : !te.qtensor<64x64xbf16, #te.mxfp8<e4m3>, rowwise> -> tensor<32x64xbf16>
  return
}

// -----

// fprop reads W rowwise (transpose_b contracts its last dimension); a weight
// quantized for dgrad only (columnwise) cannot serve it.
func.func @gemm_missing_direction(%x: !te.qtensor<64x128xbf16, #te.mxfp8<e4m3>, rowwise>,
                                  %w: !te.qtensor<32x128xbf16, #te.mxfp8<e4m3>, columnwise>) {
  // expected-error @+1 {{'te.gemm' op operand 'b' is read rowwise (transpose_b makes op(b) contract its last dimension) but its type holds only columnwise storage}}
  %y = te.gemm %x, %w {transpose_b} : !te.qtensor<64x128xbf16, #te.mxfp8<e4m3>, rowwise>, !te.qtensor<32x128xbf16, #te.mxfp8<e4m3>, columnwise> -> tensor<64x32xbf16>
  return
}

// -----

// wgrad reads dy columnwise.
func.func @gemm_missing_direction_a(%dy: !te.qtensor<64x32xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>,
                                    %x: !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 1x128>, columnwise>) {
  // expected-error @+1 {{'te.gemm' op operand 'a' is read columnwise (transpose_a makes op(a) contract its first dimension) but its type holds only rowwise storage}}
  %dw = te.gemm %dy, %x {transpose_a} : !te.qtensor<64x32xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>, !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 1x128>, columnwise> -> tensor<32x128xf32>
  return
}

// -----

func.func @gemm_k_mismatch(%a: tensor<64x128xbf16>, %b: tensor<32x64xbf16>) {
  // expected-error @+1 {{'te.gemm' op contraction dimensions differ: op(a) is 64x128 but op(b) is 64x32}}
  %y = te.gemm %a, %b {transpose_b} : tensor<64x128xbf16>, tensor<32x64xbf16> -> tensor<64x32xbf16>
  return
}

// -----

func.func @gemm_result_shape(%a: tensor<64x128xbf16>, %b: tensor<128x32xbf16>) {
  // expected-error @+1 {{'te.gemm' op result must be 64x32, got 32x64}}
  %y = te.gemm %a, %b : tensor<64x128xbf16>, tensor<128x32xbf16> -> tensor<32x64xbf16>
  return
}

// -----

func.func @gemm_rank(%a: tensor<2x64x128xbf16>, %b: tensor<128x32xbf16>) {
  // expected-error @+1 {{'te.gemm' op operand 'a' must be 2-D, got 3-D}}
  %y = te.gemm %a, %b : tensor<2x64x128xbf16>, tensor<128x32xbf16> -> tensor<64x32xbf16>
  return
}

// -----

func.func @gemm_bias_shape(%a: tensor<64x128xbf16>, %b: tensor<128x32xbf16>, %bias: tensor<64xbf16>) {
  // expected-error @+1 {{'te.gemm' op bias must be a 1-D tensor of 32 elements (one per output column), got 64}}
  %y = te.gemm %a, %b bias %bias : tensor<64x128xbf16>, tensor<128x32xbf16>, tensor<64xbf16> -> tensor<64x32xbf16>
  return
}

// -----

func.func @gemm_mixed_hp(%a: tensor<64x128xbf16>, %b: tensor<128x32xf32>) {
  // expected-error @+1 {{'te.gemm' op high-precision operands must share an element type, got 'bf16' and 'f32'}}
  %y = te.gemm %a, %b : tensor<64x128xbf16>, tensor<128x32xf32> -> tensor<64x32xbf16>
  return
}

// -----

func.func @gemm_quantized_with_hp(%a: !te.qtensor<64x128xbf16, #te.mxfp8<e4m3>, rowwise>, %b: tensor<128x32xbf16>) {
  // expected-error @+1 {{'te.gemm' op operand 'b' is a high-precision tensor but operand 'a' is quantized by #te.mxfp8<e4m3>; quantize both, or keep both in high precision}}
  %y = te.gemm %a, %b : !te.qtensor<64x128xbf16, #te.mxfp8<e4m3>, rowwise>, tensor<128x32xbf16> -> tensor<64x32xbf16>
  return
}

// -----

// An identity direction is high precision: it does not pair with a
// quantized one (a hybrid pairs per direction: fprop reads W's identity
// rowwise side).
func.func @gemm_identity_with_quantized(%x: !te.qtensor<64x128xbf16, #te.mxfp8<e4m3>, rowwise>,
                                        %w: !te.qtensor<32x128xbf16, #te.hybrid<rowwise = #te.identity<bf16>, columnwise = #te.nvfp4<>>, rowwise|columnwise>) {
  // expected-error @+1 {{'te.gemm' op operand 'b' is #te.identity<bf16> (high precision) but operand 'a' is quantized by #te.mxfp8<e4m3>; quantize both, or keep both in high precision}}
  %y = te.gemm %x, %w {transpose_b} : !te.qtensor<64x128xbf16, #te.mxfp8<e4m3>, rowwise>, !te.qtensor<32x128xbf16, #te.hybrid<rowwise = #te.identity<bf16>, columnwise = #te.nvfp4<>>, rowwise|columnwise> -> tensor<64x32xbf16>
  return
}

// -----

// Across scheme families too the random Hadamard transform must be read
// on both sides: MXFP8 by an NVFP4 RHT operand read columnwise.
func.func @gemm_mixed_rht_one_side(%dy: !te.qtensor<64x32xbf16, #te.mxfp8<e4m3>, columnwise>,
                                   %x: !te.qtensor<64x128xbf16, #te.nvfp4<rht>, columnwise>) {
  // expected-error @+1 {{'te.gemm' op operand 'b' is read in the random-Hadamard-transformed domain (#te.nvfp4<rht>) but operand 'a' is not; the transform cancels only when both operands apply it}}
  %dw = te.gemm %dy, %x {transpose_a} : !te.qtensor<64x32xbf16, #te.mxfp8<e4m3>, columnwise>, !te.qtensor<64x128xbf16, #te.nvfp4<rht>, columnwise> -> tensor<32x128xbf16>
  return
}

// -----

func.func @gemm_block_2d_2d(%a: !te.qtensor<128x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>,
                            %b: !te.qtensor<128x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>) {
  // expected-error @+1 {{'te.gemm' op block FP8 cannot pair 128x128 tiles with 128x128 tiles (no such GEMM kernel); quantize one operand with 1x128 tiles}}
  %y = te.gemm %a, %b {transpose_b} : !te.qtensor<128x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>, !te.qtensor<128x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise> -> tensor<128x128xbf16>
  return
}

// -----

func.func @gemm_e5m2_e5m2(%a: !te.qtensor<64x64xbf16, #te.fp8_current<e5m2>, rowwise>,
                          %b: !te.qtensor<64x64xbf16, #te.fp8_delayed<e5m2>, rowwise>) {
  // expected-error @+1 {{'te.gemm' op no FP8 GEMM multiplies e5m2 by e5m2; use e4m3 for at least one operand}}
  %y = te.gemm %a, %b {transpose_b} : !te.qtensor<64x64xbf16, #te.fp8_current<e5m2>, rowwise>, !te.qtensor<64x64xbf16, #te.fp8_delayed<e5m2>, rowwise> -> tensor<64x64xbf16>
  return
}

// -----

func.func @gemm_bias_type(%a: tensor<64x32xbf16>, %b: tensor<16x32xbf16>, %bias: tensor<16xbf16>) {
  // expected-error @+1 {{'te.gemm' op bias element type 'bf16' must be the result's ('f32'): the GEMM epilogue adds it in that type}}
  %y = te.gemm %a, %b bias %bias {transpose_b} : tensor<64x32xbf16>, tensor<16x32xbf16>, tensor<16xbf16> -> tensor<64x16xf32>
  return
}

// -----

// The RHT transforms along the contraction dimension: one side alone would
// leave it in the product.
func.func @gemm_rht_one_side(%a: !te.qtensor<64x32xbf16, #te.nvfp4<rht>, columnwise>,
                             %b: !te.qtensor<64x48xbf16, #te.nvfp4<>, columnwise>) {
  // expected-error @+1 {{'te.gemm' op operand 'a' is read in the random-Hadamard-transformed domain (#te.nvfp4<rht>) but operand 'b' is not; the transform cancels only when both operands apply it}}
  %y = te.gemm %a, %b {transpose_a} : !te.qtensor<64x32xbf16, #te.nvfp4<rht>, columnwise>, !te.qtensor<64x48xbf16, #te.nvfp4<>, columnwise> -> tensor<32x48xf32>
  return
}

// -----

func.func @bias_grad_shape(%dy: tensor<64x32xbf16>) {
  // expected-error @+1 {{'te.bias_grad' op result must be a 1-D tensor of 32 column sums, got 64}}
  %db = te.bias_grad %dy : tensor<64x32xbf16> -> tensor<64xf32>
  return
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.identity<bf16>
}
func.func @linear_features(%x: tensor<64x32xbf16>, %w: tensor<16x64xbf16>) {
  // expected-error @+1 {{'te.linear' op input features 32 differ from the weight's input features 64 (weight is [out, in] = 16x64)}}
  %y = te.linear %x, %w {recipe = @r} : tensor<64x32xbf16>, tensor<16x64xbf16> -> tensor<64x16xbf16>
  return
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.identity<bf16>
}
func.func @linear_result(%x: tensor<64x32xbf16>, %w: tensor<16x32xbf16>) {
  // expected-error @+1 {{'te.linear' op result must be 64x16 ([..., out]), got 64x32}}
  %y = te.linear %x, %w {recipe = @r} : tensor<64x32xbf16>, tensor<16x32xbf16> -> tensor<64x32xbf16>
  return
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.identity<bf16>
}
func.func @linear_bias(%x: tensor<64x32xbf16>, %w: tensor<16x32xbf16>, %b: tensor<32xbf16>) {
  // expected-error @+1 {{'te.linear' op bias must be [16], got 32}}
  %y = te.linear %x, %w bias %b {recipe = @r} : tensor<64x32xbf16>, tensor<16x32xbf16>, tensor<32xbf16> -> tensor<64x16xbf16>
  return
}

// -----

func.func @linear_no_recipe(%x: tensor<64x32xbf16>, %w: tensor<16x32xbf16>) {
  // expected-error @+1 {{'te.linear' op names recipe @missing, which does not exist}}
  %y = te.linear %x, %w {recipe = @missing} : tensor<64x32xbf16>, tensor<16x32xbf16> -> tensor<64x16xbf16>
  return
}

// -----

func.func private @not_a_recipe()
func.func @linear_not_recipe(%x: tensor<64x32xbf16>, %w: tensor<16x32xbf16>) {
  // expected-error @+1 {{'te.linear' op names recipe @not_a_recipe, but that is a 'func.func', not a te.recipe}}
  %y = te.linear %x, %w {recipe = @not_a_recipe} : tensor<64x32xbf16>, tensor<16x32xbf16> -> tensor<64x16xbf16>
  return
}

// -----

// expected-note @+1 {{recipe defined here}}
te.recipe @fwd_only {
  te.rule "linear", "input" -> #te.mxfp8<e4m3>
  te.rule "linear", "weight" -> #te.mxfp8<e4m3>
}
func.func @linear_grad_missing_role(%dy: tensor<64x16xbf16>, %x: tensor<64x32xbf16>, %w: tensor<16x32xbf16>) {
  // expected-error @+1 {{'te.linear_grad' op recipe @fwd_only has no rule for the role ("linear", "grad_output")}}
  %dx, %dw = te.linear_grad %dy, %x, %w {recipe = @fwd_only} : tensor<64x16xbf16>, tensor<64x32xbf16>, tensor<16x32xbf16> -> tensor<64x32xbf16>, tensor<16x32xf32>
  return
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.identity<bf16>
}
func.func @linear_grad_bias_flag(%dy: tensor<64x16xbf16>, %x: tensor<64x32xbf16>, %w: tensor<16x32xbf16>) {
  // expected-error @+1 {{'te.linear_grad' op has the 'bias' flag but no grad_bias result}}
  %dx, %dw = te.linear_grad %dy, %x, %w {recipe = @r, bias} : tensor<64x16xbf16>, tensor<64x32xbf16>, tensor<16x32xbf16> -> tensor<64x32xbf16>, tensor<16x32xf32>
  return
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.identity<bf16>
}
func.func @linear_grad_dy(%dy: tensor<64x8xbf16>, %x: tensor<64x32xbf16>, %w: tensor<16x32xbf16>) {
  // expected-error @+1 {{'te.linear_grad' op grad_output must be 64x16 ([..., out]), got 64x8}}
  %dx, %dw = te.linear_grad %dy, %x, %w {recipe = @r} : tensor<64x8xbf16>, tensor<64x32xbf16>, tensor<16x32xbf16> -> tensor<64x32xbf16>, tensor<16x32xf32>
  return
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.identity<bf16>
}
func.func @linear_bad_schemes(%x: tensor<64x32xbf16>, %w: tensor<16x32xbf16>) {
  // expected-error @+1 {{'te.linear' op schemes has an entry for 'grad_output', which this op does not quantize}}
  %y = te.linear %x, %w {recipe = @r, schemes = {input = #te.identity<bf16>, weight = #te.identity<bf16>, grad_output = #te.identity<bf16>}} : tensor<64x32xbf16>, tensor<16x32xbf16> -> tensor<64x16xbf16>
  return
}

// -----

// expected-error @+1 {{'te.recipe' op has no rules; a recipe needs at least one te.rule}}
te.recipe @empty {
}

// -----

te.recipe @typo {
  // expected-error @+1 {{'te.rule' op unknown tensor kind "wieght"; expected "input", "weight", "output", "grad_output", "grad_input" or "*"}}
  te.rule "linear", "wieght" -> #te.mxfp8<e4m3>
}

// -----

te.recipe @typo {
  // expected-error @+1 {{'te.rule' op unknown module kind "attention"; expected "linear", "grouped_linear" or "*"}}
  te.rule "attention", "input" -> #te.mxfp8<e4m3>
}

// -----

te.recipe @shadowed {
  te.rule "linear", "*" -> #te.mxfp8<e4m3>
  // expected-warning @+1 {{rule is unreachable: rule #0 of the recipe matches every role it matches}}
  te.rule "linear", "weight" -> #te.nvfp4<>
}

// -----

func.func @rule_outside() {
  // expected-error @+1 {{'te.rule' op expects parent op 'te.recipe'}}
  te.rule "linear", "input" -> #te.mxfp8<e4m3>
  return
}

// -----

func.func @rule_not_scheme() {
  te.recipe @r {
    // expected-error @+1 {{invalid kind of attribute specified}}
    te.rule "linear", "input" -> 3 : i32
  }
  return
}

// -----

func.func @adam_shape(%p: tensor<64x32xf32>, %g: tensor<32x64xbf16>, %m: tensor<64x32xf32>, %v: tensor<64x32xf32>, %lr: tensor<f32>, %step: tensor<i64>) {
  // expected-error @+1 {{'te.adam_step' op grad must have the parameter's shape 64x32}}
  %p1, %m1, %v1 = te.adam_step %p, %g, %m, %v, %lr, %step {beta1 = 0.9} : tensor<64x32xf32>, tensor<32x64xbf16>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<f32>, tensor<i64> -> tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>
  return
}

// -----

func.func @adam_beta(%p: tensor<64x32xf32>, %g: tensor<64x32xbf16>, %m: tensor<64x32xf32>, %v: tensor<64x32xf32>, %lr: tensor<f32>, %step: tensor<i64>) {
  // expected-error @+1 {{'te.adam_step' op beta2 must be in [0, 1), got 1}}
  %p1, %m1, %v1 = te.adam_step %p, %g, %m, %v, %lr, %step {beta2 = 1.0} : tensor<64x32xf32>, tensor<64x32xbf16>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<f32>, tensor<i64> -> tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>
  return
}

// -----

func.func @adam_eps(%p: tensor<64x32xf32>, %g: tensor<64x32xbf16>, %m: tensor<64x32xf32>, %v: tensor<64x32xf32>, %lr: tensor<f32>, %step: tensor<i64>) {
  // expected-error @+1 {{'te.adam_step' op eps must be finite and >= 0, got -1.000000e-08}}
  %p1, %m1, %v1 = te.adam_step %p, %g, %m, %v, %lr, %step {eps = -1.0e-8} : tensor<64x32xf32>, tensor<64x32xbf16>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<f32>, tensor<i64> -> tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>
  return
}

// -----

func.func @adam_unknown(%p: tensor<64x32xf32>, %g: tensor<64x32xbf16>, %m: tensor<64x32xf32>, %v: tensor<64x32xf32>, %lr: tensor<f32>, %step: tensor<i64>) {
  // expected-error @+1 {{unknown hyper-parameter 'momentum'; expected beta1, beta2, eps, weight_decay, mode or fast_math}}
  %p1, %m1, %v1 = te.adam_step %p, %g, %m, %v, %lr, %step {momentum = 0.9} : tensor<64x32xf32>, tensor<64x32xbf16>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<f32>, tensor<i64> -> tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>
  return
}

// -----

func.func @adam_mode(%p: tensor<64x32xf32>, %g: tensor<64x32xbf16>, %m: tensor<64x32xf32>, %v: tensor<64x32xf32>, %lr: tensor<f32>, %step: tensor<i64>) {
  // expected-error @+1 {{expected mode 'adam' or 'adamw', got 'sgd'}}
  %p1, %m1, %v1 = te.adam_step %p, %g, %m, %v, %lr, %step {mode = sgd} : tensor<64x32xf32>, tensor<64x32xbf16>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<f32>, tensor<i64> -> tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>
  return
}

// -----

func.func @fused_quantize_no_quantized(%x: tensor<64x64xbf16>) {
  // expected-error @+1 {{'te.fused_quantize' op needs at least one quantized result}}
  %db = te.fused_quantize %x {bias_grad} : tensor<64x64xbf16> -> tensor<64xf32>
  return
}

// -----

func.func @fused_quantize_shape(%x: tensor<64x64xbf16>) {
  // expected-error @+1 {{'te.fused_quantize' op result #0 must quantize the input's shape and type 'tensor<64x64xbf16>'}}
  %q = te.fused_quantize %x : tensor<64x64xbf16> -> !te.qtensor<64x32xbf16, #te.mxfp8<e4m3>, rowwise>
  return
}

// -----

func.func @fused_quantize_bias_without_flag(%x: tensor<64x64xbf16>) {
  // expected-error @+1 {{'te.fused_quantize' op result #1 must be a !te.qtensor (add 'bias_grad' for a bias gradient)}}
  %q, %db = te.fused_quantize %x : tensor<64x64xbf16> -> !te.qtensor<64x64xbf16, #te.mxfp8<e4m3>, rowwise>, tensor<64xf32>
  return
}

// -----

func.func @fused_quantize_bias_type(%x: tensor<64x32xbf16>) {
  // expected-error @+1 {{'te.fused_quantize' op bias gradient must be tensor<32xf32>, got 'tensor<64xf32>'}}
  %q, %db = te.fused_quantize %x {bias_grad} : tensor<64x32xbf16> -> !te.qtensor<64x32xbf16, #te.mxfp8<e4m3>, rowwise>, tensor<64xf32>
  return
}

// -----

// Only the generic form can state no results at all.
func.func @fused_quantize_empty(%x: tensor<64x64xbf16>) {
  // expected-error @+1 {{'te.fused_quantize' op has the 'bias_grad' flag but no results}}
  "te.fused_quantize"(%x) {bias_grad} : (tensor<64x64xbf16>) -> ()
  return
}

// -----

// The te.persistent argument attribute names a parameter with a string.
// expected-error @+1 {{'te.persistent' must name the value with a non-empty string, got 1 : i64}}
func.func @persistent_not_a_name(%w: tensor<32x64xbf16> {te.persistent = 1}) {
  return
}

// -----

// expected-error @+1 {{'te.persistent' marks a statically shaped tensor or a !te.qtensor argument, not 'tensor<?x64xbf16>'}}
func.func @persistent_dynamic(%w: tensor<?x64xbf16> {te.persistent = "w"}) {
  return
}

// -----

// expected-error @+1 {{unknown te argument attribute 'te.persistant'}}
func.func @persistent_misspelt(%w: tensor<32x64xbf16> {te.persistant = "w"}) {
  return
}

// -----

// te.persistent on a result names the value the runtime keeps.
// expected-error @+1 {{'te.persistent' must name the value with a non-empty string, got ""}}
func.func @persistent_result_empty(%w: tensor<32x64xf32>) -> (tensor<32x64xf32> {te.persistent = ""}) {
  return %w : tensor<32x64xf32>
}

// -----

// expected-error @+1 {{'te.persistent' marks a statically shaped tensor or a !te.qtensor result, not 'tensor<?x64xf32>'}}
func.func @persistent_result_dynamic(%w: tensor<?x64xf32>) -> (tensor<?x64xf32> {te.persistent = "w"}) {
  return %w : tensor<?x64xf32>
}

// -----

// expected-error @+1 {{unknown te result attribute 'te.keep'}}
func.func @persistent_result_misspelt(%w: tensor<32x64xf32>) -> (tensor<32x64xf32> {te.keep = "w"}) {
  return %w : tensor<32x64xf32>
}

// -----

// te.fused_adam exists to quantize the new parameter.
func.func @fused_adam_without_quantized(%p: tensor<64x64xf32>, %g: tensor<64x64xbf16>, %m: tensor<64x64xf32>,
                                        %v: tensor<64x64xf32>, %lr: tensor<f32>, %step: tensor<i64>) {
  // expected-error @+1 {{'te.fused_adam' op quantizes the new parameter into no result; use te.adam_step}}
  %p1, %m1, %v1 = te.fused_adam %p, %g, %m, %v, %lr, %step
      {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, mode = adamw}
      : tensor<64x64xf32>, tensor<64x64xbf16>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<f32>, tensor<i64>
      -> tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
  return
}

// -----

func.func @fused_adam_wrong_quantized(%p: tensor<64x64xf32>, %g: tensor<64x64xbf16>, %m: tensor<64x64xf32>,
                                      %v: tensor<64x64xf32>, %lr: tensor<f32>, %step: tensor<i64>) {
  // expected-error @+1 {{'te.fused_adam' op quantized result #3 must quantize the f32 parameter 64x64, got '!te.qtensor<64x64xbf16, #te.mxfp8<e4m3>, rowwise>'}}
  %p1, %m1, %v1, %q = te.fused_adam %p, %g, %m, %v, %lr, %step
      {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, mode = adamw}
      : tensor<64x64xf32>, tensor<64x64xbf16>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<f32>, tensor<i64>
      -> tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, !te.qtensor<64x64xbf16, #te.mxfp8<e4m3>, rowwise>
  return
}

// -----

// The shared Adam checks apply to the fused op too.
func.func @fused_adam_beta(%p: tensor<64x64xf32>, %g: tensor<64x64xbf16>, %m: tensor<64x64xf32>,
                           %v: tensor<64x64xf32>, %lr: tensor<f32>, %step: tensor<i64>) {
  // expected-error @+1 {{'te.fused_adam' op beta1 must be in [0, 1), got 1}}
  %p1, %m1, %v1, %q = te.fused_adam %p, %g, %m, %v, %lr, %step
      {beta1 = 1.0, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, mode = adamw}
      : tensor<64x64xf32>, tensor<64x64xbf16>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<f32>, tensor<i64>
      -> tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, !te.qtensor<64x64xf32, #te.mxfp8<e4m3>, rowwise>
  return
}
