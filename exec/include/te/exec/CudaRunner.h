//===- te/exec/CudaRunner.h - Run an entry on buffers it owns ---*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//
//
// The CUDA backend as te-run and the tests use it: a DeviceEntry that owns
// every buffer, with host-byte arguments and results named as the CPU
// backend names them, so the two compare directly (Compare.h).
//
//===----------------------------------------------------------------------===//

#ifndef TE_EXEC_CUDARUNNER_H
#define TE_EXEC_CUDARUNNER_H

#include "te/exec/CpuBackend.h"
#include "te/exec/DeviceEntry.h"

namespace te::exec {

class CudaRunner {
public:
  /// Plans `e`, compiles its kernels and allocates every buffer (persistent
  /// values in `store`, when given: see DeviceEntry::create).
  static rt::Expected<CudaRunner>
  create(const cg::Program &p, const cg::Entry &e, const rt::Device &device,
         rt::KernelCache &cache, DeviceStore *store = nullptr);
  /// The same with the caller's plan of `e` (buildEntryPlan's, perhaps
  /// changed: a test shrinks a launch's grid).
  static rt::Expected<CudaRunner> create(const cg::Program &p,
                                         const cg::Entry &e, cg::EntryPlan plan,
                                         const rt::Device &device,
                                         rt::KernelCache &cache,
                                         DeviceStore *store = nullptr);

  /// Uploads argument i (exactly its byte size). A persistent argument's
  /// bytes go to the store, which then holds the value.
  rt::Status setArgument(size_t i, const std::vector<uint8_t> &bytes,
                         const rt::Stream &s);
  rt::Status run(const rt::Stream &s) { return entry_.run(s); }
  /// See DeviceEntry::setCommunicator.
  void setCommunicator(rt::Communicator *comm) { entry_.setCommunicator(comm); }
  /// Copies each carried value into its argument's buffer (on the device).
  rt::Status carry(const std::vector<CarriedState> &state, const rt::Stream &s);
  rt::Status capture(const rt::Stream &s) { return entry_.capture(s); }
  rt::Status replay(const rt::Stream &s) { return entry_.replay(s); }
  /// Runs kernel `i` of the entry alone (for timing).
  rt::Status runKernel(size_t i, const rt::Stream &s) {
    return entry_.runKernel(i, s);
  }
  /// Runs steps [first, end) of kernel `i`'s plan alone (for timing).
  rt::Status runKernelSteps(size_t i, size_t first, size_t end,
                            const rt::Stream &s) {
    return entry_.runKernelSteps(i, first, end, s);
  }
  size_t numKernels() const { return entry_.numKernels(); }
  const cg::KernelPlan &kernelPlan(size_t i) const {
    return entry_.plan().kernels[i];
  }
  /// Fills every buffer holding no input with `byte` (poisons outputs).
  rt::Status poison(uint8_t byte, const rt::Stream &s);
  /// Copies the results back (synchronises `s`).
  rt::Expected<std::vector<ValueData>> results(const rt::Stream &s);

private:
  CudaRunner(DeviceEntry entry, DeviceStore *store)
      : entry_(std::move(entry)), store_(store) {}
  DeviceEntry entry_;
  DeviceStore *store_;
};

} // namespace te::exec

#endif // TE_EXEC_CUDARUNNER_H
