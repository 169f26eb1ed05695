//===- TeAttrs.h - quantization scheme attributes ---------------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The `#te.*` scheme attributes and the SchemeAttrInterface they implement.
// The interface maps each attribute to the MLIR-free te::rt::Scheme, which
// owns the storage rules (te/formats/Scheme.h).
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_TEATTRS_H
#define TE_DIALECT_TE_TEATTRS_H

#include "te/formats/Scheme.h"

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"

#include "dialect/te/TeEnums.h.inc"

namespace mlir::te {

/// The run-time direction of `dir` (the enumerators have the same values).
inline ::te::rt::Direction toRuntime(Direction dir) {
  return static_cast<::te::rt::Direction>(static_cast<uint32_t>(dir));
}

/// The rows of the M x K view of `shape`: the product of all but the last
/// dimension (1 for rank 1).
int64_t flattenedRows(llvm::ArrayRef<int64_t> shape);

/// Prints `v` as the shortest decimal float literal that parses back to the
/// same FP32 value (FP32 options are printed as users write them: 1.0e-12).
void printShortestFloat(llvm::raw_ostream &os, float v);

} // namespace mlir::te

#include "dialect/te/TeAttrInterfaces.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialect/te/TeAttrs.h.inc"

#endif // TE_DIALECT_TE_TEATTRS_H
