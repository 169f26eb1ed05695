//===- TeDialect.cpp - the te dialect -------------------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#include "dialect/te/TeDialect.h"
#include "dialect/te/TeOps.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

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

/// Checks a `te.persistent` attribute on an argument or result of `op`
/// whose type is `type`.
static LogicalResult verifyPersistent(Operation *op, NamedAttribute attr,
                                      Type type, StringRef what) {
  if (attr.getName() != TeDialect::kPersistentAttrName)
    return op->emitError() << "unknown te " << what << " attribute '"
                           << attr.getName().getValue() << "'";
  auto name = dyn_cast<StringAttr>(attr.getValue());
  if (!name || name.getValue().empty())
    return op->emitError() << "'" << TeDialect::kPersistentAttrName
                           << "' must name the value with a non-empty "
                              "string, got "
                           << attr.getValue();
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!isa<QTensorType>(type) && (!tensor || !tensor.hasStaticShape()))
    return op->emitError() << "'" << TeDialect::kPersistentAttrName
                           << "' marks a statically shaped tensor or a "
                              "!te.qtensor "
                           << what << ", not " << type;
  return success();
}

LogicalResult TeDialect::verifyRegionArgAttribute(Operation *op,
                                                  unsigned regionIndex,
                                                  unsigned argIndex,
                                                  NamedAttribute attr) {
  // Declarations have no block: take the type from the signature.
  Type type;
  if (auto fn = dyn_cast<FunctionOpInterface>(op))
    type = fn.getArgumentTypes()[argIndex];
  else
    type = op->getRegion(regionIndex).getArgument(argIndex).getType();
  return verifyPersistent(op, attr, type, "argument");
}

LogicalResult TeDialect::verifyRegionResultAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned resultIndex,
                                                     NamedAttribute attr) {
  auto fn = dyn_cast<FunctionOpInterface>(op);
  if (!fn)
    return op->emitError() << "'" << attr.getName().getValue()
                           << "' belongs on a function result";
  return verifyPersistent(op, attr, fn.getResultTypes()[resultIndex], "result");
}
