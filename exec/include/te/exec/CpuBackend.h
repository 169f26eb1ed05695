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

namespace te::exec {

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
runCpu(const cg::Program &p, const cg::Entry &e,
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
std::vector<CarriedState> carriedState(const cg::Entry &e);
/// The argument holding the optimizer step count, or -1 (also when it is
/// persistent: then the entries of the session own its value).
int stepArgument(const cg::Entry &e);

} // namespace te::exec

#endif // TE_EXEC_CPUBACKEND_H
