//===- Compile.cpp - te IR -> CompiledModule ------------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#include "te/api/FromMlir.h"

#include "codegen/lower/LowerToProgram.h"
#include "dialect/te/TeAttrs.h"
#include "dialect/te/TeDialect.h"
#include "dialect/tek/TekDialect.h"
#include "passes/Pipelines.h"
#include "te/codegen/ScalingState.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

namespace te::api {

/// Whether a function of `module` still holds graph-level (te) ops; the
/// module's own te ops (recipes) stay after lowering.
static bool hasGraphLevelOps(mlir::ModuleOp module) {
  mlir::Dialect *te =
      module->getContext()->getLoadedDialect<mlir::te::TeDialect>();
  bool found = false;
  module.walk([&](mlir::func::FuncOp fn) {
    found |= fn.walk([&](mlir::Operation *op) {
                 return op->getDialect() == te ? mlir::WalkResult::interrupt()
                                               : mlir::WalkResult::advance();
               }).wasInterrupted();
  });
  return found;
}

mlir::FailureOr<cg::Program> compileToProgram(mlir::ModuleOp module,
                                              const CompileOptions &opts) {
  llvm::StringRef arch = opts.arch;
  mlir::MLIRContext *context = module->getContext();
  context->getOrLoadDialect<mlir::tek::TekDialect>();
  auto existing = module->getAttrOfType<mlir::te::TargetAttr>("te.target");
  if (existing && !arch.empty() && existing.getArch() != arch)
    return mlir::emitError(module.getLoc())
           << "the module was compiled for " << existing.getArch()
           << " (its te.target) and cannot be compiled for " << arch
           << "; drop the architecture or start from its te source";
  std::string target = !arch.empty() ? arch.str()
                       : existing    ? existing.getArch().str()
                                     : std::string("sm_90a");
  // The pipeline's passes leave what they already did alone, so a module
  // te-opt printed at any stage compiles like its source. One whose
  // functions are all at the kernel level (tek) goes straight to the
  // lowering.
  if (hasGraphLevelOps(module)) {
    mlir::PassManager pm(context);
    mlir::te::TeToCudaPipelineOptions options;
    options.arch = target;
    for (const auto &[layer, recipe] : opts.layerRecipes)
      options.layerRecipes.push_back(layer + "=" + recipe);
    options.groupedMxfp8 = opts.groupedMxfp8;
    options.groupedNvfp4 = opts.groupedNvfp4;
    mlir::te::buildTeToCudaPipeline(pm, options);
    if (mlir::failed(pm.run(module)))
      return mlir::failure();
  } else if (!opts.layerRecipes.empty()) {
    return mlir::emitError(module.getLoc())
           << "layer recipes apply to te-level IR; this module is already "
              "lowered to kernels";
  } else if (opts.groupedMxfp8 != "auto" || opts.groupedNvfp4 != "auto") {
    return mlir::emitError(module.getLoc())
           << (opts.groupedMxfp8 != "auto" ? "grouped-mxfp8" : "grouped-nvfp4")
           << " applies to te-level IR; this module is already lowered to "
              "kernels";
  } else if (!existing) {
    auto attr = mlir::te::TargetAttr::getChecked(
        [&] { return mlir::emitError(module.getLoc()); }, context,
        llvm::StringRef(target));
    if (!attr)
      return mlir::failure();
    module->setAttr("te.target", attr);
  }
  mlir::FailureOr<cg::Program> program = mlir::te::lowerToProgram(module);
  if (mlir::failed(program))
    return mlir::failure();
  // What spans functions: one delayed-scaling state, one scheme.
  std::string why = cg::validateScalingStates(*program);
  if (!why.empty())
    return mlir::emitError(module.getLoc()) << why;
  return program;
}

CompiledModule::CompiledModule(cg::Program program)
    : program_(std::make_shared<const cg::Program>(std::move(program))) {}

std::vector<std::string> CompiledModule::functionNames() const {
  std::vector<std::string> names;
  for (const cg::Entry &e : program_->entries)
    names.push_back(e.name);
  return names;
}

rt::Expected<CompiledModule>
CompiledModule::fromSource(const std::string &text, const CompileOptions &opts,
                           const std::string &bufferName) {
  mlir::MLIRContext context;
  context.getOrLoadDialect<mlir::te::TeDialect>();
  context.getOrLoadDialect<mlir::tek::TekDialect>(); // te-opt's output too
  context.getOrLoadDialect<mlir::func::FuncDialect>();
  llvm::SourceMgr sources;
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  // Prints "name:line:col: error: ..." with the offending source line.
  mlir::SourceMgrDiagnosticHandler handler(sources, &context, os);
  sources.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, bufferName), llvm::SMLoc());
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sources, &context);
  if (!module)
    return rt::Status(rt::StatusCode::InvalidArgument, os.str());
  mlir::FailureOr<cg::Program> program = compileToProgram(*module, opts);
  if (mlir::failed(program))
    return rt::Status(rt::StatusCode::InvalidArgument, os.str());
  return CompiledModule(std::move(*program));
}

rt::Expected<CompiledModule> compileModule(mlir::ModuleOp module,
                                           const CompileOptions &opts) {
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  mlir::ScopedDiagnosticHandler capture(
      module.getContext(), [&](mlir::Diagnostic &d) {
        if (d.getSeverity() != mlir::DiagnosticSeverity::Error)
          return mlir::failure();
        mlir::Location loc = d.getLocation();
        if (auto flc = mlir::dyn_cast<mlir::FileLineColLoc>(loc))
          os << flc.getFilename().getValue() << ":" << flc.getLine() << ":"
             << flc.getColumn();
        else
          os << loc;
        os << ": error: " << d.str() << "\n";
        return mlir::failure(); // keep the caller's handlers informed too
      });
  mlir::FailureOr<cg::Program> program = compileToProgram(module, opts);
  if (mlir::failed(program))
    return rt::Status(rt::StatusCode::InvalidArgument, os.str());
  return CompiledModule(std::move(*program));
}

} // namespace te::api
