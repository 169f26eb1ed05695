// RUN: te-opt %s --te-resolve-recipe="layer-recipes=fc1=mxfp8" | FileCheck %s
// RUN: not te-opt %s --te-resolve-recipe="layer-recipes=fc9=mxfp8" 2>&1 | FileCheck %s --check-prefix=NOLAYER
// RUN: not te-opt %s --te-resolve-recipe="layer-recipes=fc1" 2>&1 | FileCheck %s --check-prefix=MALFORMED
// RUN: not te-opt %s --te-resolve-recipe="layer-recipes=fc1=mxfp8,fc1=nvfp4" 2>&1 | FileCheck %s --check-prefix=TWICE

// Tests that layer-recipes gives a named layer another recipe of the module
// (a recipe switch): its te.linear and te.linear_grad take the new recipe's
// schemes, and its persistent quantized weight is stored in the new weight
// scheme in every function - arguments, results and the te.quantize that
// writes it; a layer name the module lacks, or an entry that is not
// layer=recipe, is an error at the module.

// CHECK-LABEL: func.func @init
// CHECK-SAME: !te.qtensor<128x64xf32, #te.mxfp8<e4m3>, rowwise> {te.persistent = "fc1.weight"}
// CHECK: te.quantize %arg0 : tensor<128x64xf32> -> !te.qtensor<128x64xf32, #te.mxfp8<e4m3>, rowwise>
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %arg1: !te.qtensor<128x64xf32, #te.mxfp8<e4m3>, rowwise>
// CHECK: te.linear %arg0, %arg1 {layer = "fc1", recipe = @mxfp8, schemes = {input = #te.mxfp8<e4m3>, weight = #te.mxfp8<e4m3>}}
// CHECK: te.linear %arg0, %arg2 {layer = "fc2", recipe = @nvfp4, schemes = {input = #te.nvfp4<>, weight = #te.nvfp4<>}}
// NOLAYER: resolve-recipe-layer-recipes.mlir:[[# @LINE + 3]]:1: error: layer-recipes names layer 'fc9', which no te.linear or te.linear_grad of the module has
// MALFORMED: resolve-recipe-layer-recipes.mlir:[[# @LINE + 2]]:1: error: layer-recipes entry 'fc1' must be layer=recipe (e.g. fc1=mxfp8)
// TWICE: resolve-recipe-layer-recipes.mlir:[[# @LINE + 1]]:1: error: layer-recipes gives layer 'fc1' two recipes
module {
  te.recipe @nvfp4 {
    te.rule "*", "*" -> #te.nvfp4<>
  }
  te.recipe @mxfp8 {
    te.rule "*", "*" -> #te.mxfp8<e4m3>
  }
  func.func @init(%master: tensor<128x64xf32> {te.persistent = "fc1.master"})
      -> (!te.qtensor<128x64xf32, #te.nvfp4<>, rowwise> {te.persistent = "fc1.weight"}) {
    %q = te.quantize %master : tensor<128x64xf32> -> !te.qtensor<128x64xf32, #te.nvfp4<>, rowwise>
    return %q : !te.qtensor<128x64xf32, #te.nvfp4<>, rowwise>
  }
  func.func @train_step(%x: tensor<32x64xbf16>,
      %w: !te.qtensor<128x64xf32, #te.nvfp4<>, rowwise> {te.persistent = "fc1.weight"},
      %w2: tensor<128x64xbf16>) -> (tensor<32x128xbf16>, tensor<32x128xbf16>) {
    %y = te.linear %x, %w {recipe = @nvfp4, layer = "fc1"}
        : tensor<32x64xbf16>, !te.qtensor<128x64xf32, #te.nvfp4<>, rowwise> -> tensor<32x128xbf16>
    %y2 = te.linear %x, %w2 {recipe = @nvfp4, layer = "fc2"}
        : tensor<32x64xbf16>, tensor<128x64xbf16> -> tensor<32x128xbf16>
    return %y, %y2 : tensor<32x128xbf16>, tensor<32x128xbf16>
  }
}
