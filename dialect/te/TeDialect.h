//===- TeDialect.h - the te dialect -----------------------------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_TEDIALECT_H
#define TE_DIALECT_TE_TEDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialect/te/TeOpsDialect.h.inc"

#endif // TE_DIALECT_TE_TEDIALECT_H
