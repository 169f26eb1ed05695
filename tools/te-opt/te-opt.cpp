//===- te-opt.cpp - the tejit optimizer driver ----------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Registers only what tejit uses: the te and func dialects, tejit's passes
// and a handful of upstream cleanups (canonicalize, cse, symbol-dce). Reads
// its input like the other tools (te::tools::readProgramFile: a regular
// file or stdin, bounded), then hands it to MlirOptMain.
//
//===----------------------------------------------------------------------===//

#include "ProgramFile.h"

#include "dialect/te/TeDialect.h"
#include "dialect/tek/TekDialect.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  mlir::DialectRegistry registry;
  registry.insert<mlir::te::TeDialect, mlir::tek::TekDialect,
                  mlir::func::FuncDialect>();

  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  mlir::te::registerTePasses();
  mlir::te::registerTePipelines();

  auto [inputFile, outputFile] = mlir::registerAndParseCLIOptions(
      argc, argv, "tejit optimizer driver\n", registry);
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects()) {
    llvm::outs() << "Available Dialects: ";
    llvm::interleave(registry.getDialectNames(), llvm::outs(), ",");
    llvm::outs() << "\n";
    return 0;
  }
  if (config.shouldListPasses()) {
    mlir::printRegisteredPasses();
    return 0;
  }

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      te::tools::readProgramFile(inputFile, error);
  if (!input) {
    llvm::errs() << "te-opt: " << error << "\n";
    return 1;
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFile, &error);
  if (!output) {
    llvm::errs() << "te-opt: " << error << "\n";
    return 1;
  }
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
    return 1;
  output->keep();
  return 0;
}
