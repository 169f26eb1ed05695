//===- Passes.h - tejit graph-level passes ----------------------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#ifndef TE_PASSES_PASSES_H
#define TE_PASSES_PASSES_H

#include "dialect/te/TeDialect.h"
#include "dialect/tek/TekDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::te {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace mlir::te

#endif // TE_PASSES_PASSES_H
