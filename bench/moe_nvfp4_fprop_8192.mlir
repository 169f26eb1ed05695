// The forward of an MoE expert layer under TE's NVFP4 recipe with few
// tokens per expert: 32 experts, 8192 token rows (te-run's uneven split
// sizes, 256 an expert on average), K = 7168, N = 4096, the stack in 16x16
// blocks. Each expert's operands are quantized with their own tensor
// scale; at this shape te-legalize-target has the GEMM engine's NVFP4
// kernel read their codes instead of the BF16 kernel reading their values
// (docs/Performance.md, "A generated NVFP4 GEMM"). te-run --bench times
// each kernel; --grouped-nvfp4=dequantize runs the values path:
//
//   te-run bench/moe_nvfp4_fprop_8192.mlir --random-inputs 1 --bench 20

te.recipe @nvfp4 {
  te.rule "grouped_linear", "weight" -> #te.nvfp4<block2d>
  te.rule "grouped_linear", "input" -> #te.nvfp4<>
}

func.func @nvfp4_fprop(%x: tensor<8192x7168xbf16>,
                       %w: tensor<32x4096x7168xbf16> {te.persistent = "experts.w1"},
                       %splits: tensor<32xi64>) -> tensor<8192x4096xbf16> {
  %y = te.grouped_linear %x, %w, %splits {recipe = @nvfp4}
         : tensor<8192x7168xbf16>, tensor<32x4096x7168xbf16>, tensor<32xi64>
        -> tensor<8192x4096xbf16>
  return %y : tensor<8192x4096xbf16>
}
