// The backward of bench/moe_block_fp8_32768.mlir's expert layer (8 experts,
// 32768 token rows in te-run's uneven split sizes, K = 7168, N = 4096)
// under MXFP8 and, as the baseline of the same run, BF16. On Hopper MXFP8
// runs on the BF16 grouped kernels: the dgrad on dy and the stack
// dequantized, the wgrad on each expert's 32-row blocks quantized and
// dequantized by its grouped pass (docs/Numerics.md §7.4). te-run --bench
// times each kernel:
//
//   te-run bench/moe_mxfp8_32768.mlir --random-inputs 1 --bench 20 --entry mxfp8_grad
//   te-run bench/moe_mxfp8_32768.mlir --random-inputs 1 --bench 20 --entry bf16_grad
//
// and the forward (quantize x; the stack quantized on the first call, then
// kept; the grouped fprop):
//
//   te-run bench/moe_mxfp8_32768.mlir --random-inputs 1 --bench 20 --entry mxfp8_fprop

te.recipe @mxfp8 {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}
te.recipe @bf16 {
  te.rule "*", "*" -> #te.identity<bf16>
}

func.func @mxfp8_fprop(%x: tensor<32768x7168xbf16>,
                       %w: tensor<8x4096x7168xbf16> {te.persistent = "experts.w1"},
                       %splits: tensor<8xi64>) -> tensor<32768x4096xbf16> {
  %y = te.grouped_linear %x, %w, %splits {recipe = @mxfp8}
         : tensor<32768x7168xbf16>, tensor<8x4096x7168xbf16>, tensor<8xi64>
        -> tensor<32768x4096xbf16>
  return %y : tensor<32768x4096xbf16>
}

func.func @mxfp8_grad(%dh: tensor<32768x4096xbf16>, %x: tensor<32768x7168xbf16>,
                      %w: tensor<8x4096x7168xbf16> {te.persistent = "experts.w1"},
                      %splits: tensor<8xi64>)
    -> (tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>) {
  %dx, %dw = te.grouped_linear_grad %dh, %x, %w, %splits {recipe = @mxfp8}
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
