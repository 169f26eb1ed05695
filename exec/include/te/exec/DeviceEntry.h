//===- te/exec/DeviceEntry.h - One entry's plan on a device -----*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//
//
// The one place an entry runs on a GPU: its plan built (PlanBuilder.h), its
// kernels compiled through the kernel cache, one PlanExecutor per kernel,
// its buffers bound - the caller's where it says so, a session's store for
// persistent values, the entry's own allocations for everything else. The
// host API's Executable (caller-owned buffers) and the CudaRunner (owns
// every buffer: te-run, tests) are thin layers over it.
//
//===----------------------------------------------------------------------===//

#ifndef TE_EXEC_DEVICEENTRY_H
#define TE_EXEC_DEVICEENTRY_H

#include "te/codegen/PlanBuilder.h"
#include "te/exec/Persistent.h"
#include "te/runtime/Collective.h"
#include "te/runtime/Device.h"
#include "te/runtime/KernelCache.h"

#include <memory>

namespace te::exec {

/// NVRTC-compiles every kernel of `e` through `cache` (no GPU needed), on
/// all host cores at once (KernelCache::compileAll). Returns the number of
/// distinct kernel sources.
rt::Expected<size_t> compileEntry(const cg::Program &p, const cg::Entry &e,
                                  rt::KernelCache &cache,
                                  const rt::CompileProgressFn &progress = {});
/// The same for several entries at once (a session's warm-up).
rt::Expected<size_t> compileEntries(
    const cg::Program &p, const std::vector<const cg::Entry *> &entries,
    rt::KernelCache &cache, const rt::CompileProgressFn &progress = {});

class DeviceEntry {
public:
  /// Loads the kernels of `plan` (buildEntryPlan(p, e)). Plan buffers marked in
  /// `callerBound` (indexed by plan buffer; may be empty) are the caller's to
  /// bind(); with `store` (which must outlive the entry) persistent arguments
  /// and results use the store's buffers - updated in place where the kernel
  /// allows it (an optimizer's parameter and moments), else written to a
  /// buffer of the entry and copied into the store at the end of run() -
  /// and the entry allocates every other buffer.
  static rt::Expected<DeviceEntry>
  create(const cg::Program &p, const cg::Entry &e, cg::EntryPlan plan,
         const rt::Device &device, rt::KernelCache &cache, DeviceStore *store,
         const std::vector<bool> &callerBound);
  DeviceEntry(DeviceEntry &&) noexcept;
  DeviceEntry &operator=(DeviceEntry &&) noexcept;
  ~DeviceEntry();

  const cg::Entry &entry() const;
  const cg::EntryPlan &plan() const;
  const rt::Target &target() const;
  /// The device buffer behind plan buffer `b`: the entry's own or the
  /// store's; null for a caller-bound buffer.
  rt::DeviceBuffer *buffer(size_t b) const;
  /// Whether plan buffer `b` holds data the entry must not overwrite
  /// outside a run: an argument's, the caller's or a store's.
  bool holdsInput(size_t b) const;

  /// Binds caller memory to plan buffer `b` in every kernel's executor.
  rt::Status bind(size_t b, uint64_t ptr, uint64_t bytes);
  /// Runs every kernel in order, then copies results into the store. Fails
  /// if a persistent argument is not held by the store yet.
  rt::Status run(const rt::Stream &s);
  /// Runs kernel `i` alone (for timing).
  rt::Status runKernel(size_t i, const rt::Stream &s);
  /// Runs steps [first, end) of kernel `i`'s plan alone (for timing).
  rt::Status runKernelSteps(size_t i, size_t first, size_t end,
                            const rt::Stream &s);
  /// Records run()'s kernels into a CUDA graph (no work runs); replay()
  /// launches it. Arguments may change between replays (the graph holds
  /// addresses), so an optimizer step replays with a new lr and step.
  rt::Status capture(const rt::Stream &s);
  rt::Status replay(const rt::Stream &s);
  size_t numKernels() const;
  /// The communicator of the job's ranks for kernels that gather or reduce
  /// across them (not owned; it must outlive the entry's runs).
  void setCommunicator(rt::Communicator *comm);

private:
  DeviceEntry();
  struct State;
  std::unique_ptr<State> state_;
};

} // namespace te::exec

#endif // TE_EXEC_DEVICEENTRY_H
