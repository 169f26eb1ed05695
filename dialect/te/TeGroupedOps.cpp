//===- TeGroupedOps.cpp - te.grouped_gemm, te.grouped_wgrad ---------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The verifiers of the grouped (MoE) GEMMs, te.grouped_gemm and
// te.grouped_wgrad, with their type rules that tek.grouped_gemm,
// tek.grouped_wgrad and te-expand-linear share. The scheme rules themselves
// live in te/formats/GemmRules.h.
//
//===----------------------------------------------------------------------===//

#include "dialect/te/TeOps.h"
#include "dialect/te/TeOpsSupport.h"

#include "te/formats/GemmRules.h"

#include <tuple>

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::detail;
namespace rt = ::te::rt;

//===----------------------------------------------------------------------===//
// GroupedGemmOp
//===----------------------------------------------------------------------===//

LogicalResult
mlir::te::verifyExpertState(function_ref<InFlightDiagnostic()> emitError,
                            SchemeAttrInterface scheme, Direction dir,
                            StringAttr state, StringRef stateAttr) {
  const bool delayed =
      scheme && scheme.getRuntimeScheme(dir).kind == rt::SchemeKind::Fp8Delayed;
  if (state && state.getValue().empty())
    return emitError() << stateAttr << " must name a state, not be empty";
  if (delayed && !state)
    return emitError() << "quantizes per expert by " << scheme
                       << ", whose scales come from amax histories kept "
                          "between calls: name their state ("
                       << stateAttr << " = \"...\"; expert g keeps "
                       << "\"<name>.expert<g>\")";
  if (!delayed && state)
    return emitError() << "names the delayed-scaling state \""
                       << state.getValue() << "\" in " << stateAttr
                       << ", but that operand is not quantized by "
                          "#te.fp8_delayed";
  return success();
}

LogicalResult GroupedGemmOp::verify() {
  Value bias = getBias();
  if (failed(verifyTypes([&] { return emitOpError(); }, getInput().getType(),
                         getWeight().getType(), getSplitSizes().getType(),
                         bias ? bias.getType() : Type(), getResult().getType(),
                         getWeightColumnwise(), getInputSchemeAttr(),
                         getWeightSchemeAttr())))
    return failure();
  auto emit = [&] { return emitOpError(); };
  if (failed(verifyExpertState(emit, getInputSchemeAttr(), Direction::rowwise,
                               getInputStateAttr(), "input_state")))
    return failure();
  return verifyExpertState(emit, getWeightSchemeAttr(),
                           getWeightColumnwise() ? Direction::columnwise
                                                 : Direction::rowwise,
                           getWeightStateAttr(), "weight_state");
}

/// The scheme family of `operand` read in `dir` (Identity for a tensor).
static rt::SchemeKind kindRead(Type operand, Direction dir) {
  auto q = llvm::dyn_cast<QTensorType>(operand);
  return q ? q.getScheme().getRuntimeScheme(dir).kind
           : rt::SchemeKind::Identity;
}

bool GroupedGemmOp::bothMxfp8(Type input, Type weight, Direction weightDir) {
  return kindRead(input, Direction::rowwise) == rt::SchemeKind::Mxfp8 &&
         kindRead(weight, weightDir) == rt::SchemeKind::Mxfp8;
}

bool GroupedGemmOp::nvfp4CodesReadable() {
  SchemeAttrInterface x = getInputSchemeAttr(), w = getWeightSchemeAttr();
  if (!x || !w)
    return false;
  const Direction wDir = getWeightDirection();
  return rt::groupedNvfp4CodesError(x.getRuntimeScheme(Direction::rowwise),
                                    w.getRuntimeScheme(wDir),
                                    wDir == Direction::columnwise,
                                    shapeOf(getInput().getType()).back())
      .empty();
}

bool GroupedGemmOp::engineReads(Type input, Type weight, Direction weightDir) {
  // MXFP8: the fprop, over whole 128-element K stages.
  if (bothMxfp8(input, weight, weightDir))
    return weightDir == Direction::rowwise && shapeOf(input).back() % 128 == 0;
  for (rt::SchemeKind kind :
       {kindRead(input, Direction::rowwise), kindRead(weight, weightDir)})
    if (kind != rt::SchemeKind::Identity && kind != rt::SchemeKind::Fp8Block)
      return false;
  return true;
}

std::pair<std::optional<rt::Scheme>, std::optional<rt::Scheme>>
GroupedGemmOp::perExpertSchemes(SchemeAttrInterface inputScheme,
                                SchemeAttrInterface weightScheme,
                                bool weightColumnwise) {
  std::optional<rt::Scheme> x, w;
  if (inputScheme)
    x = inputScheme.getRuntimeScheme(Direction::rowwise);
  if (weightScheme)
    w = weightScheme.getRuntimeScheme(weightColumnwise ? Direction::columnwise
                                                       : Direction::rowwise);
  return {x, w};
}

LogicalResult GroupedGemmOp::verifyTypes(
    function_ref<InFlightDiagnostic()> emitError, Type input, Type weight,
    Type splitSizes, Type bias, Type result, bool weightColumnwise,
    SchemeAttrInterface inputScheme, SchemeAttrInterface weightScheme,
    bool partnerDequantized) {
  ArrayRef<int64_t> x = shapeOf(input), w = shapeOf(weight);
  const char *xShape = weightColumnwise ? "[M_total, N]" : "[M_total, K]";
  if (x.size() != 2)
    return emitError() << "input must be 2-D (" << xShape
                       << ", rows sorted by expert), got " << shapeStr(x);
  if (w.size() != 3)
    return emitError() << "weight must be 3-D ([G, N, K], one [N, K] weight "
                          "per expert), got "
                       << shapeStr(w);
  // Each expert's GEMM contracts `red` and gives `cols` output columns.
  int64_t red = weightColumnwise ? w[1] : w[2];
  int64_t cols = weightColumnwise ? w[2] : w[1];
  if (x[1] != red)
    return emitError() << "input features " << x[1] << " differ from the "
                       << (weightColumnwise ? "weight's N = " : "weight's K = ")
                       << red << " (weight is [G, N, K] = " << shapeStr(w)
                       << (weightColumnwise ? "; weight_columnwise contracts N"
                                            : "")
                       << ")";
  auto splits = llvm::cast<RankedTensorType>(splitSizes);
  if (splits.getShape() != ArrayRef<int64_t>{w[0]} ||
      !splits.getElementType().isInteger(64))
    return emitError() << "split sizes must be tensor<" << w[0]
                       << "xi64> (one row count per expert), got "
                       << splitSizes;
  auto y = llvm::cast<RankedTensorType>(result);
  if (y.getShape() != ArrayRef<int64_t>{x[0], cols})
    return emitError() << "result must be [M_total, "
                       << (weightColumnwise ? "K" : "N") << "] = " << x[0]
                       << "x" << cols << ", got " << shapeStr(y.getShape());
  if (bias) {
    auto bt = llvm::cast<RankedTensorType>(bias);
    if (weightColumnwise)
      return emitError() << "takes no bias with weight_columnwise (dgrad)";
    if (bt.getShape() != ArrayRef<int64_t>{w[0], cols})
      return emitError() << "bias must be [G, N] = " << w[0] << "x" << cols
                         << ", got " << shapeStr(bt.getShape());
    if (bt.getElementType() != y.getElementType())
      return emitError() << "bias element type " << bt.getElementType()
                         << " must be the result's (" << y.getElementType()
                         << "): the GEMM epilogue adds it in that type";
  }
  if (inputScheme || weightScheme) {
    // Operands the op quantizes itself, per expert; where it quantizes one,
    // the other comes quantized by another family (or, in tek, already
    // dequantized to bf16 for the BF16 kernel).
    const Direction wDir =
        weightColumnwise ? Direction::columnwise : Direction::rowwise;
    auto [xs, ws] =
        perExpertSchemes(inputScheme, weightScheme, weightColumnwise);
    auto isBf16 = [](Type t) {
      auto rt = llvm::dyn_cast<RankedTensorType>(t);
      return rt && rt.getElementType().isBF16();
    };
    for (auto [t, scheme, role] :
         {std::make_tuple(input, inputScheme, "input"),
          std::make_tuple(weight, weightScheme, "weight")}) {
      if (scheme && !isBf16(t))
        return emitError() << "quantizes its " << role
                           << " per expert, so it must be a bf16 tensor, got "
                           << t;
      if (scheme)
        continue;
      SchemeAttrInterface perExpert = inputScheme ? inputScheme : weightScheme;
      if (partnerDequantized) {
        if (!isBf16(t))
          return emitError() << "quantizes one operand per expert and reads "
                                "the other's dequantized values, so its "
                             << role << " must be a bf16 tensor, got " << t;
        continue;
      }
      auto q = llvm::dyn_cast<QTensorType>(t);
      const Direction dir =
          StringRef(role) == "input" ? Direction::rowwise : wDir;
      if (!q)
        return emitError() << "quantizes its "
                           << (inputScheme ? "input" : "weight")
                           << " per expert by " << perExpert << ", so its "
                           << role
                           << " must be quantized too (a GEMM multiplies two "
                              "quantized operands or two high-precision "
                              "ones), got "
                           << t;
      if (!q.hasDirection(dir))
        return emitError() << "reads its " << role << " "
                           << stringifyDirection(dir) << ", but " << t
                           << " does not hold that direction";
      std::string why = rt::groupedPerExpertPartnerError(
          perExpert.getRuntimeScheme(inputScheme ? Direction::rowwise : wDir),
          q.getScheme().getRuntimeScheme(dir),
          /*otherIsTokens=*/StringRef(role) == "input");
      if (!why.empty())
        return emitError() << "quantizes its "
                           << (inputScheme ? "input" : "weight")
                           << " per expert by " << perExpert
                           << " and reads its " << role << " as "
                           << q.getScheme() << "; " << why;
    }
    std::string why =
        rt::groupedPerExpertSchemesError(xs, ws, weightColumnwise);
    if (!why.empty()) {
      InFlightDiagnostic d = emitError() << "quantizes ";
      if (inputScheme)
        d << "input by " << inputScheme << (weightScheme ? " and " : "");
      if (weightScheme)
        d << "weight by " << weightScheme;
      return d << "; " << why;
    }
    std::string shape = rt::groupedPerExpertShapeError(xs, ws, weightColumnwise,
                                                       x[1], w[1], w[2]);
    if (!shape.empty())
      return emitError() << shape;
    return success();
  }
  // Each expert's GEMM is te.gemm's y = x W^T (or y = x W with the weight
  // read columnwise) on [m_g, .] and [N, K]: check the operands' directions
  // and pairing on that view of the weight.
  auto asMatrix = [](Type t, int64_t rows, int64_t cols) -> Type {
    SmallVector<int64_t, 2> shape = {rows, cols};
    if (auto q = llvm::dyn_cast<QTensorType>(t))
      return QTensorType::get(q.getContext(), shape, q.getElementType(),
                              q.getScheme(), q.getDirections());
    return RankedTensorType::get(
        shape, llvm::cast<RankedTensorType>(t).getElementType());
  };
  return GemmOp::verifyTypes(
      emitError, input, asMatrix(weight, w[1], w[2]), Type(),
      RankedTensorType::get({x[0], cols}, y.getElementType()),
      /*transposeA=*/false, /*transposeB=*/!weightColumnwise);
}

//===----------------------------------------------------------------------===//
// GroupedWgradOp
//===----------------------------------------------------------------------===//

LogicalResult GroupedWgradOp::verify() {
  Value db = getGradBias();
  if (failed(verifyTypes([&] { return emitOpError(); },
                         getGradOutput().getType(), getInput().getType(),
                         getSplitSizes().getType(), getGradWeight().getType(),
                         db ? db.getType() : Type(), getGradOutputScheme(),
                         getInputScheme())))
    return failure();
  auto emit = [&] { return emitOpError(); };
  if (failed(verifyExpertState(emit, getGradOutputScheme(),
                               Direction::columnwise, getGradOutputStateAttr(),
                               "grad_output_state")))
    return failure();
  return verifyExpertState(emit, getInputScheme(), Direction::columnwise,
                           getInputStateAttr(), "input_state");
}

LogicalResult GroupedWgradOp::verifyTypes(
    function_ref<InFlightDiagnostic()> emitError, Type gradOutput, Type input,
    Type splitSizes, Type gradWeight, Type gradBias,
    SchemeAttrInterface gradOutputScheme, SchemeAttrInterface inputScheme) {
  auto dy = llvm::cast<RankedTensorType>(gradOutput);
  auto x = llvm::cast<RankedTensorType>(input);
  if (dy.getRank() != 2 || x.getRank() != 2)
    return emitError() << "grad_output and input must be 2-D ([M_total, N] "
                          "and [M_total, K]), got "
                       << shapeStr(dy.getShape()) << " and "
                       << shapeStr(x.getShape());
  if (!dy.getElementType().isBF16() || !x.getElementType().isBF16())
    return emitError() << "grad_output and input must be bf16, got "
                       << dy.getElementType() << " and " << x.getElementType();
  if (dy.getDimSize(0) != x.getDimSize(0))
    return emitError() << "grad_output has " << dy.getDimSize(0)
                       << " rows but input has " << x.getDimSize(0);
  auto splits = llvm::cast<RankedTensorType>(splitSizes);
  if (splits.getRank() != 1 || !splits.getElementType().isInteger(64))
    return emitError() << "split sizes must be tensor<Gxi64>, got "
                       << splitSizes;
  int64_t g = splits.getDimSize(0), n = dy.getDimSize(1), k = x.getDimSize(1);
  auto dw = llvm::cast<RankedTensorType>(gradWeight);
  if (dw.getShape() != ArrayRef<int64_t>{g, n, k})
    return emitError() << "grad_weight must be [G, N, K] = " << g << "x" << n
                       << "x" << k << ", got " << shapeStr(dw.getShape());
  if (gradBias) {
    auto db = llvm::cast<RankedTensorType>(gradBias);
    if (db.getShape() != ArrayRef<int64_t>{g, n})
      return emitError() << "grad_bias must be [G, N] = " << g << "x" << n
                         << ", got " << shapeStr(db.getShape());
  }
  std::string why = rt::groupedWgradSchemesError(
      gradOutputScheme.getRuntimeScheme(Direction::columnwise),
      inputScheme.getRuntimeScheme(Direction::columnwise));
  if (!why.empty())
    return emitError() << "reads grad_output and input columnwise by "
                       << gradOutputScheme << " and " << inputScheme << "; "
                       << why;
  // NVFP4 quantizes each expert as a tensor of whole 16-element blocks.
  auto nvfp4 = [](SchemeAttrInterface s) {
    return s.getRuntimeScheme(Direction::columnwise).kind ==
           rt::SchemeKind::Nvfp4;
  };
  for (auto [s, features, name] :
       {std::make_tuple(gradOutputScheme, n, "grad_output"),
        std::make_tuple(inputScheme, k, "input")})
    if (nvfp4(s) && features % 16 != 0)
      return emitError() << "quantizes " << name << " by " << s << " with "
                         << features
                         << " features: NVFP4 quantizes each expert as a "
                            "tensor of whole 16-element blocks, so they must "
                            "be a multiple of 16";
  return success();
}
