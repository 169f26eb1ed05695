//===- te/exec/BackendSession.h - Calls on one or both backends -*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//
//
// A sequence of calls of a program's entries as one session, on the CPU
// backend, the CUDA backend or both: persistent values (te.persistent) live
// in each backend's store between calls, optimizer state an entry updates
// becomes its next call's arguments (carriedState), the step argument counts
// up, and with both backends every call's results are compared. What te-run
// --check / --steps / --entry a,b,c do, as a library.
//
//===----------------------------------------------------------------------===//

#ifndef TE_EXEC_BACKENDSESSION_H
#define TE_EXEC_BACKENDSESSION_H

#include "te/exec/Compare.h"
#include "te/exec/CpuBackend.h"
#include "te/exec/CudaRunner.h"

#include <map>
#include <optional>

namespace te::exec {

class BackendSession {
public:
  /// `device` (null: no CUDA backend) and `cache` must outlive the session;
  /// so must `program`. At least one backend.
  static rt::Expected<BackendSession> create(const cg::Program &program,
                                             bool cpu, const rt::Device *device,
                                             rt::KernelCache *cache);

  bool runsCpu() const { return cpu_; }
  /// Hears of every kernel of every CPU call (runCpu's `progress`).
  void setCpuProgress(CpuProgressFn progress) {
    cpuProgress_ = std::move(progress);
  }
  bool runsCuda() const { return device_ != nullptr; }
  /// The job's ranks (neither owned; both must outlive the session), for
  /// entries that gather or reduce across them: `host` connects the CPU
  /// backends, `comm` the devices (null without CUDA).
  void setRanks(rt::HostCollective *host, rt::Communicator *comm) {
    host_ = host;
    comm_ = comm;
  }

  /// The arguments of entry `e` (host bytes, argument order; empty for a
  /// persistent quantized argument, which the store provides). Given once
  /// per entry before its first call; the session then carries them.
  void setArguments(const cg::Entry &e,
                    std::vector<std::vector<uint8_t>> arguments);

  /// What one call returned on each backend that ran it, and (with both)
  /// their comparison. After a mismatch the session's state is undefined.
  struct Call {
    std::vector<ValueData> cpu, cuda;
    /// The delayed-scaling states the call updated (cg::scalingStates
    /// order, named in `states`), as each backend holds them afterwards;
    /// compared like results.
    std::vector<std::string> states;
    std::vector<ValueData> cpuStates, cudaStates;
    std::optional<Comparison> comparison;
    bool ranCuda = false;
    /// The CUDA results if CUDA ran, else the CPU's.
    const std::vector<ValueData> &primary() const {
      return ranCuda ? cuda : cpu;
    }
    const std::vector<ValueData> &primaryStates() const {
      return ranCuda ? cudaStates : cpuStates;
    }
  };
  /// Calls `e`. Its first call on CUDA creates the entry's runner, poisons
  /// its outputs and uploads its arguments; later calls upload only the
  /// step, which counts up per call. A persistent value that agrees only
  /// within a GEMM bound is replaced on the device by the CPU's bytes, so
  /// later calls compare bit for bit.
  rt::Expected<Call> call(const cg::Entry &e);

  /// Goes on with `next` (the same module compiled with other recipes;
  /// it must outlive the session): persistent values `next` stores
  /// differently are re-quantized from their masters on each backend
  /// (RecipeSwitch.h) - compared with each other when both run - and the
  /// entries' arguments carry over by name. Returns what was re-quantized
  /// (value, master) and, with both backends, the comparison.
  struct Switch {
    std::vector<std::pair<std::string, std::string>> requantized;
    std::optional<Comparison> comparison;
  };
  rt::Expected<Switch> switchProgram(const cg::Program &next);

  /// Every comparison so far, added up.
  const Comparison &total() const { return total_; }
  /// The CUDA runner of `e` (null before its first call or without CUDA).
  CudaRunner *runner(const cg::Entry &e);
  /// The stream CUDA work runs on (null without CUDA).
  const rt::Stream *stream() const { return stream_ ? &*stream_ : nullptr; }

private:
  BackendSession() = default;
  struct PerEntry {
    std::vector<std::vector<uint8_t>> args;
    /// CPU: which arguments came from inexact (GEMM-derived) values.
    std::vector<bool> inexact;
    int calls = 0;
    std::optional<CudaRunner> runner;
  };

  const cg::Program *program_ = nullptr;
  bool cpu_ = false;
  const rt::Device *device_ = nullptr;
  rt::KernelCache *cache_ = nullptr;
  std::optional<rt::Stream> stream_;
  HostStore hostStore_;
  CpuProgressFn cpuProgress_;
  rt::HostCollective *host_ = nullptr;
  rt::Communicator *comm_ = nullptr;
  /// Shared by the runners: kept at one address (they point into it).
  std::unique_ptr<DeviceStore> deviceStore_;
  std::map<const cg::Entry *, PerEntry> entries_;
  Comparison total_;
};

} // namespace te::exec

#endif // TE_EXEC_BACKENDSESSION_H
