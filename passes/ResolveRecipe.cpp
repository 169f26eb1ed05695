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

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/MapVector.h"
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

/// Gives every declaration of persistent quantized value `name` - function
/// arguments and results, and the values those results return - the
/// scheme `scheme` (shape, element type and directions kept).
static LogicalResult retypePersistent(ModuleOp module, StringRef name,
                                      SchemeAttrInterface scheme,
                                      Operation *layer) {
  auto retype = [&](Type t) -> QTensorType {
    auto q = cast<QTensorType>(t);
    return QTensorType::getChecked(
        [&] {
          return layer->emitOpError() << "cannot store its weight '" << name
                                      << "' as " << scheme << ": ";
        },
        module.getContext(), q.getShape(), q.getElementType(), scheme,
        q.getDirections());
  };
  for (auto fn : module.getOps<func::FuncOp>()) {
    SmallVector<Type> args(fn.getArgumentTypes()), results(fn.getResultTypes());
    bool changed = false;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      auto n =
          fn.getArgAttrOfType<StringAttr>(i, TeDialect::kPersistentAttrName);
      if (!n || n.getValue() != name || !isa<QTensorType>(args[i]))
        continue;
      QTensorType t = retype(args[i]);
      if (!t)
        return failure();
      args[i] = t;
      if (!fn.isExternal())
        fn.getArgument(i).setType(t);
      changed = true;
    }
    for (unsigned i = 0; i < fn.getNumResults(); ++i) {
      auto n =
          fn.getResultAttrOfType<StringAttr>(i, TeDialect::kPersistentAttrName);
      if (!n || n.getValue() != name || !isa<QTensorType>(results[i]))
        continue;
      QTensorType t = retype(results[i]);
      if (!t)
        return failure();
      results[i] = t;
      if (!fn.isExternal()) {
        Value v = fn.getBody().front().getTerminator()->getOperand(i);
        // A te.quantize writing the weight quantizes into the new format;
        // anything else would be retyped behind its back.
        if (auto q = v.getDefiningOp<QuantizeOp>()) {
          q.getResult().setType(t);
        } else if (!isa<BlockArgument>(v) || v.getType() != t) {
          return layer->emitOpError()
                 << "cannot store its weight '" << name << "' as " << scheme
                 << ": function '" << fn.getName()
                 << "' returns it from something other than a te.quantize";
        }
      }
      changed = true;
    }
    if (changed)
      fn.setType(FunctionType::get(module.getContext(), args, results));
  }
  return success();
}

/// Gives the layers `layer-recipes` names their new recipe; fails (located
/// at the module) on a malformed entry or a layer no op has. A quantized
/// primary weight of such a layer (a persistent !te.qtensor) is stored in
/// the new recipe's weight scheme, in every function.
static LogicalResult overrideLayerRecipes(ModuleOp module,
                                          ArrayRef<std::string> layerRecipes) {
  llvm::StringMap<FlatSymbolRefAttr> recipes;
  for (StringRef entry : layerRecipes) {
    auto [layer, recipe] = entry.split('=');
    if (layer.empty() || recipe.empty())
      return module.emitError() << "layer-recipes entry '" << entry
                                << "' must be layer=recipe (e.g. fc1=mxfp8)";
    if (!recipes
             .try_emplace(layer,
                          FlatSymbolRefAttr::get(module.getContext(), recipe))
             .second)
      return module.emitError()
             << "layer-recipes gives layer '" << layer << "' two recipes";
  }
  llvm::StringSet<> seen;
  // Persistent quantized weights of those layers, and their new scheme.
  llvm::MapVector<StringAttr, std::pair<SchemeAttrInterface, Operation *>>
      weights;
  SymbolTableCollection symbols;
  WalkResult walk = module.walk([&](Operation *op) {
    auto layer = op->getAttrOfType<StringAttr>("layer");
    if (!layer || !isa<LinearOp, LinearGradOp>(op))
      return WalkResult::advance();
    auto it = recipes.find(layer.getValue());
    if (it == recipes.end())
      return WalkResult::advance();
    op->setAttr("recipe", it->second);
    seen.insert(layer.getValue());
    Value w = op->getOperand(isa<LinearOp>(op) ? 1 : 2);
    auto arg = dyn_cast<BlockArgument>(w);
    auto fn = arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp())
                  : func::FuncOp();
    auto name = fn ? fn.getArgAttrOfType<StringAttr>(
                         arg.getArgNumber(), TeDialect::kPersistentAttrName)
                   : StringAttr();
    if (!name || !isa<QTensorType>(w.getType()))
      return WalkResult::advance();
    FailureOr<DictionaryAttr> schemes =
        resolveRecipeRoles(op, it->second, kLinearKind, {"weight"}, symbols);
    if (failed(schemes))
      return WalkResult::interrupt();
    auto scheme = cast<SchemeAttrInterface>(schemes->get("weight"));
    auto [entry, added] = weights.insert({name, {scheme, op}});
    if (!added && entry->second.first != scheme) {
      op->emitOpError() << "stores its weight '" << name.getValue() << "' as "
                        << scheme << ", another layer as "
                        << entry->second.first;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  for (const auto &entry : recipes)
    if (!seen.contains(entry.getKey()))
      return module.emitError()
             << "layer-recipes names layer '" << entry.getKey()
             << "', which no te.linear or te.linear_grad of the module has";
  for (auto &[name, target] : weights)
    if (failed(retypePersistent(module, name.getValue(), target.first,
                                target.second)))
      return failure();
  return success();
}

namespace {
struct TeResolveRecipePass
    : mlir::te::impl::TeResolveRecipePassBase<TeResolveRecipePass> {
  using TeResolveRecipePassBase::TeResolveRecipePassBase;

  void runOnOperation() override {
    if (failed(overrideLayerRecipes(getOperation(), layerRecipes)))
      return signalPassFailure();
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
