//===- TeOps.cpp - operations of the te dialect ---------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Verifiers are local (they look at an op's own operands, results and
// attributes) except verifySymbolUses, which resolves a recipe symbol and
// checks that it has a rule for every role the op quantizes.
//
//===----------------------------------------------------------------------===//

#include "dialect/te/TeOps.h"

#include "te/formats/GemmRules.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>

using namespace mlir;
using namespace mlir::te;
namespace rt = ::te::rt;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Shape of a ranked tensor or a quantized tensor.
static ArrayRef<int64_t> shapeOf(Type t) {
  if (auto q = llvm::dyn_cast<QTensorType>(t))
    return q.getShape();
  return llvm::cast<RankedTensorType>(t).getShape();
}

static std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleave(shape, os, "x");
  return s;
}

//===----------------------------------------------------------------------===//
// RecipeOp / RuleOp
//===----------------------------------------------------------------------===//

static constexpr StringRef kModuleKinds[] = {kLinearKind, kGroupedLinearKind,
                                             "*"};
static constexpr StringRef kTensorKinds[] = {
    "input", "weight", "output", "grad_output", "grad_input", "*"};

bool RuleOp::matches(StringRef moduleKind, StringRef tensorKind) {
  return (getModuleKind() == "*" || getModuleKind() == moduleKind) &&
         (getTensorKind() == "*" || getTensorKind() == tensorKind);
}

LogicalResult RuleOp::verify() {
  if (!llvm::is_contained(kModuleKinds, getModuleKind()))
    return emitOpError() << "unknown module kind \"" << getModuleKind()
                         << "\"; expected \"linear\", \"grouped_linear\" or "
                            "\"*\"";
  if (!llvm::is_contained(kTensorKinds, getTensorKind()))
    return emitOpError() << "unknown tensor kind \"" << getTensorKind()
                         << "\"; expected \"input\", \"weight\", \"output\", "
                            "\"grad_output\", \"grad_input\" or \"*\"";
  return success();
}

SchemeAttrInterface RecipeOp::lookup(StringRef moduleKind,
                                     StringRef tensorKind) {
  for (Operation &op : getBody().front())
    if (auto rule = llvm::dyn_cast<RuleOp>(op))
      if (rule.matches(moduleKind, tensorKind))
        return rule.getScheme();
  return {};
}

LogicalResult RecipeOp::verifyRegions() {
  if (getBody().empty() || getBody().front().empty())
    return emitOpError() << "has no rules; a recipe needs at least one "
                            "te.rule";
  SmallVector<RuleOp> earlier;
  for (Operation &op : getBody().front()) {
    auto rule = llvm::dyn_cast<RuleOp>(op);
    if (!rule)
      return op.emitOpError() << "is not allowed in a te.recipe, which holds "
                                 "only te.rule ops";
    // A rule that an earlier, more general rule already covers never fires.
    for (auto [i, prev] : llvm::enumerate(earlier)) {
      bool modCovered = prev.getModuleKind() == "*" ||
                        prev.getModuleKind() == rule.getModuleKind();
      bool tenCovered = prev.getTensorKind() == "*" ||
                        prev.getTensorKind() == rule.getTensorKind();
      if (modCovered && tenCovered) {
        // By location: attaching the op would print it, and printing
        // verifies it again, re-entering this verifier.
        mlir::emitWarning(rule.getLoc())
            << "rule is unreachable: rule #" << i
            << " of the recipe matches every role it matches";
        break;
      }
    }
    earlier.push_back(rule);
  }
  return success();
}

FailureOr<DictionaryAttr>
mlir::te::resolveRecipeRoles(Operation *op, FlatSymbolRefAttr name,
                             StringRef moduleKind, ArrayRef<StringRef> roles,
                             SymbolTableCollection &symbols) {
  Operation *target = symbols.lookupNearestSymbolFrom(op, name);
  if (!target)
    return op->emitOpError()
           << "names recipe " << name << ", which does not exist";
  auto recipe = llvm::dyn_cast<RecipeOp>(target);
  if (!recipe)
    return op->emitOpError() << "names recipe " << name << ", but that is a '"
                             << target->getName() << "', not a te.recipe";
  Builder b(op->getContext());
  SmallVector<NamedAttribute> entries;
  for (StringRef role : roles) {
    if (SchemeAttrInterface scheme = recipe.lookup(moduleKind, role)) {
      entries.push_back(b.getNamedAttr(role, scheme));
      continue;
    }
    InFlightDiagnostic diag = op->emitOpError()
                              << "recipe " << name
                              << " has no rule for the role (\"" << moduleKind
                              << "\", \"" << role << "\")";
    diag.attachNote(recipe.getLoc()) << "recipe defined here";
    return diag;
  }
  return b.getDictionaryAttr(entries);
}

/// Checks a `schemes` dictionary recorded by te-resolve-recipe: exactly the
/// op's roles, each mapped to a scheme.
static LogicalResult verifyResolvedSchemes(Operation *op,
                                           DictionaryAttr schemes,
                                           ArrayRef<StringRef> roles) {
  if (!schemes)
    return success();
  for (NamedAttribute entry : schemes) {
    if (!llvm::is_contained(roles, entry.getName().getValue()))
      return op->emitOpError()
             << "schemes has an entry for '" << entry.getName().getValue()
             << "', which this op does not quantize";
    if (!llvm::isa<SchemeAttrInterface>(entry.getValue()))
      return op->emitOpError()
             << "schemes entry '" << entry.getName().getValue()
             << "' is not a quantization scheme";
  }
  for (StringRef role : roles)
    if (!schemes.get(role))
      return op->emitOpError() << "schemes lacks an entry for '" << role << "'";
  return success();
}

//===----------------------------------------------------------------------===//
// QuantizeOp / DequantizeOp
//===----------------------------------------------------------------------===//

LogicalResult QuantizeOp::verify() {
  auto in = getInput().getType();
  QTensorType out = getResult().getType();
  if (in.getShape() != out.getShape())
    return emitOpError() << "input shape " << shapeStr(in.getShape())
                         << " differs from the quantized shape "
                         << shapeStr(out.getShape());
  if (in.getElementType() != out.getElementType())
    return emitOpError() << "input element type " << in.getElementType()
                         << " differs from the quantized tensor's source type "
                         << out.getElementType();
  return success();
}

ResultRange FusedQuantizeOp::getQuantized() {
  return getResults().take_front(getNumResults() -
                                 (getBiasGradResult() ? 1 : 0));
}

Value FusedQuantizeOp::getBiasGradResult() {
  return getBiasGradAttr() && getNumResults() > 0 ? getResults().back()
                                                  : Value();
}

LogicalResult FusedQuantizeOp::verify() {
  auto in = getInput().getType();
  unsigned numQuantized = getNumResults() - (getBiasGradAttr() ? 1 : 0);
  if (getBiasGradAttr() && getNumResults() == 0)
    return emitOpError() << "has the 'bias_grad' flag but no results";
  if (numQuantized == 0)
    return emitOpError() << "needs at least one quantized result";
  for (auto [i, r] : llvm::enumerate(getResults().take_front(numQuantized))) {
    auto q = llvm::dyn_cast<QTensorType>(r.getType());
    if (!q)
      return emitOpError() << "result #" << i << " must be a !te.qtensor"
                           << (getBiasGradAttr()
                                   ? " (only the last result is the bias "
                                     "gradient)"
                                   : " (add 'bias_grad' for a bias gradient)");
    if (q.getShape() != in.getShape() ||
        q.getElementType() != in.getElementType())
      return emitOpError() << "result #" << i
                           << " must quantize the input's shape and type "
                           << in;
  }
  if (Value db = getBiasGradResult()) {
    auto t = llvm::dyn_cast<RankedTensorType>(db.getType());
    int64_t n = in.getShape().back();
    if (!t || t.getRank() != 1 || t.getDimSize(0) != n ||
        !t.getElementType().isF32())
      return emitOpError() << "bias gradient must be tensor<" << n
                           << "xf32>, got " << db.getType();
  }
  return success();
}

LogicalResult DequantizeOp::verify() {
  QTensorType in = getInput().getType();
  auto out = getResult().getType();
  if (!in.hasDirection(getDirection()))
    return emitOpError() << "reads the " << stringifyDirection(getDirection())
                         << " direction, but the operand holds only "
                         << stringifyDirections(in.getDirections());
  if (in.getShape() != out.getShape())
    return emitOpError() << "result shape " << shapeStr(out.getShape())
                         << " differs from the quantized shape "
                         << shapeStr(in.getShape());
  return success();
}

//===----------------------------------------------------------------------===//
// GemmOp
//===----------------------------------------------------------------------===//

Direction GemmOp::getOperandDirection(unsigned index, bool transposeA,
                                      bool transposeB) {
  if (index == 0)
    return transposeA ? Direction::columnwise : Direction::rowwise;
  return transposeB ? Direction::rowwise : Direction::columnwise;
}

Direction GemmOp::getOperandDirection(unsigned index) {
  return getOperandDirection(index, getTransposeA(), getTransposeB());
}

LogicalResult GemmOp::verify() {
  Value bias = getBias();
  return verifyTypes([&] { return emitOpError(); }, getA().getType(),
                     getB().getType(), bias ? bias.getType() : Type(),
                     getResult().getType(), getTransposeA(), getTransposeB());
}

LogicalResult GemmOp::verifyTypes(function_ref<InFlightDiagnostic()> emitError,
                                  Type a, Type b, Type bias, Type result,
                                  bool transposeA, bool transposeB) {
  Type types[2] = {a, b};
  const char *names[2] = {"a", "b"};
  for (int i = 0; i < 2; ++i)
    if (shapeOf(types[i]).size() != 2)
      return emitError() << "operand '" << names[i] << "' must be 2-D, got "
                         << shapeOf(types[i]).size() << "-D";
  ArrayRef<int64_t> sa = shapeOf(a), sb = shapeOf(b);
  int64_t m = transposeA ? sa[1] : sa[0], k = transposeA ? sa[0] : sa[1];
  int64_t k2 = transposeB ? sb[1] : sb[0], n = transposeB ? sb[0] : sb[1];
  if (k != k2)
    return emitError() << "contraction dimensions differ: op(a) is " << m << "x"
                       << k << " but op(b) is " << k2 << "x" << n;
  auto resultType = llvm::cast<RankedTensorType>(result);
  ArrayRef<int64_t> d = resultType.getShape();
  if (d.size() != 2 || d[0] != m || d[1] != n)
    return emitError() << "result must be " << m << "x" << n << ", got "
                       << shapeStr(d);
  if (bias) {
    auto bt = llvm::cast<RankedTensorType>(bias);
    if (bt.getRank() != 1 || bt.getDimSize(0) != n)
      return emitError() << "bias must be a 1-D tensor of " << n
                         << " elements (one per output column), got "
                         << shapeStr(bt.getShape());
    // cuBLASLt's bias epilogue adds the bias in the output type.
    Type outElement = resultType.getElementType();
    if (bt.getElementType() != outElement)
      return emitError() << "bias element type " << bt.getElementType()
                         << " must be the result's (" << outElement
                         << "): the GEMM epilogue adds it in that type";
  }

  // Which direction each quantized operand is read in, and by which scheme.
  static const char *why[2][2] = {
      {"op(a) contracts its last dimension",
       "transpose_a makes op(a) contract its first dimension"},
      {"op(b) contracts its first dimension",
       "transpose_b makes op(b) contract its last dimension"}};
  rt::GemmOperand operands[2];
  SchemeAttrInterface attrs[2];
  Direction dirs[2];
  for (int i = 0; i < 2; ++i) {
    dirs[i] = getOperandDirection(i, transposeA, transposeB);
    operands[i].read = toRuntime(dirs[i]);
    auto q = llvm::dyn_cast<QTensorType>(types[i]);
    if (!q) {
      // ODS admits only bf16, f16 and f32 high-precision operands.
      operands[i].element =
          getRuntimeDType(
              llvm::cast<RankedTensorType>(types[i]).getElementType())
              .value_or(rt::DType::F32);
      continue;
    }
    if (!q.hasDirection(dirs[i])) {
      bool flagged = i == 0 ? transposeA : transposeB;
      return emitError() << "operand '" << names[i] << "' is read "
                         << stringifyDirection(dirs[i]) << " ("
                         << why[i][flagged ? 1 : 0]
                         << ") but its type holds only "
                         << stringifyDirections(q.getDirections())
                         << " storage";
    }
    attrs[i] = q.getScheme().getDirectionScheme(dirs[i]);
    operands[i].scheme = attrs[i].getRuntimeScheme(dirs[i]);
  }

  // The pairing rules live in te/formats/GemmRules.h; this prints the
  // reason with the attributes as written.
  rt::GemmPairing pairing = rt::checkGemmPairing(operands[0], operands[1]);
  int i = pairing.operand;
  switch (pairing.error) {
  case rt::GemmPairingError::None:
    return success();
  case rt::GemmPairingError::ElementTypesDiffer:
    return emitError() << "high-precision operands must share an element "
                          "type, got "
                       << llvm::cast<RankedTensorType>(a).getElementType()
                       << " and "
                       << llvm::cast<RankedTensorType>(b).getElementType();
  case rt::GemmPairingError::HighPrecisionWithQuantized:
    return emitError() << "operand '" << names[i]
                       << "' is a high-precision tensor but operand '"
                       << names[1 - i] << "' is quantized by " << attrs[1 - i]
                       << "; quantize both, or use #te.identity for the "
                          "high-precision side";
  case rt::GemmPairingError::SchemeFamiliesDiffer:
    return emitError() << "operands pair incompatible schemes: " << attrs[0]
                       << " (a, " << stringifyDirection(dirs[0]) << ") with "
                       << attrs[1] << " (b, " << stringifyDirection(dirs[1])
                       << "); a GEMM needs one scheme family on both sides "
                          "(block FP8 may pair 1x128 with 128x128)";
  case rt::GemmPairingError::BlockTiles128x128:
    return emitError() << "block FP8 cannot pair 128x128 tiles with 128x128 "
                          "tiles (no such GEMM kernel); quantize one operand "
                          "with 1x128 tiles";
  case rt::GemmPairingError::E5m2ByE5m2:
    return emitError() << "no FP8 GEMM multiplies e5m2 by e5m2; use e4m3 "
                          "for at least one operand";
  case rt::GemmPairingError::HadamardOneSided:
    return emitError() << "operand '" << names[i]
                       << "' is read in the random-Hadamard-transformed "
                          "domain ("
                       << attrs[i] << ") but operand '" << names[1 - i]
                       << "' is not; the transform cancels only when both "
                          "operands apply it";
  }
  llvm_unreachable("unhandled GEMM pairing error");
}

//===----------------------------------------------------------------------===//
// BiasGradOp
//===----------------------------------------------------------------------===//

LogicalResult BiasGradOp::verify() {
  auto in = getInput().getType();
  auto out = getResult().getType();
  if (in.getRank() < 1)
    return emitOpError() << "input must have at least one dimension";
  int64_t n = in.getShape().back();
  if (out.getRank() != 1 || out.getDimSize(0) != n)
    return emitOpError() << "result must be a 1-D tensor of " << n
                         << " column sums, got " << shapeStr(out.getShape());
  return success();
}

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

LogicalResult LinearOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<DictionaryAttr> schemes = resolveRecipeRoles(
      *this, getRecipeAttr(), kLinearKind, getQuantizedRoles(), symbolTable);
  if (failed(schemes))
    return failure();
  return verifyQuantizedWeight(*this, getWeight().getType(),
                               Directions::rowwise, kFpropReads,
                               resolvedWeightScheme(*schemes));
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
  auto [in, out] = *dims;
  auto q = llvm::dyn_cast<QTensorType>(w);
  RankedTensorType wt = q ? q.getTensorType() : llvm::cast<RankedTensorType>(w);
  SmallVector<int64_t> expectedDy(x.getShape().drop_back());
  expectedDy.push_back(out);
  if (dy.getShape() != ArrayRef<int64_t>(expectedDy))
    return emitOpError() << "grad_output must be " << shapeStr(expectedDy)
                         << " ([..., out]), got " << shapeStr(dy.getShape());
  if (getGradInput().getType().getShape() != x.getShape())
    return emitOpError() << "grad_input must have the input's shape "
                         << shapeStr(x.getShape());
  // A quantized weight's gradient is of the tensor it quantizes.
  RankedTensorType dw = getGradWeight().getType();
  if (dw.getShape() != wt.getShape())
    return emitOpError() << "grad_weight must have the weight's shape "
                         << shapeStr(wt.getShape());
  if (!dw.getElementType().isF32() &&
      dw.getElementType() != wt.getElementType())
    return emitOpError() << "grad_weight must be f32 or the weight's element "
                            "type "
                         << wt.getElementType() << ", got "
                         << dw.getElementType();
  if (getBias() != static_cast<bool>(getGradBias()))
    return emitOpError() << (getBias() ? "has the 'bias' flag but no grad_bias "
                                         "result"
                                       : "has a grad_bias result but no 'bias' "
                                         "flag");
  if (Value db = getGradBias()) {
    auto dbt = llvm::cast<RankedTensorType>(db.getType());
    if (dbt.getRank() != 1 || dbt.getDimSize(0) != out)
      return emitOpError() << "grad_bias must be [" << out << "], got "
                           << shapeStr(dbt.getShape());
  }
  (void)in;
  return success();
}

LogicalResult
LinearGradOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<DictionaryAttr> schemes = resolveRecipeRoles(
      *this, getRecipeAttr(), kLinearKind, getQuantizedRoles(), symbolTable);
  if (failed(schemes))
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

LogicalResult
GroupedLinearOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return resolveRecipeRoles(*this, getRecipeAttr(), kGroupedLinearKind,
                            getQuantizedRoles(), symbolTable);
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
  auto w = llvm::cast<RankedTensorType>(getWeight().getType());
  if (getGradInput().getType().getShape() != x.getShape())
    return emitOpError() << "grad_input must have the input's shape "
                         << shapeStr(x.getShape()) << ", got "
                         << shapeStr(getGradInput().getType().getShape());
  RankedTensorType dw = getGradWeight().getType();
  if (dw.getShape() != w.getShape())
    return emitOpError() << "grad_weight must have the weight's shape "
                         << shapeStr(w.getShape()) << ", got "
                         << shapeStr(dw.getShape());
  if (!dw.getElementType().isF32() && dw.getElementType() != w.getElementType())
    return emitOpError() << "grad_weight must be f32 or the weight's element "
                            "type "
                         << w.getElementType() << ", got "
                         << dw.getElementType();
  if (getBias() != static_cast<bool>(getGradBias()))
    return emitOpError() << (getBias() ? "has the 'bias' flag but no grad_bias "
                                         "result"
                                       : "has a grad_bias result but no 'bias' "
                                         "flag");
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
  return resolveRecipeRoles(*this, getRecipeAttr(), kGroupedLinearKind,
                            getQuantizedRoles(), symbolTable);
}

//===----------------------------------------------------------------------===//
// AdamStepOp
//===----------------------------------------------------------------------===//

static ParseResult parseAdamHyperParams(OpAsmParser &p, FloatAttr &beta1,
                                        FloatAttr &beta2, FloatAttr &eps,
                                        FloatAttr &weightDecay,
                                        AdamModeAttr &mode,
                                        UnitAttr &fastMath) {
  // Defaults are TransformerEngine's FusedAdam defaults (docs/Numerics.md
  // §9.1).
  double b1 = 0.9, b2 = 0.999, e = 1e-8, wd = 0.0;
  AdamMode m = AdamMode::adamw;
  if (succeeded(p.parseOptionalLBrace()) && failed(p.parseOptionalRBrace())) {
    llvm::StringSet<> seen;
    do {
      SMLoc loc = p.getCurrentLocation();
      StringRef key;
      if (p.parseKeyword(&key))
        return failure();
      if (!seen.insert(key).second)
        return p.emitError(loc)
               << "hyper-parameter '" << key << "' is given twice";
      if (key == "fast_math") { // a flag, no value
        fastMath = UnitAttr::get(p.getContext());
        continue;
      }
      if (p.parseEqual())
        return failure();
      ParseResult r = success();
      if (key == "beta1")
        r = p.parseFloat(b1);
      else if (key == "beta2")
        r = p.parseFloat(b2);
      else if (key == "eps")
        r = p.parseFloat(e);
      else if (key == "weight_decay")
        r = p.parseFloat(wd);
      else if (key == "mode") {
        SMLoc modeLoc = p.getCurrentLocation();
        StringRef kw;
        if (p.parseKeyword(&kw))
          return failure();
        std::optional<AdamMode> mm = symbolizeAdamMode(kw);
        if (!mm)
          return p.emitError(modeLoc)
                 << "expected mode 'adam' or 'adamw', got '" << kw << "'";
        m = *mm;
      } else {
        return p.emitError(loc) << "unknown hyper-parameter '" << key
                                << "'; expected beta1, beta2, eps, "
                                   "weight_decay, mode or fast_math";
      }
      if (failed(r))
        return failure();
    } while (succeeded(p.parseOptionalComma()));
    if (p.parseRBrace())
      return failure();
  }
  Builder b(p.getContext());
  beta1 = b.getF32FloatAttr(b1);
  beta2 = b.getF32FloatAttr(b2);
  eps = b.getF32FloatAttr(e);
  weightDecay = b.getF32FloatAttr(wd);
  mode = AdamModeAttr::get(p.getContext(), m);
  return success();
}

static void printAdamHyperParams(OpAsmPrinter &p, Operation *, FloatAttr beta1,
                                 FloatAttr beta2, FloatAttr eps,
                                 FloatAttr weightDecay, AdamModeAttr mode,
                                 UnitAttr fastMath) {
  raw_ostream &os = p.getStream();
  os << "{beta1 = ";
  printShortestFloat(os, beta1.getValue().convertToFloat());
  os << ", beta2 = ";
  printShortestFloat(os, beta2.getValue().convertToFloat());
  os << ", eps = ";
  printShortestFloat(os, eps.getValue().convertToFloat());
  os << ", weight_decay = ";
  printShortestFloat(os, weightDecay.getValue().convertToFloat());
  p << ", mode = " << stringifyAdamMode(mode.getValue())
    << (fastMath ? ", fast_math}" : "}");
}

/// The checks te.adam_step and te.fused_adam share: shapes of the state,
/// result types of the first three results, hyper-parameter ranges.
template <typename AdamOp> static LogicalResult verifyAdam(AdamOp op) {
  ArrayRef<int64_t> shape = op.getParam().getType().getShape();
  Value shaped[] = {op.getGrad(), op.getExpAvg(), op.getExpAvgSq()};
  const char *names[] = {"grad", "exp_avg", "exp_avg_sq"};
  for (auto [v, name] : llvm::zip(shaped, names))
    if (llvm::cast<RankedTensorType>(v.getType()).getShape() != shape)
      return op.emitOpError()
             << name << " must have the parameter's shape " << shapeStr(shape);
  Value ins[] = {op.getParam(), op.getExpAvg(), op.getExpAvgSq()};
  Value outs[] = {op.getNewParam(), op.getNewExpAvg(), op.getNewExpAvgSq()};
  for (int i = 0; i < 3; ++i)
    if (outs[i].getType() != ins[i].getType())
      return op.emitOpError()
             << "result #" << i << " must have type " << ins[i].getType();
  auto check = [&](StringRef name, float v,
                   bool unitInterval) -> LogicalResult {
    if (std::isfinite(v) && v >= 0.0f && (!unitInterval || v < 1.0f))
      return success();
    return op.emitOpError()
           << name << " must be "
           << (unitInterval ? "in [0, 1)" : "finite and >= 0") << ", got " << v;
  };
  if (failed(check("beta1", op.getBeta1().convertToFloat(), true)) ||
      failed(check("beta2", op.getBeta2().convertToFloat(), true)) ||
      failed(check("eps", op.getEps().convertToFloat(), false)) ||
      failed(
          check("weight_decay", op.getWeightDecay().convertToFloat(), false)))
    return failure();
  return success();
}

LogicalResult AdamStepOp::verify() { return verifyAdam(*this); }

LogicalResult FusedAdamOp::verify() {
  if (failed(verifyAdam(*this)))
    return failure();
  if (getQuantized().empty())
    return emitOpError("quantizes the new parameter into no result; use "
                       "te.adam_step");
  RankedTensorType p = getParam().getType();
  for (auto [i, r] : llvm::enumerate(getQuantized())) {
    auto q = llvm::cast<QTensorType>(r.getType());
    if (q.getShape() != p.getShape() || !q.getElementType().isF32())
      return emitOpError() << "quantized result #" << i + 3
                           << " must quantize the f32 parameter "
                           << shapeStr(p.getShape()) << ", got " << q;
  }
  return success();
}

#define GET_OP_CLASSES
#include "dialect/te/TeOps.cpp.inc"
