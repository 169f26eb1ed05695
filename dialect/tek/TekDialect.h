//===- TekDialect.h - the tek (kernel-level) dialect ------------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TEK_TEKDIALECT_H
#define TE_DIALECT_TEK_TEKDIALECT_H

#include "dialect/te/TeDialect.h"
#include "dialect/te/TeTypes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Dialect.h"

#include "dialect/tek/TekDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialect/tek/TekAttrs.h.inc"

#endif // TE_DIALECT_TEK_TEKDIALECT_H
