//===- TeOps.h - operations of the te dialect -------------------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_TEOPS_H
#define TE_DIALECT_TE_TEOPS_H

#include "dialect/te/TeDialect.h"
#include "dialect/te/TeTraits.h"
#include "dialect/te/TeTypes.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialect/te/TeOps.h.inc"

namespace mlir::te {
/// The module kind of te.linear / te.linear_grad in recipe rules
/// (`te.rule "linear", "weight" -> ...`).
inline constexpr llvm::StringLiteral kLinearKind = "linear";
/// The module kind of te.grouped_linear / te.grouped_linear_grad.
inline constexpr llvm::StringLiteral kGroupedLinearKind = "grouped_linear";

/// Resolves `name` from `op` to a te.recipe and looks up the scheme of each
/// role (`moduleKind`, role) of `roles`: a dictionary role -> scheme, or a
/// located error at `op` for a missing recipe or role. The layer verifiers
/// and te-resolve-recipe share it, so they agree on what a role resolves to.
FailureOr<DictionaryAttr>
resolveRecipeRoles(Operation *op, FlatSymbolRefAttr name, StringRef moduleKind,
                   ArrayRef<StringRef> roles, SymbolTableCollection &symbols);

/// Whether either direction of `scheme` is #te.fp8_delayed (its scale
/// comes from a state kept between calls).
bool usesDelayedScaling(SchemeAttrInterface scheme);
/// The delayed-scaling state of role `role` of the layer named `layer`
/// (te.linear's `layer`): "layer.role.delayed_scaling".
std::string layerStateName(StringRef layer, StringRef role);

/// A grouped GEMM's operand `name` quantized per expert by `scheme` (may be
/// null) read in `dir`: under #te.fp8_delayed it names its experts' states
/// (`state`, the attribute `stateAttr`), otherwise it names none. The te
/// and tek grouped ops' verifiers share it.
LogicalResult verifyExpertState(function_ref<InFlightDiagnostic()> emitError,
                                SchemeAttrInterface scheme, Direction dir,
                                StringAttr state, StringRef stateAttr);
} // namespace mlir::te

#endif // TE_DIALECT_TE_TEOPS_H
