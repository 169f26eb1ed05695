//===- TeTypes.h - types of the te dialect ----------------------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_TETYPES_H
#define TE_DIALECT_TE_TETYPES_H

#include "dialect/te/TeAttrs.h"

#include "mlir/IR/Types.h"

#define GET_TYPEDEF_CLASSES
#include "dialect/te/TeTypes.h.inc"

#endif // TE_DIALECT_TE_TETYPES_H
