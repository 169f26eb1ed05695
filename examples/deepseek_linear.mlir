// FP8 block scaling (DeepSeek-style): 1x128 tiles for activations and
// gradients, 128x128 power-of-two tiles for the weight.

te.recipe @fp8_block {
  te.rule "linear", "weight" -> #te.fp8_block<e4m3, 128x128, pow2>
  te.rule "linear", "*"      -> #te.fp8_block<e4m3, 1x128, pow2>
}

func.func @forward(%x: tensor<8192x8192xbf16>, %w: tensor<8192x8192xbf16>)
    -> tensor<8192x8192xbf16> {
  %y = te.linear %x, %w {recipe = @fp8_block}
         : tensor<8192x8192xbf16>, tensor<8192x8192xbf16> -> tensor<8192x8192xbf16>
  return %y : tensor<8192x8192xbf16>
}
