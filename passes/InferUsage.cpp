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
// The exception is a persistent quantized value (a !te.qtensor argument or
// result marked te.persistent): the runtime stores one copy for every
// function, so every declaration of it - and the te.quantize that writes
// it - holds the union of the directions any declaration lists.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialect/te/TeOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"

#include "llvm/Support/Debug.h"

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
  if (auto gather = dyn_cast<AllGatherOp>(user))
    return AllGatherOp::shardDirections(gather.getType(),
                                        gather.getSendColumnwise());
  if (auto grouped = dyn_cast<GroupedGemmOp>(user)) {
    Directions d = Directions::none;
    if (grouped.getInput() == use.get())
      d = d | Directions::rowwise;
    if (grouped.getWeight() == use.get())
      d = d | bitOf(grouped.getWeightDirection());
    return d;
  }
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
/// A function argument or result marked te.persistent.
struct Declaration {
  mutable FunctionOpInterface fn; // an op handle: methods are non-const
  bool isResult;
  unsigned index;

  Type type() const {
    return isResult ? fn.getResultTypes()[index] : fn.getArgumentTypes()[index];
  }
  Location loc() const {
    // A declaration has no block arguments: point at the function.
    return isResult || fn.isExternal() ? fn.getLoc()
                                       : fn.getArgument(index).getLoc();
  }
  std::string describe() const {
    return (isResult ? "result " : "argument ") + std::to_string(index) +
           " of '" + fn.getName().str() + "'";
  }
};

/// Whether two declarations of one persistent value agree: the same tensor
/// type, or the same shape, element type and scheme (directions may differ:
/// the stored value holds their union).
static bool compatible(Type a, Type b) {
  auto qa = dyn_cast<QTensorType>(a), qb = dyn_cast<QTensorType>(b);
  if (!qa || !qb)
    return a == b;
  return qa.getShape() == qb.getShape() &&
         qa.getElementType() == qb.getElementType() &&
         qa.getScheme() == qb.getScheme();
}

static QTensorType withDirections(QTensorType t, Directions d) {
  return QTensorType::get(t.getContext(), t.getShape(), t.getElementType(),
                          t.getScheme(), d);
}
} // namespace

/// Makes the value `d` (a result) returns hold `all`: the te.quantize
/// writing it gains the missing directions.
static LogicalResult widenReturned(const Declaration &d, StringAttr name,
                                   Directions all, bool report) {
  Operation *ret = d.fn.getFunctionBody().front().getTerminator();
  Value v = ret->getOperand(d.index);
  auto held = cast<QTensorType>(v.getType());
  if (held.getDirections() == all)
    return success(); // e.g. a persistent argument passed through
  Operation *quantize = v.getDefiningOp<QuantizeOp>();
  if (!quantize)
    quantize = v.getDefiningOp<QuantizeShardsOp>();
  if (!quantize)
    return ret->emitError()
           << "returns persistent '" << name.getValue() << "' holding "
           << stringifyDirections(held.getDirections())
           << ", but it is stored with " << stringifyDirections(all)
           << " (another function declares them); quantize it here with "
              "every direction";
  Directions want = held.getDirections() | all;
  if (report)
    quantize->emitRemark() << "te-infer-usage: writing "
                           << stringifyDirections(want) << ", adding "
                           << stringifyDirections(want & ~held.getDirections())
                           << " (another function reads the persistent '"
                           << name.getValue() << "')";
  quantize->getResult(0).setType(withDirections(held, want));
  return success();
}

/// Checks that every declaration of each persistent value agrees and gives
/// each quantized one the union of the directions they list: the argument
/// types, the result types and the te.quantize producing such a result.
static LogicalResult unifyPersistentValues(ModuleOp module, bool report) {
  llvm::MapVector<StringAttr, SmallVector<Declaration>> byName;
  for (auto fn : module.getOps<FunctionOpInterface>()) {
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      if (auto name = fn.getArgAttrOfType<StringAttr>(
              i, TeDialect::kPersistentAttrName))
        byName[name].push_back({fn, false, i});
    for (unsigned i = 0; i < fn.getNumResults(); ++i)
      if (auto name = fn.getResultAttrOfType<StringAttr>(
              i, TeDialect::kPersistentAttrName))
        byName[name].push_back({fn, true, i});
  }
  for (auto &[name, decls] : byName) {
    const Declaration &first = decls.front();
    Directions all = Directions::none;
    for (const Declaration &d : decls) {
      for (const Declaration &o : decls) {
        if (&o == &d)
          break;
        if (o.fn == d.fn && o.isResult == d.isResult)
          return emitError(d.loc())
                 << "persistent '" << name.getValue() << "' is both "
                 << o.describe() << " and " << d.describe()
                 << ": a function reads (and writes) one value once";
      }
      if (!compatible(d.type(), first.type()))
        return emitError(d.loc())
               << "persistent '" << name.getValue() << "' is " << d.type()
               << " in " << d.describe() << " but " << first.type() << " in "
               << first.describe();
      if (auto q = dyn_cast<QTensorType>(d.type()))
        all = all | q.getDirections();
    }
    if (all == Directions::none)
      continue; // a tensor
    for (const Declaration &d : decls) {
      auto type = cast<QTensorType>(d.type());
      if (type.getDirections() == all)
        continue;
      QTensorType wide = withDirections(type, all);
      LLVM_DEBUG(llvm::dbgs()
                 << "[" DEBUG_TYPE "] persistent '" << name.getValue()
                 << "': " << d.describe() << " widened to "
                 << stringifyDirections(all) << "\n");
      SmallVector<Type> args(d.fn.getArgumentTypes()),
          results(d.fn.getResultTypes());
      if (!d.isResult) {
        if (report)
          emitRemark(d.loc())
              << "te-infer-usage: " << d.describe() << " holds "
              << stringifyDirections(all) << " of the persistent '"
              << name.getValue() << "' (another function declares "
              << stringifyDirections(all & ~type.getDirections()) << ")";
        args[d.index] = wide;
        if (!d.fn.isExternal())
          d.fn.getArgument(d.index).setType(wide);
      } else if (!d.fn.isExternal() &&
                 failed(widenReturned(d, name, all, report))) {
        return failure();
      }
      if (d.isResult)
        results[d.index] = wide;
      d.fn.setType(FunctionType::get(module.getContext(), args, results));
    }
  }
  return success();
}

namespace {
struct TeInferUsagePass
    : mlir::te::impl::TeInferUsagePassBase<TeInferUsagePass> {
  using TeInferUsagePassBase::TeInferUsagePassBase;

  void runOnOperation() override {
    if (failed(unifyPersistentValues(getOperation(), report)))
      return signalPassFailure();

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
      LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << op.getLoc() << ": "
                              << stringifyDirections(type.getDirections())
                              << " -> " << stringifyDirections(want) << "\n");
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
          [&] {
            return op.emitOpError()
                   << "cannot hold " << stringifyDirections(want) << ": ";
          },
          type.getContext(), type.getShape(), type.getElementType(),
          type.getScheme(), want);
      if (!widened)
        return signalPassFailure();
      op.getResult().setType(widened);
    }
  }
};
} // namespace
