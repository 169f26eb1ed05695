//===- te/codegen/PlanBuilder.h - Entry -> runtime plans --------*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//
//
// Lowers a kernel-level Entry to runtime Plans: one buffer list for the
// whole entry (every value's storage buffers plus the workspaces: tensor
// amax, bias-gradient partial sums, delayed-scaling state) and one Plan per
// kernel of the entry (its fills and launches), so a runner can execute the
// entry in order or time each kernel on its own. Every buffer is external:
// the runner owns the memory and binds it to every Plan.
//
//===----------------------------------------------------------------------===//

#ifndef TE_CODEGEN_PLANBUILDER_H
#define TE_CODEGEN_PLANBUILDER_H

#include "te/codegen/Program.h"
#include "te/runtime/Plan.h"

namespace te::cg {

/// Plan buffer indices of one value (-1: absent).
struct ValueBuffers {
  int tensor = -1;
  struct Direction {
    int data = -1, scale = -1, amax = -1;
  } dir[2]; ///< [0] rowwise, [1] columnwise
};

/// One kernel of the entry as a Plan over the entry's buffers.
struct KernelPlan {
  std::string name;
  rt::Plan plan;
  unsigned launches = 0;
  /// Bytes every launch of the kernel reads or writes in DRAM, counted
  /// exactly: input reads (twice with an amax pre-pass), every output
  /// buffer, workspaces written and read back.
  uint64_t bytesMoved = 0;
  /// Floating-point operations of a GEMM (2 M N K), 0 for other kernels.
  uint64_t flops = 0;
  /// An all-gather: the bytes of the whole tensor every rank receives (its
  /// own shard included) over `ranks` ranks; 0 for other kernels.
  uint64_t gatheredBytes = 0;
  int ranks = 1;
  /// A GEMM: what runs it ("cuBLASLt", "generated"), and for a library
  /// GEMM on operands that dequantize kernels of the entry wrote (the
  /// emulated path of te-legalize-target), ", dequantized operands".
  std::string engine;
  /// Non-empty: no CUDA plan exists for the kernel (why: a GEMM cuBLASLt
  /// has no kernel for); `plan` is empty.
  std::string unsupported;

  /// Appends `spec` and a step launching it; returns the stored spec.
  rt::KernelSpec &addLaunch(rt::KernelSpec spec) {
    rt::Step s;
    s.kind = rt::Step::Kind::Launch;
    s.index = uint32_t(plan.kernels.size());
    plan.kernels.push_back(std::move(spec));
    plan.steps.push_back(s);
    ++launches;
    return plan.kernels.back();
  }
  /// Whether the last step launches a kernel. A launch that overlaps its
  /// predecessor (KernelSpec::overlapsPredecessor) is asked for only then:
  /// after a fill or a collective it would gain nothing.
  bool lastStepLaunches() const {
    return !plan.steps.empty() &&
           plan.steps.back().kind == rt::Step::Kind::Launch;
  }
  /// Appends a step zeroing `buffer`.
  void addFill(int buffer) {
    rt::Step s;
    s.kind = rt::Step::Kind::Fill;
    s.index = uint32_t(buffer);
    plan.steps.push_back(s);
  }
  /// Appends `c` and a step running it.
  void addCollective(const rt::CollectiveCall &c) {
    rt::Step s;
    s.kind = rt::Step::Kind::Collective;
    s.index = uint32_t(plan.collectives.size());
    plan.collectives.push_back(c);
    plan.steps.push_back(s);
  }
};

struct EntryPlan {
  std::vector<rt::BufferDecl> buffers;
  /// Initial contents the runner uploads once, before the first run, into
  /// a buffer it allocates (empty: none).
  std::vector<std::vector<uint8_t>> initial;
  std::vector<ValueBuffers> values;
  /// The plan buffers of each delayed-scaling state (ScalingState.h), in
  /// scalingStates order.
  struct StateBuffers {
    std::string name;
    int scale = -1, history = -1;
  };
  std::vector<StateBuffers> states;
  /// One per kernel of the entry, then, when it has delayed-scaling
  /// states, their update ("te_delayed_scaling_update").
  std::vector<KernelPlan> kernels;
};

/// One storage buffer of a value, named as te-run dumps it ("data" for a
/// tensor; "rowwise.data", "columnwise.scale_inv", ... for a quantized
/// value), with its element type and 2-D shape.
struct ValueStorage {
  int buffer = -1;
  std::string name;
  rt::BufferDesc desc;
};

/// Every storage buffer of value `v` in `plan`, in dump order (rowwise
/// before columnwise; data, scale_inv, amax).
std::vector<ValueStorage> valueStorage(const Entry &e, const EntryPlan &plan,
                                       int v, const rt::Target &target);

/// The plans of `e` (validate(e) must hold). Fails with the reason when a
/// kernel has no CUDA plan (a GEMM cuBLASLt cannot run), unless
/// `keepUnsupported`: then that kernel
/// gets an empty plan whose `unsupported` says why (for tools that print).
/// A GEMM becomes one cuBLASLt call (rt::GemmCall) on the storage of the
/// directions it reads: FP8 operands K-contiguous as the target stores
/// them, bf16/f16/f32 tensors in either orientation.
rt::Expected<EntryPlan> buildEntryPlan(const Program &p, const Entry &e,
                                       bool keepUnsupported = false);

} // namespace te::cg

#endif // TE_CODEGEN_PLANBUILDER_H
