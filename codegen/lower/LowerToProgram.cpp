//===- LowerToProgram.cpp - te IR -> kernel-level Program -----------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#include "codegen/lower/LowerToProgram.h"

#include "dialect/te/TeDialect.h"
#include "dialect/te/TeOps.h"
#include "dialect/te/TeTraits.h"
#include "dialect/te/TeTypes.h"
#include "dialect/tek/TekOps.h"
#include "te/codegen/DequantizeEmitter.h"
#include "te/codegen/QuantizeEmitter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::te {

namespace cg = ::te::cg;
namespace rt = ::te::rt;

// The launch shapes the tek verifiers pin are the ones the plan builder
// launches; both sides spell them, so keep them equal here.
static_assert(tek::kQuantizeTile == cg::kQuantizeTileRows &&
                  tek::kQuantizeTile == cg::kQuantizeTileCols &&
                  tek::kThreads == cg::kQuantizeThreads &&
                  tek::kThreads == cg::kDequantizeThreads,
              "tek launch shapes and the CUDA plan builder disagree");

namespace {

/// Lowers one function; values are numbered as they appear.
class EntryLowering {
public:
  explicit EntryLowering(func::FuncOp fn) : fn(fn) {
    entry.name = fn.getName().str();
  }

  FailureOr<cg::Entry> run() {
    for (BlockArgument arg : fn.getArguments()) {
      FailureOr<int> v =
          addValue(arg, "arg" + std::to_string(arg.getArgNumber()));
      if (failed(v))
        return failure();
      entry.args.push_back(*v);
      auto name = fn.getArgAttrOfType<StringAttr>(
          arg.getArgNumber(), TeDialect::kPersistentAttrName);
      entry.argPersistent.push_back(name ? name.str() : "");
    }

    for (Operation &op : fn.getBody().front()) {
      if (failed(lower(op)))
        return failure();
    }
    std::string why = cg::validate(entry);
    if (!why.empty())
      return fn.emitError() << why;
    return entry;
  }

private:
  FailureOr<rt::DType> dtypeOf(Location loc, Type t) {
    if (std::optional<rt::DType> d = getRuntimeDType(t))
      return *d;
    return emitError(loc)
           << "code generation supports bf16, f16 and f32 tensors "
              "(and i64 scalars), not "
           << t;
  }

  /// A value a kernel defines, named `prefix` + its index.
  FailureOr<int> addDefined(Value v, StringRef prefix) {
    return addValue(v, prefix.str() + std::to_string(entry.values.size()));
  }

  FailureOr<int> addValue(Value v, std::string name) {
    cg::Value out;
    out.name = std::move(name);
    llvm::raw_string_ostream(out.type) << v.getType();
    Type elem;
    if (auto q = dyn_cast<QTensorType>(v.getType())) {
      out.kind = cg::Value::Kind::Quantized;
      out.shape.assign(q.getShape().begin(), q.getShape().end());
      elem = q.getElementType();
      if (q.hasDirection(Direction::rowwise))
        out.rowwise = q.getScheme().getRuntimeScheme(Direction::rowwise);
      if (q.hasDirection(Direction::columnwise)) {
        out.columnwise = q.getScheme().getRuntimeScheme(Direction::columnwise);
        if (auto hybrid = dyn_cast<HybridAttr>(q.getScheme()))
          out.columnwiseSource = hybrid.getColumnwiseSource();
      }
    } else if (auto t = dyn_cast<RankedTensorType>(v.getType())) {
      // Rank 0: a scalar (an optimizer's lr or step).
      if (!t.hasStaticShape())
        return emitError(v.getLoc())
               << "code generation needs statically shaped tensors, got " << t;
      if (t.getElementType().isInteger(64) && t.getRank() > 1)
        return emitError(v.getLoc())
               << "i64 values are supported only as scalars (tensor<i64>) "
                  "and vectors (a grouped GEMM's split sizes), got "
               << t;
      out.shape.assign(t.getShape().begin(), t.getShape().end());
      elem = t.getElementType();
    } else {
      return emitError(v.getLoc())
             << "code generation cannot hold a value of type " << v.getType();
    }
    FailureOr<rt::DType> dt = dtypeOf(v.getLoc(), elem);
    if (failed(dt))
      return failure();
    // Op verifiers check the values te ops touch; a function argument that
    // is only returned reaches the runtime through here alone.
    if (failed(verifyAddressable([&] { return emitError(v.getLoc()); },
                                 v.getType(), "value " + out.name)))
      return failure();
    out.dtype = *dt;
    entry.values.push_back(out);
    int index = static_cast<int>(entry.values.size()) - 1;
    ids[v] = index;
    return index;
  }

  std::string resultName(Operation &op, unsigned i) {
    return "%" + std::to_string(entry.values.size()) + "_" +
           op.getName().stripDialect().str() + (i ? std::to_string(i) : "");
  }

  LogicalResult addStages(cg::QuantizeKernel &k, tek::QuantizeKernelOp op) {
    ResultRange quantized = op.getQuantized();
    SmallVector<int> values;
    for (Value r : quantized) {
      FailureOr<int> v = addDefined(r, "q");
      if (failed(v))
        return failure();
      values.push_back(*v);
    }
    for (Attribute a : op.getStages()) {
      auto stage = cast<tek::StageAttr>(a);
      const cg::Value &q = entry.values[values[stage.getResult()]];
      bool row = stage.getDirection() == Direction::rowwise;
      k.stages.push_back(
          {row ? *q.rowwise : *q.columnwise,
           row ? rt::Direction::Rowwise : rt::Direction::Columnwise,
           values[stage.getResult()], stage.getState().str()});
    }
    return success();
  }

  /// Adds `kernel`, checked on its own (the whole entry is checked once,
  /// at the end), so an error points at the op it came from.
  LogicalResult push(Operation *op, cg::Kernel kernel) {
    std::string why = cg::validateKernel(entry, kernel);
    if (!why.empty())
      return op->emitError() << why;
    entry.kernels.push_back(std::move(kernel));
    return success();
  }

  LogicalResult lowerQuantize(tek::QuantizeKernelOp q) {
    // The tile kernel's launch is fixed (the verifier pins it); the plan
    // builder recomputes the same grid from the shape.
    cg::QuantizeKernel k;
    k.name = q.getKernelName().str();
    k.input = ids.lookup(q.getInput());
    if (failed(addStages(k, q)))
      return failure();
    if (Value db = q.getBiasGradResult()) {
      FailureOr<int> v = addDefined(db, "db");
      if (failed(v))
        return failure();
      k.biasGrad = *v;
    }
    if (std::optional<uint64_t> ranks = q.getAmaxRanks())
      k.amaxRanks = int(*ranks);
    return push(q, std::move(k));
  }

  LogicalResult lowerQuantizeShards(tek::QuantizeShardsKernelOp q) {
    cg::ShardedQuantizeKernel k;
    k.name = q.getKernelName().str();
    for (Value s : q.getShards())
      k.shards.push_back(ids.lookup(s));
    if (std::optional<ArrayRef<int64_t>> offsets = q.getRankOffsets())
      k.rankOffsets.assign(offsets->begin(), offsets->end());
    FailureOr<int> v = addDefined(q.getResult(), "q");
    if (failed(v))
      return failure();
    const cg::Value &out = entry.values[*v];
    for (Attribute a : q.getStages()) {
      auto stage = cast<tek::StageAttr>(a);
      rt::Direction d = stage.getDirection() == Direction::rowwise
                            ? rt::Direction::Rowwise
                            : rt::Direction::Columnwise;
      k.stages.push_back({*out.scheme(d), d, *v, stage.getState().str()});
    }
    return push(q, std::move(k));
  }

  LogicalResult lowerAllGather(tek::AllGatherOp g) {
    cg::AllGatherKernel k;
    k.name = g.getKernelName().str();
    k.input = ids.lookup(g.getInput());
    k.ranks = int(g.getRanks());
    k.sendColumnwise = g.getSendColumnwise();
    FailureOr<int> v = addDefined(g.getResult(), "gathered");
    if (failed(v))
      return failure();
    k.output = *v;
    return push(g, std::move(k));
  }

  LogicalResult lowerDequantize(tek::DequantizeKernelOp d) {
    cg::DequantizeKernel k;
    k.name = d.getKernelName().str();
    k.input = ids.lookup(d.getInput());
    k.dir = toRuntime(d.getDirection());
    FailureOr<int> v = addDefined(d.getResult(), "y");
    if (failed(v))
      return failure();
    k.output = *v;
    return push(d, std::move(k));
  }

  LogicalResult lowerGemm(tek::GemmCallOp g) {
    cg::GemmKernel k;
    k.name = g.getKernelName().str();
    k.a = ids.lookup(g.getA());
    k.b = ids.lookup(g.getB());
    if (Value bias = g.getBias())
      k.bias = ids.lookup(bias);
    k.transposeA = g.getTransposeA();
    k.transposeB = g.getTransposeB();
    FailureOr<int> v = addDefined(g.getResult(), "d");
    if (failed(v))
      return failure();
    k.output = *v;
    return push(g, std::move(k));
  }

  /// The states a grouped kernel's operand quantized per expert by
  /// `scheme` in `dir` casts with: `state` resolved for the direction as a
  /// te.quantize's (rt::delayedStateName; each expert's own is
  /// rt::expertStateName of it), "" without one.
  static std::string expertStates(SchemeAttrInterface scheme, StringAttr state,
                                  Direction dir) {
    if (!scheme || !state)
      return "";
    return rt::delayedStateName(
        state.getValue().str(), scheme.getRuntimeScheme(Direction::rowwise),
        scheme.getRuntimeScheme(Direction::columnwise),
        dir == Direction::rowwise ? rt::Direction::Rowwise
                                  : rt::Direction::Columnwise);
  }

  LogicalResult lowerGroupedGemm(tek::GroupedGemmOp g) {
    cg::GroupedGemmKernel k;
    k.name = g.getKernelName().str();
    k.x = ids.lookup(g.getInput());
    k.w = ids.lookup(g.getWeight());
    k.splits = ids.lookup(g.getSplitSizes());
    k.weightColumnwise = g.getWeightColumnwise();
    if (auto s = g.getInputSchemeAttr())
      k.xScheme = s.getRuntimeScheme(Direction::rowwise);
    if (auto s = g.getWeightSchemeAttr())
      k.wScheme = s.getRuntimeScheme(
          g.getWeightColumnwise() ? Direction::columnwise : Direction::rowwise);
    k.nvfp4Codes = g.getNvfp4Codes();
    k.xState = expertStates(g.getInputSchemeAttr(), g.getInputStateAttr(),
                            Direction::rowwise);
    k.wState = expertStates(g.getWeightSchemeAttr(), g.getWeightStateAttr(),
                            g.getWeightColumnwise() ? Direction::columnwise
                                                    : Direction::rowwise);
    if (Value bias = g.getBias())
      k.bias = ids.lookup(bias);
    FailureOr<int> v = addDefined(g.getResult(), "y");
    if (failed(v))
      return failure();
    k.output = *v;
    if (Value q = g.getQuantizedResult()) {
      FailureOr<int> qv = addDefined(q, "yq");
      if (failed(qv))
        return failure();
      k.quantizedOutput = *qv;
    }
    return push(g, std::move(k));
  }

  LogicalResult lowerGroupedWgrad(tek::GroupedWgradOp g) {
    cg::GroupedWgradKernel k;
    k.name = g.getKernelName().str();
    k.dy = ids.lookup(g.getGradOutput());
    k.x = ids.lookup(g.getInput());
    k.splits = ids.lookup(g.getSplitSizes());
    k.dyScheme =
        g.getGradOutputScheme().getRuntimeScheme(Direction::columnwise);
    k.xScheme = g.getInputScheme().getRuntimeScheme(Direction::columnwise);
    k.dyState = expertStates(g.getGradOutputScheme(),
                             g.getGradOutputStateAttr(), Direction::columnwise);
    k.xState = expertStates(g.getInputScheme(), g.getInputStateAttr(),
                            Direction::columnwise);
    FailureOr<int> v = addDefined(g.getGradWeight(), "dw");
    if (failed(v))
      return failure();
    k.output = *v;
    if (Value db = g.getGradBias()) {
      FailureOr<int> b = addDefined(db, "db");
      if (failed(b))
        return failure();
      k.biasGrad = *b;
    }
    return push(g, std::move(k));
  }

  LogicalResult lowerAdam(tek::AdamKernelOp a) {
    cg::AdamKernel k;
    k.name = a.getKernelName().str();
    k.hyper.beta1 = a.getBeta1().convertToFloat();
    k.hyper.beta2 = a.getBeta2().convertToFloat();
    k.hyper.eps = a.getEps().convertToFloat();
    k.hyper.weightDecay = a.getWeightDecay().convertToFloat();
    k.hyper.adamW = a.getMode() == AdamMode::adamw;
    k.hyper.fastMath = a.getFastMath();
    k.lr = ids.lookup(a.getLr());
    k.step = ids.lookup(a.getStep());
    unsigned perParam = 3 + a.getNumQuantizedPerParam();
    for (unsigned i = 0; i < a.getNumParams(); ++i) {
      cg::AdamTensor t;
      OperandRange in = a.getTensors().slice(4 * i, 4);
      t.param = ids.lookup(in[0]);
      t.grad = ids.lookup(in[1]);
      t.expAvg = ids.lookup(in[2]);
      t.expAvgSq = ids.lookup(in[3]);
      int *outs[3] = {&t.newParam, &t.newExpAvg, &t.newExpAvgSq};
      for (unsigned r = 0; r < perParam; ++r) {
        FailureOr<int> v =
            addDefined(a.getResult(perParam * i + r), r < 3 ? "p" : "q");
        if (failed(v))
          return failure();
        if (r < 3)
          *outs[r] = *v;
        else
          t.quantized.push_back(*v);
      }
      k.tensors.push_back(std::move(t));
    }
    for (Attribute attr : a.getStages()) {
      auto stage = cast<tek::StageAttr>(attr);
      bool row = stage.getDirection() == Direction::rowwise;
      const cg::Value &q =
          entry.values[k.tensors[0].quantized[stage.getResult()]];
      k.stages.push_back({row ? *q.rowwise : *q.columnwise,
                          toRuntime(stage.getDirection()),
                          int(stage.getResult())});
    }
    return push(a, std::move(k));
  }

  LogicalResult lowerReturn(func::ReturnOp ret) {
    for (Value v : ret.getOperands()) {
      auto it = ids.find(v);
      if (it == ids.end())
        return ret.emitError(
            "returns a value the generated code does not hold");
      entry.results.push_back(it->second);
      auto name = fn.getResultAttrOfType<StringAttr>(
          entry.results.size() - 1, TeDialect::kPersistentAttrName);
      entry.resultPersistent.push_back(name ? name.str() : "");
    }
    return success();
  }

  LogicalResult lower(Operation &op) {
    return llvm::TypeSwitch<Operation *, LogicalResult>(&op)
        .Case([&](tek::QuantizeKernelOp q) { return lowerQuantize(q); })
        .Case([&](tek::DequantizeKernelOp d) { return lowerDequantize(d); })
        .Case([&](tek::GemmCallOp g) { return lowerGemm(g); })
        .Case([&](tek::GroupedGemmOp g) { return lowerGroupedGemm(g); })
        .Case([&](tek::GroupedWgradOp g) { return lowerGroupedWgrad(g); })
        .Case([&](tek::AdamKernelOp a) { return lowerAdam(a); })
        .Case([&](tek::AllGatherOp g) { return lowerAllGather(g); })
        .Case([&](tek::QuantizeShardsKernelOp q) {
          return lowerQuantizeShards(q);
        })
        .Case([&](func::ReturnOp r) { return lowerReturn(r); })
        .Default([](Operation *other) {
          return other->emitError()
                 << "code generation reads the kernel level (tek); '"
                 << other->getName()
                 << "' was not lowered (run te-lower-to-kernels)";
        });
  }

  func::FuncOp fn;
  cg::Entry entry;
  llvm::DenseMap<Value, int> ids;
};

} // namespace

FailureOr<cg::Program> lowerToProgram(ModuleOp module) {
  cg::Program program;
  if (auto target = module->getAttrOfType<TargetAttr>("te.target"))
    program.arch = target.getArch().str();
  program.target = rt::Target::forArch(program.arch);
  bool ok = true;
  module.walk([&](func::FuncOp fn) {
    if (fn.isExternal())
      return;
    FailureOr<cg::Entry> e = EntryLowering(fn).run();
    if (failed(e)) {
      ok = false;
      return;
    }
    program.entries.push_back(std::move(*e));
  });
  if (!ok)
    return failure();
  return program;
}

} // namespace mlir::te
