//===- Pipelines.cpp - The te-to-cuda pipeline
//-----------------------------===//
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
  pm.addPass(createTeResolveRecipePass());
  pm.addPass(createTeExpandLinearPass());
  pm.addPass(createTeInferUsagePass());
  pm.addPass(createTeFuseQuantizePass());
  pm.addPass(createTeFuseOptimizerPass());
  TeLegalizeTargetPassOptions legalize;
  legalize.arch = options.arch;
  pm.addPass(createTeLegalizeTargetPass(legalize));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createTeLowerToKernelsPass());
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
