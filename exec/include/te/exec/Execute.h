//===- te/codegen/Execute.h - Run an entry on the CPU or the GPU -*- C++
//-*-===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//
//
// The two backends of a kernel-level Entry. Both take the arguments as raw
// host bytes and return every result as its storage buffers, named as
// te-run dumps them ("data" for a tensor; "rowwise.data",
// "columnwise.scale_inv", ... for a quantized tensor), byte for byte as
// docs/Numerics.md §2 lays them out, so results of the two compare directly.
//  * runCpu: the reference numerics (te::rt::ref), no GPU needed.
//  * CudaRunner: generated kernels (NVRTC, kernel cache) and runtime Plans
//    on device buffers it owns; runs the entry or times one kernel.
//
//===----------------------------------------------------------------------===//

#ifndef TE_CODEGEN_EXECUTE_H
#define TE_CODEGEN_EXECUTE_H

#include "te/codegen/Persistent.h"
#include "te/codegen/PlanBuilder.h"
#include "te/runtime/Device.h"
#include "te/runtime/KernelCache.h"

#include <memory>

namespace te::cg {

/// Every tensor value's final bytes after runCpu (by value index; empty
/// for quantized values), and whether each was computed from a library
/// GEMM's output (so another backend's copy may differ).
struct CpuState {
  std::vector<std::vector<uint8_t>> tensors;
  std::vector<bool> inexact;
};

/// Runs `e` with the reference numerics. `args[i]` holds the raw bytes of
/// argument i (row-major, little-endian, its dtype). `inexactArgs` (if
/// given) marks arguments that came from inexact values of an earlier call
/// (carried optimizer state): what is computed from them is not compared.
/// With `state`, also every tensor value's final bytes. With `store`, a
/// persistent argument the store holds is read from it (`args[i]` may be
/// empty) and every persistent result is written to it; a persistent
/// tensor argument it does not hold yet is initialised from `args[i]`.
rt::Expected<std::vector<ValueData>>
runCpu(const Program &p, const Entry &e,
       const std::vector<std::vector<uint8_t>> &args, CpuState *state = nullptr,
       const std::vector<bool> *inexactArgs = nullptr,
       HostStore *store = nullptr);

/// Optimizer state an entry carries from one call to the next: after a
/// call, value `value` (a new parameter or moment) becomes argument
/// `argument` (the parameter or moment it updates). Persistent arguments
/// are not listed: the session's store carries them.
struct CarriedState {
  size_t argument;
  int value;
};
std::vector<CarriedState> carriedState(const Entry &e);
/// The argument holding the optimizer step count, or -1 (also when it is
/// persistent: then the entries of the session own its value).
int stepArgument(const Entry &e);

/// NVRTC-compiles every kernel of `e` through `cache` (no GPU needed).
/// Returns the number of distinct kernel sources.
rt::Expected<size_t> compileEntry(const Program &p, const Entry &e,
                                  rt::KernelCache &cache);

class CudaRunner {
public:
  /// Plans `e`, compiles its kernels and allocates every buffer. With
  /// `store` (which must outlive the runner), persistent arguments and
  /// results use the store's buffers: a value the entry reads and writes
  /// is updated in place where the kernel allows it (an optimizer's
  /// parameter and moments), else written to a buffer of the runner and
  /// copied into the store at the end of run().
  static rt::Expected<CudaRunner> create(const Program &p, const Entry &e,
                                         const rt::Device &device,
                                         rt::KernelCache &cache,
                                         DeviceStore *store = nullptr);
  CudaRunner(CudaRunner &&) noexcept;
  CudaRunner &operator=(CudaRunner &&) noexcept;
  ~CudaRunner();

  /// Uploads argument i (exactly its byte size). A persistent argument's
  /// bytes go to the store, which then holds the value.
  rt::Status setArgument(size_t i, const std::vector<uint8_t> &bytes,
                         const rt::Stream &s);
  /// Runs every kernel in order. Fails if a persistent argument is not
  /// held by the store yet (no entry wrote it, no caller set it).
  rt::Status run(const rt::Stream &s);
  /// Copies each carried value into its argument's buffer (on the device).
  rt::Status carry(const std::vector<CarriedState> &state, const rt::Stream &s);
  /// Records run() into a CUDA graph (no work runs); replay() launches it.
  /// Arguments may change between replays (the graph holds addresses), so
  /// an optimizer step replays with a new lr and step.
  rt::Status capture(const rt::Stream &s);
  rt::Status replay(const rt::Stream &s);
  /// Runs kernel `i` of the entry alone (for timing).
  rt::Status runKernel(size_t i, const rt::Stream &s);
  size_t numKernels() const;
  const KernelPlan &kernelPlan(size_t i) const;
  /// Fills every non-argument buffer with `byte` (poisons outputs).
  rt::Status poison(uint8_t byte, const rt::Stream &s);
  /// Copies the results back (synchronises `s`).
  rt::Expected<std::vector<ValueData>> results(const rt::Stream &s);

private:
  CudaRunner();
  struct State;
  std::unique_ptr<State> state_;
};

/// The outcome of comparing two results of the same entry.
struct Comparison {
  /// The first disagreement, e.g. "result 0 rowwise.data: byte 1234
  /// (element [9, 82] of ...) cpu 0x3c cuda 0x3d"; "" when they agree.
  std::string difference;
  size_t exactBuffers = 0, boundedBuffers = 0, uncheckedBuffers = 0;
  uint64_t bytes = 0;
  /// Largest |a - b| / bound over the bounded elements (<= 1 when agreed).
  double worstBoundRatio = 0;
};

/// Compares every buffer: bit for bit, or within the tolerance either side
/// states. Elements that are NaN in both count as equal (the hardware FP8 /
/// 16-bit conversions drop the NaN sign and payload; docs/Numerics.md).
Comparison compareResults(const std::vector<ValueData> &a,
                          const std::vector<ValueData> &b, const char *nameA,
                          const char *nameB);

/// compareResults(...).difference.
std::string firstDifference(const std::vector<ValueData> &a,
                            const std::vector<ValueData> &b, const char *nameA,
                            const char *nameB);

} // namespace te::cg

#endif // TE_CODEGEN_EXECUTE_H
