//===- te/runtime/Plan.h - what the compiler hands the runtime --*- C++ -*-===//
//
// Part of tejit. Plain C++17: the compiler builds a Plan, the runtime runs
// it; neither side includes the other's headers.
//
//===----------------------------------------------------------------------===//
//
// A Plan is an ordered list of steps - kernel launches and cuBLASLt GEMMs -
// over numbered buffers. Buffers are either external (the caller binds its
// own device memory: inputs, outputs, persistent state) or internal (the
// executor allocates them once). Everything a step needs is in the plan, so
// a plan can be serialised, cached, and captured into a CUDA graph.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_PLAN_H
#define TE_RUNTIME_PLAN_H

#include "te/runtime/BlasLt.h"
#include "te/runtime/Collective.h"
#include "te/runtime/Device.h"
#include "te/runtime/KernelCache.h"
#include "te/runtime/TensorMap.h"

#include <string>
#include <vector>

namespace te::rt {

/// A device address inside a plan buffer.
struct BufferRef {
  int32_t buffer = -1; ///< -1: null pointer
  uint64_t offset = 0; ///< bytes
  bool operator==(const BufferRef &o) const {
    return buffer == o.buffer && offset == o.offset;
  }
};

/// One kernel argument. A Table is one by-value parameter of 8-byte words
/// (`struct { unsigned long long w[N]; }` declared __grid_constant__ in the
/// kernel), one word per item (pointers resolved, integers and floats in
/// the low bytes): how a multi-tensor kernel receives every tensor's
/// buffers in one launch. Items are not Tables. A TensorMap is a Hopper
/// TMA descriptor (a `const __grid_constant__ CUtensorMap` parameter) over
/// `pointer` with `map`'s geometry; the executor encodes it once the
/// buffers are bound, since the caller's addresses change between calls.
/// A Rank is an I32 the executor fills with this process's rank in the job
/// (its communicator's; 0 without one): what one process per rank needs to
/// know which part of the work is its own.
struct ArgDesc {
  enum class Kind : uint8_t { Pointer, I32, I64, F32, Table, TensorMap, Rank };
  Kind kind = Kind::I32;
  BufferRef pointer;          ///< Kind::Pointer, Kind::TensorMap (its base)
  int64_t i = 0;              ///< I32 / I64
  float f = 0;                ///< F32
  std::vector<ArgDesc> items; ///< Kind::Table
  TensorMapShape map;         ///< Kind::TensorMap

  static ArgDesc ptr(int32_t buffer, uint64_t offset = 0) {
    ArgDesc a;
    a.kind = Kind::Pointer;
    a.pointer = {buffer, offset};
    return a;
  }
  static ArgDesc i32(int32_t v) { return {Kind::I32, {}, v, 0, {}}; }
  static ArgDesc i64(int64_t v) { return {Kind::I64, {}, v, 0, {}}; }
  static ArgDesc f32(float v) { return {Kind::F32, {}, 0, v, {}}; }
  static ArgDesc rank() { return {Kind::Rank, {}, 0, 0, {}}; }
  static ArgDesc table(std::vector<ArgDesc> items) {
    return {Kind::Table, {}, 0, 0, std::move(items)};
  }
  static ArgDesc tensorMap(int32_t buffer, const TensorMapShape &shape) {
    ArgDesc a;
    a.kind = Kind::TensorMap;
    a.pointer = {buffer, 0};
    a.map = shape;
    return a;
  }
  bool operator==(const ArgDesc &o) const {
    return kind == o.kind && pointer == o.pointer && i == o.i && f == o.f &&
           items == o.items && map == o.map;
  }
};

/// The largest Table a launch may pass: CUDA's 32764 bytes of kernel
/// parameters (sm_70+, CUDA 12.1+), less room for the other arguments.
constexpr size_t kMaxTableWords = 4000;

struct KernelSpec {
  std::string name;   ///< for diagnostics and benchmarks
  std::string entry;  ///< extern "C" symbol
  std::string source; ///< CUDA C++ (may include te/device/*.cuh)
  CompileOptions options;
  Dim3 grid, block;
  uint32_t sharedBytes = 0;
  std::vector<ArgDesc> args;
  /// CTAs per thread-block cluster (Hopper); 1 x 1 x 1: no clusters.
  Dim3 cluster;
  /// A persistent kernel: grid.x is replaced, where the plan runs, by one
  /// CTA per SM (fewer when fewer clusters fit: Kernel::persistentGrid).
  bool persistent = false;
  /// Launched to overlap the kernel before it (Kernel::launch): its source
  /// waits for that kernel before reading what it writes.
  bool overlapsPredecessor = false;
};

/// A GemmProblem whose pointers are plan buffers.
struct GemmCall {
  GemmProblem problem; ///< pointer fields ignored; see the refs below
  BufferRef a, aScale, b, bScale, out, bias;

  /// The problem as BlasLt::validate and describe see it: no pointers, but
  /// a non-zero `bias` when the call has one.
  GemmProblem shape() const {
    GemmProblem p = problem;
    p.a.data = p.a.scaleInv = p.b.data = p.b.scaleInv = p.out = 0;
    p.bias = bias.buffer >= 0 ? 1 : 0;
    return p;
  }
};

/// A collective over the ranks of the job, through the Communicator the
/// executor is given (PlanExecutor::setCommunicator). AllGather: `bytes`
/// at `send` from each rank land in rank order at `recv`; AllReduceMax:
/// the `bytes / 4` floats at `send` become their maximum over the ranks,
/// in place (`recv` unused); AllReduceBytesSum / AllReduceBytesMax: the
/// same with the `bytes` bytes at `send` as unsigned 8-bit integers
/// (merging what ranks wrote into zeroed buffers: a sum where each bit has
/// one writer, a maximum where every writer writes the same byte).
struct CollectiveCall {
  enum class Kind : uint8_t {
    AllGather,
    AllReduceMax,
    AllReduceBytesSum,
    AllReduceBytesMax
  };
  Kind kind = Kind::AllGather;
  int32_t ranks = 1; ///< the job size the plan was built for
  BufferRef send, recv;
  uint64_t bytes = 0;
  bool operator==(const CollectiveCall &o) const {
    return kind == o.kind && ranks == o.ranks && send == o.send &&
           recv == o.recv && bytes == o.bytes;
  }
};

struct BufferDecl {
  std::string name;
  uint64_t bytes = 0;
  bool external = false; ///< bound by the caller, else allocated
};

struct Step {
  enum class Kind : uint8_t { Launch, Gemm, Fill, Collective };
  Kind kind = Kind::Launch;
  /// kernel / gemm / collective index; for Fill, the buffer
  uint32_t index = 0;
  uint8_t fillByte = 0;
};

struct Plan {
  std::vector<BufferDecl> buffers;
  std::vector<KernelSpec> kernels;
  std::vector<GemmCall> gemms;
  std::vector<CollectiveCall> collectives;
  std::vector<Step> steps;

  /// Checks indices and kinds (every reference names an existing buffer,
  /// offsets stay inside it); "" when valid.
  std::string validate() const;
  /// A versioned, binary-safe encoding.
  std::string serialize() const;
  static Expected<Plan> deserialize(const std::string &bytes);
};

/// Runs a Plan on one device: compiles and loads its kernels (through the
/// cache), allocates internal buffers, and enqueues the steps on a stream -
/// directly, or captured once into a CUDA graph and replayed.
class PlanExecutor {
public:
  static Expected<PlanExecutor> create(const Plan &plan, const Device &device,
                                       KernelCache &cache);
  PlanExecutor(PlanExecutor &&) noexcept;
  ~PlanExecutor();

  /// The communicator collective steps use (not owned; it must outlive
  /// the executor's runs and replays). A plan with collective steps fails
  /// to run without one, or with one of another size.
  void setCommunicator(Communicator *comm);

  /// Binds external buffer `index` to caller memory of at least its size.
  Status bind(uint32_t index, uint64_t devicePtr, uint64_t bytes);
  /// Enqueues every step (all external buffers must be bound).
  Status run(const Stream &s);
  /// Enqueues steps [first, end) only (for timing one launch of a plan:
  /// te-run --bench). A group of collectives is cut at the range's ends.
  Status runSteps(const Stream &s, size_t first, size_t end);
  /// Records run() into a CUDA graph (binding changes need a new capture).
  Status capture(const Stream &s);
  /// Launches the captured graph.
  Status replay(const Stream &s);

private:
  PlanExecutor() = default;
  struct State;
  std::unique_ptr<State> state_;
};

} // namespace te::rt

#endif // TE_RUNTIME_PLAN_H
