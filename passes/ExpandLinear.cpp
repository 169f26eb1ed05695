//===- ExpandLinear.cpp - te-expand-linear --------------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// A linear layer under a resolved recipe becomes the quantizations and GEMMs
// that compute it, each operand read in the direction its GEMM contracts:
//
//   fprop  y  = x W^T (+ b)   x rowwise,  W rowwise      (te.linear)
//   dgrad  dx = dy W          dy rowwise, W columnwise   (te.linear_grad)
//   wgrad  dW = dy^T x        dy columnwise, x columnwise
//   db = te.bias_grad(dy)     (te.linear_grad with `bias`)
//
// A grouped layer (te.grouped_linear) becomes the quantizations of its
// tokens and stacked weight and one te.grouped_gemm (x rowwise, W
// rowwise). Each expert's rows must be quantized as if they were its own
// tensor: the [M_total, K] tokens and the [G, N, K] stack are quantized as
// one tensor each, which is the same only where no scaling block or amax
// spans two experts - identity, block FP8 (128x128 weight tiles with N a
// multiple of 128) and MXFP8 (1x32 blocks along K; te-lower-to-kernels runs
// its grouped GEMM on dequantized operands). Per-tensor FP8 (current or
// delayed scaling) and NVFP4 need one amax per expert: te.grouped_gemm takes
// an operand under them as the bf16 tensor and quantizes it per expert
// itself (both operands, or one beside the other quantized here as above,
// then paired as their values), in the fprop and in the backward's dgrad;
// te.grouped_wgrad quantizes per expert anyway. Delayed scaling needs the
// layer's name (each expert's amax history is kept under it).
// te.grouped_linear_grad becomes a dgrad grouped GEMM (weights block FP8,
// or dequantized from MXFP8 by te-lower-to-kernels) and te.grouped_wgrad
// (below: block FP8 operands, or MXFP8 / NVFP4 ones quantized and
// dequantized per expert for a BF16 GEMM).
//
// Every te.quantize holds just the directions this layer's GEMMs read;
// te-infer-usage and te-fuse-quantize then merge what several layers (or
// the forward and backward of one) read of the same tensor into one kernel.
// A role whose scheme is #te.identity of the tensor's own type is read in
// high precision without a copy, and a quantized primary weight (a
// !te.qtensor weight) as stored. A GEMM whose operands do not pair (the
// te.gemm verifier's rules) is a located error on the layer, naming the GEMM.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialect/te/TeOps.h"
#include "te/formats/GemmRules.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "te-expand-linear"

namespace mlir::te {
#define GEN_PASS_DEF_TEEXPANDLINEARPASS
#include "passes/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;
namespace rt = ::te::rt;

namespace {

class LinearExpansion {
public:
  /// `layer`: the layer's name, which delayed-scaling states are named
  /// after (te.linear's `layer`; null for grouped layers).
  LinearExpansion(Operation *op, DictionaryAttr schemes, StringAttr layer = {})
      : op(op), schemes(schemes), layer(layer), b(op) {}

  /// What a GEMM reads for `tensor` (role `role`) in `dirs`: the tensor when
  /// its scheme is identity of the tensor's own type or it is already
  /// quantized (a quantized primary weight, which the layer's verifier holds
  /// to the recipe's rule in `dirs`), else a te.quantize.
  FailureOr<Value> operand(Value tensor, StringRef role, Directions dirs) {
    auto scheme = dyn_cast_or_null<SchemeAttrInterface>(schemes.get(role));
    if (!scheme)
      return op->emitOpError() << "has no resolved scheme for the role \""
                               << role << "\"; run te-resolve-recipe first";
    if (isa<QTensorType>(tensor.getType()))
      return tensor;
    auto type = cast<RankedTensorType>(tensor.getType());
    if (isOwnIdentity(scheme, type.getElementType(), dirs))
      return tensor;
    auto qtype = QTensorType::getChecked(
        [&] {
          return op->emitOpError()
                 << "cannot quantize its " << role << " by " << scheme << ": ";
        },
        op->getContext(), type.getShape(), type.getElementType(), scheme, dirs);
    if (!qtype)
      return failure();
    auto q = QuantizeOp::create(b, op->getLoc(), qtype, tensor);
    if (usesDelayedScaling(scheme)) {
      // The layer verifiers require a name where a role is delayed.
      assert(layer && "a delayed-scaling role of an unnamed layer");
      q.setScalingState(layerStateName(layer.getValue(), role));
    }
    return q.getResult();
  }

  /// A te.gemm named `which` (fprop / dgrad / wgrad). The te.gemm rules are
  /// checked on the types first, so that a bad pairing is reported on the
  /// layer and no invalid op is ever built.
  FailureOr<Value> gemm(StringRef which, StringRef formula, Type result,
                        Value a, Value bOperand, Value bias, bool transposeA,
                        bool transposeB) {
    if (failed(GemmOp::verifyTypes(
            [&] {
              return op->emitOpError()
                     << "cannot form its " << which << " GEMM (" << formula
                     << "): '" << GemmOp::getOperationName() << "' op ";
            },
            a.getType(), bOperand.getType(), bias ? bias.getType() : Type(),
            result, transposeA, transposeB)))
      return failure();
    Location loc = NameLoc::get(b.getStringAttr(which), op->getLoc());
    auto g = GemmOp::create(b, loc, result, a, bOperand, bias,
                            transposeA ? b.getUnitAttr() : UnitAttr(),
                            transposeB ? b.getUnitAttr() : UnitAttr(),
                            GemmPathAttr());
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << which << " GEMM for "
                            << op->getName() << " at " << op->getLoc() << "\n");
    return g.getResult();
  }

private:
  static bool isOwnIdentity(SchemeAttrInterface scheme, Type element,
                            Directions dirs) {
    for (Direction d : {Direction::rowwise, Direction::columnwise}) {
      if (!bitEnumContainsAll(dirs, d == Direction::rowwise
                                        ? Directions::rowwise
                                        : Directions::columnwise))
        continue;
      rt::Scheme s = scheme.getRuntimeScheme(d);
      if (s.kind != rt::SchemeKind::Identity ||
          getRuntimeDType(element) != s.element)
        return false;
    }
    return true;
  }

  Operation *op;
  DictionaryAttr schemes;
  StringAttr layer;

public:
  OpBuilder b;
};

/// 2-D operands only: te.gemm multiplies matrices.
LogicalResult checkMatrix(Operation *op, Value v, StringRef what) {
  auto t = cast<RankedTensorType>(v.getType());
  if (t.getRank() == 2)
    return success();
  return op->emitOpError() << "has a " << t.getRank() << "-D " << what
                           << "; te-expand-linear handles 2-D [tokens, "
                              "features] tensors (flatten the leading "
                              "dimensions first)";
}

LogicalResult expand(LinearOp lin) {
  if (failed(checkMatrix(lin, lin.getInput(), "input")))
    return failure();
  LinearExpansion e(lin, lin.getSchemesAttr(), lin.getLayerAttr());
  FailureOr<Value> x = e.operand(lin.getInput(), "input", Directions::rowwise);
  if (failed(x))
    return failure();
  FailureOr<Value> w =
      e.operand(lin.getWeight(), "weight", Directions::rowwise);
  if (failed(w))
    return failure();
  FailureOr<Value> y =
      e.gemm("fprop", "y = x W^T: x rowwise, W rowwise",
             lin.getResult().getType(), *x, *w, lin.getBias(), false, true);
  if (failed(y))
    return failure();
  lin.getResult().replaceAllUsesWith(*y);
  lin.erase();
  return success();
}

LogicalResult expand(LinearGradOp grad) {
  if (failed(checkMatrix(grad, grad.getInput(), "input")))
    return failure();
  LinearExpansion e(grad, grad.getSchemesAttr(), grad.getLayerAttr());
  FailureOr<Value> dy = e.operand(grad.getGradOutput(), "grad_output",
                                  Directions::rowwise | Directions::columnwise);
  if (failed(dy))
    return failure();
  FailureOr<Value> w =
      e.operand(grad.getWeight(), "weight", Directions::columnwise);
  if (failed(w))
    return failure();
  FailureOr<Value> x =
      e.operand(grad.getInput(), "input", Directions::columnwise);
  if (failed(x))
    return failure();
  FailureOr<Value> dx =
      e.gemm("dgrad", "dx = dy W: dy rowwise, W columnwise",
             grad.getGradInput().getType(), *dy, *w, Value(), false, false);
  if (failed(dx))
    return failure();
  FailureOr<Value> dw =
      e.gemm("wgrad", "dW = dy^T x: dy columnwise, x columnwise",
             grad.getGradWeight().getType(), *dy, *x, Value(), true, false);
  if (failed(dw))
    return failure();
  grad.getGradInput().replaceAllUsesWith(*dx);
  grad.getGradWeight().replaceAllUsesWith(*dw);
  if (Value db = grad.getGradBias())
    db.replaceAllUsesWith(BiasGradOp::create(e.b, grad.getLoc(), db.getType(),
                                             grad.getGradOutput())
                              .getResult());
  grad.erase();
  return success();
}

/// The resolved scheme of a layer's `role`, or a located error.
FailureOr<SchemeAttrInterface> roleScheme(Operation *op, DictionaryAttr schemes,
                                          StringRef role) {
  auto scheme = dyn_cast_or_null<SchemeAttrInterface>(
      schemes ? schemes.get(role) : Attribute());
  if (!scheme)
    return op->emitOpError() << "has no resolved scheme for the role \"" << role
                             << "\"; run te-resolve-recipe first";
  return scheme;
}

/// Whether quantizing a grouped layer's `role` operand as one tensor by the
/// `dir` direction of its scheme equals quantizing each expert's part
/// alone, and the grouped GEMM reads it; else a located error on the layer.
LogicalResult checkGroupedScheme(Operation *lin, DictionaryAttr schemes,
                                 StringRef role, int64_t out,
                                 Direction dir = Direction::rowwise) {
  FailureOr<SchemeAttrInterface> scheme = roleScheme(lin, schemes, role);
  if (failed(scheme))
    return failure();
  rt::Scheme s = scheme->getRuntimeScheme(dir);
  if (s.kind != rt::SchemeKind::Identity &&
      s.kind != rt::SchemeKind::Fp8Block && s.kind != rt::SchemeKind::Mxfp8)
    return lin->emitOpError()
           << "quantizes its " << role << " by " << *scheme
           << ", which te-expand-linear does not lower for grouped layers "
              "yet: identity, block FP8 and MXFP8 are lowered (their scaling "
              "blocks never span two experts), and per-tensor FP8 and NVFP4 "
              "(one amax per expert, quantized by the grouped GEMMs)";
  if (s.kind == rt::SchemeKind::Mxfp8 && dir == Direction::columnwise &&
      out % 32)
    return lin->emitOpError()
           << "quantizes its " << role << " by " << *scheme
           << " with N = " << out
           << " output features per expert: columnwise 32x1 blocks of the "
              "[G, N, K] stack are each expert's own only when N is a "
              "multiple of 32";
  if (s.kind == rt::SchemeKind::Fp8Block && s.tileRows == 128 &&
      role != "weight")
    return lin->emitOpError()
           << "quantizes its " << role << " by " << *scheme
           << ": the tokens' 128x128 tiles would span experts whose rows are "
              "not multiples of 128; quantize them by 1x128 blocks";
  if (s.kind == rt::SchemeKind::Fp8Block && s.tileRows == 128 && out % 128)
    return lin->emitOpError()
           << "quantizes its " << role << " by " << *scheme
           << " with N = " << out
           << " output features per expert: 128x128 tiles of the [G, N, K] "
              "stack are each expert's own only when N is a multiple of 128";
  return success();
}

/// Whether `role` of a grouped layer, read in `dir`, scales by a
/// tensor-wide scale the grouped GEMM takes per expert: per-tensor FP8
/// current scaling or NVFP4.
static bool expertTensorScaled(DictionaryAttr schemes, StringRef role,
                               Direction dir = Direction::rowwise) {
  auto s = dyn_cast_or_null<SchemeAttrInterface>(schemes ? schemes.get(role)
                                                         : Attribute());
  return s && rt::groupedTensorWide(s.getRuntimeScheme(dir));
}

/// The state attribute of a grouped GEMM operand of `role` read in `dir`:
/// under #te.fp8_delayed the layer's state of the role (te-lower-to-program
/// resolves the direction and each expert's own, expertStateName), else
/// null. The layer verifiers require `layer` where a role is delayed.
static StringAttr expertState(Builder &b, StringAttr layer,
                              DictionaryAttr schemes, StringRef role,
                              Direction dir) {
  auto s = dyn_cast_or_null<SchemeAttrInterface>(schemes ? schemes.get(role)
                                                         : Attribute());
  if (!s || s.getRuntimeScheme(dir).kind != rt::SchemeKind::Fp8Delayed)
    return {};
  assert(layer && "a delayed-scaling role of an unnamed layer");
  return b.getStringAttr(layerStateName(layer.getValue(), role));
}

/// te.grouped_linear with per-tensor FP8 (current or delayed) or NVFP4 on
/// either operand: one te.grouped_gemm that quantizes those operands per
/// expert itself from bf16, one amax per expert (each expert's rows and
/// weight scaled as their own tensors). An operand of another kind is
/// quantized here as for any grouped layer, and the GEMM pairs the two as
/// their dequantized values (rt::groupedPerExpertPartnerError).
LogicalResult expandPerExpertScaled(GroupedLinearOp lin) {
  DictionaryAttr schemes = lin.getSchemesAttr();
  FailureOr<SchemeAttrInterface> x = roleScheme(lin, schemes, "input");
  FailureOr<SchemeAttrInterface> w = roleScheme(lin, schemes, "weight");
  if (failed(x) || failed(w))
    return failure();
  const bool xPerExpert = expertTensorScaled(schemes, "input");
  const bool wPerExpert = expertTensorScaled(schemes, "weight");
  auto stack = cast<RankedTensorType>(lin.getWeight().getType());
  LinearExpansion e(lin, schemes, lin.getLayerAttr());
  FailureOr<Value> xv = lin.getInput(), wv = lin.getWeight();
  if (!xPerExpert &&
      (failed(checkGroupedScheme(lin, schemes, "input", stack.getDimSize(1))) ||
       failed(xv = e.operand(lin.getInput(), "input", Directions::rowwise))))
    return failure();
  if (!wPerExpert &&
      (failed(
           checkGroupedScheme(lin, schemes, "weight", stack.getDimSize(1))) ||
       failed(wv = e.operand(lin.getWeight(), "weight", Directions::rowwise))))
    return failure();
  SchemeAttrInterface xs = xPerExpert ? *x : SchemeAttrInterface();
  SchemeAttrInterface ws = wPerExpert ? *w : SchemeAttrInterface();
  Type result = lin.getResult().getType();
  Value splits = lin.getSplitSizes(), bias = lin.getBias();
  if (failed(GroupedGemmOp::verifyTypes(
          [&] {
            return lin.emitOpError()
                   << "cannot form its fprop grouped GEMM (y_g = x_g W_g^T, "
                   << (xPerExpert && wPerExpert ? "both"
                       : xPerExpert             ? "x"
                                                : "W")
                   << " quantized per expert): '"
                   << GroupedGemmOp::getOperationName() << "' op ";
          },
          xv->getType(), wv->getType(), splits.getType(),
          bias ? bias.getType() : Type(), result,
          /*weightColumnwise=*/false, xs, ws)))
    return failure();
  auto g = GroupedGemmOp::create(
      e.b, NameLoc::get(e.b.getStringAttr("fprop"), lin.getLoc()), result, *xv,
      *wv, splits, bias,
      /*weight_columnwise=*/UnitAttr(), xs, ws,
      expertState(e.b, lin.getLayerAttr(), schemes, "input",
                  Direction::rowwise),
      expertState(e.b, lin.getLayerAttr(), schemes, "weight",
                  Direction::rowwise),
      GemmPathAttr());
  lin.getResult().replaceAllUsesWith(g.getResult());
  lin.erase();
  return success();
}

LogicalResult expand(GroupedLinearOp lin) {
  if (expertTensorScaled(lin.getSchemesAttr(), "input") ||
      expertTensorScaled(lin.getSchemesAttr(), "weight"))
    return expandPerExpertScaled(lin);
  auto w = cast<RankedTensorType>(lin.getWeight().getType());
  for (StringRef role : {"input", "weight"})
    if (failed(checkGroupedScheme(lin, lin.getSchemesAttr(), role,
                                  w.getDimSize(1))))
      return failure();
  LinearExpansion e(lin, lin.getSchemesAttr(), lin.getLayerAttr());
  FailureOr<Value> x = e.operand(lin.getInput(), "input", Directions::rowwise);
  if (failed(x))
    return failure();
  FailureOr<Value> wq =
      e.operand(lin.getWeight(), "weight", Directions::rowwise);
  if (failed(wq))
    return failure();
  Type result = lin.getResult().getType();
  Value splits = lin.getSplitSizes();
  if (failed(GroupedGemmOp::verifyTypes(
          [&] {
            return lin.emitOpError()
                   << "cannot form its fprop grouped GEMM (y_g = x_g W_g^T: "
                      "x rowwise, W rowwise): '"
                   << GroupedGemmOp::getOperationName() << "' op ";
          },
          x->getType(), wq->getType(), splits.getType(),
          lin.getBias() ? lin.getBias().getType() : Type(), result,
          /*weightColumnwise=*/false)))
    return failure();
  Location loc = NameLoc::get(e.b.getStringAttr("fprop"), lin.getLoc());
  auto g = GroupedGemmOp::create(
      e.b, loc, result, *x, *wq, splits, lin.getBias(),
      /*weight_columnwise=*/UnitAttr(), SchemeAttrInterface(),
      SchemeAttrInterface(), StringAttr(), StringAttr(), GemmPathAttr());
  lin.getResult().replaceAllUsesWith(g.getResult());
  lin.erase();
  return success();
}

/// The backward of a grouped layer, per expert as te.linear_grad's:
///   dgrad dx = dy W   te.grouped_gemm {weight_columnwise}: dy rowwise,
///                     the stacked W columnwise;
///   wgrad dW = dy^T x and db: te.grouped_wgrad, which quantizes dy and x
///                     columnwise per expert itself.
LogicalResult expand(GroupedLinearGradOp grad) {
  DictionaryAttr schemes = grad.getSchemesAttr();
  auto w = cast<RankedTensorType>(grad.getWeight().getType());
  int64_t n = w.getDimSize(1);
  // Per-tensor FP8 (current or delayed) and NVFP4: the dgrad quantizes dy
  // or the stack's columnwise copy or both itself, one tensor scale per
  // expert.
  FailureOr<SchemeAttrInterface> dyRole =
      roleScheme(grad, schemes, "grad_output");
  FailureOr<SchemeAttrInterface> wRole = roleScheme(grad, schemes, "weight");
  if (failed(dyRole) || failed(wRole))
    return failure();
  const bool dyPerExpert = expertTensorScaled(schemes, "grad_output");
  const bool wPerExpert =
      expertTensorScaled(schemes, "weight", Direction::columnwise);
  if ((!dyPerExpert &&
       failed(checkGroupedScheme(grad, schemes, "grad_output", n))) ||
      (!wPerExpert && failed(checkGroupedScheme(grad, schemes, "weight", n,
                                                Direction::columnwise))))
    return failure();
  auto dwType = cast<RankedTensorType>(grad.getGradWeight().getType());
  if (!dwType.getElementType().isF32())
    return grad.emitOpError()
           << "has a " << dwType.getElementType()
           << " grad_weight; the grouped wgrad writes f32 (a cast to the "
              "weight's type is not lowered yet)";
  LinearExpansion e(grad, schemes, grad.getLayerAttr());
  // The dgrad's operands: quantized here, or (per-tensor FP8, NVFP4) the
  // bf16 tensors the grouped GEMM quantizes per expert by these schemes.
  FailureOr<Value> dy = grad.getGradOutput(), wq = grad.getWeight();
  SchemeAttrInterface dyScheme = dyPerExpert ? *dyRole : SchemeAttrInterface();
  SchemeAttrInterface wScheme = wPerExpert ? *wRole : SchemeAttrInterface();
  if (!dyPerExpert && failed(dy = e.operand(grad.getGradOutput(), "grad_output",
                                            Directions::rowwise)))
    return failure();
  if (!wPerExpert && failed(wq = e.operand(grad.getWeight(), "weight",
                                           Directions::columnwise)))
    return failure();
  Value splits = grad.getSplitSizes();
  Type dxType = grad.getGradInput().getType();
  if (failed(GroupedGemmOp::verifyTypes(
          [&] {
            return grad.emitOpError()
                   << "cannot form its dgrad grouped GEMM (dx_g = dy_g W_g: "
                      "dy rowwise, W columnwise): '"
                   << GroupedGemmOp::getOperationName() << "' op ";
          },
          dy->getType(), wq->getType(), splits.getType(), Type(), dxType,
          /*weightColumnwise=*/true, dyScheme, wScheme)))
    return failure();
  StringAttr layer = grad.getLayerAttr();
  auto dx = GroupedGemmOp::create(
      e.b, NameLoc::get(e.b.getStringAttr("dgrad"), grad.getLoc()), dxType, *dy,
      *wq, splits, Value(), e.b.getUnitAttr(), dyScheme, wScheme,
      dyPerExpert
          ? expertState(e.b, layer, schemes, "grad_output", Direction::rowwise)
          : StringAttr(),
      wPerExpert
          ? expertState(e.b, layer, schemes, "weight", Direction::columnwise)
          : StringAttr(),
      GemmPathAttr());

  FailureOr<SchemeAttrInterface> xScheme = roleScheme(grad, schemes, "input");
  if (failed(xScheme))
    return failure();
  Value db = grad.getGradBias();
  if (failed(GroupedWgradOp::verifyTypes(
          [&] {
            return grad.emitOpError()
                   << "cannot form its wgrad (dW_g = dy_g^T x_g: dy and x "
                      "columnwise): '"
                   << GroupedWgradOp::getOperationName() << "' op ";
          },
          grad.getGradOutput().getType(), grad.getInput().getType(),
          splits.getType(), dwType, db ? db.getType() : Type(), *dyRole,
          *xScheme)))
    return failure();
  auto wgrad = GroupedWgradOp::create(
      e.b, NameLoc::get(e.b.getStringAttr("wgrad"), grad.getLoc()), dwType,
      db ? db.getType() : Type(), grad.getGradOutput(), grad.getInput(), splits,
      *dyRole, *xScheme,
      expertState(e.b, layer, schemes, "grad_output", Direction::columnwise),
      expertState(e.b, layer, schemes, "input", Direction::columnwise));
  grad.getGradInput().replaceAllUsesWith(dx.getResult());
  grad.getGradWeight().replaceAllUsesWith(wgrad.getGradWeight());
  if (db)
    db.replaceAllUsesWith(wgrad.getGradBias());
  grad.erase();
  return success();
}

struct TeExpandLinearPass
    : mlir::te::impl::TeExpandLinearPassBase<TeExpandLinearPass> {
  void runOnOperation() override {
    SmallVector<Operation *> layers;
    getOperation().walk([&](Operation *op) {
      if (isa<LinearOp, LinearGradOp, GroupedLinearOp, GroupedLinearGradOp>(op))
        layers.push_back(op);
    });
    for (Operation *op : layers) {
      LogicalResult r = TypeSwitch<Operation *, LogicalResult>(op)
                            .Case<LinearOp, LinearGradOp, GroupedLinearOp,
                                  GroupedLinearGradOp>(
                                [](auto layer) { return expand(layer); });
      if (failed(r))
        return signalPassFailure();
    }
  }
};

} // namespace
