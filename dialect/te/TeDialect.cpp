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

LogicalResult TeDialect::verifyRegionArgAttribute(Operation *op,
                                                  unsigned regionIndex,
                                                  unsigned argIndex,
                                                  NamedAttribute attr) {
  if (attr.getName() != kPersistentAttrName)
    return op->emitError() << "unknown te argument attribute '"
                           << attr.getName().getValue() << "'";
  auto name = dyn_cast<StringAttr>(attr.getValue());
  if (!name || name.getValue().empty())
    return op->emitError() << "'" << kPersistentAttrName
                           << "' must name the parameter with a non-empty "
                              "string, got "
                           << attr.getValue();
  // Declarations have no block: take the type from the signature.
  Type type;
  if (auto fn = dyn_cast<FunctionOpInterface>(op))
    type = fn.getArgumentTypes()[argIndex];
  else
    type = op->getRegion(regionIndex).getArgument(argIndex).getType();
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return op->emitError() << "'" << kPersistentAttrName
                           << "' marks a statically shaped tensor argument, "
                              "not "
                           << type;
  return success();
}
