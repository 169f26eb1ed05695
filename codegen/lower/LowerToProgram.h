//===- LowerToProgram.h - te IR -> kernel-level Program ---------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The boundary between the compiler and code generation: each func.func of
// a module (after the te-to-cuda pipeline) becomes a te::cg::Entry whose
// values are the function's tensors and quantized tensors and whose kernels
// are its te.fused_quantize / te.quantize / te.bias_grad / te.dequantize
// ops, in program order. An op the backends cannot run yet is a located
// error, never a silent skip.
//
//===----------------------------------------------------------------------===//

#ifndef TE_CODEGEN_LOWER_LOWERTOPROGRAM_H
#define TE_CODEGEN_LOWER_LOWERTOPROGRAM_H

#include "te/codegen/Program.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

namespace mlir::te {

/// Lowers every function of `module`; emits a diagnostic at the offending op
/// and fails on anything it cannot lower. The architecture comes from the
/// module's te.target (sm_90a when absent).
FailureOr<::te::cg::Program> lowerToProgram(ModuleOp module);

} // namespace mlir::te

#endif // TE_CODEGEN_LOWER_LOWERTOPROGRAM_H
