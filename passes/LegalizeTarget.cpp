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
  for (unsigned i = 0; i < 2; ++i)
    if (auto q = dyn_cast<QTensorType>(gemm->getOperand(i).getType())) {
      Direction d = gemm.getOperandDirection(i);
      scheme = q.getScheme().getRuntimeScheme(d);
      if (scheme->kind != rt::SchemeKind::Identity)
        break;
    }
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
      if (isa<GroupedGemmOp>(op) && sm != 90) {
        op->emitError() << "te.grouped_gemm runs on the GEMM engine's Hopper "
                           "kernel (sm_90a) only, but the target is "
                        << target.getArch();
        failed = true;
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
