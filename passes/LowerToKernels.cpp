//===- LowerToKernels.cpp - te-lower-to-kernels ---------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The last step of te-to-cuda: every graph-level op that has a kernel
// becomes exactly one tek op that states the kernel's launch (iteration
// space in tiles, tile shape, block size) and what it fuses (stages, bias
// gradient, amax pre-pass). Code generation then reads only tek ops.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialect/te/TeOps.h"
#include "dialect/tek/TekOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#define DEBUG_TYPE "te-lower-to-kernels"

namespace mlir::te {
#define GEN_PASS_DEF_TELOWERTOKERNELSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;

namespace {

class Lowering {
public:
  explicit Lowering(func::FuncOp fn) : fn(fn), b(fn.getContext()) {}

  LogicalResult run() {
    // Collect first: lowering replaces ops while we go.
    SmallVector<Operation *> ops;
    for (Operation &op : fn.getBody().getOps())
      ops.push_back(&op);
    SmallVector<SmallVector<Operation *>> groups = adamGroups(ops);
    for (Operation *op : ops) {
      if (isa<AdamStepOp, FusedAdamOp>(op))
        continue; // lowered per group below
      if (failed(lower(op)))
        return failure();
    }
    for (SmallVector<Operation *> &g : groups)
      lowerAdamGroup(g);
    return success();
  }

private:
  std::string nextName(Operation *op) {
    return "te_" + op->getName().stripDialect().str() + "_" +
           std::to_string(counter++);
  }

  /// A quantize kernel over `input` producing `results` (quantized values,
  /// then the bias gradient when `biasGrad`).
  void quantizeKernel(Operation *op, Value input, TypeRange results,
                      bool biasGrad) {
    auto inType = cast<RankedTensorType>(input.getType());
    SmallVector<Attribute> stages;
    bool amax = false;
    unsigned quantized = results.size() - (biasGrad ? 1 : 0);
    for (unsigned r = 0; r < quantized; ++r) {
      auto q = cast<QTensorType>(results[r]);
      for (Direction d : {Direction::rowwise, Direction::columnwise}) {
        if (!q.hasDirection(d))
          continue;
        stages.push_back(tek::StageAttr::get(b.getContext(), r, d));
        amax |= q.getScheme().getRuntimeScheme(d).scalesByTensorAmax();
      }
    }
    b.setInsertionPoint(op);
    auto kernel = tek::QuantizeKernelOp::create(
        b, op->getLoc(), results, input, b.getStringAttr(nextName(op)),
        b.getDenseI64ArrayAttr({tek::kQuantizeTile, tek::kQuantizeTile}),
        b.getDenseI64ArrayAttr(tek::quantizeGrid(inType.getShape())),
        b.getI64IntegerAttr(tek::kThreads), b.getArrayAttr(stages),
        biasGrad ? b.getUnitAttr() : UnitAttr(),
        amax ? b.getUnitAttr() : UnitAttr());
    op->replaceAllUsesWith(kernel->getResults());
    op->erase();
  }

  LogicalResult lower(Operation *op) {
    if (auto q = dyn_cast<QuantizeOp>(op)) {
      quantizeKernel(op, q.getInput(), op->getResultTypes(), false);
      return success();
    }
    if (auto f = dyn_cast<FusedQuantizeOp>(op)) {
      quantizeKernel(op, f.getInput(), op->getResultTypes(), f.getBiasGrad());
      return success();
    }
    if (auto g = dyn_cast<BiasGradOp>(op)) {
      quantizeKernel(op, g.getInput(), op->getResultTypes(), true);
      return success();
    }
    if (auto d = dyn_cast<DequantizeOp>(op)) {
      auto q = cast<QTensorType>(d.getInput().getType());
      b.setInsertionPoint(op);
      auto kernel = tek::DequantizeKernelOp::create(
          b, op->getLoc(), d.getResult().getType(), d.getInput(),
          b.getStringAttr(nextName(op)), d.getDirectionAttr(),
          b.getDenseI64ArrayAttr({tek::dequantizeGrid(q.getShape())}),
          b.getI64IntegerAttr(tek::kThreads));
      op->replaceAllUsesWith(kernel->getResults());
      op->erase();
      return success();
    }
    if (auto g = dyn_cast<GemmOp>(op))
      return lowerGemm(g);
    if (isa<func::ReturnOp>(op) ||
        op->getDialect() == b.getContext()->getLoadedDialect("tek"))
      return success();
    return op->emitError() << "'" << op->getName()
                           << "' has no kernel lowering yet: kernels exist "
                              "for te.quantize, te.fused_quantize, "
                              "te.bias_grad, te.dequantize, te.gemm, "
                              "te.adam_step and te.fused_adam";
  }

  /// A GEMM the target runs natively becomes one tek.gemm_call; an
  /// emulated one (te-legalize-target's `path`) first dequantizes each
  /// quantized operand, in the direction the GEMM reads, to bf16.
  LogicalResult lowerGemm(GemmOp g) {
    bool emulated = g.getPath() && *g.getPath() == GemmPath::emulated;
    Value operands[2] = {g.getA(), g.getB()};
    b.setInsertionPoint(g);
    if (emulated) {
      for (unsigned i = 0; i < 2; ++i) {
        auto q = dyn_cast<QTensorType>(operands[i].getType());
        if (!q)
          continue;
        auto bf16 = RankedTensorType::get(q.getShape(), b.getBF16Type());
        operands[i] = tek::DequantizeKernelOp::create(
            b, g.getLoc(), bf16, operands[i],
            b.getStringAttr("te_dequantize_" + std::to_string(counter++)),
            DirectionAttr::get(b.getContext(), g.getOperandDirection(i)),
            b.getDenseI64ArrayAttr({tek::dequantizeGrid(q.getShape())}),
            b.getI64IntegerAttr(tek::kThreads));
      }
    }
    auto call = tek::GemmCallOp::create(
        b, g.getLoc(), g.getResult().getType(), operands[0], operands[1],
        g.getBias(), b.getStringAttr(nextName(g)),
        g.getTransposeA() ? b.getUnitAttr() : UnitAttr(),
        g.getTransposeB() ? b.getUnitAttr() : UnitAttr());
    g.getResult().replaceAllUsesWith(call.getResult());
    g.erase();
    return success();
  }

  /// What must agree for optimizer steps to share one launch.
  struct AdamKey {
    Attribute beta1, beta2, eps, weightDecay, mode;
    bool fastMath;
    Value lr, step;
    Type gradElement;
    /// Per quantized slot: scheme and held directions (any shape).
    SmallVector<std::pair<Attribute, unsigned>> quantized;
    bool operator==(const AdamKey &o) const {
      return beta1 == o.beta1 && beta2 == o.beta2 && eps == o.eps &&
             weightDecay == o.weightDecay && mode == o.mode &&
             fastMath == o.fastMath && lr == o.lr && step == o.step &&
             gradElement == o.gradElement && quantized == o.quantized;
    }
  };

  template <typename AdamOp> static AdamKey keyOf(AdamOp op) {
    AdamKey k{op.getBeta1Attr(),
              op.getBeta2Attr(),
              op.getEpsAttr(),
              op.getWeightDecayAttr(),
              op.getModeAttr(),
              op.getFastMath(),
              op.getLr(),
              op.getStep(),
              op.getGrad().getType().getElementType(),
              {}};
    for (Value r : op->getResults().drop_front(3)) {
      auto q = cast<QTensorType>(r.getType());
      k.quantized.push_back(
          {q.getScheme(), static_cast<unsigned>(q.getDirections())});
    }
    return k;
  }

  static AdamKey keyOf(Operation *op) {
    if (auto a = dyn_cast<AdamStepOp>(op))
      return keyOf(a);
    return keyOf(cast<FusedAdamOp>(op));
  }

  /// Optimizer steps grouped for multi-tensor launches, in program order: a
  /// step joins the open group with its key unless a result of that group
  /// is used before it (the group's kernel is created at its last member).
  static SmallVector<SmallVector<Operation *>>
  adamGroups(ArrayRef<Operation *> ops) {
    SmallVector<SmallVector<Operation *>> groups;
    SmallVector<std::pair<AdamKey, unsigned>> open;
    for (Operation *op : ops) {
      if (!isa<AdamStepOp, FusedAdamOp>(op))
        continue;
      AdamKey key = keyOf(op);
      auto it = llvm::find_if(open, [&](auto &o) { return o.first == key; });
      if (it != open.end()) {
        // Uses by `op` itself (a second step on a first step's results)
        // or nested inside an op before it count too.
        bool usedBefore = llvm::any_of(groups[it->second], [&](Operation *m) {
          return llvm::any_of(m->getUsers(), [&](Operation *u) {
            Operation *at = op->getBlock()->findAncestorOpInBlock(*u);
            return at && (at == op || at->isBeforeInBlock(op));
          });
        });
        if (!usedBefore) {
          groups[it->second].push_back(op);
          continue;
        }
        open.erase(it);
      }
      open.push_back({key, unsigned(groups.size())});
      groups.push_back({op});
    }
    return groups;
  }

  /// One tek.adam_kernel for a group, at its last member.
  void lowerAdamGroup(ArrayRef<Operation *> group) {
    Operation *last = group.back();
    AdamKey key = keyOf(group.front());
    SmallVector<Value> tensors;
    SmallVector<Type> types;
    SmallVector<RankedTensorType> params;
    for (Operation *op : group) {
      llvm::append_range(tensors, op->getOperands().take_front(4));
      llvm::append_range(types, op->getResultTypes());
      params.push_back(cast<RankedTensorType>(op->getOperand(0).getType()));
    }
    SmallVector<Attribute> stages;
    bool amax = false;
    for (auto [r, result] :
         llvm::enumerate(group.front()->getResults().drop_front(3))) {
      auto q = cast<QTensorType>(result.getType());
      for (Direction d : {Direction::rowwise, Direction::columnwise}) {
        if (!q.hasDirection(d))
          continue;
        stages.push_back(tek::StageAttr::get(b.getContext(), unsigned(r), d));
        amax |= q.getScheme().getRuntimeScheme(d).scalesByTensorAmax();
      }
    }
    b.setInsertionPoint(last);
    auto kernel = tek::AdamKernelOp::create(
        b, last->getLoc(), types, key.lr, key.step, tensors,
        b.getStringAttr("te_adam_" + std::to_string(counter++)),
        cast<FloatAttr>(key.beta1), cast<FloatAttr>(key.beta2),
        cast<FloatAttr>(key.eps), cast<FloatAttr>(key.weightDecay),
        cast<AdamModeAttr>(key.mode),
        key.fastMath ? b.getUnitAttr() : UnitAttr(),
        b.getDenseI64ArrayAttr({tek::kQuantizeTile, tek::kQuantizeTile}),
        b.getI64IntegerAttr(tek::adamGrid(params)),
        b.getI64IntegerAttr(tek::kThreads), b.getArrayAttr(stages),
        amax ? b.getUnitAttr() : UnitAttr());
    unsigned next = 0;
    for (Operation *op : group) {
      for (Value r : op->getResults())
        r.replaceAllUsesWith(kernel->getResult(next++));
      op->erase();
    }
  }

  func::FuncOp fn;
  OpBuilder b;
  unsigned counter = 0;
};

struct TeLowerToKernelsPass
    : public mlir::te::impl::TeLowerToKernelsPassBase<TeLowerToKernelsPass> {
  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal() && failed(Lowering(fn).run()))
        return signalPassFailure();
  }
};

} // namespace
