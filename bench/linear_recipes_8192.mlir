// Benchmark: one linear train step (fwd + bwd, bias) at M = N = K = 8192
// under each recipe, the baseline (BF16) first. On Hopper the FP8 block
// GEMMs run on cuBLASLt; the MXFP8 / NVFP4 GEMMs run as dequantize kernels
// followed by BF16 cuBLASLt GEMMs (te-run --bench lists each kernel); so
// do those of `mixed` (MXFP8 x and W, NVFP4 gradients: its dgrad and wgrad
// pair two scheme families) on every target.
//
//   for e in bf16 fp8_block mxfp8 nvfp4 hybrid mixed; do
//     te-run bench/linear_recipes_8192.mlir --entry $e --random-inputs 1 --bench 20
//   done

te.recipe @bf16_recipe {
  te.rule "*", "*" -> #te.identity<bf16>
}

te.recipe @fp8_block_recipe {
  te.rule "linear", "weight" -> #te.fp8_block<e4m3, 128x128, pow2>
  te.rule "linear", "*"      -> #te.fp8_block<e4m3, 1x128, pow2>
}

te.recipe @mxfp8_recipe {
  te.rule "linear", "*" -> #te.mxfp8<e4m3>
}

te.recipe @nvfp4_recipe {
  te.rule "linear", "input"       -> #te.nvfp4<rht>
  te.rule "linear", "weight"      -> #te.nvfp4<block2d>
  te.rule "linear", "grad_output" -> #te.nvfp4<rht, sr>
}

te.recipe @hybrid_recipe {
  te.rule "linear", "input"       -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<rht>>
  te.rule "linear", "weight"      -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>
  te.rule "linear", "grad_output" -> #te.nvfp4<rht, sr>
}

te.recipe @mixed_recipe {
  te.rule "linear", "grad_output" -> #te.nvfp4<sr>
  te.rule "linear", "*"           -> #te.mxfp8<e4m3>
}

func.func @bf16(%x: tensor<8192x8192xbf16>, %w: tensor<8192x8192xbf16> {te.persistent = "bf16.weight"},
    %b: tensor<8192xbf16>, %dy: tensor<8192x8192xbf16>)
    -> (tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xf32>, tensor<8192xf32>) {
  %y = te.linear %x, %w bias %b {recipe = @bf16_recipe}
         : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192xbf16> -> tensor<8192x8192xbf16>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @bf16_recipe, bias}
         : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xbf16> -> tensor<8192x8192xbf16>, tensor<8192x8192xf32>, tensor<8192xf32>
  return %y, %dx, %dw, %db : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xf32>, tensor<8192xf32>
}

func.func @fp8_block(%x: tensor<8192x8192xbf16>, %w: tensor<8192x8192xbf16> {te.persistent = "fp8_block.weight"},
    %b: tensor<8192xbf16>, %dy: tensor<8192x8192xbf16>)
    -> (tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xf32>, tensor<8192xf32>) {
  %y = te.linear %x, %w bias %b {recipe = @fp8_block_recipe}
         : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192xbf16> -> tensor<8192x8192xbf16>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @fp8_block_recipe, bias}
         : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xbf16> -> tensor<8192x8192xbf16>, tensor<8192x8192xf32>, tensor<8192xf32>
  return %y, %dx, %dw, %db : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xf32>, tensor<8192xf32>
}

func.func @mxfp8(%x: tensor<8192x8192xbf16>, %w: tensor<8192x8192xbf16> {te.persistent = "mxfp8.weight"},
    %b: tensor<8192xbf16>, %dy: tensor<8192x8192xbf16>)
    -> (tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xf32>, tensor<8192xf32>) {
  %y = te.linear %x, %w bias %b {recipe = @mxfp8_recipe}
         : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192xbf16> -> tensor<8192x8192xbf16>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @mxfp8_recipe, bias}
         : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xbf16> -> tensor<8192x8192xbf16>, tensor<8192x8192xf32>, tensor<8192xf32>
  return %y, %dx, %dw, %db : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xf32>, tensor<8192xf32>
}

func.func @nvfp4(%x: tensor<8192x8192xbf16>, %w: tensor<8192x8192xbf16> {te.persistent = "nvfp4.weight"},
    %b: tensor<8192xbf16>, %dy: tensor<8192x8192xbf16>)
    -> (tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xf32>, tensor<8192xf32>) {
  %y = te.linear %x, %w bias %b {recipe = @nvfp4_recipe}
         : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192xbf16> -> tensor<8192x8192xbf16>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @nvfp4_recipe, bias}
         : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xbf16> -> tensor<8192x8192xbf16>, tensor<8192x8192xf32>, tensor<8192xf32>
  return %y, %dx, %dw, %db : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xf32>, tensor<8192xf32>
}

func.func @hybrid(%x: tensor<8192x8192xbf16>, %w: tensor<8192x8192xbf16> {te.persistent = "hybrid.weight"},
    %b: tensor<8192xbf16>, %dy: tensor<8192x8192xbf16>)
    -> (tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xf32>, tensor<8192xf32>) {
  %y = te.linear %x, %w bias %b {recipe = @hybrid_recipe}
         : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192xbf16> -> tensor<8192x8192xbf16>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @hybrid_recipe, bias}
         : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xbf16> -> tensor<8192x8192xbf16>, tensor<8192x8192xf32>, tensor<8192xf32>
  return %y, %dx, %dw, %db : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xf32>, tensor<8192xf32>
}

func.func @mixed(%x: tensor<8192x8192xbf16>, %w: tensor<8192x8192xbf16> {te.persistent = "mixed.weight"},
    %b: tensor<8192xbf16>, %dy: tensor<8192x8192xbf16>)
    -> (tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xf32>, tensor<8192xf32>) {
  %y = te.linear %x, %w bias %b {recipe = @mixed_recipe}
         : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192xbf16> -> tensor<8192x8192xbf16>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @mixed_recipe, bias}
         : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xbf16> -> tensor<8192x8192xbf16>, tensor<8192x8192xf32>, tensor<8192xf32>
  return %y, %dx, %dw, %db : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xf32>, tensor<8192xf32>
}
