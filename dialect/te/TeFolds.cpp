//===- TeFolds.cpp - folds of the te dialect ------------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Folds only where the result is exactly the value folded to: quantization
// is lossy, so a round trip folds only through #te.identity of the tensor's
// own element type (a passthrough copy). Dead te ops need no fold: they are
// Pure, so the canonicalizer erases them.
//
//===----------------------------------------------------------------------===//

#include "dialect/te/TeOps.h"

using namespace mlir;
using namespace mlir::te;
namespace rt = ::te::rt;

/// The tensor a quantized value was quantized from, if a te.quantize or
/// te.fused_quantize in this function defines it.
static Value quantizedFrom(Value q) {
  if (auto op = q.getDefiningOp<QuantizeOp>())
    return op.getInput();
  if (auto op = q.getDefiningOp<FusedQuantizeOp>())
    return op.getInput();
  return {};
}

/// dequantize(quantize(x)) -> x when the direction read stores x unchanged:
/// #te.identity of x's own element type, and the result is x's type.
OpFoldResult DequantizeOp::fold(FoldAdaptor) {
  Value source = quantizedFrom(getInput());
  if (!source || source.getType() != getResult().getType())
    return {};
  QTensorType q = getInput().getType();
  rt::Scheme s = q.getScheme().getRuntimeScheme(getDirection());
  if (s.kind != rt::SchemeKind::Identity ||
      getRuntimeDType(q.getElementType()) != s.element)
    return {};
  return source;
}
