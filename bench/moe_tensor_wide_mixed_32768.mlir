// Grouped layers whose GEMM meets a tensor-wide scheme (one amax per expert)
// on one operand and another family on the other, at the DeepSeek-V3-like
// shape of docs/Performance.md: 8 experts, 32768 token rows (te-run's
// random splits), K = 7168, N = 4096. Each such GEMM quantizes its
// tensor-wide operand per expert to values, dequantizes the other, and runs
// the engine's BF16 kernel; @bf16_grad is the same backward in bf16, the
// baseline of the same run.
//
//   te-run bench/moe_tensor_wide_mixed_32768.mlir --random-inputs 1 --bench 20 --entry hybrid_grad
//   te-run bench/moe_tensor_wide_mixed_32768.mlir --random-inputs 1 --bench 20 --entry bf16_grad
//   te-run bench/moe_tensor_wide_mixed_32768.mlir --random-inputs 1 --bench 20 --entry current_block

// TE's hybrid backward with an MXFP8 weight: NVFP4 gradients (stochastic
// rounding), MXFP8 tokens and weight.
te.recipe @hybrid {
  te.rule "grouped_linear", "grad_output" -> #te.nvfp4<sr>
  te.rule "grouped_linear", "*"           -> #te.mxfp8<e4m3>
}
// Per-tensor current tokens by a 128x128 block-FP8 weight.
te.recipe @current_by_block {
  te.rule "grouped_linear", "weight" -> #te.fp8_block<e4m3, 128x128>
  te.rule "grouped_linear", "*"      -> #te.fp8_current<e4m3>
}
te.recipe @bf16 {
  te.rule "*", "*" -> #te.identity<bf16>
}

func.func @hybrid_grad(%dh: tensor<32768x4096xbf16>, %x: tensor<32768x7168xbf16>,
                       %w: tensor<8x4096x7168xbf16> {te.persistent = "experts.w1"},
                       %splits: tensor<8xi64>)
    -> (tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>) {
  %dx, %dw = te.grouped_linear_grad %dh, %x, %w, %splits {recipe = @hybrid}
         : tensor<32768x4096xbf16>, tensor<32768x7168xbf16>,
           tensor<8x4096x7168xbf16>, tensor<8xi64>
         -> tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>
  return %dx, %dw : tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>
}

func.func @bf16_grad(%dh: tensor<32768x4096xbf16>, %x: tensor<32768x7168xbf16>,
                     %w: tensor<8x4096x7168xbf16>, %splits: tensor<8xi64>)
    -> (tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>) {
  %dx, %dw = te.grouped_linear_grad %dh, %x, %w, %splits {recipe = @bf16}
         : tensor<32768x4096xbf16>, tensor<32768x7168xbf16>,
           tensor<8x4096x7168xbf16>, tensor<8xi64>
         -> tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>
  return %dx, %dw : tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>
}

func.func @current_block(%x: tensor<32768x7168xbf16>,
                         %w: tensor<8x4096x7168xbf16> {te.persistent = "experts.w2"},
                         %splits: tensor<8xi64>) -> tensor<32768x4096xbf16> {
  %h = te.grouped_linear %x, %w, %splits {recipe = @current_by_block}
         : tensor<32768x7168xbf16>, tensor<8x4096x7168xbf16>, tensor<8xi64>
         -> tensor<32768x4096xbf16>
  return %h : tensor<32768x4096xbf16>
}
