// Benchmark: one FP8 block-scaling linear train step (fwd + bwd) at
// M = N = K = 8192, the recipe of examples/deepseek_linear.mlir.
//
//   te-run bench/linear_block_fp8_8192.mlir --random-inputs 1 --bench 20
//   python3 bench/linear_torch.py 8192 20     (the same GEMMs through torch)
te.recipe @fp8_block {
  te.rule "linear", "weight" -> #te.fp8_block<e4m3, 128x128, pow2>
  te.rule "linear", "*"      -> #te.fp8_block<e4m3, 1x128, pow2>
}

func.func @train_step(%x: tensor<8192x8192xbf16>, %w: tensor<8192x8192xbf16> {te.persistent = "fc1.weight"},
                      %b: tensor<8192xbf16>, %dy: tensor<8192x8192xbf16>)
    -> (tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xf32>,
        tensor<8192xf32>) {
  %y = te.linear %x, %w bias %b {recipe = @fp8_block}
         : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192xbf16>
         -> tensor<8192x8192xbf16>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @fp8_block, bias}
         : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xbf16>
         -> tensor<8192x8192xbf16>, tensor<8192x8192xf32>, tensor<8192xf32>
  return %y, %dx, %dw, %db
         : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xf32>,
           tensor<8192xf32>
}
