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
} // namespace mlir::te

#endif // TE_DIALECT_TE_TEOPS_H
