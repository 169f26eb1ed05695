// RUN: te-opt %s -split-input-file -verify-diagnostics

// Tests every verifier error of te.grouped_linear and te.grouped_linear_grad
// (one per split): ranks, G / K / N / M_total mismatches, the split sizes'
// type, bias and gradient shapes and types, and recipe roles under
// "grouped_linear".

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// The tokens are one [M_total, K] matrix.
func.func @input_rank(%x: tensor<4x16x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) -> tensor<4x16x32xbf16> {
  // expected-error @+1 {{'te.grouped_linear' op input must be 2-D ([M_total, K], tokens sorted by expert), got 4x16x64}}
  %y = te.grouped_linear %x, %w, %s {recipe = @r} : tensor<4x16x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<4x16x32xbf16>
  return %y : tensor<4x16x32xbf16>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// A 2-D weight is one expert: that is te.linear.
func.func @weight_rank(%x: tensor<64x64xbf16>, %w: tensor<32x64xbf16>, %s: tensor<2xi64>) -> tensor<64x32xbf16> {
  // expected-error @+1 {{'te.grouped_linear' op weight must be 3-D ([G, N, K], one [N, K] weight per expert), got 32x64}}
  %y = te.grouped_linear %x, %w, %s {recipe = @r} : tensor<64x64xbf16>, tensor<32x64xbf16>, tensor<2xi64> -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// K of the tokens and of the weights differ.
func.func @k_mismatch(%x: tensor<64x64xbf16>, %w: tensor<2x32x128xbf16>, %s: tensor<2xi64>) -> tensor<64x32xbf16> {
  // expected-error @+1 {{'te.grouped_linear' op input features 64 differ from the weight's input features 128 (weight is [G, N, K] = 2x32x128)}}
  %y = te.grouped_linear %x, %w, %s {recipe = @r} : tensor<64x64xbf16>, tensor<2x32x128xbf16>, tensor<2xi64> -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// Split sizes are i64.
func.func @splits_element_type(%x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi32>) -> tensor<64x32xbf16> {
  // expected-error @+1 {{'te.grouped_linear' op split sizes must be tensor<2xi64> (one token count per expert), got 'tensor<2xi32>'}}
  %y = te.grouped_linear %x, %w, %s {recipe = @r} : tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi32> -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// Split sizes are 1-D.
func.func @splits_rank(%x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2x1xi64>) -> tensor<64x32xbf16> {
  // expected-error @+1 {{'te.grouped_linear' op split sizes must be tensor<2xi64> (one token count per expert), got 'tensor<2x1xi64>'}}
  %y = te.grouped_linear %x, %w, %s {recipe = @r} : tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2x1xi64> -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// G differs between the split sizes and the weights.
func.func @splits_g_mismatch(%x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<3xi64>) -> tensor<64x32xbf16> {
  // expected-error @+1 {{'te.grouped_linear' op has 3 split sizes but 2 experts (weight is [G, N, K] = 2x32x64)}}
  %y = te.grouped_linear %x, %w, %s {recipe = @r} : tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<3xi64> -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// G differs between the bias and the weights.
func.func @bias_g_mismatch(%x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>, %b: tensor<3x32xbf16>) -> tensor<64x32xbf16> {
  // expected-error @+1 {{'te.grouped_linear' op bias must be [G, N] = 2x32, got 3x32}}
  %y = te.grouped_linear %x, %w, %s bias %b {recipe = @r} : tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64>, tensor<3x32xbf16> -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// The bias has one row per expert (te.linear's [N] is not enough).
func.func @bias_one_expert(%x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>, %b: tensor<32xbf16>) -> tensor<64x32xbf16> {
  // expected-error @+1 {{'te.grouped_linear' op bias must be [G, N] = 2x32, got 32}}
  %y = te.grouped_linear %x, %w, %s bias %b {recipe = @r} : tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64>, tensor<32xbf16> -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// The bias is added in the result's type.
func.func @bias_element_type(%x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>, %b: tensor<2x32xf32>) -> tensor<64x32xbf16> {
  // expected-error @+1 {{'te.grouped_linear' op bias element type 'f32' must be the result's ('bf16'): the GEMM epilogue adds it in that type}}
  %y = te.grouped_linear %x, %w, %s bias %b {recipe = @r} : tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64>, tensor<2x32xf32> -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// The result is [M_total, N].
func.func @result_rank(%x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) -> tensor<64x32x1xbf16> {
  // expected-error @+1 {{'te.grouped_linear' op result must be 2-D ([M_total, N]), got 64x32x1}}
  %y = te.grouped_linear %x, %w, %s {recipe = @r} : tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<64x32x1xbf16>
  return %y : tensor<64x32x1xbf16>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// M_total differs between the result and the tokens.
func.func @result_m_mismatch(%x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) -> tensor<48x32xbf16> {
  // expected-error @+1 {{'te.grouped_linear' op result has 48 rows but the input has M_total = 64 token rows}}
  %y = te.grouped_linear %x, %w, %s {recipe = @r} : tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<48x32xbf16>
  return %y : tensor<48x32xbf16>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// N differs between the result and the weights.
func.func @result_n_mismatch(%x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) -> tensor<64x16xbf16> {
  // expected-error @+1 {{'te.grouped_linear' op result has 16 columns but the weight's output features are N = 32}}
  %y = te.grouped_linear %x, %w, %s {recipe = @r} : tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<64x16xbf16>
  return %y : tensor<64x16xbf16>
}

// -----

// expected-note @+1 {{recipe defined here}}
te.recipe @linear_only {
  te.rule "linear", "*" -> #te.mxfp8<e4m3>
}

// The recipe has rules for "linear" only: a grouped layer looks up "grouped_linear".
func.func @linear_rules_only(%x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) -> tensor<64x32xbf16> {
  // expected-error @+1 {{'te.grouped_linear' op recipe @linear_only has no rule for the role ("grouped_linear", "input")}}
  %y = te.grouped_linear %x, %w, %s {recipe = @linear_only} : tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}

// -----

// expected-note @+1 {{recipe defined here}}
te.recipe @weight_only {
  te.rule "grouped_linear", "weight" -> #te.mxfp8<e4m3>
}

// A recipe that covers the weight but not the input.
func.func @missing_input_role(%x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) -> tensor<64x32xbf16> {
  // expected-error @+1 {{'te.grouped_linear' op recipe @weight_only has no rule for the role ("grouped_linear", "input")}}
  %y = te.grouped_linear %x, %w, %s {recipe = @weight_only} : tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}

// -----

// The recipe must exist.
func.func @no_recipe(%x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) -> tensor<64x32xbf16> {
  // expected-error @+1 {{'te.grouped_linear' op names recipe @nowhere, which does not exist}}
  %y = te.grouped_linear %x, %w, %s {recipe = @nowhere} : tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// A recorded schemes dictionary names every role.
func.func @schemes_missing_role(%x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) -> tensor<64x32xbf16> {
  // expected-error @+1 {{'te.grouped_linear' op schemes lacks an entry for 'weight'}}
  %y = te.grouped_linear %x, %w, %s {recipe = @r, schemes = {input = #te.mxfp8<e4m3>}} : tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// The weight is a tensor: a !te.qtensor of [G, N, K] would be quantized as
// one [G*N, K] matrix, not per expert.
func.func @quantized_weight(%x: tensor<64x64xbf16>, %w: !te.qtensor<2x32x64xbf16, #te.mxfp8<e4m3>, rowwise>, %s: tensor<2xi64>) -> tensor<64x32xbf16> {
  // expected-error @+1 {{'te.grouped_linear' op weight must be a tensor, got '!te.qtensor<2x32x64xbf16, #te.mxfp8<e4m3>, rowwise>': a quantized weight of a grouped layer is not supported (a !te.qtensor would quantize the [G, N, K] stack as one matrix, not per expert)}}
  %y = te.grouped_linear %x, %w, %s {recipe = @r} : tensor<64x64xbf16>, !te.qtensor<2x32x64xbf16, #te.mxfp8<e4m3>, rowwise>, tensor<2xi64> -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// Backward: the tokens are one [M_total, K] matrix.
func.func @grad_input_rank(%dy: tensor<4x16x32xbf16>, %x: tensor<4x16x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) -> (tensor<4x16x64xbf16>, tensor<2x32x64xf32>) {
  // expected-error @+1 {{'te.grouped_linear_grad' op input must be 2-D ([M_total, K], tokens sorted by expert), got 4x16x64}}
  %dx, %dw = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @r} : tensor<4x16x32xbf16>, tensor<4x16x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<4x16x64xbf16>, tensor<2x32x64xf32>
  return %dx, %dw : tensor<4x16x64xbf16>, tensor<2x32x64xf32>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// Backward: K of the tokens and of the weights differ.
func.func @grad_k_mismatch(%dy: tensor<64x32xbf16>, %x: tensor<64x32xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) -> (tensor<64x32xbf16>, tensor<2x32x64xf32>) {
  // expected-error @+1 {{'te.grouped_linear_grad' op input features 32 differ from the weight's input features 64 (weight is [G, N, K] = 2x32x64)}}
  %dx, %dw = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @r} : tensor<64x32xbf16>, tensor<64x32xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<64x32xbf16>, tensor<2x32x64xf32>
  return %dx, %dw : tensor<64x32xbf16>, tensor<2x32x64xf32>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// Backward: G differs between the split sizes and the weights.
func.func @grad_splits_g_mismatch(%dy: tensor<64x32xbf16>, %x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<4xi64>) -> (tensor<64x64xbf16>, tensor<2x32x64xf32>) {
  // expected-error @+1 {{'te.grouped_linear_grad' op has 4 split sizes but 2 experts (weight is [G, N, K] = 2x32x64)}}
  %dx, %dw = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @r} : tensor<64x32xbf16>, tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<4xi64> -> tensor<64x64xbf16>, tensor<2x32x64xf32>
  return %dx, %dw : tensor<64x64xbf16>, tensor<2x32x64xf32>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// dy is [M_total, N].
func.func @grad_output_rank(%dy: tensor<32xbf16>, %x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) -> (tensor<64x64xbf16>, tensor<2x32x64xf32>) {
  // expected-error @+1 {{'te.grouped_linear_grad' op grad_output must be 2-D ([M_total, N]), got 32}}
  %dx, %dw = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @r} : tensor<32xbf16>, tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<64x64xbf16>, tensor<2x32x64xf32>
  return %dx, %dw : tensor<64x64xbf16>, tensor<2x32x64xf32>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// M_total differs between dy and the tokens.
func.func @grad_output_m_mismatch(%dy: tensor<32x32xbf16>, %x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) -> (tensor<64x64xbf16>, tensor<2x32x64xf32>) {
  // expected-error @+1 {{'te.grouped_linear_grad' op grad_output has 32 rows but the input has M_total = 64 token rows}}
  %dx, %dw = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @r} : tensor<32x32xbf16>, tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<64x64xbf16>, tensor<2x32x64xf32>
  return %dx, %dw : tensor<64x64xbf16>, tensor<2x32x64xf32>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// N differs between dy and the weights.
func.func @grad_output_n_mismatch(%dy: tensor<64x16xbf16>, %x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) -> (tensor<64x64xbf16>, tensor<2x32x64xf32>) {
  // expected-error @+1 {{'te.grouped_linear_grad' op grad_output has 16 columns but the weight's output features are N = 32}}
  %dx, %dw = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @r} : tensor<64x16xbf16>, tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<64x64xbf16>, tensor<2x32x64xf32>
  return %dx, %dw : tensor<64x64xbf16>, tensor<2x32x64xf32>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// dx has the shape of x.
func.func @grad_input_shape(%dy: tensor<64x32xbf16>, %x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) -> (tensor<32x64xbf16>, tensor<2x32x64xf32>) {
  // expected-error @+1 {{'te.grouped_linear_grad' op grad_input must have the input's shape 64x64, got 32x64}}
  %dx, %dw = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @r} : tensor<64x32xbf16>, tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<32x64xbf16>, tensor<2x32x64xf32>
  return %dx, %dw : tensor<32x64xbf16>, tensor<2x32x64xf32>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// dW has the shape of the stacked weights.
func.func @grad_weight_shape(%dy: tensor<64x32xbf16>, %x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) -> (tensor<64x64xbf16>, tensor<32x64xf32>) {
  // expected-error @+1 {{'te.grouped_linear_grad' op grad_weight must have the weight's shape 2x32x64, got 32x64}}
  %dx, %dw = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @r} : tensor<64x32xbf16>, tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<64x64xbf16>, tensor<32x64xf32>
  return %dx, %dw : tensor<64x64xbf16>, tensor<32x64xf32>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// dW is f32 or the weight's type.
func.func @grad_weight_type(%dy: tensor<64x32xbf16>, %x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) -> (tensor<64x64xbf16>, tensor<2x32x64xf16>) {
  // expected-error @+1 {{'te.grouped_linear_grad' op grad_weight must be f32 or the weight's element type 'bf16', got 'f16'}}
  %dx, %dw = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @r} : tensor<64x32xbf16>, tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<64x64xbf16>, tensor<2x32x64xf16>
  return %dx, %dw : tensor<64x64xbf16>, tensor<2x32x64xf16>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// The bias flag asks for db.
func.func @bias_flag_without_grad_bias(%dy: tensor<64x32xbf16>, %x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) -> (tensor<64x64xbf16>, tensor<2x32x64xf32>) {
  // expected-error @+1 {{'te.grouped_linear_grad' op has the 'bias' flag but no grad_bias result}}
  %dx, %dw = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @r, bias} : tensor<64x32xbf16>, tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<64x64xbf16>, tensor<2x32x64xf32>
  return %dx, %dw : tensor<64x64xbf16>, tensor<2x32x64xf32>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// db needs the bias flag.
func.func @grad_bias_without_flag(%dy: tensor<64x32xbf16>, %x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) -> (tensor<64x64xbf16>, tensor<2x32x64xf32>, tensor<2x32xf32>) {
  // expected-error @+1 {{'te.grouped_linear_grad' op has a grad_bias result but no 'bias' flag}}
  %dx, %dw, %db = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @r} : tensor<64x32xbf16>, tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<64x64xbf16>, tensor<2x32x64xf32>, tensor<2x32xf32>
  return %dx, %dw, %db : tensor<64x64xbf16>, tensor<2x32x64xf32>, tensor<2x32xf32>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// db is [G, N].
func.func @grad_bias_shape(%dy: tensor<64x32xbf16>, %x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) -> (tensor<64x64xbf16>, tensor<2x32x64xf32>, tensor<32xf32>) {
  // expected-error @+1 {{'te.grouped_linear_grad' op grad_bias must be [G, N] = 2x32, got 32}}
  %dx, %dw, %db = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @r, bias} : tensor<64x32xbf16>, tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<64x64xbf16>, tensor<2x32x64xf32>, tensor<32xf32>
  return %dx, %dw, %db : tensor<64x64xbf16>, tensor<2x32x64xf32>, tensor<32xf32>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// db accumulates in FP32.
func.func @grad_bias_type(%dy: tensor<64x32xbf16>, %x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) -> (tensor<64x64xbf16>, tensor<2x32x64xf32>, tensor<2x32xbf16>) {
  // expected-error @+1 {{'te.grouped_linear_grad' op grad_bias must be f32 (bias gradients accumulate in FP32), got 'bf16'}}
  %dx, %dw, %db = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @r, bias} : tensor<64x32xbf16>, tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<64x64xbf16>, tensor<2x32x64xf32>, tensor<2x32xbf16>
  return %dx, %dw, %db : tensor<64x64xbf16>, tensor<2x32x64xf32>, tensor<2x32xbf16>
}

// -----

// expected-note @+1 {{recipe defined here}}
te.recipe @fwd_only {
  te.rule "grouped_linear", "input" -> #te.mxfp8<e4m3>
  te.rule "grouped_linear", "weight" -> #te.mxfp8<e4m3>
}

// The backward also quantizes dy.
func.func @grad_missing_grad_output_role(%dy: tensor<64x32xbf16>, %x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) -> (tensor<64x64xbf16>, tensor<2x32x64xf32>) {
  // expected-error @+1 {{'te.grouped_linear_grad' op recipe @fwd_only has no rule for the role ("grouped_linear", "grad_output")}}
  %dx, %dw = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @fwd_only} : tensor<64x32xbf16>, tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<64x64xbf16>, tensor<2x32x64xf32>
  return %dx, %dw : tensor<64x64xbf16>, tensor<2x32x64xf32>
}

// -----

te.recipe @r {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

// Backward: no quantized weight either.
func.func @grad_quantized_weight(%dy: tensor<64x32xbf16>, %x: tensor<64x64xbf16>, %w: !te.qtensor<2x32x64xbf16, #te.mxfp8<e4m3>, columnwise>, %s: tensor<2xi64>) -> (tensor<64x64xbf16>, tensor<2x32x64xf32>) {
  // expected-error @+1 {{'te.grouped_linear_grad' op weight must be a tensor, got '!te.qtensor<2x32x64xbf16, #te.mxfp8<e4m3>, columnwise>'}}
  %dx, %dw = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @r} : tensor<64x32xbf16>, tensor<64x64xbf16>, !te.qtensor<2x32x64xbf16, #te.mxfp8<e4m3>, columnwise>, tensor<2xi64> -> tensor<64x64xbf16>, tensor<2x32x64xf32>
  return %dx, %dw : tensor<64x64xbf16>, tensor<2x32x64xf32>
}
