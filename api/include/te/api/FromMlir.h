//===- te/api/FromMlir.h - Compile a ModuleOp built in C++ ------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// For programs that build te IR with MLIR's builders instead of text (and
// for the tools): the compiler driver, which runs the te-to-cuda pipeline on
// a module and lowers it to the kernel-level Program.
//
//===----------------------------------------------------------------------===//

#ifndef TE_API_FROMMLIR_H
#define TE_API_FROMMLIR_H

#include "te/api/Tejit.h"

#include "mlir/IR/BuiltinOps.h"

namespace te::api {

/// Runs the te-to-cuda pipeline for `opts.arch` on `module` (in place),
/// then lowers it to the kernel-level Program. The module may be at any
/// stage te-opt prints: te IR, partly lowered, or all tek (then only
/// lowered). An empty `arch` means the module's te.target, else sm_90a; a
/// module that has a te.target for another architecture is an error, as
/// are layer recipes for a module already lowered. Diagnostics go to the
/// context's handlers.
mlir::FailureOr<cg::Program> compileToProgram(mlir::ModuleOp module,
                                              const CompileOptions &opts);

/// compileToProgram, wrapped: diagnostics go to the module's context
/// handlers and are also returned in the Status message.
rt::Expected<CompiledModule> compileModule(mlir::ModuleOp module,
                                           const CompileOptions &opts = {});

} // namespace te::api

#endif // TE_API_FROMMLIR_H
