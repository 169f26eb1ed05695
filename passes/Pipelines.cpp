//===- Pipelines.cpp - The te-to-cuda pipeline ----------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// `te-to-cuda`: every pass between user IR and the kernel level, in order.
// te-run, te-translate and the host API run it before lowering a module to a
// kernel-level Program (codegen/lower); te-opt exposes it by name.
//
//===----------------------------------------------------------------------===//

#include "passes/Pipelines.h"

#include "passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::te {

void buildTeToCudaPipeline(OpPassManager &pm,
                           const TeToCudaPipelineOptions &options) {
  // Module passes where the work spans functions (recipes, persistent
  // values, the module's target); function passes where it does not.
  TeResolveRecipePassOptions resolve;
  resolve.layerRecipes.assign(options.layerRecipes.begin(),
                              options.layerRecipes.end());
  pm.addPass(createTeResolveRecipePass(resolve));
  pm.addNestedPass<func::FuncOp>(createTeExpandLinearPass());
  pm.addPass(createTeInferUsagePass());
  pm.addNestedPass<func::FuncOp>(createTeFuseQuantizePass());
  pm.addNestedPass<func::FuncOp>(createTeFuseOptimizerPass());
  TeLegalizeTargetPassOptions legalize;
  legalize.arch = options.arch;
  legalize.groupedMxfp8 = options.groupedMxfp8;
  legalize.groupedNvfp4 = options.groupedNvfp4;
  pm.addPass(createTeLegalizeTargetPass(legalize));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addNestedPass<func::FuncOp>(createTeLowerToKernelsPass());
  pm.addNestedPass<func::FuncOp>(createTeFuseGemmEpiloguePass());
}

void registerTePipelines() {
  PassPipelineRegistration<TeToCudaPipelineOptions>(
      "te-to-cuda",
      "Resolve recipes, infer usage, fuse quantizations, legalize for the "
      "target and lower to the kernel level (tek): the IR the CUDA code "
      "generator reads",
      buildTeToCudaPipeline);
}

} // namespace mlir::te
