//===- ResolveRecipe.cpp - te-resolve-recipe ------------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Records the scheme of every quantized role of te.linear / te.linear_grad.
// The roles an op quantizes are declared once, on the op
// (getQuantizedRoles), and shared with its symbol verifier.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialect/te/TeOps.h"

#include "mlir/IR/Builders.h"
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

/// The module kind te.linear and te.linear_grad look their roles up under.

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
                         << kLinearKind << "\")";
  });
}

/// Builds the `schemes` dictionary of `op` from its recipe, or reports the
/// first role without a rule.
static FailureOr<DictionaryAttr> resolve(Operation *op, FlatSymbolRefAttr name,
                                         ArrayRef<StringRef> roles,
                                         SymbolTableCollection &symbols) {
  auto recipe = symbols.lookupNearestSymbolFrom<RecipeOp>(op, name);
  if (!recipe)
    return op->emitOpError()
           << "names recipe " << name << ", which is not a te.recipe";
  Builder b(op->getContext());
  SmallVector<NamedAttribute> entries;
  for (StringRef role : roles) {
    SchemeAttrInterface scheme = recipe.lookup(kLinearKind, role);
    if (!scheme)
      return op->emitOpError()
             << "recipe " << name << " has no rule for the role (\""
             << kLinearKind << "\", \"" << role << "\")";
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << op->getName() << " at "
                            << op->getLoc() << ": " << role << " -> " << scheme
                            << " (recipe " << name << ")\n");
    entries.push_back(b.getNamedAttr(role, scheme));
  }
  return b.getDictionaryAttr(entries);
}

namespace {
struct TeResolveRecipePass
    : mlir::te::impl::TeResolveRecipePassBase<TeResolveRecipePass> {
  void runOnOperation() override {
    SymbolTableCollection symbols;
    llvm::StringSet<> usedKinds;
    WalkResult walk = getOperation().walk([&](Operation *op) {
      FailureOr<DictionaryAttr> dict = failure();
      if (isa<LinearOp, LinearGradOp>(op))
        usedKinds.insert(kLinearKind);
      if (auto lin = dyn_cast<LinearOp>(op)) {
        dict = resolve(op, lin.getRecipeAttr(), LinearOp::getQuantizedRoles(),
                       symbols);
        if (succeeded(dict))
          lin.setSchemesAttr(*dict);
      } else if (auto grad = dyn_cast<LinearGradOp>(op)) {
        dict = resolve(op, grad.getRecipeAttr(),
                       LinearGradOp::getQuantizedRoles(), symbols);
        if (succeeded(dict))
          grad.setSchemesAttr(*dict);
      } else {
        return WalkResult::advance();
      }
      return failed(dict) ? WalkResult::interrupt() : WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    warnUnusedKinds(getOperation(), usedKinds);
  }
};
} // namespace
