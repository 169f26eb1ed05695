//===- LegalizeTarget.cpp - te-legalize-target ----------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The target-dependent decisions of the graph level, made once: which
// storage layout the target forces (through the module's te.target), which
// schemes it cannot hold, and which GEMMs have a native kernel. Later passes
// read these decisions instead of re-deriving them.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialect/te/TeOps.h"
#include "dialect/te/TeOpsSupport.h"
#include "te/formats/GemmRules.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "te-legalize-target"

namespace mlir::te {
#define GEN_PASS_DEF_TELEGALIZETARGETPASS
#include "passes/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;
namespace rt = ::te::rt;

static constexpr StringLiteral kTargetAttrName = "te.target";

/// The first FP8 scheme among the stored directions of `type`, if any.
static SchemeAttrInterface fp8SchemeOf(QTensorType type) {
  for (Direction d : {Direction::rowwise, Direction::columnwise})
    if (type.hasDirection(d) &&
        rt::isFp8(type.getScheme().getRuntimeScheme(d).element))
      return type.getScheme().getDirectionScheme(d);
  return {};
}

/// How `gemm` runs on an sm_`sm` GPU. Operand pairing was verified.
static GemmPath pathOf(GemmOp gemm, int sm) {
  std::optional<rt::Scheme> scheme;
  rt::GemmOperand operands[2];
  for (unsigned i = 0; i < 2; ++i)
    if (auto q = dyn_cast<QTensorType>(gemm->getOperand(i).getType())) {
      Direction d = gemm.getOperandDirection(i);
      operands[i] = {q.getScheme().getRuntimeScheme(d), toRuntime(d)};
      if (!scheme || scheme->kind == rt::SchemeKind::Identity)
        scheme = operands[i].scheme;
    }
  // Two families: no kernel of any target reads the pair as stored.
  if (rt::gemmMixesFamilies(operands[0], operands[1]))
    return GemmPath::emulated;
  if (!scheme || scheme->kind == rt::SchemeKind::Identity ||
      scheme->isPerTensor())
    return GemmPath::cublaslt;
  switch (scheme->kind) {
  case rt::SchemeKind::Fp8Block:
    return sm == 90 ? GemmPath::cublaslt : GemmPath::emulated;
  case rt::SchemeKind::Mxfp8:
  case rt::SchemeKind::Nvfp4:
    return sm >= 100 ? GemmPath::cublaslt : GemmPath::emulated;
  default:
    return GemmPath::cublaslt;
  }
}

/// How the grouped GEMM `op` runs on Hopper: `generated` where the engine's
/// kernel reads its operands as stored, `emulated` where they are
/// dequantized first. MXFP8 x MXFP8 (the fprop) is a choice, made by
/// comparing the two on measured H100 rates (docs/Performance.md, "A
/// generated MXFP8 GEMM"): the MXFP8 kernel at ~410 TFLOP/s, against the
/// bf16 kernel at ~700 plus dequantizing x and the whole stack at ~2.8 TB/s
/// (1 byte read, 2 written an element). Dequantizing wins with many tokens
/// per expert, the direct kernel where the stack's pass dominates (below
/// ~600 tokens per expert at N = 4096).
/// The same choice for the fprop whose operands the op quantizes per expert
/// by NVFP4: the NVFP4 kernel on their codes (~440 TFLOP/s at 256-wide
/// tiles, docs/Performance.md "A generated NVFP4 GEMM") against the bf16
/// kernel on their values, which the quantize writes as 2 bytes an element
/// instead of 0.5625 (codes and block scales; both read the same bf16 and
/// take the same amax passes, so only the write differs): the model puts
/// the tie near 330 tokens per expert at N = 4096, K = 7168, where the
/// whole op measured a tie at 256 (codes 1.18x faster at 64).
/// `mxfp8`, `nvfp4` (the pass's grouped-mxfp8 and grouped-nvfp4 options):
/// "auto", "direct" or "dequantize".
static GemmPath groupedPathOf(GroupedGemmOp op, StringRef mxfp8,
                              StringRef nvfp4) {
  Type x = op.getInput().getType(), w = op.getWeight().getType();
  Direction wDir = op.getWeightDirection();
  auto choose = [](StringRef option, double direct, double dequantized) {
    if (option != "auto")
      return option == "direct" ? GemmPath::generated : GemmPath::emulated;
    return direct < dequantized ? GemmPath::generated : GemmPath::emulated;
  };
  constexpr double kBf16Flops = 700e12, kDequantBytes = 2.8e12;
  // Shapes of the tokens [M, K] and the stack [G, N, K].
  ArrayRef<int64_t> xs = mlir::te::detail::shapeOf(x),
                    ws = mlir::te::detail::shapeOf(w);
  const double m = double(xs[0]), k = double(xs[1]), g = double(ws[0]),
               n = double(ws[1]);
  const double flops = 2 * m * n * k;
  if (op.getInputSchemeAttr() || op.getWeightSchemeAttr()) {
    auto [xq, wq] = GroupedGemmOp::perExpertSchemes(op.getInputSchemeAttr(),
                                                    op.getWeightSchemeAttr(),
                                                    op.getWeightColumnwise());
    if (::te::rt::groupedPerExpertReadsCodes(xq, wq))
      return GemmPath::generated; // per-tensor FP8: the block-scaled kernel
    // Values on the BF16 kernel, or NVFP4 x NVFP4 codes where readable.
    if (!op.nvfp4CodesReadable())
      return GemmPath::emulated;
    constexpr double kNvfp4Flops = 440e12, kValueBytes = 2.0 - 0.5625;
    return choose(nvfp4, flops / kNvfp4Flops,
                  flops / kBf16Flops +
                      kValueBytes * (m * k + g * n * k) / kDequantBytes);
  }
  if (!GroupedGemmOp::engineReads(x, w, wDir))
    return GemmPath::emulated;
  if (!GroupedGemmOp::bothMxfp8(x, w, wDir))
    return GemmPath::generated;
  constexpr double kMxfp8Flops = 410e12;
  return choose(mxfp8, flops / kMxfp8Flops,
                flops / kBf16Flops + 3 * (m * k + g * n * k) / kDequantBytes);
}

namespace {
struct TeLegalizeTargetPass
    : mlir::te::impl::TeLegalizeTargetPassBase<TeLegalizeTargetPass> {
  using TeLegalizeTargetPassBase::TeLegalizeTargetPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    std::string archName = arch;
    auto target = TargetAttr::getChecked(
        [&] { return module.emitError() << "te-legalize-target: "; }, ctx,
        StringRef(archName));
    if (!target)
      return signalPassFailure();
    if (auto existing = module->getAttrOfType<TargetAttr>(kTargetAttrName);
        existing && existing != target) {
      module.emitError() << "module was legalized for " << existing.getArch()
                         << " and cannot be legalized "
                         << "again for " << target.getArch();
      return signalPassFailure();
    }
    module->setAttr(kTargetAttrName, target);
    int sm = target.getSmVersion();
    for (auto [name, value] :
         {std::pair<StringRef, StringRef>{"grouped-mxfp8", groupedMxfp8},
          {"grouped-nvfp4", groupedNvfp4}})
      if (value != "auto" && value != "direct" && value != "dequantize") {
        mlir::emitError(module.getLoc())
            << "te-legalize-target: " << name
            << " is auto, direct or dequantize, not '" << value << "'";
        return signalPassFailure();
      }

    bool failed = false;
    module.walk([&](Operation *op) {
      for (Type t : op->getResultTypes()) {
        auto q = dyn_cast<QTensorType>(t);
        SchemeAttrInterface fp8 = q ? fp8SchemeOf(q) : SchemeAttrInterface();
        if (fp8 && sm < 89) {
          op->emitError() << "scheme " << fp8 << " needs FP8 (sm_89 or "
                          << "newer), but the target is " << target.getArch();
          failed = true;
        }
      }
      if (auto grouped = dyn_cast<GroupedGemmOp>(op)) {
        if (sm != 90) {
          op->emitError() << "te.grouped_gemm runs on the GEMM engine's "
                             "Hopper kernel (sm_90a) only, but the target is "
                          << target.getArch();
          failed = true;
        } else {
          GemmPath path = groupedPathOf(grouped, groupedMxfp8, groupedNvfp4);
          LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] te.grouped_gemm at "
                                  << grouped.getLoc() << ": "
                                  << stringifyGemmPath(path) << "\n");
          grouped.setPathAttr(GemmPathAttr::get(ctx, path));
        }
      }
      if (auto gemm = dyn_cast<GemmOp>(op)) {
        GemmPath path = pathOf(gemm, sm);
        LLVM_DEBUG(llvm::dbgs()
                   << "[" DEBUG_TYPE "] te.gemm at " << gemm.getLoc() << ": "
                   << stringifyGemmPath(path) << " on " << target.getArch()
                   << "\n");
        gemm.setPathAttr(GemmPathAttr::get(ctx, path));
      }
    });
    if (failed)
      signalPassFailure();
  }
};
} // namespace
