//===- ResolveRecipe.cpp - te-resolve-recipe ------------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Records the scheme of every quantized role of te.linear / te.linear_grad
// (module kind "linear") and te.grouped_linear / te.grouped_linear_grad
// (module kind "grouped_linear").
// The roles an op quantizes are declared once, on the op
// (getQuantizedRoles), and shared with its symbol verifier.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialect/te/TeOps.h"

#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "te-resolve-recipe"

namespace mlir::te {
#define GEN_PASS_DEF_TERESOLVERECIPEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;

/// Warns on every rule whose module kind no op of the module looks up: such
/// a rule is silently dead while the layers fall through to later rules.
static void warnUnusedKinds(ModuleOp module,
                            const llvm::StringSet<> &usedKinds) {
  module.walk([&](RuleOp rule) {
    StringRef kind = rule.getModuleKind();
    if (kind != "*" && !usedKinds.contains(kind))
      rule.emitWarning() << "rule for module kind \"" << kind
                         << "\" has no effect: no op of the module uses that "
                            "kind (te.linear and te.linear_grad are \""
                         << kLinearKind
                         << "\", te.grouped_linear and te.grouped_linear_grad "
                            "\""
                         << kGroupedLinearKind << "\")";
  });
}

/// Records on `op` the schemes of its roles under `moduleKind` (the lookup
/// its symbol verifier does), or reports the first role without a rule.
template <typename LayerOp>
static LogicalResult resolve(LayerOp op, StringRef moduleKind,
                             SymbolTableCollection &symbols) {
  FailureOr<DictionaryAttr> schemes =
      resolveRecipeRoles(op, op.getRecipeAttr(), moduleKind,
                         LayerOp::getQuantizedRoles(), symbols);
  if (failed(schemes))
    return failure();
  LLVM_DEBUG({
    for (NamedAttribute entry : *schemes)
      llvm::dbgs() << "[" DEBUG_TYPE "] " << op->getName() << " at "
                   << op->getLoc() << ": " << entry.getName() << " -> "
                   << entry.getValue() << " (recipe " << op.getRecipeAttr()
                   << ")\n";
  });
  op.setSchemesAttr(*schemes);
  return success();
}

namespace {
struct TeResolveRecipePass
    : mlir::te::impl::TeResolveRecipePassBase<TeResolveRecipePass> {
  void runOnOperation() override {
    SymbolTableCollection symbols;
    llvm::StringSet<> usedKinds;
    WalkResult walk = getOperation().walk([&](Operation *op) {
      LogicalResult result = success();
      if (auto lin = dyn_cast<LinearOp>(op))
        result = resolve(lin, kLinearKind, symbols);
      else if (auto grad = dyn_cast<LinearGradOp>(op))
        result = resolve(grad, kLinearKind, symbols);
      else if (auto glin = dyn_cast<GroupedLinearOp>(op))
        result = resolve(glin, kGroupedLinearKind, symbols);
      else if (auto ggrad = dyn_cast<GroupedLinearGradOp>(op))
        result = resolve(ggrad, kGroupedLinearKind, symbols);
      else
        return WalkResult::advance();
      usedKinds.insert(isa<LinearOp, LinearGradOp>(op) ? kLinearKind
                                                       : kGroupedLinearKind);
      return failed(result) ? WalkResult::interrupt() : WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    warnUnusedKinds(getOperation(), usedKinds);
  }
};
} // namespace
