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
#include "mlir/Interfaces/FunctionInterfaces.h"

#include "llvm/ADT/DenseMap.h"

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

/// The persistent parameter `op` quantizes (the `te.persistent` name of the
/// function argument it reads), or null.
static StringAttr persistentName(QuantizeOp op) {
  auto arg = dyn_cast<BlockArgument>(op.getInput());
  if (!arg)
    return {};
  auto fn = dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
  if (!fn)
    return {};
  return fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                         TeDialect::kPersistentAttrName);
}

namespace {
struct TeInferUsagePass
    : mlir::te::impl::TeInferUsagePassBase<TeInferUsagePass> {
  using TeInferUsagePassBase::TeInferUsagePassBase;

  void runOnOperation() override {
    // 1. What each quantization's users read.
    SmallVector<std::pair<QuantizeOp, Directions>> needs;
    // Persistent parameters: one stored quantization per (name, scheme),
    // read by every function of the module - the union of their needs.
    llvm::DenseMap<std::pair<Attribute, Attribute>, Directions> shared;
    getOperation().walk([&](QuantizeOp op) {
      Value result = op.getResult();
      if (result.use_empty())
        return;
      QTensorType type = op.getResult().getType();
      Directions needed = Directions::none;
      for (OpOperand &use : result.getUses())
        needed = needed | directionsReadBy(use, type);
      // Users were verified against the declared type, so `needed` is a
      // subset of it.
      needed = needed & type.getDirections();
      needs.push_back({op, needed});
      if (StringAttr name = persistentName(op)) {
        Directions &all = shared[{name, type.getScheme()}];
        all = all | needed;
      }
    });

    // 2. Retype: narrow to what is read; a persistent parameter keeps (or
    // gains) every direction any function reads of it.
    for (auto [op, needed] : needs) {
      QTensorType type = op.getResult().getType();
      Directions want = needed;
      if (StringAttr name = persistentName(op))
        want = shared.lookup({name, type.getScheme()});
      if (want == type.getDirections() || want == Directions::none)
        continue;
      if (report) {
        InFlightDiagnostic remark = emitRemark(op.getLoc());
        remark << "te-infer-usage: keeping " << stringifyDirections(want);
        if (Directions dropped = type.getDirections() & ~want;
            dropped != Directions::none)
          remark << ", dropping " << stringifyDirections(dropped)
                 << " (no user reads it)";
        if (Directions added = want & ~type.getDirections();
            added != Directions::none)
          remark << ", adding " << stringifyDirections(added)
                 << " (another function reads it of the persistent '"
                 << persistentName(op).getValue() << "')";
      }
      auto widened = QTensorType::getChecked(
          [&] { return op.emitOpError() << "cannot hold " << stringifyDirections(want) << ": "; },
          type.getContext(), type.getShape(), type.getElementType(),
          type.getScheme(), want);
      if (!widened)
        return signalPassFailure();
      op.getResult().setType(widened);
    }
  }
};
} // namespace
