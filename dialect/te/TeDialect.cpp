//===- TeDialect.cpp - the te dialect -------------------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#include "dialect/te/TeDialect.h"
#include "dialect/te/TeOps.h"

using namespace mlir;
using namespace mlir::te;

#include "dialect/te/TeOpsDialect.cpp.inc"

void TeDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialect/te/TeOps.cpp.inc"
      >();
  registerAttributes();
  registerTypes();
}
