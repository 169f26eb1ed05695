// The experts of a Mixture-of-Experts feed-forward layer, forward, with
// FP8 block scaling (DeepSeek-style): 8 experts, 1024 token rows sorted by
// expert, hidden size 512, expert size 256. Each expert's tokens and weight
// are quantized as if they were its own tensors (1x128 tiles for the
// tokens, 128x128 tiles for each expert's weight: docs/Numerics.md §7.4)
// and every expert's GEMM runs in one launch of the GEMM engine's grouped
// kernel, which reads the split sizes on the device.
//
//   te-opt examples/moe_block_fp8.mlir --te-to-cuda
//   te-run examples/moe_block_fp8.mlir --random-inputs 1 --entry up,down --check
//
// te has no activation op: the framework applies it between the two
// projections (here each entry takes its own input). Random inputs give
// ragged split sizes summing to the token rows, one expert with none.

te.recipe @fp8_block {
  te.rule "grouped_linear", "weight" -> #te.fp8_block<e4m3, 128x128, pow2>
  te.rule "grouped_linear", "*"      -> #te.fp8_block<e4m3, 1x128, pow2>
}

// Up projection: h_g = x_g W1_g^T for each expert g.
func.func @up(%x: tensor<1024x512xbf16>,
              %w1: tensor<8x256x512xbf16> {te.persistent = "experts.w1"},
              %splits: tensor<8xi64>) -> tensor<1024x256xbf16> {
  %h = te.grouped_linear %x, %w1, %splits {recipe = @fp8_block}
         : tensor<1024x512xbf16>, tensor<8x256x512xbf16>, tensor<8xi64>
         -> tensor<1024x256xbf16>
  return %h : tensor<1024x256xbf16>
}

// Down projection of the activated h: y_g = a_g W2_g^T.
func.func @down(%a: tensor<1024x256xbf16>,
                %w2: tensor<8x512x256xbf16> {te.persistent = "experts.w2"},
                %splits: tensor<8xi64>) -> tensor<1024x512xbf16> {
  %y = te.grouped_linear %a, %w2, %splits {recipe = @fp8_block}
         : tensor<1024x256xbf16>, tensor<8x512x256xbf16>, tensor<8xi64>
         -> tensor<1024x512xbf16>
  return %y : tensor<1024x512xbf16>
}

// The up projection's backward: dx_g = dh_g W1_g (the stack read through
// its columnwise 128x128 copy) and dW1_g = dh_g^T x_g, both per expert;
// dh and x are quantized columnwise per expert inside the grouped wgrad.
func.func @up_grad(%dh: tensor<1024x256xbf16>, %x: tensor<1024x512xbf16>,
                   %w1: tensor<8x256x512xbf16> {te.persistent = "experts.w1"},
                   %splits: tensor<8xi64>)
    -> (tensor<1024x512xbf16>, tensor<8x256x512xf32>) {
  %dx, %dw1 = te.grouped_linear_grad %dh, %x, %w1, %splits {recipe = @fp8_block}
         : tensor<1024x256xbf16>, tensor<1024x512xbf16>, tensor<8x256x512xbf16>,
           tensor<8xi64>
         -> tensor<1024x512xbf16>, tensor<8x256x512xf32>
  return %dx, %dw1 : tensor<1024x512xbf16>, tensor<8x256x512xf32>
}
