//===- TekDialect.cpp - the tek dialect -----------------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#include "dialect/tek/TekDialect.h"
#include "dialect/tek/TekOps.h"

#include "mlir/IR/DialectImplementation.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tek;

#include "dialect/tek/TekDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialect/tek/TekAttrs.cpp.inc"

void TekDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialect/tek/TekOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialect/tek/TekAttrs.cpp.inc"
      >();
}
