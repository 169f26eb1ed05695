//===- TeOps.cpp - operations of the te dialect ---------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Verifiers are local (they look at an op's own operands, results and
// attributes) except verifySymbolUses, which resolves a recipe symbol and
// checks that it has a rule for every role the op quantizes. The layer ops
// (te.linear, te.grouped_linear and their gradients) are in TeLayerOps.cpp,
// the grouped (MoE) GEMMs in TeGroupedOps.cpp.
//
//===----------------------------------------------------------------------===//

#include "dialect/te/TeOps.h"
#include "dialect/te/TeOpsSupport.h"

#include "te/formats/GemmRules.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::detail;
namespace rt = ::te::rt;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Shape of a ranked tensor or a quantized tensor.
ArrayRef<int64_t> mlir::te::detail::shapeOf(Type t) {
  if (auto q = llvm::dyn_cast<QTensorType>(t))
    return q.getShape();
  return llvm::cast<RankedTensorType>(t).getShape();
}

std::string mlir::te::detail::shapeStr(ArrayRef<int64_t> shape) {
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
LogicalResult
mlir::te::detail::verifyResolvedSchemes(Operation *op, DictionaryAttr schemes,
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
  if (getAmaxRanks())
    for (Direction d : {Direction::rowwise, Direction::columnwise}) {
      if (!out.hasDirection(d))
        continue;
      std::string why = rowShardProblem(out, d, out.getRows());
      if (!why.empty())
        return emitOpError()
               << "quantizes a row shard (amax_ranks), but " << why;
    }
  return verifyScalingState([&] { return emitOpError(); }, out,
                            getScalingState().value_or(""),
                            getScalingState().has_value());
}

bool mlir::te::usesDelayedScaling(SchemeAttrInterface scheme) {
  for (Direction d : {Direction::rowwise, Direction::columnwise})
    if (scheme.getRuntimeScheme(d).kind == ::te::rt::SchemeKind::Fp8Delayed)
      return true;
  return false;
}

std::string mlir::te::layerStateName(StringRef layer, StringRef role) {
  return (layer + "." + role + ".delayed_scaling").str();
}

LogicalResult mlir::te::detail::verifyScalingState(
    function_ref<InFlightDiagnostic()> emitError, QTensorType q,
    StringRef state, bool given) {
  bool held = false;
  for (Direction d : {Direction::rowwise, Direction::columnwise})
    held |= q.hasDirection(d) && q.getScheme().getRuntimeScheme(d).kind ==
                                     ::te::rt::SchemeKind::Fp8Delayed;
  if (given && state.empty())
    return emitError() << "scaling_state must name a state, not be empty";
  if (given && !usesDelayedScaling(q.getScheme()))
    return emitError() << "names the delayed-scaling state \"" << state
                       << "\", but its scheme " << q.getScheme()
                       << " has no #te.fp8_delayed direction";
  if (held && !given)
    return emitError()
           << "quantizes by " << q.getScheme()
           << ", whose scale comes from an amax history kept between calls: "
              "name that state (scaling_state = \"...\")";
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
  std::optional<ArrayAttr> states = getScalingStates();
  if (states && states->size() != numQuantized)
    return emitOpError() << "has " << states->size() << " scaling_states for "
                         << numQuantized << " quantized results";
  for (auto [i, r] : llvm::enumerate(getResults().take_front(numQuantized))) {
    StringRef state =
        states ? llvm::cast<StringAttr>((*states)[i]).getValue() : "";
    if (failed(verifyScalingState(
            [&, i = i] { return emitOpError() << "result #" << i << " "; },
            llvm::cast<QTensorType>(r.getType()), state, !state.empty())))
      return failure();
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
                       << "; quantize both, or keep both in high precision";
  case rt::GemmPairingError::IdentityWithQuantized:
    return emitError() << "operand '" << names[i] << "' is " << attrs[i]
                       << " (high precision) but operand '" << names[1 - i]
                       << "' is quantized by " << attrs[1 - i]
                       << "; quantize both, or keep both in high precision";
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
