// The expert GEMMs of a BF16 MoE layer at the DeepSeek-V3 shape of
// bench/moe_block_fp8_32768.mlir (8 experts, 32768 token rows, N = 4096,
// K = 7168): the fprop (the stack read along K) and the dgrad
// dx_g = dy_g W_g (the same stack read along N, MN-major: no transposed
// copy). te-run --bench times each GEMM (one entry per run):
//
//   te-run bench/moe_grouped_bf16_32768.mlir --random-inputs 1 --bench 20 --entry fprop
//   te-run bench/moe_grouped_bf16_32768.mlir --random-inputs 1 --bench 20 --entry dgrad

func.func @fprop(%x: tensor<32768x7168xbf16>, %w: tensor<8x4096x7168xbf16>,
                 %splits: tensor<8xi64>) -> tensor<32768x4096xbf16> {
  %y = te.grouped_gemm %x, %w, %splits
         : tensor<32768x7168xbf16>, tensor<8x4096x7168xbf16>, tensor<8xi64>
        -> tensor<32768x4096xbf16>
  return %y : tensor<32768x4096xbf16>
}

func.func @dgrad(%dy: tensor<32768x4096xbf16>, %w: tensor<8x4096x7168xbf16>,
                 %splits: tensor<8xi64>) -> tensor<32768x7168xbf16> {
  %dx = te.grouped_gemm %dy, %w, %splits {weight_columnwise}
          : tensor<32768x4096xbf16>, tensor<8x4096x7168xbf16>, tensor<8xi64>
         -> tensor<32768x7168xbf16>
  return %dx : tensor<32768x7168xbf16>
}
