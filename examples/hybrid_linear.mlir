// A linear layer trained with MXFP8 forward / NVFP4 backward (a "hybrid"
// recipe): the forward GEMM reads x and W rowwise in MXFP8; the backward
// GEMMs read W, x and dy columnwise in NVFP4 (with a random Hadamard
// transform and stochastic rounding on the gradient).
//
//   te-opt examples/hybrid_linear.mlir --te-resolve-recipe

te.recipe @mxfp8_fwd_nvfp4_bwd {
  te.rule "linear", "input"       -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<rht>>
  te.rule "linear", "weight"      -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>
  te.rule "linear", "grad_output" -> #te.nvfp4<rht, sr>
  te.rule "*", "*"                -> #te.identity<bf16>
}

func.func @train_step(%x: tensor<4096x1024xbf16>, %w: tensor<2048x1024xbf16>,
                      %b: tensor<2048xbf16>, %dy: tensor<4096x2048xbf16>)
    -> (tensor<4096x2048xbf16>, tensor<4096x1024xbf16>, tensor<2048x1024xf32>,
        tensor<2048xf32>) {
  %y = te.linear %x, %w bias %b {recipe = @mxfp8_fwd_nvfp4_bwd}
         : tensor<4096x1024xbf16>, tensor<2048x1024xbf16>, tensor<2048xbf16>
         -> tensor<4096x2048xbf16>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @mxfp8_fwd_nvfp4_bwd, bias}
         : tensor<4096x2048xbf16>, tensor<4096x1024xbf16>, tensor<2048x1024xbf16>
         -> tensor<4096x1024xbf16>, tensor<2048x1024xf32>, tensor<2048xf32>
  return %y, %dx, %dw, %db
         : tensor<4096x2048xbf16>, tensor<4096x1024xbf16>, tensor<2048x1024xf32>,
           tensor<2048xf32>
}
