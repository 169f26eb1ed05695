//===- TeTypes.h - types of the te dialect ----------------------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_TETYPES_H
#define TE_DIALECT_TE_TETYPES_H

#include "dialect/te/TeAttrs.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Types.h"

#define GET_TYPEDEF_CLASSES
#include "dialect/te/TeTypes.h.inc"

#include <optional>

namespace mlir::te {

/// The run-time element type of `t`: bf16, f16, f32 or i64; nullopt for
/// anything else. The one mapping the verifiers, the passes and the
/// lowering share.
std::optional<::te::rt::DType> getRuntimeDType(Type t);

} // namespace mlir::te

#endif // TE_DIALECT_TE_TETYPES_H
