// RUN: te-opt %s --te-resolve-recipe | FileCheck %s
// RUN: te-opt %s --te-resolve-recipe | te-opt | FileCheck %s
// Both module kinds are used: no rule is warned about.
// RUN: te-opt %s --te-resolve-recipe -verify-diagnostics -o /dev/null

// Tests that te-resolve-recipe records the schemes of te.grouped_linear and
// te.grouped_linear_grad under the module kind "grouped_linear" (hybrid
// schemes whole, first match wins), next to te.linear layers that resolve
// under "linear" from the same recipe.

te.recipe @moe {
  te.rule "grouped_linear", "input" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<rht>>
  te.rule "grouped_linear", "weight" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>
  te.rule "grouped_linear", "grad_output" -> #te.nvfp4<rht, sr>
  te.rule "linear", "weight" -> #te.fp8_block<e4m3, 128x128>
  te.rule "*", "*" -> #te.fp8_block<e4m3, 1x128>
}

// CHECK-LABEL: func.func @forward
// CHECK: te.linear {{.*}} {recipe = @moe, schemes = {input = #te.fp8_block<e4m3, 1x128>, weight = #te.fp8_block<e4m3, 128x128>}}
// CHECK: te.grouped_linear {{.*}} {recipe = @moe, schemes = {input = #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<rht>>, weight = #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>}}
func.func @forward(%x: tensor<256x128xbf16>, %w: tensor<4x64x128xbf16>, %s: tensor<4xi64>, %w0: tensor<128x128xbf16>) -> tensor<256x64xbf16> {
  %h = te.linear %x, %w0 {recipe = @moe} : tensor<256x128xbf16>, tensor<128x128xbf16> -> tensor<256x128xbf16>
  %y = te.grouped_linear %h, %w, %s {recipe = @moe} : tensor<256x128xbf16>, tensor<4x64x128xbf16>, tensor<4xi64> -> tensor<256x64xbf16>
  return %y : tensor<256x64xbf16>
}

// grad_output has its own rule; with `bias` nothing more is quantized.
// CHECK-LABEL: func.func @backward
// CHECK: te.grouped_linear_grad {{.*}} {bias, recipe = @moe, schemes = {grad_output = #te.nvfp4<rht, sr>, input = #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<rht>>, weight = #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>}}
func.func @backward(%dy: tensor<256x64xbf16>, %x: tensor<256x128xbf16>, %w: tensor<4x64x128xbf16>, %s: tensor<4xi64>)
    -> (tensor<256x128xbf16>, tensor<4x64x128xf32>, tensor<4x64xf32>) {
  %dx, %dw, %db = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @moe, bias} : tensor<256x64xbf16>, tensor<256x128xbf16>, tensor<4x64x128xbf16>, tensor<4xi64> -> tensor<256x128xbf16>, tensor<4x64x128xf32>, tensor<4x64xf32>
  return %dx, %dw, %db : tensor<256x128xbf16>, tensor<4x64x128xf32>, tensor<4x64xf32>
}
