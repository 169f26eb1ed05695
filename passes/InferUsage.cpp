//===- InferUsage.cpp - te-infer-usage ------------------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Narrows the directions of te.quantize results to what their users read.
// Only te.quantize results change type: function arguments and results are
// the program's interface and keep their signature; a value reaching any op
// the pass does not understand keeps every direction it has.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialect/te/TeOps.h"

#include "mlir/IR/Diagnostics.h"

#define DEBUG_TYPE "te-infer-usage"

namespace mlir::te {
#define GEN_PASS_DEF_TEINFERUSAGEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;

static Directions bitOf(Direction d) {
  return d == Direction::rowwise ? Directions::rowwise : Directions::columnwise;
}

/// The directions `use` reads of its quantized operand.
static Directions directionsReadBy(OpOperand &use, QTensorType type) {
  Operation *user = use.getOwner();
  if (auto gemm = dyn_cast<GemmOp>(user)) {
    Directions d = Directions::none;
    // The same value may feed both operands of one GEMM.
    if (gemm.getA() == use.get())
      d = d | bitOf(gemm.getOperandDirection(0));
    if (gemm.getB() == use.get())
      d = d | bitOf(gemm.getOperandDirection(1));
    return d;
  }
  if (auto deq = dyn_cast<DequantizeOp>(user))
    return bitOf(deq.getDirection());
  return type.getDirections(); // func.return and anything unknown
}

namespace {
struct TeInferUsagePass
    : mlir::te::impl::TeInferUsagePassBase<TeInferUsagePass> {
  using TeInferUsagePassBase::TeInferUsagePassBase;

  void runOnOperation() override {
    getOperation().walk([&](QuantizeOp op) {
      Value result = op.getResult();
      if (result.use_empty())
        return;
      QTensorType type = op.getResult().getType();
      Directions needed = Directions::none;
      for (OpOperand &use : result.getUses())
        needed = needed | directionsReadBy(use, type);
      // Users were verified against the declared type, so `needed` is a
      // subset of it; only narrow.
      needed = needed & type.getDirections();
      if (needed == type.getDirections() || needed == Directions::none)
        return;
      if (report)
        emitRemark(op.getLoc())
            << "te-infer-usage: keeping " << stringifyDirections(needed)
            << ", dropping "
            << stringifyDirections(type.getDirections() & ~needed)
            << " (no user reads it)";
      result.setType(QTensorType::get(type.getContext(), type.getShape(),
                                      type.getElementType(), type.getScheme(),
                                      needed));
    });
  }
};
} // namespace
