// A linear layer whose weight is sharded over 2 GPUs (FSDP), trained with
// FP8 block scaling: each rank holds 384 of the weight's 768 rows in bf16,
// quantizes its shard and all-gathers the quantized weight - the forward
// only the rowwise copy its GEMM reads, the backward both copies, of which
// only the rowwise one travels (the columnwise copy of a 128x128-tile
// weight is its transpose, derived on each rank). x and dy are this rank's
// own batch (data parallel).
//
//   te-run examples/fsdp_block_fp8.mlir --ranks 2 --random-inputs 1 --check \
//     --entry forward,backward
//
// The gathered weight is bit-identical to quantizing the whole weight on
// one GPU (docs/Numerics.md §16), so each rank's outputs are those of the
// single-GPU layer on its batch.

te.recipe @fp8_block {
  te.rule "linear", "weight" -> #te.fp8_block<e4m3, 128x128, pow2>
  te.rule "linear", "*"      -> #te.fp8_block<e4m3, 1x128, pow2>
}

func.func @forward(%x: tensor<1024x512xbf16>, %w_shard: tensor<384x512xbf16>)
    -> tensor<1024x768xbf16> {
  %q = te.quantize %w_shard : tensor<384x512xbf16>
         -> !te.qtensor<384x512xbf16, #te.fp8_block<e4m3, 128x128, pow2>, rowwise>
  %w = te.all_gather %q {ranks = 2}
         : !te.qtensor<384x512xbf16, #te.fp8_block<e4m3, 128x128, pow2>, rowwise>
        -> !te.qtensor<768x512xbf16, #te.fp8_block<e4m3, 128x128, pow2>, rowwise>
  %y = te.linear %x, %w {recipe = @fp8_block}
         : tensor<1024x512xbf16>,
           !te.qtensor<768x512xbf16, #te.fp8_block<e4m3, 128x128, pow2>, rowwise>
         -> tensor<1024x768xbf16>
  return %y : tensor<1024x768xbf16>
}

func.func @backward(%dy: tensor<1024x768xbf16>, %x: tensor<1024x512xbf16>,
                    %w_shard: tensor<384x512xbf16>)
    -> (tensor<1024x512xbf16>, tensor<768x512xf32>) {
  %q = te.quantize %w_shard : tensor<384x512xbf16>
         -> !te.qtensor<384x512xbf16, #te.fp8_block<e4m3, 128x128, pow2>, rowwise>
  %w = te.all_gather %q {ranks = 2}
         : !te.qtensor<384x512xbf16, #te.fp8_block<e4m3, 128x128, pow2>, rowwise>
        -> !te.qtensor<768x512xbf16, #te.fp8_block<e4m3, 128x128, pow2>, rowwise|columnwise>
  %dx, %dw = te.linear_grad %dy, %x, %w {recipe = @fp8_block}
         : tensor<1024x768xbf16>, tensor<1024x512xbf16>,
           !te.qtensor<768x512xbf16, #te.fp8_block<e4m3, 128x128, pow2>, rowwise|columnwise>
         -> tensor<1024x512xbf16>, tensor<768x512xf32>
  return %dx, %dw : tensor<1024x512xbf16>, tensor<768x512xf32>
}
