//===- Pipelines.h - Registered pass pipelines ------------------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#ifndef TE_PASSES_PIPELINES_H
#define TE_PASSES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::te {

struct TeToCudaPipelineOptions
    : public PassPipelineOptions<TeToCudaPipelineOptions> {
  Option<std::string> arch{*this, "arch",
                           llvm::cl::desc("Target architecture (sm_XY[a])"),
                           llvm::cl::init("sm_90a")};
  ListOption<std::string> layerRecipes{
      *this, "layer-recipes",
      llvm::cl::desc("layer=recipe: the recipe the named layer uses instead "
                     "of its own (te-resolve-recipe)")};
  Option<std::string> groupedMxfp8{
      *this, "grouped-mxfp8",
      llvm::cl::desc("How a grouped MXFP8 GEMM reads its operands: auto, "
                     "direct or dequantize (te-legalize-target)"),
      llvm::cl::init("auto")};
  Option<std::string> groupedNvfp4{
      *this, "grouped-nvfp4",
      llvm::cl::desc("How a grouped GEMM reads operands it quantizes per "
                     "expert by NVFP4: auto, direct or dequantize "
                     "(te-legalize-target)"),
      llvm::cl::init("auto")};
};

/// Adds te-resolve-recipe, te-expand-linear, te-infer-usage,
/// te-fuse-quantize, te-fuse-optimizer, te-legalize-target{arch},
/// canonicalize, cse and te-lower-to-kernels to `pm` (function passes
/// nested on func.func).
void buildTeToCudaPipeline(OpPassManager &pm,
                           const TeToCudaPipelineOptions &options);

/// Registers `te-to-cuda` for --pass-pipeline / te-opt.
void registerTePipelines();

} // namespace mlir::te

#endif // TE_PASSES_PIPELINES_H
