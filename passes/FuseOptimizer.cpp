//===- FuseOptimizer.cpp - te-fuse-optimizer ------------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// An optimizer step followed by the requantization of the new weight reads
// and writes the weight twice; fused, one pass reads p, g, m, v and writes
// p, m, v and every quantized output. This pass makes the fusion visible at
// the graph level: a te.adam_step whose new parameter feeds te.quantize /
// te.fused_quantize ops (without a bias gradient) becomes one te.fused_adam
// producing all of their results. Run it after te-fuse-quantize, which has
// already merged the quantizations of the new parameter into one op.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialect/te/TeOps.h"

#include "mlir/IR/Builders.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "te-fuse-optimizer"

namespace mlir::te {
#define GEN_PASS_DEF_TEFUSEOPTIMIZERPASS
#include "passes/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;

namespace {

/// A quantization of `param` the fused kernel can produce: its input is
/// the new parameter and it computes no bias gradient (a weight has none).
bool absorbable(Operation *user, Value param) {
  // Double quantization (columnwise_source = rowwise_dequantized) needs the
  // rowwise result before the columnwise one: not one fused pass.
  auto doubled = [](Type t) {
    auto q = dyn_cast<QTensorType>(t);
    auto hybrid = q ? dyn_cast<HybridAttr>(q.getScheme()) : HybridAttr();
    return hybrid && hybrid.getColumnwiseFromRowwise() &&
           q.hasDirection(Direction::columnwise);
  };
  if (llvm::any_of(user->getResultTypes(), doubled))
    return false;
  // A delayed-scaling quantization records into its state, which the
  // optimizer kernel does not update.
  if (auto q = dyn_cast<QuantizeOp>(user); q && q.getScalingState())
    return false;
  if (auto f = dyn_cast<FusedQuantizeOp>(user); f && f.getScalingStates())
    return false;
  if (auto q = dyn_cast<QuantizeOp>(user))
    return q.getInput() == param;
  if (auto f = dyn_cast<FusedQuantizeOp>(user))
    return f.getInput() == param && !f.getBiasGrad();
  return false;
}

void fuse(AdamStepOp adam) {
  Value param = adam.getNewParam();
  SmallVector<Operation *> quantizations;
  for (Operation *user : param.getUsers())
    if (absorbable(user, param) && !llvm::is_contained(quantizations, user))
      quantizations.push_back(user);
  if (quantizations.empty())
    return;
  // Program order, so the fused results are numbered as the ops appeared.
  llvm::sort(quantizations,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });

  SmallVector<Type> types(adam->getResultTypes());
  for (Operation *q : quantizations)
    llvm::append_range(types, q->getResultTypes());
  OpBuilder b(adam);
  // After the last quantization: every value the fused op replaces is
  // defined by then (the quantizations only read the new parameter).
  b.setInsertionPoint(quantizations.back());
  auto fused = FusedAdamOp::create(
      b, adam.getLoc(), types, adam.getParam(), adam.getGrad(),
      adam.getExpAvg(), adam.getExpAvgSq(), adam.getLr(), adam.getStep(),
      adam.getBeta1Attr(), adam.getBeta2Attr(), adam.getEpsAttr(),
      adam.getWeightDecayAttr(), adam.getModeAttr(), adam.getFastMathAttr());
  LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] te.adam_step at "
                          << adam.getLoc() << " absorbs "
                          << quantizations.size()
                          << " quantization(s) of its new parameter\n");
  unsigned next = 3;
  for (Operation *q : quantizations) {
    for (Value r : q->getResults())
      r.replaceAllUsesWith(fused->getResult(next++));
    q->erase();
  }
  for (unsigned i = 0; i < 3; ++i)
    adam->getResult(i).replaceAllUsesWith(fused->getResult(i));
  adam->erase();
}

struct TeFuseOptimizerPass
    : mlir::te::impl::TeFuseOptimizerPassBase<TeFuseOptimizerPass> {
  void runOnOperation() override {
    SmallVector<AdamStepOp> steps;
    getOperation().walk([&](AdamStepOp op) { steps.push_back(op); });
    for (AdamStepOp op : steps)
      fuse(op);
  }
};

} // namespace
