//===- Passes.td - tejit graph-level passes ----------------*- tablegen -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#ifndef TE_PASSES_PASSES_TD
#define TE_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

def TeResolveRecipePass : Pass<"te-resolve-recipe", "::mlir::ModuleOp"> {
  let summary = "Give every tensor of te.linear / te.linear_grad its scheme";
  let description = [{
    Looks up the op's recipe and records, for each role the op quantizes,
    the scheme of the first matching rule in the op's `schemes` dictionary
    (`input`, `weight` for `te.linear`; `grad_output`, `input`, `weight`
    for `te.linear_grad`). A hybrid scheme is recorded whole: each direction
    keeps its own scheme.

    Before:
    ```mlir
    te.recipe @r {
      te.rule "linear", "weight" -> #te.fp8_block<e4m3, 128x128>
      te.rule "*", "*" -> #te.fp8_block<e4m3, 1x128>
    }
    %y = te.linear %x, %w {recipe = @r} : ...
    ```
    After:
    ```mlir
    %y = te.linear %x, %w {recipe = @r, schemes = {
           input = #te.fp8_block<e4m3, 1x128>,
           weight = #te.fp8_block<e4m3, 128x128>}} : ...
    ```
    A recipe without a rule for a role is an error at the op's location.
  }];
  let dependentDialects = ["::mlir::te::TeDialect"];
}

#endif // TE_PASSES_PASSES_TD
