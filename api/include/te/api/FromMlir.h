//===- te/api/FromMlir.h - Compile a ModuleOp built in C++ ------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// For programs that build te IR with MLIR's builders instead of text: runs
// the te-to-cuda pipeline on `module` (in place) and wraps the result.
// Diagnostics go to the module's context handlers and are also returned in
// the Status message.
//
//===----------------------------------------------------------------------===//

#ifndef TE_API_FROMMLIR_H
#define TE_API_FROMMLIR_H

#include "te/api/Tejit.h"

#include "mlir/IR/BuiltinOps.h"

namespace te::api {

rt::Expected<CompiledModule> compileModule(mlir::ModuleOp module,
                                           const CompileOptions &opts = {});

} // namespace te::api

#endif // TE_API_FROMMLIR_H
