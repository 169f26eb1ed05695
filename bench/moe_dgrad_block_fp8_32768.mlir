// dgrad of the expert GEMM of bench/moe_block_fp8_32768.mlir, written as
// te.grouped_gemm {weight_columnwise} (te.grouped_linear_grad is not
// expanded yet): dx_g = dy_g W_g for 8 experts, 32768 token rows, dy
// [32768, 4096], W [8, 4096, 7168] read through its columnwise 128x128
// storage. te-run --bench times the quantize kernels and the GEMM;
// @dgrad_e5m2 is the same with an E5M2 gradient (TE's hybrid format: the
// E5M2 x E4M3 tensor-core MMA):
//
//   te-run bench/moe_dgrad_block_fp8_32768.mlir --random-inputs 1 --bench 20 \
//     --entry dgrad,dgrad_e5m2

func.func @dgrad(%dy: tensor<32768x4096xbf16>,
                 %w: tensor<8x4096x7168xbf16> {te.persistent = "experts.w1"},
                 %splits: tensor<8xi64>) -> tensor<32768x7168xbf16> {
  %qdy = te.quantize %dy : tensor<32768x4096xbf16>
           -> !te.qtensor<32768x4096xbf16, #te.fp8_block<e4m3, 1x128, pow2>, rowwise>
  %qw = te.quantize %w : tensor<8x4096x7168xbf16>
          -> !te.qtensor<8x4096x7168xbf16, #te.fp8_block<e4m3, 128x128, pow2>, columnwise>
  %dx = te.grouped_gemm %qdy, %qw, %splits {weight_columnwise}
          : !te.qtensor<32768x4096xbf16, #te.fp8_block<e4m3, 1x128, pow2>, rowwise>,
            !te.qtensor<8x4096x7168xbf16, #te.fp8_block<e4m3, 128x128, pow2>, columnwise>,
            tensor<8xi64> -> tensor<32768x7168xbf16>
  return %dx : tensor<32768x7168xbf16>
}

func.func @dgrad_e5m2(%dy: tensor<32768x4096xbf16>,
                      %w: tensor<8x4096x7168xbf16> {te.persistent = "experts.w1"},
                      %splits: tensor<8xi64>) -> tensor<32768x7168xbf16> {
  %qdy = te.quantize %dy : tensor<32768x4096xbf16>
           -> !te.qtensor<32768x4096xbf16, #te.fp8_block<e5m2, 1x128, pow2>, rowwise>
  %qw = te.quantize %w : tensor<8x4096x7168xbf16>
          -> !te.qtensor<8x4096x7168xbf16, #te.fp8_block<e4m3, 128x128, pow2>, columnwise>
  %dx = te.grouped_gemm %qdy, %qw, %splits {weight_columnwise}
          : !te.qtensor<32768x4096xbf16, #te.fp8_block<e5m2, 1x128, pow2>, rowwise>,
            !te.qtensor<8x4096x7168xbf16, #te.fp8_block<e4m3, 128x128, pow2>, columnwise>,
            tensor<8xi64> -> tensor<32768x7168xbf16>
  return %dx : tensor<32768x7168xbf16>
}
