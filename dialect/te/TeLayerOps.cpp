//===- TeLayerOps.cpp - te.linear, te.grouped_linear and gradients --------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The layer ops' verifiers: shapes and types of a linear layer (one weight,
// or G experts' stacked weights with split sizes), the weight's scheme when
// it is stored quantized, and the recipe roles each op quantizes.
//
//===----------------------------------------------------------------------===//

#include "dialect/te/TeOps.h"
#include "dialect/te/TeOpsSupport.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::detail;
namespace rt = ::te::rt;

//===----------------------------------------------------------------------===//
// LinearOp / LinearGradOp
//===----------------------------------------------------------------------===//

/// Checks x [..., in] and W [out, in]; returns {in, out} on success.
static FailureOr<std::pair<int64_t, int64_t>>
verifyLinearOperands(Operation *op, RankedTensorType x, Type weight) {
  // A quantized primary weight has the same logical [out, in] shape.
  auto q = llvm::dyn_cast<QTensorType>(weight);
  auto w = q ? q.getTensorType() : llvm::cast<RankedTensorType>(weight);
  if (x.getRank() < 2)
    return op->emitOpError() << "input must be at least 2-D ([..., in]), got "
                             << shapeStr(x.getShape());
  if (w.getRank() != 2)
    return op->emitOpError()
           << "weight must be 2-D ([out, in]), got " << shapeStr(w.getShape());
  if (x.getShape().back() != w.getDimSize(1))
    return op->emitOpError()
           << "input features " << x.getShape().back()
           << " differ from the weight's input features " << w.getDimSize(1)
           << " (weight is [out, in] = " << shapeStr(w.getShape()) << ")";
  return std::make_pair(w.getDimSize(1), w.getDimSize(0));
}

/// A quantized primary weight (a `!te.qtensor` weight operand) is read by
/// the layer's GEMMs as stored: it must hold every direction `read` (what
/// `gemms` contract) and, when `rule` (the recipe's weight scheme) is known,
/// be quantized exactly as `rule` says in each of them. A tensor passes.
static LogicalResult verifyQuantizedWeight(Operation *op, Type weight,
                                           Directions read, StringRef gemms,
                                           SchemeAttrInterface rule) {
  auto q = llvm::dyn_cast<QTensorType>(weight);
  if (!q)
    return success();
  for (Direction dir : {Direction::rowwise, Direction::columnwise}) {
    Directions bit = dir == Direction::rowwise ? Directions::rowwise
                                               : Directions::columnwise;
    if (!bitEnumContainsAll(read, bit))
      continue;
    if (!q.hasDirection(dir))
      return op->emitOpError()
             << "reads its quantized weight " << stringifyDirection(dir) << " ("
             << gemms << "), but the weight holds only "
             << stringifyDirections(q.getDirections());
    if (!rule ||
        q.getScheme().getRuntimeScheme(dir) == rule.getRuntimeScheme(dir))
      continue;
    return op->emitOpError()
           << "has a quantized weight whose " << stringifyDirection(dir)
           << " scheme " << q.getScheme().getDirectionScheme(dir)
           << " differs from the recipe's (\"linear\", \"weight\") rule, "
           << rule.getDirectionScheme(dir) << " (" << gemms
           << "): the layer reads the stored weight as is, so it must be "
              "quantized as the recipe says";
  }
  return success();
}

/// The weight scheme te-resolve-recipe recorded, or null.
static SchemeAttrInterface resolvedWeightScheme(DictionaryAttr schemes) {
  return schemes ? llvm::dyn_cast_or_null<SchemeAttrInterface>(
                       schemes.get("weight"))
                 : SchemeAttrInterface();
}

static constexpr StringLiteral kFpropReads = "fprop y = x W^T reads W rowwise";
static constexpr StringLiteral kDgradReads =
    "dgrad dx = dy W reads W columnwise";

ArrayRef<StringRef> LinearOp::getQuantizedRoles() {
  static constexpr StringRef roles[] = {"input", "weight"};
  return roles;
}

ArrayRef<StringRef> LinearGradOp::getQuantizedRoles() {
  static constexpr StringRef roles[] = {"grad_output", "input", "weight"};
  return roles;
}

LogicalResult LinearOp::verify() {
  if (failed(
          verifyResolvedSchemes(*this, getSchemesAttr(), getQuantizedRoles())))
    return failure();
  auto x = getInput().getType();
  auto w = getWeight().getType();
  auto dims = verifyLinearOperands(*this, x, w);
  if (failed(dims) ||
      failed(verifyQuantizedWeight(*this, w, Directions::rowwise, kFpropReads,
                                   resolvedWeightScheme(getSchemesAttr()))))
    return failure();
  int64_t out = dims->second;
  if (Value b = getBias()) {
    auto bt = llvm::cast<RankedTensorType>(b.getType());
    if (bt.getRank() != 1 || bt.getDimSize(0) != out)
      return emitOpError() << "bias must be [" << out << "], got "
                           << shapeStr(bt.getShape());
  }
  SmallVector<int64_t> expected(x.getShape().drop_back());
  expected.push_back(out);
  if (getResult().getType().getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "result must be " << shapeStr(expected)
                         << " ([..., out]), got "
                         << shapeStr(getResult().getType().getShape());
  return success();
}

/// A role the layer quantizes by #te.fp8_delayed keeps its state under the
/// layer's name (layerStateName): the layer needs one. A quantized primary
/// weight is read as stored, not quantized.
static LogicalResult verifyLayerName(Operation *op, DictionaryAttr schemes,
                                     StringAttr layer, Type weight) {
  if (layer && layer.getValue().empty())
    return op->emitOpError() << "layer name must not be empty";
  for (NamedAttribute entry : schemes) {
    auto scheme = llvm::dyn_cast<SchemeAttrInterface>(entry.getValue());
    if (layer || !scheme || !usesDelayedScaling(scheme) ||
        (entry.getName() == "weight" && llvm::isa<QTensorType>(weight)))
      continue;
    return op->emitOpError()
           << "quantizes its " << entry.getName().getValue() << " by " << scheme
           << ", whose amax history is kept between calls under the "
              "layer's name: name the layer (layer = \"...\")";
  }
  return success();
}

LogicalResult LinearOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<DictionaryAttr> schemes = resolveRecipeRoles(
      *this, getRecipeAttr(), kLinearKind, getQuantizedRoles(), symbolTable);
  if (failed(schemes) || failed(verifyLayerName(*this, *schemes, getLayerAttr(),
                                                getWeight().getType())))
    return failure();
  return verifyQuantizedWeight(*this, getWeight().getType(),
                               Directions::rowwise, kFpropReads,
                               resolvedWeightScheme(*schemes));
}

/// The gradient results both layer gradients share: dx of the input's
/// shape, dW of the weight's shape in f32 or the weight's element type, and
/// a grad_bias exactly when the `bias` flag is set (its shape is the op's).
static LogicalResult verifyGradients(Operation *op, RankedTensorType x,
                                     RankedTensorType w, RankedTensorType dx,
                                     RankedTensorType dw, bool biasFlag,
                                     Value gradBias) {
  if (dx.getShape() != x.getShape())
    return op->emitOpError()
           << "grad_input must have the input's shape "
           << shapeStr(x.getShape()) << ", got " << shapeStr(dx.getShape());
  if (dw.getShape() != w.getShape())
    return op->emitOpError()
           << "grad_weight must have the weight's shape "
           << shapeStr(w.getShape()) << ", got " << shapeStr(dw.getShape());
  if (!dw.getElementType().isF32() && dw.getElementType() != w.getElementType())
    return op->emitOpError()
           << "grad_weight must be f32 or the weight's element type "
           << w.getElementType() << ", got " << dw.getElementType();
  if (biasFlag != static_cast<bool>(gradBias))
    return op->emitOpError()
           << (biasFlag ? "has the 'bias' flag but no grad_bias result"
                        : "has a grad_bias result but no 'bias' flag");
  return success();
}

LogicalResult LinearGradOp::verify() {
  if (failed(
          verifyResolvedSchemes(*this, getSchemesAttr(), getQuantizedRoles())))
    return failure();
  auto dy = getGradOutput().getType();
  auto x = getInput().getType();
  auto w = getWeight().getType();
  auto dims = verifyLinearOperands(*this, x, w);
  if (failed(dims) || failed(verifyQuantizedWeight(
                          *this, w, Directions::columnwise, kDgradReads,
                          resolvedWeightScheme(getSchemesAttr()))))
    return failure();
  int64_t out = dims->second;
  auto q = llvm::dyn_cast<QTensorType>(w);
  RankedTensorType wt = q ? q.getTensorType() : llvm::cast<RankedTensorType>(w);
  SmallVector<int64_t> expectedDy(x.getShape().drop_back());
  expectedDy.push_back(out);
  if (dy.getShape() != ArrayRef<int64_t>(expectedDy))
    return emitOpError() << "grad_output must be " << shapeStr(expectedDy)
                         << " ([..., out]), got " << shapeStr(dy.getShape());
  // A quantized weight's gradient is of the tensor it quantizes.
  if (failed(verifyGradients(*this, x, wt, getGradInput().getType(),
                             getGradWeight().getType(), getBias(),
                             getGradBias())))
    return failure();
  if (Value db = getGradBias()) {
    auto dbt = llvm::cast<RankedTensorType>(db.getType());
    if (dbt.getRank() != 1 || dbt.getDimSize(0) != out)
      return emitOpError() << "grad_bias must be [" << out << "], got "
                           << shapeStr(dbt.getShape());
  }
  return success();
}

LogicalResult
LinearGradOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<DictionaryAttr> schemes = resolveRecipeRoles(
      *this, getRecipeAttr(), kLinearKind, getQuantizedRoles(), symbolTable);
  if (failed(schemes) || failed(verifyLayerName(*this, *schemes, getLayerAttr(),
                                                getWeight().getType())))
    return failure();
  return verifyQuantizedWeight(*this, getWeight().getType(),
                               Directions::columnwise, kDgradReads,
                               resolvedWeightScheme(*schemes));
}

//===----------------------------------------------------------------------===//
// GroupedLinearOp / GroupedLinearGradOp
//===----------------------------------------------------------------------===//

namespace {
/// The static sizes of a grouped linear layer.
struct GroupedDims {
  int64_t experts, out, in;
};
} // namespace

/// Checks x [M_total, K], W [G, N, K] and split sizes tensor<Gxi64>.
static FailureOr<GroupedDims> verifyGroupedOperands(Operation *op,
                                                    RankedTensorType x,
                                                    Type weight,
                                                    Type splitSizes) {
  // The stack would be quantized as one [G*N, K] matrix (one per-tensor
  // scale, transposes across experts), not per expert as grouped GEMMs read.
  if (llvm::isa<QTensorType>(weight))
    return op->emitOpError()
           << "weight must be a tensor, got " << weight
           << ": a quantized weight of a grouped layer is not supported (a "
              "!te.qtensor would quantize the [G, N, K] stack as one matrix, "
              "not per expert)";
  auto w = llvm::cast<RankedTensorType>(weight);
  if (x.getRank() != 2)
    return op->emitOpError() << "input must be 2-D ([M_total, K], tokens "
                                "sorted by expert), got "
                             << shapeStr(x.getShape());
  if (w.getRank() != 3)
    return op->emitOpError() << "weight must be 3-D ([G, N, K], one [N, K] "
                                "weight per expert), got "
                             << shapeStr(w.getShape());
  GroupedDims dims{w.getDimSize(0), w.getDimSize(1), w.getDimSize(2)};
  if (x.getDimSize(1) != dims.in)
    return op->emitOpError()
           << "input features " << x.getDimSize(1)
           << " differ from the weight's input features " << dims.in
           << " (weight is [G, N, K] = " << shapeStr(w.getShape()) << ")";
  auto splits = llvm::cast<RankedTensorType>(splitSizes);
  if (splits.getRank() != 1 || !splits.getElementType().isInteger(64))
    return op->emitOpError()
           << "split sizes must be tensor<" << dims.experts
           << "xi64> (one token count per expert), got " << splitSizes;
  if (splits.getDimSize(0) != dims.experts)
    return op->emitOpError()
           << "has " << splits.getDimSize(0) << " split sizes but "
           << dims.experts
           << " experts (weight is [G, N, K] = " << shapeStr(w.getShape())
           << ")";
  return dims;
}

/// Checks that `t` (the result or grad_output) is [M_total, N].
static LogicalResult verifyTokenRows(Operation *op, StringRef what,
                                     RankedTensorType t, int64_t tokens,
                                     int64_t out) {
  if (t.getRank() != 2)
    return op->emitOpError() << what << " must be 2-D ([M_total, N]), got "
                             << shapeStr(t.getShape());
  if (t.getDimSize(0) != tokens)
    return op->emitOpError()
           << what << " has " << t.getDimSize(0)
           << " rows but the input has M_total = " << tokens << " token rows";
  if (t.getDimSize(1) != out)
    return op->emitOpError() << what << " has " << t.getDimSize(1)
                             << " columns but the weight's output features "
                                "are N = "
                             << out;
  return success();
}

ArrayRef<StringRef> GroupedLinearOp::getQuantizedRoles() {
  return LinearOp::getQuantizedRoles();
}

ArrayRef<StringRef> GroupedLinearGradOp::getQuantizedRoles() {
  return LinearGradOp::getQuantizedRoles();
}

LogicalResult GroupedLinearOp::verify() {
  if (failed(
          verifyResolvedSchemes(*this, getSchemesAttr(), getQuantizedRoles())))
    return failure();
  RankedTensorType x = getInput().getType();
  auto dims = verifyGroupedOperands(*this, x, getWeight().getType(),
                                    getSplitSizes().getType());
  if (failed(dims))
    return failure();
  RankedTensorType y = getResult().getType();
  if (Value b = getBias()) {
    auto bt = llvm::cast<RankedTensorType>(b.getType());
    if (bt.getRank() != 2 || bt.getDimSize(0) != dims->experts ||
        bt.getDimSize(1) != dims->out)
      return emitOpError() << "bias must be [G, N] = " << dims->experts << "x"
                           << dims->out << ", got " << shapeStr(bt.getShape());
    // As for te.gemm: the GEMM epilogue adds the bias in the output type.
    if (bt.getElementType() != y.getElementType())
      return emitOpError() << "bias element type " << bt.getElementType()
                           << " must be the result's (" << y.getElementType()
                           << "): the GEMM epilogue adds it in that type";
  }
  return verifyTokenRows(*this, "result", y, x.getDimSize(0), dims->out);
}

/// A grouped layer's recipe resolves its roles, and a delayed role's
/// states need the layer's name (one state per expert).
template <class GroupedLayerOp>
static LogicalResult verifyGroupedLayerSymbols(GroupedLayerOp op,
                                               SymbolTableCollection &symbols) {
  FailureOr<DictionaryAttr> schemes =
      resolveRecipeRoles(op, op.getRecipeAttr(), kGroupedLinearKind,
                         op.getQuantizedRoles(), symbols);
  if (failed(schemes))
    return failure();
  return verifyLayerName(op, *schemes, op.getLayerAttr(),
                         op.getWeight().getType());
}

LogicalResult
GroupedLinearOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyGroupedLayerSymbols(*this, symbolTable);
}

LogicalResult GroupedLinearGradOp::verify() {
  if (failed(
          verifyResolvedSchemes(*this, getSchemesAttr(), getQuantizedRoles())))
    return failure();
  RankedTensorType x = getInput().getType();
  auto dims = verifyGroupedOperands(*this, x, getWeight().getType(),
                                    getSplitSizes().getType());
  if (failed(dims) ||
      failed(verifyTokenRows(*this, "grad_output", getGradOutput().getType(),
                             x.getDimSize(0), dims->out)))
    return failure();
  if (failed(verifyGradients(
          *this, x, llvm::cast<RankedTensorType>(getWeight().getType()),
          getGradInput().getType(), getGradWeight().getType(), getBias(),
          getGradBias())))
    return failure();
  if (Value db = getGradBias()) {
    auto dbt = llvm::cast<RankedTensorType>(db.getType());
    if (dbt.getRank() != 2 || dbt.getDimSize(0) != dims->experts ||
        dbt.getDimSize(1) != dims->out)
      return emitOpError() << "grad_bias must be [G, N] = " << dims->experts
                           << "x" << dims->out << ", got "
                           << shapeStr(dbt.getShape());
    if (!dbt.getElementType().isF32())
      return emitOpError() << "grad_bias must be f32 (bias gradients "
                              "accumulate in FP32), got "
                           << dbt.getElementType();
  }
  return success();
}

LogicalResult
GroupedLinearGradOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyGroupedLayerSymbols(*this, symbolTable);
}
