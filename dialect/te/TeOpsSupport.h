//===- TeOpsSupport.h - Helpers the te op verifiers share -------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Internal to dialect/te: what TeOps.cpp and TeLayerOps.cpp both use.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_TEOPSSUPPORT_H
#define TE_DIALECT_TE_TEOPSSUPPORT_H

#include "dialect/te/TeTypes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"

#include <string>

namespace mlir::te::detail {

/// Shape of a ranked tensor or a quantized tensor.
ArrayRef<int64_t> shapeOf(Type t);
/// "128x256".
std::string shapeStr(ArrayRef<int64_t> shape);
/// Checks a `schemes` dictionary recorded by te-resolve-recipe: exactly the
/// op's roles, each mapped to a scheme.
LogicalResult verifyResolvedSchemes(Operation *op, DictionaryAttr schemes,
                                    ArrayRef<StringRef> roles);

/// Why direction `d` of `q`'s scheme cannot quantize a row shard of `rows`
/// rows (te/formats/Sharding.h), or "".
std::string rowShardProblem(QTensorType q, Direction d, int64_t rows);

/// Checks the delayed-scaling state `state` ("" for none) of a quantization
/// into `q`: required where a held direction is #te.fp8_delayed, refused
/// where neither direction of the scheme is.
LogicalResult verifyScalingState(function_ref<InFlightDiagnostic()> emitError,
                                 QTensorType q, StringRef state, bool given);

} // namespace mlir::te::detail

#endif // TE_DIALECT_TE_TEOPSSUPPORT_H
