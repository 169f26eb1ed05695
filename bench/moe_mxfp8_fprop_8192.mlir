// The forward of an MoE expert layer under MXFP8 with few tokens per
// expert: 32 experts, 8192 token rows (te-run's uneven split sizes, 256 a
// expert on average), K = 7168, N = 4096 - the shape where te-legalize-target
// reads the MXFP8 operands directly (the GEMM engine's MXFP8 kernel) instead
// of dequantizing the tokens and the whole stack first
// (docs/Performance.md, "A generated MXFP8 GEMM"). te-run --bench times
// each kernel:
//
//   te-run bench/moe_mxfp8_fprop_8192.mlir --random-inputs 1 --bench 20

te.recipe @mxfp8 {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}

func.func @mxfp8_fprop(%x: tensor<8192x7168xbf16>,
                       %w: tensor<32x4096x7168xbf16> {te.persistent = "experts.w1"},
                       %splits: tensor<32xi64>) -> tensor<8192x4096xbf16> {
  %y = te.grouped_linear %x, %w, %splits {recipe = @mxfp8}
         : tensor<8192x7168xbf16>, tensor<32x4096x7168xbf16>, tensor<32xi64>
        -> tensor<8192x4096xbf16>
  return %y : tensor<8192x4096xbf16>
}
