// RUN: te-run %te_src_root/examples/recipe_switch.mlir --random-inputs 1 --check-if-gpu --entry init,train_step,optimizer_step,train_step,optimizer_step,train_step --switch-recipe 4:fc1=mxfp8 | FileCheck %s --check-prefix=SWITCH
// RUN: not te-run %te_src_root/examples/recipe_switch.mlir --random-inputs 1 --backend cpu --entry init,train_step --switch-recipe 3:fc1=mxfp8 2>&1 | FileCheck %s --check-prefix=LATE
// RUN: not te-run %te_src_root/examples/recipe_switch.mlir --random-inputs 1 --backend cpu --entry init --switch-recipe fc1=mxfp8 2>&1 | FileCheck %s --check-prefix=SPEC
// RUN: not te-run %s --random-inputs 1 --backend cpu --entry write,use --switch-recipe 2:fc1=mxfp8 2>&1 | FileCheck %s --check-prefix=NOMASTER
// RUN: not te-run %s --random-inputs 1 --backend cpu --entry write,use --switch-recipe 2:fc1=mxfp8 --switch-recipe 2:fc1=nvfp4 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not te-run %s --random-inputs 1 --backend cpu --entry write,use --switch-recipe 2:fc1=mxfp8,fc1=nvfp4 2>&1 | FileCheck %s --check-prefix=TWO

// Tests te-run --switch-recipe: before call 4 the layer fc1 goes from NVFP4
// to MXFP8 and the stored weight is re-quantized from its FP32 master; the
// calls after it run in the new format (compared with the CPU where there
// is a GPU).
// SWITCH: call 3 optimizer_step:
// SWITCH-NEXT: switch before call 4: re-quantized fc1.weight from fc1.master
// SWITCH-NEXT: call 4 train_step:
// SWITCH: call 6 train_step:

// LATE: te-run: --switch-recipe before call 3, but the run makes 2 call(s)
// TWICE: te-run: --switch-recipe names call 2 twice; give all its layers in one LAYER=RECIPE list
// TWO: te-run: --switch-recipe gives layer 'fc1' two recipes in '2:fc1=mxfp8,fc1=nvfp4'
// SPEC: te-run: --switch-recipe wants CALL:LAYER=RECIPE[,LAYER=RECIPE] with CALL >= 1, got 'fc1=mxfp8'

// A stored quantized weight that no function quantizes from a persistent
// tensor cannot follow a recipe switch: the error names it.
// NOMASTER: te-run: {{.*}}persistent 'fc1.weight' changes its format with the new recipes, but no function quantizes it from a persistent tensor (its master), so it cannot be re-quantized: it would be left stale
te.recipe @nvfp4 {
  te.rule "*", "*" -> #te.nvfp4<>
}
te.recipe @mxfp8 {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}
// @write quantizes a tensor the caller passes (not persistent).
func.func @write(%master: tensor<128x64xf32>)
    -> (!te.qtensor<128x64xf32, #te.nvfp4<>, rowwise> {te.persistent = "fc1.weight"}) {
  %q = te.quantize %master : tensor<128x64xf32> -> !te.qtensor<128x64xf32, #te.nvfp4<>, rowwise>
  return %q : !te.qtensor<128x64xf32, #te.nvfp4<>, rowwise>
}
func.func @use(%x: tensor<32x64xbf16>,
    %w: !te.qtensor<128x64xf32, #te.nvfp4<>, rowwise> {te.persistent = "fc1.weight"})
    -> tensor<32x128xbf16> {
  %y = te.linear %x, %w {recipe = @nvfp4, layer = "fc1"}
      : tensor<32x64xbf16>, !te.qtensor<128x64xf32, #te.nvfp4<>, rowwise> -> tensor<32x128xbf16>
  return %y : tensor<32x128xbf16>
}
