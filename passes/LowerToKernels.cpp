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
// A dialect conversion: te ops are illegal, tek ops legal, one pattern per
// op family. Two decisions are not local to one op and are made first, in
// a KernelPlan the patterns read: which optimizer steps share a
// multi-tensor launch (a cross-op grouping), and each kernel's number (the
// program order of the source ops, optimizer groups last).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialect/te/TeOps.h"
#include "dialect/tek/TekOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "te-lower-to-kernels"

namespace mlir::te {
#define GEN_PASS_DEF_TELOWERTOKERNELSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;
namespace rt = ::te::rt;

namespace {

//===----------------------------------------------------------------------===//
// Optimizer groups
//===----------------------------------------------------------------------===//

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
/// step joins the open group with its key unless a result of that group is
/// used before it (the group's kernel is created at its last member).
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
      // Uses by `op` itself (a second step on a first step's results) or
      // nested inside an op before it count too.
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

//===----------------------------------------------------------------------===//
// The plan
//===----------------------------------------------------------------------===//

/// A GEMM the target emulates: its quantized operands are dequantized first.
static bool isEmulated(GemmOp g) {
  return g.getPath() && *g.getPath() == GemmPath::emulated;
}

/// A grouped GEMM whose operands the engine's kernel cannot read
/// (te::GroupedGemmOp::engineReads), or where te-legalize-target chose to
/// dequantize them (`path`): its quantized operands are dequantized to
/// bf16 first and the bf16 kernel runs, as for an emulated te.gemm.
/// MXFP8 operands are read directly only where te-legalize-target chose it.
/// Where the op quantizes one operand per expert, the other is dequantized.
static bool isEmulated(GroupedGemmOp g) {
  std::optional<GemmPath> path = g.getPath();
  Type x = g.getInput().getType(), w = g.getWeight().getType();
  // Beside an operand quantized per expert, a quantized one is another
  // family's: the BF16 kernel reads both as values.
  if (g.getInputSchemeAttr() || g.getWeightSchemeAttr())
    return isa<QTensorType>(x) || isa<QTensorType>(w);
  if (path == GemmPath::emulated ||
      !GroupedGemmOp::engineReads(x, w, g.getWeightDirection()))
    return true;
  return GroupedGemmOp::bothMxfp8(x, w, g.getWeightDirection()) &&
         path != GemmPath::generated;
}

/// Whether `op` is a GEMM whose quantized operands get dequantize kernels.
static bool dequantizesOperands(Operation *op) {
  if (auto g = dyn_cast<GemmOp>(op))
    return isEmulated(g);
  if (auto g = dyn_cast<GroupedGemmOp>(op))
    return isEmulated(g);
  return false;
}

/// Decisions made before the conversion, which visits ops one at a time.
struct KernelPlan {
  /// The number of each op's first kernel (`te_<op>_<n>`): program order,
  /// an emulated GEMM's dequantizations before its call, optimizer groups
  /// after every other kernel.
  DenseMap<Operation *, unsigned> numbers;
  /// Optimizer groups by first member, which anchors the group's pattern.
  DenseMap<Operation *, SmallVector<Operation *>> adamGroups;

  explicit KernelPlan(func::FuncOp fn) {
    SmallVector<Operation *> ops;
    unsigned counter = 0;
    for (Operation &op : fn.getBody().getOps()) {
      ops.push_back(&op);
      if (isa<QuantizeOp, FusedQuantizeOp, BiasGradOp, DequantizeOp,
              GroupedWgradOp, AllGatherOp, QuantizeShardsOp>(op)) {
        numbers[&op] = counter++;
      } else if (isa<GemmOp, GroupedGemmOp>(op)) {
        numbers[&op] = counter;
        if (dequantizesOperands(&op))
          counter +=
              llvm::count_if(op.getOperandTypes(), llvm::IsaPred<QTensorType>);
        ++counter;
      }
    }
    for (SmallVector<Operation *> &group : ::adamGroups(ops)) {
      LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << group.size()
                              << " optimizer step(s) share te_adam_" << counter
                              << " in @" << fn.getName() << "\n");
      numbers[group.front()] = counter++;
      adamGroups[group.front()] = std::move(group);
    }
  }

  StringAttr name(Operation *op, StringRef kind, unsigned offset = 0) const {
    return StringAttr::get(op->getContext(),
                           "te_" + kind + "_" +
                               Twine(numbers.lookup(op) + offset));
  }
  StringAttr name(Operation *op) const {
    return name(op, op->getName().stripDialect());
  }
};

/// The quantize stages of `quantized` results (one per held direction,
/// naming result r's delayed-scaling state from `states[r]`, if any) and
/// whether any scales by the tensor amax (an amax pre-pass).
static std::pair<ArrayAttr, bool> stagesOf(MLIRContext *ctx,
                                           TypeRange quantized,
                                           ArrayRef<std::string> states = {}) {
  SmallVector<Attribute> stages;
  bool amax = false;
  for (auto [r, type] : llvm::enumerate(quantized)) {
    auto q = cast<QTensorType>(type);
    rt::Scheme row = q.getScheme().getRuntimeScheme(Direction::rowwise);
    rt::Scheme col = q.getScheme().getRuntimeScheme(Direction::columnwise);
    for (Direction d : {Direction::rowwise, Direction::columnwise}) {
      if (!q.hasDirection(d))
        continue;
      std::string state =
          r < states.size() && !states[r].empty()
              ? rt::delayedStateName(states[r], row, col, toRuntime(d))
              : std::string();
      stages.push_back(tek::StageAttr::get(ctx, unsigned(r), d, state));
      amax |= q.getScheme().getRuntimeScheme(d).scalesByTensorAmax();
    }
  }
  return {ArrayAttr::get(ctx, stages), amax};
}

/// The delayed-scaling state of each quantized result of `op`.
static SmallVector<std::string> scalingStatesOf(Operation *op) {
  SmallVector<std::string> out;
  if (auto q = dyn_cast<QuantizeOp>(op))
    out.push_back(q.getScalingState().value_or("").str());
  else if (auto f = dyn_cast<FusedQuantizeOp>(op))
    if (ArrayAttr states = f.getScalingStatesAttr())
      for (Attribute a : states)
        out.push_back(cast<StringAttr>(a).getValue().str());
  return out;
}

static Value dequantizeKernel(OpBuilder &b, Location loc, Value input,
                              Type result, StringAttr name, Direction dir) {
  auto q = cast<QTensorType>(input.getType());
  return tek::DequantizeKernelOp::create(
      b, loc, result, input, name, DirectionAttr::get(b.getContext(), dir),
      b.getDenseI64ArrayAttr({tek::dequantizeGrid(q.getShape())}),
      b.getI64IntegerAttr(tek::kThreads));
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

template <typename OpTy>
struct PlannedPattern : public OpConversionPattern<OpTy> {
  PlannedPattern(MLIRContext *ctx, const KernelPlan &plan)
      : OpConversionPattern<OpTy>(ctx), plan(plan) {}
  const KernelPlan &plan;
};

/// te.quantize, te.fused_quantize, te.bias_grad -> one tek.quantize_kernel:
/// a tile pass over the input with one stage per held direction.
template <typename OpTy>
struct QuantizeKernelLowering : public PlannedPattern<OpTy> {
  using PlannedPattern<OpTy>::PlannedPattern;
  using OpAdaptor = typename OpTy::Adaptor;

  static bool hasBiasGrad(OpTy op) {
    if constexpr (std::is_same_v<OpTy, FusedQuantizeOp>)
      return op.getBiasGrad();
    return std::is_same_v<OpTy, BiasGradOp>;
  }

  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    bool biasGrad = hasBiasGrad(op);
    TypeRange results = op->getResultTypes();
    auto [stages, amax] =
        stagesOf(op.getContext(), results.drop_back(biasGrad ? 1 : 0),
                 scalingStatesOf(op));
    auto inType = cast<RankedTensorType>(adaptor.getInput().getType());
    rewriter.replaceOpWithNewOp<tek::QuantizeKernelOp>(
        op, results, adaptor.getInput(), this->plan.name(op),
        rewriter.getDenseI64ArrayAttr({tek::kQuantizeTile, tek::kQuantizeTile}),
        rewriter.getDenseI64ArrayAttr(tek::quantizeGrid(inType.getShape())),
        rewriter.getI64IntegerAttr(tek::kThreads), stages,
        biasGrad ? rewriter.getUnitAttr() : UnitAttr(),
        amax ? rewriter.getUnitAttr() : UnitAttr(), amaxRanks(op));
    return success();
  }

  static IntegerAttr amaxRanks(OpTy op) {
    if constexpr (std::is_same_v<OpTy, QuantizeOp>)
      return op.getAmaxRanksAttr();
    return {};
  }
};

/// te.quantize_shards -> tek.quantize_shards_kernel.
struct QuantizeShardsLowering : public PlannedPattern<QuantizeShardsOp> {
  using PlannedPattern::PlannedPattern;

  LogicalResult
  matchAndRewrite(QuantizeShardsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    std::string state = op.getScalingState().value_or("").str();
    ArrayAttr stages =
        stagesOf(op.getContext(), TypeRange{op.getType()}, {state}).first;
    rewriter.replaceOpWithNewOp<tek::QuantizeShardsKernelOp>(
        op, op.getType(), adaptor.getShards(), plan.name(op), stages,
        op.getRankOffsetsAttr());
    return success();
  }
};

/// te.all_gather -> tek.all_gather.
struct AllGatherLowering : public PlannedPattern<AllGatherOp> {
  using PlannedPattern::PlannedPattern;

  LogicalResult
  matchAndRewrite(AllGatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<tek::AllGatherOp>(
        op, op.getType(), adaptor.getInput(), plan.name(op), op.getRanksAttr(),
        op.getSendColumnwiseAttr());
    return success();
  }
};

/// te.dequantize -> tek.dequantize_kernel.
struct DequantizeKernelLowering : public PlannedPattern<DequantizeOp> {
  using PlannedPattern::PlannedPattern;

  LogicalResult
  matchAndRewrite(DequantizeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, dequantizeKernel(rewriter, op.getLoc(),
                                            adaptor.getInput(), op.getType(),
                                            plan.name(op), op.getDirection()));
    return success();
  }
};

/// Replaces each quantized value of `operands` (read in `dirs[i]`) by its
/// bf16 dequantization, kernels named after `op`'s; returns their count.
static unsigned dequantizeOperands(OpBuilder &b, Operation *op,
                                   const KernelPlan &plan,
                                   MutableArrayRef<Value> operands,
                                   ArrayRef<Direction> dirs) {
  unsigned count = 0;
  for (auto [value, dir] : llvm::zip_equal(operands, dirs)) {
    auto q = dyn_cast<QTensorType>(value.getType());
    if (!q)
      continue;
    auto bf16 = RankedTensorType::get(q.getShape(), b.getBF16Type());
    value = dequantizeKernel(b, op->getLoc(), value, bf16,
                             plan.name(op, "dequantize", count++), dir);
  }
  return count;
}

/// te.gemm -> tek.gemm_call. An emulated GEMM (te-legalize-target's `path`)
/// first dequantizes each quantized operand, in the direction the GEMM
/// reads, to bf16.
struct GemmLowering : public PlannedPattern<GemmOp> {
  using PlannedPattern::PlannedPattern;

  LogicalResult
  matchAndRewrite(GemmOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value operands[2] = {adaptor.getA(), adaptor.getB()};
    Direction dirs[2] = {op.getOperandDirection(0), op.getOperandDirection(1)};
    unsigned next = isEmulated(op)
                        ? dequantizeOperands(rewriter, op, plan, operands, dirs)
                        : 0;
    rewriter.replaceOpWithNewOp<tek::GemmCallOp>(
        op, op.getType(), operands[0], operands[1], adaptor.getBias(),
        plan.name(op, "gemm", next),
        op.getTransposeA() ? rewriter.getUnitAttr() : UnitAttr(),
        op.getTransposeB() ? rewriter.getUnitAttr() : UnitAttr());
    return success();
  }
};

/// te.grouped_gemm -> tek.grouped_gemm (the GEMM engine's kernel), after
/// dequantize kernels where the kernel cannot read the operands.
struct GroupedGemmLowering : public PlannedPattern<GroupedGemmOp> {
  using PlannedPattern::PlannedPattern;

  LogicalResult
  matchAndRewrite(GroupedGemmOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value operands[2] = {adaptor.getInput(), adaptor.getWeight()};
    Direction dirs[2] = {Direction::rowwise, op.getWeightDirection()};
    unsigned next = isEmulated(op)
                        ? dequantizeOperands(rewriter, op, plan, operands, dirs)
                        : 0;
    rewriter.replaceOpWithNewOp<tek::GroupedGemmOp>(
        op, op.getType(), operands[0], operands[1], adaptor.getSplitSizes(),
        adaptor.getBias(), plan.name(op, "grouped_gemm", next),
        op.getWeightColumnwiseAttr(), op.getInputSchemeAttr(),
        op.getWeightSchemeAttr(), op.getInputStateAttr(),
        op.getWeightStateAttr(),
        readsNvfp4Codes(op) ? rewriter.getUnitAttr() : UnitAttr());
    return success();
  }

  /// Operands quantized per expert by NVFP4 where te-legalize-target chose
  /// the engine's NVFP4 kernel (`generated`) and that kernel can read them
  /// (a `path` recorded before that rule, on a dgrad say, keeps the
  /// values); else the BF16 kernel reads their values.
  static bool readsNvfp4Codes(GroupedGemmOp op) {
    return op.getPath() == GemmPath::generated && op.nvfp4CodesReadable();
  }
};

/// te.grouped_wgrad -> tek.grouped_wgrad.
struct GroupedWgradLowering : public PlannedPattern<GroupedWgradOp> {
  using PlannedPattern::PlannedPattern;

  LogicalResult
  matchAndRewrite(GroupedWgradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value db = op.getGradBias();
    rewriter.replaceOpWithNewOp<tek::GroupedWgradOp>(
        op, op.getGradWeight().getType(), db ? db.getType() : Type(),
        adaptor.getGradOutput(), adaptor.getInput(), adaptor.getSplitSizes(),
        plan.name(op), op.getGradOutputScheme(), op.getInputScheme(),
        op.getGradOutputStateAttr(), op.getInputStateAttr());
    return success();
  }
};

/// An optimizer group -> one tek.adam_kernel, placed at its last member.
/// Anchored on the first member; the other members are replaced with it
/// (the grouping guarantees no member's result is used before the last).
template <typename OpTy>
struct AdamGroupLowering : public PlannedPattern<OpTy> {
  using PlannedPattern<OpTy>::PlannedPattern;
  using OpAdaptor = typename OpTy::Adaptor;

  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto it = this->plan.adamGroups.find(op);
    if (it == this->plan.adamGroups.end())
      return rewriter.notifyMatchFailure(op, "lowered with its group");
    ArrayRef<Operation *> group = it->second;
    Operation *last = group.back();
    AdamKey key = keyOf(op);
    SmallVector<Value> tensors;
    SmallVector<Type> types;
    SmallVector<RankedTensorType> params;
    for (Operation *member : group) {
      SmallVector<Value> operands;
      if (failed(rewriter.getRemappedValues(member->getOperands().take_front(4),
                                            operands)))
        return failure();
      llvm::append_range(tensors, operands);
      llvm::append_range(types, member->getResultTypes());
      params.push_back(cast<RankedTensorType>(operands[0].getType()));
    }
    auto [stages, amax] = stagesOf(
        op.getContext(), TypeRange(op->getResultTypes()).drop_front(3));
    rewriter.setInsertionPoint(last);
    auto kernel = tek::AdamKernelOp::create(
        rewriter, last->getLoc(), types, adaptor.getLr(), adaptor.getStep(),
        tensors, this->plan.name(op, "adam"), cast<FloatAttr>(key.beta1),
        cast<FloatAttr>(key.beta2), cast<FloatAttr>(key.eps),
        cast<FloatAttr>(key.weightDecay), cast<AdamModeAttr>(key.mode),
        key.fastMath ? rewriter.getUnitAttr() : UnitAttr(),
        rewriter.getDenseI64ArrayAttr({tek::kQuantizeTile, tek::kQuantizeTile}),
        rewriter.getI64IntegerAttr(tek::adamGrid(params)),
        rewriter.getI64IntegerAttr(tek::kThreads), stages,
        amax ? rewriter.getUnitAttr() : UnitAttr());
    ValueRange results = kernel->getResults();
    for (Operation *member : group) {
      rewriter.replaceOp(member, results.take_front(member->getNumResults()));
      results = results.drop_front(member->getNumResults());
    }
    return success();
  }
};

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// An op the conversion has no pattern for is a located error (a missed
/// pass upstream), never a silent skip.
static LogicalResult checkLowerable(func::FuncOp fn) {
  for (Operation &op : fn.getBody().getOps()) {
    if (isa<QuantizeOp, FusedQuantizeOp, BiasGradOp, DequantizeOp, GemmOp,
            GroupedGemmOp, GroupedWgradOp, AdamStepOp, FusedAdamOp, AllGatherOp,
            QuantizeShardsOp, func::ReturnOp>(op) ||
        isa_and_nonnull<tek::TekDialect>(op.getDialect()))
      continue;
    return op.emitError() << "'" << op.getName()
                          << "' has no kernel lowering yet: kernels exist "
                             "for te.quantize, te.fused_quantize, "
                             "te.bias_grad, te.dequantize, te.gemm, "
                             "te.grouped_gemm, te.grouped_wgrad, "
                             "te.all_gather, te.quantize_shards, "
                             "te.adam_step and te.fused_adam";
  }
  return success();
}

struct TeLowerToKernelsPass
    : public mlir::te::impl::TeLowerToKernelsPassBase<TeLowerToKernelsPass> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (fn.isExternal())
      return;
    if (failed(checkLowerable(fn)))
      return signalPassFailure();

    MLIRContext *ctx = &getContext();
    KernelPlan plan(fn);
    RewritePatternSet patterns(ctx);
    patterns.add<QuantizeKernelLowering<QuantizeOp>,
                 QuantizeKernelLowering<FusedQuantizeOp>,
                 QuantizeKernelLowering<BiasGradOp>, DequantizeKernelLowering,
                 GemmLowering, GroupedGemmLowering, GroupedWgradLowering,
                 AllGatherLowering, QuantizeShardsLowering,
                 AdamGroupLowering<AdamStepOp>, AdamGroupLowering<FusedAdamOp>>(
        ctx, plan);
    ConversionTarget target(*ctx);
    target.addIllegalDialect<TeDialect>();
    target.addLegalDialect<tek::TekDialect>();
    if (failed(applyPartialConversion(fn, target, std::move(patterns))))
      return signalPassFailure();
    LLVM_DEBUG({
      unsigned kernels = 0;
      fn.walk([&](Operation *op) {
        kernels += isa_and_nonnull<tek::TekDialect>(op->getDialect());
      });
      llvm::dbgs() << "[" DEBUG_TYPE "] @" << fn.getName() << ": " << kernels
                   << " kernel op(s)\n";
    });
  }
};

} // namespace
