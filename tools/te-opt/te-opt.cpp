//===- te-opt.cpp - the tejit optimizer driver ----------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Registers only what tejit uses: the te and func dialects, tejit's passes
// and a handful of upstream cleanups (canonicalize, cse, symbol-dce).
//
//===----------------------------------------------------------------------===//

#include "dialect/te/TeDialect.h"
#include "dialect/tek/TekDialect.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::te::TeDialect, mlir::tek::TekDialect,
                  mlir::func::FuncDialect>();

  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  mlir::te::registerTePasses();
  mlir::te::registerTePipelines();

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "tejit optimizer driver\n", registry));
}
