//===- te/exec/CpuBackend.h - Run an entry on the CPU -----------*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//
//
// The reference backend of a kernel-level Entry: every kernel computed with
// the plain-C++ reference numerics (te::rt::ref), no GPU needed. Arguments
// are raw host bytes; every result comes back as its storage buffers, byte
// for byte as docs/Numerics.md lays them out, so they compare directly with
// the CUDA backend's (Compare.h).
//
//===----------------------------------------------------------------------===//

#ifndef TE_EXEC_CPUBACKEND_H
#define TE_EXEC_CPUBACKEND_H

#include "te/exec/Persistent.h"
#include "te/exec/ValueData.h"
#include "te/runtime/Collective.h"

#include <functional>

namespace te::exec {

/// Every tensor value's final bytes after runCpu (by value index; empty
/// for quantized values), and whether each was computed from a library
/// GEMM's output (so another backend's copy may differ).
struct CpuState {
  std::vector<std::vector<uint8_t>> tensors;
  std::vector<bool> inexact;
};

/// What runCpu reports before each kernel (kernel < kernels) and once when
/// the call is done (kernel == kernels). The library prints nothing itself:
/// a tool decides what to show (te-run prints a line per kernel once a call
/// runs long).
struct CpuProgress {
  const cg::Entry *entry = nullptr;
  size_t kernel = 0, kernels = 0;
  /// The kernel's name and size, e.g. "te_gemm_2 (1024x1024x1024)"; empty
  /// when done.
  std::string what;
  /// Seconds since the call began.
  double elapsed = 0;
};
using CpuProgressFn = std::function<void(const CpuProgress &)>;

/// The bytes the CPU backend holds at most while running `e` once: every
/// value's storage (rt::storageFor for quantized values), the caller's
/// argument and result copies, GEMM bounds, and the largest kernel's fp32
/// working copies. An estimate, rounded up.
uint64_t cpuMemoryBytes(const cg::Program &p, const cg::Entry &e);
/// Host memory available now (MemAvailable, capped by a cgroup limit); 0
/// when unknown.
uint64_t availableHostMemory();
/// Unsupported ("the CPU backend needs N GiB for 'e' (M GiB available)")
/// when cpuMemoryBytes exceeds availableHostMemory; ok otherwise or when
/// the available memory is unknown.
rt::Status checkCpuMemory(const cg::Program &p, const cg::Entry &e);
/// "N.N GiB".
std::string formatGiB(uint64_t bytes);

/// Runs `e` with the reference numerics. `args[i]` holds the raw bytes of
/// argument i (row-major, little-endian, its dtype). `inexactArgs` (if
/// given) marks arguments that came from inexact values of an earlier call
/// (carried optimizer state): what is computed from them is not compared.
/// With `state`, also every tensor value's final bytes. With `store`, a
/// persistent argument the store holds is read from it (`args[i]` may be
/// empty) and every persistent result is written to it; a persistent
/// tensor argument it does not hold yet is initialised from `args[i]`.
/// Refuses up front what does not fit in memory (checkCpuMemory) and
/// returns an allocation failure as a Status. `progress`, if set, hears of
/// every kernel. `collective` connects the ranks of a job for the kernels
/// that work on row shards (all-gathers, quantizes with a rank amax); an
/// entry with such kernels fails without one.
rt::Expected<std::vector<ValueData>>
runCpu(const cg::Program &p, const cg::Entry &e,
       const std::vector<std::vector<uint8_t>> &args, CpuState *state = nullptr,
       const std::vector<bool> *inexactArgs = nullptr,
       HostStore *store = nullptr, const CpuProgressFn &progress = {},
       rt::HostCollective *collective = nullptr);

/// Optimizer state an entry carries from one call to the next: after a
/// call, value `value` (a new parameter or moment) becomes argument
/// `argument` (the parameter or moment it updates). Persistent arguments
/// are not listed: the session's store carries them.
struct CarriedState {
  size_t argument;
  int value;
};
std::vector<CarriedState> carriedState(const cg::Entry &e);
/// The argument holding the optimizer step count, or -1 (also when it is
/// persistent: then the entries of the session own its value).
int stepArgument(const cg::Entry &e);

} // namespace te::exec

#endif // TE_EXEC_CPUBACKEND_H
