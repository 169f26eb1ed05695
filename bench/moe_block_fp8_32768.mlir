// The DeepSeek-V3-like expert GEMM of docs/Performance.md through the whole
// compiler: 8 experts, 32768 token rows sorted by expert (te-run's random
// split sizes: uneven, one expert empty, no padding), K = 7168,
// N = 4096, FP8 block scaling; @up_grad is its backward (dgrad, and the
// grouped wgrad with its per-expert quantize). te-run --bench times each
// kernel:
//
//   te-run bench/moe_block_fp8_32768.mlir --random-inputs 1 --bench 20
//   te-run bench/moe_block_fp8_32768.mlir --random-inputs 1 --bench 20 --entry up_grad

te.recipe @fp8_block {
  te.rule "grouped_linear", "weight" -> #te.fp8_block<e4m3, 128x128, pow2>
  te.rule "grouped_linear", "*"      -> #te.fp8_block<e4m3, 1x128, pow2>
}

func.func @up(%x: tensor<32768x7168xbf16>,
              %w: tensor<8x4096x7168xbf16> {te.persistent = "experts.w1"},
              %splits: tensor<8xi64>) -> tensor<32768x4096xbf16> {
  %h = te.grouped_linear %x, %w, %splits {recipe = @fp8_block}
         : tensor<32768x7168xbf16>, tensor<8x4096x7168xbf16>, tensor<8xi64>
         -> tensor<32768x4096xbf16>
  return %h : tensor<32768x4096xbf16>
}

func.func @up_grad(%dh: tensor<32768x4096xbf16>, %x: tensor<32768x7168xbf16>,
                   %w: tensor<8x4096x7168xbf16> {te.persistent = "experts.w1"},
                   %splits: tensor<8xi64>)
    -> (tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>) {
  %dx, %dw = te.grouped_linear_grad %dh, %x, %w, %splits {recipe = @fp8_block}
         : tensor<32768x4096xbf16>, tensor<32768x7168xbf16>,
           tensor<8x4096x7168xbf16>, tensor<8xi64>
         -> tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>
  return %dx, %dw : tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>
}

// Two expert layers in a row (7168 -> 4096 -> 7168; no activation between
// them, which the dialect has no op for): the first GEMM's epilogue writes
// h's 1x128 codes and scales for the second layer, which reads no bf16 h
// (te-fuse-gemm-epilogue); h is returned too, as a training step keeps it.
//
//   te-run bench/moe_block_fp8_32768.mlir --random-inputs 1 --bench 20 --entry mlp
func.func @mlp(%x: tensor<32768x7168xbf16>,
               %w1: tensor<8x4096x7168xbf16> {te.persistent = "experts.w1"},
               %w2: tensor<8x7168x4096xbf16> {te.persistent = "experts.w2"},
               %splits: tensor<8xi64>)
    -> (tensor<32768x4096xbf16>, tensor<32768x7168xbf16>) {
  %h = te.grouped_linear %x, %w1, %splits {recipe = @fp8_block}
         : tensor<32768x7168xbf16>, tensor<8x4096x7168xbf16>, tensor<8xi64>
         -> tensor<32768x4096xbf16>
  %y = te.grouped_linear %h, %w2, %splits {recipe = @fp8_block}
         : tensor<32768x4096xbf16>, tensor<8x7168x4096xbf16>, tensor<8xi64>
         -> tensor<32768x7168xbf16>
  return %h, %y : tensor<32768x4096xbf16>, tensor<32768x7168xbf16>
}
