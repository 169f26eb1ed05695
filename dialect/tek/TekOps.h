//===- TekOps.h - operations of the tek dialect -----------------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TEK_TEKOPS_H
#define TE_DIALECT_TEK_TEKOPS_H

#include "dialect/te/TeAttrs.h"
#include "dialect/te/TeTraits.h"
#include "dialect/tek/TekDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialect/tek/TekOps.h.inc"

namespace mlir::tek {

/// The tile, block size and grids the device library's kernels use (the
/// only ones code generation accepts; the verifiers check them).
constexpr int64_t kQuantizeTile = 128;
constexpr int64_t kThreads = 256;

/// ceil(M / 128) x ceil(K / 128) for the logical M x K view of `shape`.
SmallVector<int64_t, 2> quantizeGrid(ArrayRef<int64_t> shape);
/// te::rt::dequantizeGrid of the M * K elements of `shape`.
int64_t dequantizeGrid(ArrayRef<int64_t> shape);
/// The tiles of every parameter of a multi-tensor Adam kernel.
int64_t adamGrid(ArrayRef<RankedTensorType> params);

} // namespace mlir::tek

#endif // TE_DIALECT_TEK_TEKOPS_H
