//===- FuseGemmEpilogue.cpp - te-fuse-gemm-epilogue -----------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// A grouped GEMM's output quantized right away - the next MoE layer's
// tokens under FP8 block scaling - is written by the GEMM and read again by
// a quantize kernel. The GEMM's epilogue holds each output tile in
// registers, and a 1x128 block is part of one tile row, so the epilogue can
// write the codes and scales itself. This pass makes that fusion visible at
// the kernel level: a tek.quantize_kernel whose only stage quantizes a
// tek.grouped_gemm's result rowwise by a scheme the epilogue can apply
// (rt::groupedEpilogueQuantizeError) becomes the GEMM's second result.
// Runs after te-lower-to-kernels.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialect/te/TeOps.h"
#include "dialect/tek/TekOps.h"
#include "te/formats/GemmRules.h"

#include "mlir/IR/Builders.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "te-fuse-gemm-epilogue"

namespace mlir::te {
#define GEN_PASS_DEF_TEFUSEGEMMEPILOGUEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;

namespace {

/// The grouped GEMM whose epilogue can take over `q`, or null: `q` reads
/// the result of a grouped GEMM that quantizes nothing yet, has one stage -
/// the rowwise direction of its only result, by a scheme the epilogue
/// applies - and neither a bias gradient, an amax pre-pass nor rank amaxes.
tek::GroupedGemmOp fusableProducer(tek::QuantizeKernelOp q) {
  auto gemm = q.getInput().getDefiningOp<tek::GroupedGemmOp>();
  if (!gemm || gemm.getQuantizedResult() || q.getBiasGrad() ||
      q.getAmaxPrepass() || q.getAmaxRanks() || q->getNumResults() != 1 ||
      q.getStages().size() != 1)
    return {};
  auto stage = cast<tek::StageAttr>(q.getStages()[0]);
  if (stage.getResult() != 0 || stage.getDirection() != Direction::rowwise ||
      !stage.getState().empty())
    return {};
  auto type = dyn_cast<QTensorType>(q->getResult(0).getType());
  if (!type || type.hasDirection(Direction::columnwise) ||
      !type.getElementType().isBF16())
    return {};
  if (!::te::rt::groupedEpilogueQuantizeError(
           type.getScheme().getRuntimeScheme(Direction::rowwise),
           ::te::rt::Direction::Rowwise)
           .empty())
    return {};
  return gemm;
}

/// Replaces `gemm` and `q` by one grouped GEMM with both results.
void fuse(tek::GroupedGemmOp gemm, tek::QuantizeKernelOp q) {
  OpBuilder b(gemm);
  OperationState state(gemm.getLoc(), gemm->getName());
  state.addOperands(gemm->getOperands());
  state.addAttributes(gemm->getAttrs());
  state.addTypes({gemm.getResult().getType(), q->getResult(0).getType()});
  Operation *fused = b.create(state);
  LLVM_DEBUG(llvm::dbgs() << "fused " << q.getKernelName() << " into "
                          << gemm.getKernelName() << "\n");
  q->getResult(0).replaceAllUsesWith(fused->getResult(1));
  q->erase();
  gemm.getResult().replaceAllUsesWith(fused->getResult(0));
  gemm->erase();
}

struct TeFuseGemmEpiloguePass
    : mlir::te::impl::TeFuseGemmEpiloguePassBase<TeFuseGemmEpiloguePass> {
  void runOnOperation() override {
    SmallVector<tek::QuantizeKernelOp> quantizes;
    getOperation().walk(
        [&](tek::QuantizeKernelOp op) { quantizes.push_back(op); });
    for (tek::QuantizeKernelOp q : quantizes)
      if (tek::GroupedGemmOp gemm = fusableProducer(q))
        fuse(gemm, q);
  }
};

} // namespace
