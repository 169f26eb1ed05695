// RUN: te-opt %s -split-input-file --te-resolve-recipe="layer-recipes=fc1=next" -verify-diagnostics

// Tests the located errors of a recipe switch (layer-recipes): a layer's
// stored weight can change its format only where a te.quantize writes it,
// and only to a format its shape allows.

te.recipe @orig {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}
te.recipe @next {
  te.rule "*", "*" -> #te.fp8_block<e4m3, 1x128>
}
func.func @gathered(%shard: !te.qtensor<64x64xf32, #te.mxfp8<e4m3>, rowwise>)
    -> (!te.qtensor<128x64xf32, #te.mxfp8<e4m3>, rowwise> {te.persistent = "fc1.weight"}) {
  %w = te.all_gather %shard {ranks = 2} : !te.qtensor<64x64xf32, #te.mxfp8<e4m3>, rowwise> -> !te.qtensor<128x64xf32, #te.mxfp8<e4m3>, rowwise>
  return %w : !te.qtensor<128x64xf32, #te.mxfp8<e4m3>, rowwise>
}
func.func @use(%x: tensor<32x64xbf16>,
    %w: !te.qtensor<128x64xf32, #te.mxfp8<e4m3>, rowwise> {te.persistent = "fc1.weight"})
    -> tensor<32x128xbf16> {
  // expected-error @+1 {{'te.linear' op cannot store its weight 'fc1.weight' as #te.fp8_block<e4m3, 1x128>: function 'gathered' returns it from something other than a te.quantize}}
  %y = te.linear %x, %w {recipe = @orig, layer = "fc1"}
      : tensor<32x64xbf16>, !te.qtensor<128x64xf32, #te.mxfp8<e4m3>, rowwise> -> tensor<32x128xbf16>
  return %y : tensor<32x128xbf16>
}

// -----

te.recipe @orig {
  te.rule "*", "*" -> #te.nvfp4<>
}
te.recipe @next {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}
// MXFP8 needs the last dimension a multiple of 32: the weight cannot be
// stored in it.
func.func @use(%x: tensor<32x48xbf16>,
    %w: !te.qtensor<128x48xf32, #te.nvfp4<>, rowwise> {te.persistent = "fc1.weight"})
    -> tensor<32x128xbf16> {
  // expected-error @+1 {{'te.linear' op cannot store its weight 'fc1.weight' as #te.mxfp8<e4m3>: }}
  %y = te.linear %x, %w {recipe = @orig, layer = "fc1"}
      : tensor<32x48xbf16>, !te.qtensor<128x48xf32, #te.nvfp4<>, rowwise> -> tensor<32x128xbf16>
  return %y : tensor<32x128xbf16>
}
