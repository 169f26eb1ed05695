//===- TekOps.cpp - tek operations: verifiers -----------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The verifiers are what makes the kernel level trustworthy for code
// generation: every launch shape is the one the device library implements,
// every quantized result is written exactly once per held direction, and an
// amax pre-pass is present exactly when a stage needs the tensor amax.
//
//===----------------------------------------------------------------------===//

#include "dialect/tek/TekOps.h"

#include "dialect/te/TeAttrs.h"
#include "dialect/te/TeOps.h"
#include "te/formats/GemmRules.h"
#include "te/formats/Launch.h"

#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace mlir::tek;
using mlir::te::Direction;
using mlir::te::QTensorType;

#define GET_OP_CLASSES
#include "dialect/tek/TekOps.cpp.inc"

namespace {

/// Rows of the M x K view of a shape (product of all but the last dim).
int64_t rowsOf(ArrayRef<int64_t> shape) {
  int64_t m = 1;
  for (int64_t d : shape.drop_back())
    m *= d;
  return m;
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

LogicalResult verifyLaunch(Operation *op, int64_t threads) {
  if (threads != kThreads)
    return op->emitOpError()
           << "threads must be " << kThreads
           << " (the device library's block size), got " << threads;
  return success();
}

} // namespace

SmallVector<int64_t, 2> mlir::tek::quantizeGrid(ArrayRef<int64_t> shape) {
  return {ceilDiv(rowsOf(shape), kQuantizeTile),
          ceilDiv(shape.back(), kQuantizeTile)};
}

int64_t mlir::tek::dequantizeGrid(ArrayRef<int64_t> shape) {
  return ::te::rt::dequantizeGrid(rowsOf(shape) * shape.back());
}

//===----------------------------------------------------------------------===//
// quantize_kernel
//===----------------------------------------------------------------------===//

ResultRange QuantizeKernelOp::getQuantized() {
  return getBiasGrad() ? getResults().drop_back() : getResults();
}

Value QuantizeKernelOp::getBiasGradResult() {
  return getBiasGrad() && !getResults().empty() ? getResults().back() : Value();
}

LogicalResult QuantizeKernelOp::verify() {
  auto inType = cast<RankedTensorType>(getInput().getType());
  if (!inType.hasStaticShape() || inType.getRank() < 1)
    return emitOpError() << "needs a statically shaped input of rank >= 1, got "
                         << inType;
  Type elem = inType.getElementType();
  if (!elem.isBF16() && !elem.isF16() && !elem.isF32())
    return emitOpError() << "quantizes bf16, f16 or f32 tensors, not " << elem;
  ArrayRef<int64_t> shape = inType.getShape();

  if (getTile() != ArrayRef<int64_t>{kQuantizeTile, kQuantizeTile})
    return emitOpError() << "tile must be [" << kQuantizeTile << ", "
                         << kQuantizeTile
                         << "] (the device library's tile kernel)";
  SmallVector<int64_t, 2> grid = quantizeGrid(shape);
  if (getGrid() != ArrayRef<int64_t>(grid))
    return emitOpError() << "grid must be [" << grid[0] << ", " << grid[1]
                         << "] tiles for a " << rowsOf(shape) << "x"
                         << shape.back() << " input";
  if (failed(verifyLaunch(*this, getThreads())))
    return failure();

  if (getBiasGrad()) {
    if (getResults().empty())
      return emitOpError("with bias_grad needs the bias gradient as its last "
                         "result");
    auto db = dyn_cast<RankedTensorType>(getResults().back().getType());
    if (!db || db.getRank() != 1 || db.getDimSize(0) != shape.back() ||
        !db.getElementType().isF32())
      return emitOpError() << "bias gradient must be tensor<" << shape.back()
                           << "xf32>, got " << getResults().back().getType();
  }
  ResultRange quantized = getQuantized();
  for (auto [i, r] : llvm::enumerate(quantized)) {
    auto q = dyn_cast<QTensorType>(r.getType());
    if (!q)
      return emitOpError() << "result " << i << " must be a !te.qtensor, got "
                           << r.getType();
    if (q.getShape() != shape || q.getElementType() != elem)
      return emitOpError() << "result " << i
                           << " quantizes another shape or element type than "
                              "the input";
  }
  if (getStages().empty() && !getBiasGrad())
    return emitOpError("has neither stages nor a bias gradient");

  // Every held direction of every result: one stage, no other stage.
  llvm::SmallSet<std::pair<unsigned, unsigned>, 8> seen;
  bool needsAmax = false;
  for (Attribute a : getStages()) {
    auto stage = cast<StageAttr>(a);
    unsigned r = stage.getResult();
    if (r >= quantized.size())
      return emitOpError() << "stage " << stage << " names result " << r
                           << ", but there are " << quantized.size()
                           << " quantized results";
    auto q = cast<QTensorType>(quantized[r].getType());
    if (!q.hasDirection(stage.getDirection()))
      return emitOpError() << "stage " << stage << " writes the "
                           << stringifyDirection(stage.getDirection())
                           << " direction, which result " << r
                           << " does not hold";
    if (!seen.insert({r, unsigned(stage.getDirection())}).second)
      return emitOpError() << "stage " << stage << " appears twice";
    needsAmax |= q.getScheme()
                     .getRuntimeScheme(stage.getDirection())
                     .scalesByTensorAmax();
  }
  for (auto [i, r] : llvm::enumerate(quantized))
    for (Direction d : {Direction::rowwise, Direction::columnwise})
      if (cast<QTensorType>(r.getType()).hasDirection(d) &&
          !seen.contains({unsigned(i), unsigned(d)}))
        return emitOpError() << "no stage writes the " << stringifyDirection(d)
                             << " direction of result " << i;
  if (needsAmax != getAmaxPrepass())
    return emitOpError() << (needsAmax
                                 ? "needs amax_prepass: a stage scales by the "
                                   "tensor amax"
                                 : "has amax_prepass, but no stage scales by "
                                   "the tensor amax");
  return success();
}

//===----------------------------------------------------------------------===//
// all_gather
//===----------------------------------------------------------------------===//

LogicalResult AllGatherOp::verify() {
  return mlir::te::AllGatherOp::verifyTypes(
      [&] { return emitOpError(); }, getInput().getType(),
      getResult().getType(), getRanks(), getSendColumnwise());
}

LogicalResult QuantizeShardsKernelOp::verify() {
  if (getShards().empty() || !isa<QTensorType>(getResult().getType()))
    return emitOpError() << "quantizes at least one shard into a !te.qtensor";
  for (Type t : getShards().getTypes()) {
    Type elem = cast<RankedTensorType>(t).getElementType();
    if (!elem.isBF16() && !elem.isF16() && !elem.isF32())
      return emitOpError() << "quantizes bf16, f16 or f32 shards, not " << elem;
  }
  auto q = cast<QTensorType>(getResult().getType());
  unsigned held = 0, wanted = 0;
  for (Attribute a : getStages()) {
    auto stage = cast<StageAttr>(a);
    if (stage.getResult() != 0 || !q.hasDirection(stage.getDirection()))
      return emitOpError() << "stage " << stage
                           << " names no direction the result holds";
    held |= stage.getDirection() == Direction::rowwise ? 1u : 2u;
  }
  wanted |= q.hasDirection(Direction::rowwise) ? 1u : 0u;
  wanted |= q.hasDirection(Direction::columnwise) ? 2u : 0u;
  if (held != wanted || getStages().size() > 2)
    return emitOpError() << "needs one stage per direction the result holds";
  return mlir::te::QuantizeShardsOp::verifyTypes(
      [&] { return emitOpError(); }, getShards().getTypes(),
      getResult().getType(), getRankOffsets());
}

//===----------------------------------------------------------------------===//
// dequantize_kernel
//===----------------------------------------------------------------------===//

LogicalResult DequantizeKernelOp::verify() {
  auto q = dyn_cast<QTensorType>(getInput().getType());
  if (!q)
    return emitOpError() << "reads a !te.qtensor, got " << getInput().getType();
  if (!q.hasDirection(getDirection()))
    return emitOpError() << "reads the " << stringifyDirection(getDirection())
                         << " direction, which the input does not hold";
  auto out = cast<RankedTensorType>(getResult().getType());
  if (out.getShape() != q.getShape())
    return emitOpError("result shape differs from the quantized shape");
  Type elem = out.getElementType();
  if (!elem.isBF16() && !elem.isF16() && !elem.isF32())
    return emitOpError() << "writes bf16, f16 or f32, not " << elem;
  int64_t grid = dequantizeGrid(q.getShape());
  if (getGrid() != ArrayRef<int64_t>{grid})
    return emitOpError() << "grid must be [" << grid << "] CTAs for "
                         << rowsOf(q.getShape()) * q.getShape().back()
                         << " elements";
  return verifyLaunch(*this, getThreads());
}

//===----------------------------------------------------------------------===//
// gemm_call
//===----------------------------------------------------------------------===//

Direction GemmCallOp::getOperandDirection(unsigned index) {
  if (index == 0)
    return getTransposeA() ? Direction::columnwise : Direction::rowwise;
  return getTransposeB() ? Direction::rowwise : Direction::columnwise;
}

LogicalResult GroupedGemmOp::verify() {
  Value bias = getBias();
  if (failed(te::GroupedGemmOp::verifyTypes(
          [&] { return emitOpError(); }, getInput().getType(),
          getWeight().getType(), getSplitSizes().getType(),
          bias ? bias.getType() : Type(), getResult().getType(),
          getWeightColumnwise(), getInputSchemeAttr(), getWeightSchemeAttr(),
          /*partnerDequantized=*/true)))
    return failure();
  const Direction weightDir =
      getWeightColumnwise() ? Direction::columnwise : Direction::rowwise;
  if (!te::GroupedGemmOp::engineReads(getInput().getType(),
                                      getWeight().getType(), weightDir))
    return emitOpError()
           << "operands " << getInput().getType() << " and "
           << getWeight().getType() << " (the weight read "
           << stringifyDirection(weightDir)
           << ") are not what the GEMM engine's kernel reads "
              "(high-precision tensors and block FP8, or MXFP8 x MXFP8 with "
              "the weight read rowwise and K a multiple of 128); "
              "te-lower-to-kernels dequantizes such operands first";
  auto emit = [&] { return emitOpError(); };
  if (getNvfp4Codes()) {
    if (!getInputSchemeAttr() || !getWeightSchemeAttr())
      return emitOpError() << "reads NVFP4 codes (nvfp4_codes), but does "
                              "not quantize both operands per expert";
    // Per-expert operands are bf16 tensors (verifyTypes above).
    auto x = llvm::cast<RankedTensorType>(getInput().getType());
    std::string why = ::te::rt::groupedNvfp4CodesError(
        getInputSchemeAttr().getRuntimeScheme(Direction::rowwise),
        getWeightSchemeAttr().getRuntimeScheme(weightDir),
        weightDir == Direction::columnwise, x.getShape().back());
    if (!why.empty())
      return emitOpError() << "reads NVFP4 codes (nvfp4_codes): " << why;
  }
  if (Value q = getQuantizedResult()) {
    auto qt = llvm::dyn_cast<QTensorType>(q.getType());
    if (!qt)
      return emitOpError() << "quantizes its result in the epilogue into "
                           << q.getType() << ", not a !te.qtensor";
    if (qt.getTensorType() != getResult().getType() ||
        !qt.getElementType().isBF16() || qt.hasDirection(Direction::columnwise))
      return emitOpError() << "quantizes its result in the epilogue as " << qt
                           << ", which is not the bf16 result "
                           << getResult().getType() << " held rowwise only";
    std::string why = ::te::rt::groupedEpilogueQuantizeError(
        qt.getScheme().getRuntimeScheme(Direction::rowwise),
        ::te::rt::Direction::Rowwise);
    if (!why.empty())
      return emitOpError() << "quantizes its result in the epilogue: " << why;
  }
  if (failed(te::verifyExpertState(emit, getInputSchemeAttr(),
                                   Direction::rowwise, getInputStateAttr(),
                                   "input_state")))
    return failure();
  return te::verifyExpertState(emit, getWeightSchemeAttr(),
                               getWeightColumnwise() ? Direction::columnwise
                                                     : Direction::rowwise,
                               getWeightStateAttr(), "weight_state");
}

LogicalResult GroupedWgradOp::verify() {
  Value db = getGradBias();
  if (failed(te::GroupedWgradOp::verifyTypes(
          [&] { return emitOpError(); }, getGradOutput().getType(),
          getInput().getType(), getSplitSizes().getType(),
          getGradWeight().getType(), db ? db.getType() : Type(),
          getGradOutputScheme(), getInputScheme())))
    return failure();
  auto emit = [&] { return emitOpError(); };
  if (failed(te::verifyExpertState(
          emit, getGradOutputScheme(), Direction::columnwise,
          getGradOutputStateAttr(), "grad_output_state")))
    return failure();
  return te::verifyExpertState(emit, getInputScheme(), Direction::columnwise,
                               getInputStateAttr(), "input_state");
}

LogicalResult GemmCallOp::verify() {
  Value operands[2] = {getA(), getB()};
  SmallVector<int64_t, 2> shapes[2];
  for (int i = 0; i < 2; ++i) {
    Type t = operands[i].getType();
    if (auto q = dyn_cast<QTensorType>(t)) {
      shapes[i].assign(q.getShape().begin(), q.getShape().end());
      Direction d = getOperandDirection(i);
      if (!q.hasDirection(d))
        return emitOpError()
               << "operand " << i << " is read " << stringifyDirection(d)
               << ", which its type does not hold";
    } else if (auto r = dyn_cast<RankedTensorType>(t)) {
      shapes[i].assign(r.getShape().begin(), r.getShape().end());
    } else {
      return emitOpError() << "operand " << i
                           << " must be a tensor or a !te.qtensor";
    }
    if (shapes[i].size() != 2)
      return emitOpError() << "operand " << i << " must be 2-D";
  }
  int64_t m = getTransposeA() ? shapes[0][1] : shapes[0][0];
  int64_t k = getTransposeA() ? shapes[0][0] : shapes[0][1];
  int64_t k2 = getTransposeB() ? shapes[1][1] : shapes[1][0];
  int64_t n = getTransposeB() ? shapes[1][0] : shapes[1][1];
  if (k != k2)
    return emitOpError() << "contraction dimensions differ: " << k << " and "
                         << k2;
  auto out = cast<RankedTensorType>(getResult().getType());
  if (out.getRank() != 2 || out.getDimSize(0) != m || out.getDimSize(1) != n)
    return emitOpError() << "result must be " << m << "x" << n;
  if (Value bias = getBias()) {
    auto bt = cast<RankedTensorType>(bias.getType());
    if (bt.getRank() != 1 || bt.getDimSize(0) != n)
      return emitOpError() << "bias must have " << n << " elements";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// adam_kernel
//===----------------------------------------------------------------------===//

int64_t mlir::tek::adamGrid(ArrayRef<RankedTensorType> params) {
  int64_t tiles = 0;
  for (RankedTensorType t : params) {
    SmallVector<int64_t, 2> g = quantizeGrid(t.getShape());
    tiles += g[0] * g[1];
  }
  return tiles;
}

LogicalResult AdamKernelOp::verify() {
  unsigned n = getNumParams();
  if (getTensors().size() % 4 != 0 || n == 0)
    return emitOpError() << "needs (param, grad, exp_avg, exp_avg_sq) of at "
                            "least one parameter, got "
                         << getTensors().size() << " tensors";
  if (getResults().size() % n != 0 || getResults().size() / n < 3)
    return emitOpError() << "needs (new_param, new_exp_avg, new_exp_avg_sq, "
                            "quantized...) of each of its "
                         << n << " parameters, got " << getResults().size()
                         << " results";
  unsigned perParam = getResults().size() / n;
  unsigned numQ = perParam - 3;
  if (getTile() != ArrayRef<int64_t>{kQuantizeTile, kQuantizeTile})
    return emitOpError() << "tile must be [" << kQuantizeTile << ", "
                         << kQuantizeTile << "] (the device library's tile)";
  if (failed(verifyLaunch(*this, getThreads())))
    return failure();
  for (auto [name, v] :
       {std::pair<const char *, float>{"beta1", getBeta1().convertToFloat()},
        {"beta2", getBeta2().convertToFloat()}})
    if (!(v >= 0.0f && v < 1.0f))
      return emitOpError() << name << " must be in [0, 1), got " << v;
  for (auto [name, v] :
       {std::pair<const char *, float>{"eps", getEps().convertToFloat()},
        {"weight_decay", getWeightDecay().convertToFloat()}})
    if (!std::isfinite(v) || v < 0.0f)
      return emitOpError() << name << " must be finite and >= 0, got " << v;

  SmallVector<RankedTensorType> params;
  Type gradElement;
  for (unsigned i = 0; i < n; ++i) {
    auto p = cast<RankedTensorType>(getTensors()[4 * i].getType());
    if (!p.hasStaticShape() || p.getRank() < 1 || !p.getElementType().isF32())
      return emitOpError() << "parameter " << i
                           << " must be a statically shaped f32 tensor, got "
                           << p;
    params.push_back(p);
    auto g = cast<RankedTensorType>(getTensors()[4 * i + 1].getType());
    if (g.getShape() != p.getShape() ||
        !(g.getElementType().isBF16() || g.getElementType().isF16() ||
          g.getElementType().isF32()))
      return emitOpError() << "gradient " << i
                           << " must be a bf16, f16 or f32 tensor of the "
                              "parameter's shape, got "
                           << g;
    if (i == 0)
      gradElement = g.getElementType();
    else if (g.getElementType() != gradElement)
      return emitOpError() << "gradients must share one element type (one "
                              "kernel), gradient "
                           << i << " is " << g.getElementType();
    for (unsigned j : {2u, 3u})
      if (getTensors()[4 * i + j].getType() != p)
        return emitOpError() << "moment " << j - 2 << " of parameter " << i
                             << " must have type " << p;
    for (unsigned j = 0; j < 3; ++j)
      if (getResults()[perParam * i + j].getType() != p)
        return emitOpError()
               << "result " << perParam * i + j << " must have type " << p;
    for (unsigned r = 0; r < numQ; ++r) {
      auto q =
          dyn_cast<QTensorType>(getResults()[perParam * i + 3 + r].getType());
      if (!q || q.getShape() != p.getShape() || !q.getElementType().isF32())
        return emitOpError() << "result " << perParam * i + 3 + r
                             << " must quantize the f32 parameter " << i;
    }
  }
  if (static_cast<int64_t>(getGrid()) != adamGrid(params))
    return emitOpError() << "grid must be " << adamGrid(params)
                         << " tiles (every tile of every parameter), got "
                         << getGrid();

  // Every held direction of every quantized slot: one stage, the same
  // scheme for every parameter.
  llvm::SmallSet<std::pair<unsigned, unsigned>, 8> seen;
  bool needsAmax = false;
  for (Attribute a : getStages()) {
    auto stage = cast<StageAttr>(a);
    unsigned r = stage.getResult();
    if (r >= numQ)
      return emitOpError() << "stage " << stage << " names quantized result "
                           << r << ", but each parameter has " << numQ;
    if (!seen.insert({r, unsigned(stage.getDirection())}).second)
      return emitOpError() << "stage " << stage << " appears twice";
    Direction d = stage.getDirection();
    auto first = cast<QTensorType>(getResults()[3 + r].getType());
    for (unsigned i = 0; i < n; ++i) {
      auto q = cast<QTensorType>(getResults()[perParam * i + 3 + r].getType());
      if (!q.hasDirection(d) || q.getScheme().getRuntimeScheme(d) !=
                                    first.getScheme().getRuntimeScheme(d))
        return emitOpError()
               << "stage " << stage
               << " needs every parameter's quantized result " << r
               << " to hold " << stringifyDirection(d) << " with one scheme";
    }
    needsAmax |= first.getScheme().getRuntimeScheme(d).scalesByTensorAmax();
  }
  for (unsigned r = 0; r < numQ; ++r) {
    auto q = cast<QTensorType>(getResults()[3 + r].getType());
    for (Direction d : {Direction::rowwise, Direction::columnwise})
      if (q.hasDirection(d) && !seen.contains({r, unsigned(d)}))
        return emitOpError()
               << "quantized result " << r << " holds " << stringifyDirection(d)
               << " but no stage writes it";
  }
  if (needsAmax != getRequantizeAfter())
    return emitOpError() << (needsAmax ? "needs requantize_after: a stage "
                                         "scales by the tensor amax"
                                       : "has requantize_after but no stage "
                                         "scales by the tensor amax");
  return success();
}
