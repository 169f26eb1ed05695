//===- te-translate.cpp - te IR -> CUDA C++ -------------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// te-translate --te-to-cuda FILE.mlir [--arch sm_90a]
// Runs the te-to-cuda pipeline, lowers every function to the kernel level
// and prints the CUDA C++ of each kernel, preceded by a comment naming the
// function, the kernel and its launches. FILE may be at any stage te-opt
// prints (te, partly lowered, or tek).
//
//===----------------------------------------------------------------------===//

#include "ProgramFile.h"

#include "dialect/te/TeDialect.h"
#include "dialect/tek/TekDialect.h"
#include "te/api/FromMlir.h"
#include "te/codegen/PlanBuilder.h"
#include "te/runtime/BlasLt.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<file.mlir>"),
                                      cl::init("-"));
static cl::opt<bool> toCuda("te-to-cuda",
                            cl::desc("Print the generated CUDA C++"));
static cl::opt<std::string>
    arch("arch",
         cl::desc("Target architecture (default: the module's te.target, "
                  "else sm_90a)"),
         cl::init(""));

int main(int argc, char **argv) {
  cl::ParseCommandLineOptions(argc, argv, "tejit translator\n");
  if (!toCuda) {
    llvm::errs() << "te-translate: choose a translation (--te-to-cuda)\n";
    return 1;
  }
  mlir::MLIRContext context;
  context.getOrLoadDialect<mlir::te::TeDialect>();
  context.getOrLoadDialect<mlir::tek::TekDialect>();
  context.getOrLoadDialect<mlir::func::FuncDialect>();
  llvm::SourceMgr sources;
  mlir::SourceMgrDiagnosticHandler handler(sources, &context);
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> buffer =
      te::tools::readProgramFile(inputFile, error);
  if (!buffer) {
    llvm::errs() << "te-translate: " << error << "\n";
    return 1;
  }
  sources.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  auto module = mlir::parseSourceFile<mlir::ModuleOp>(sources, &context);
  if (!module)
    return 1;
  te::api::CompileOptions options;
  options.arch = arch;
  auto program = te::api::compileToProgram(*module, options);
  if (mlir::failed(program))
    return 1;
  for (const te::cg::Entry &e : program->entries) {
    auto plan = te::cg::buildEntryPlan(*program, e, /*keepUnsupported=*/true);
    if (!plan) {
      llvm::errs() << "te-translate: " << plan.status().message() << "\n";
      return 1;
    }
    // One KernelPlan per kernel of the entry; its launches share a source.
    for (const te::cg::KernelPlan &kp : plan->kernels) {
      llvm::outs() << "// ===== entry @" << e.name << " kernel " << kp.name
                   << " (" << program->arch << ")\n";
      if (!kp.unsupported.empty())
        llvm::outs() << "// not generated: " << kp.unsupported << "\n\n";
      for (const te::rt::GemmCall &g : kp.plan.gemms) {
        llvm::outs() << "// cuBLASLt GEMM "
                     << te::rt::BlasLt::describe(g.shape()) << "\n\n";
      }
      for (const te::rt::KernelSpec &spec : kp.plan.kernels)
        llvm::outs() << "// launch " << spec.entry << " grid " << spec.grid.x
                     << " block " << spec.block.x << "\n";
      if (!kp.plan.kernels.empty())
        llvm::outs() << kp.plan.kernels.front().source << "\n";
    }
  }
  return 0;
}
