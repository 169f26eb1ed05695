// RUN: te-opt %s --te-resolve-recipe | FileCheck %s
// RUN: te-opt %s --te-resolve-recipe | te-opt | FileCheck %s

te.recipe @deepseek {
  te.rule "linear", "weight" -> #te.fp8_block<e4m3, 128x128, pow2>
  te.rule "*", "*" -> #te.fp8_block<e4m3, 1x128, pow2>
}

te.recipe @hybrid {
  te.rule "linear", "input" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<rht>>
  te.rule "linear", "weight" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>
  te.rule "linear", "grad_output" -> #te.nvfp4<rht, sr>
  te.rule "linear", "grad_output" -> #te.identity<bf16>
}

// The first matching rule wins; a wildcard covers what precedes it not.
// CHECK-LABEL: func.func @forward
// CHECK: te.linear {{.*}} {recipe = @deepseek, schemes = {input = #te.fp8_block<e4m3, 1x128, pow2>, weight = #te.fp8_block<e4m3, 128x128, pow2>}}
func.func @forward(%x: tensor<256x128xbf16>, %w: tensor<64x128xbf16>) -> tensor<256x64xbf16> {
  %y = te.linear %x, %w {recipe = @deepseek} : tensor<256x128xbf16>, tensor<64x128xbf16> -> tensor<256x64xbf16>
  return %y : tensor<256x64xbf16>
}

// Hybrid schemes are recorded whole; the earlier grad_output rule wins.
// CHECK-LABEL: func.func @backward
// CHECK: te.linear_grad {{.*}} {bias, recipe = @hybrid, schemes = {grad_output = #te.nvfp4<rht, sr>, input = #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<rht>>, weight = #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>}}
func.func @backward(%dy: tensor<256x64xbf16>, %x: tensor<256x128xbf16>, %w: tensor<64x128xbf16>)
    -> (tensor<256x128xbf16>, tensor<64x128xf32>, tensor<64xf32>) {
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @hybrid, bias} : tensor<256x64xbf16>, tensor<256x128xbf16>, tensor<64x128xbf16> -> tensor<256x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
  return %dx, %dw, %db : tensor<256x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
}
