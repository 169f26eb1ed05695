//===- te/exec/Persistent.h - Values kept between calls ------*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//
//
// A program's persistent values (te.persistent on function arguments and
// results: master weights, optimizer moments, quantized weights, gradients)
// live in a store between calls of its entries, one store per backend. An
// entry reading a persistent argument reads the store's copy; an entry
// returning a persistent result writes it. The IR gives every declaration
// of one value the same type (te-infer-usage: a quantized value holds the
// union of the directions any function declares), so every entry binds the
// same buffers.
//
//===----------------------------------------------------------------------===//

#ifndef TE_EXEC_PERSISTENT_H
#define TE_EXEC_PERSISTENT_H

#include "te/codegen/PlanBuilder.h"
#include "te/exec/ValueData.h"
#include "te/runtime/Device.h"
#include "te/runtime/reference/Scales.h"

#include <map>
#include <memory>
#include <set>

namespace te::exec {

/// The persistent values (te.persistent) of a program on the CPU backend,
/// by name: what one runCpu call writes, a later call of any entry reads.
struct HostStore {
  struct Held; ///< the backend's copy of one value (CpuBackend.cpp)
  std::map<std::string, std::shared_ptr<Held>> values;
  /// Delayed-scaling states by name (te/codegen/ScalingState.h).
  struct State {
    rt::ref::DelayedScalingState state;
    /// Recorded amaxes of values computed from GEMM outputs: another
    /// backend's copy may differ.
    bool inexact = false;
  };
  std::map<std::string, State> scaling;

  bool holds(const std::string &name) const {
    return values.count(name) != 0 || scaling.count(name) != 0;
  }
  /// The storage buffers of `name` (empty if not held); a state's parts
  /// are "amax_history" and "scale".
  ValueData read(const std::string &name) const;
  /// Creates, fresh (scale 1, history 0), every delayed-scaling state of
  /// `p` not held yet.
  void declareStates(const cg::Program &p);
  /// Gives state `name` (declared) the parts `parts` ("scale" and
  /// "amax_history", each exactly its size): a checkpoint's.
  rt::Status writeState(const std::string &name, const ValueData &parts);
  /// Gives `name` the value `v` (its type) whose storage buffers are
  /// `parts`, named as read() names them (each exactly its size): a
  /// quantized value loaded from a checkpoint or another backend.
  rt::Status write(const std::string &name, const cg::Value &v,
                   const ValueData &parts, const rt::Target &target);
  /// From now on `name`'s value counts as exact: the other backend was given
  /// these very bytes, so what later calls compute from it compares bit for
  /// bit.
  void markExact(const std::string &name);
};

/// The device copies of a program's persistent values, shared by the
/// CudaRunners of its entries: each binds them in place of its own buffers,
/// so the state stays on the device between calls, and an entry that reads
/// and writes one value (an optimizer step) updates it in place.
struct DeviceStore {
  /// Storage buffers of each value by part name ("data",
  /// "rowwise.scale_inv", ...; as results name them).
  std::map<std::string,
           std::map<std::string, std::shared_ptr<rt::DeviceBuffer>>>
      values;
  /// The values holding data: written by an entry or set by the caller.
  std::set<std::string> written;

  bool holds(const std::string &name) const { return written.count(name); }
  /// Copies `data` (named as results name their buffers) into `name`'s
  /// buffers, which must exist with the same sizes.
  rt::Status upload(const std::string &name, const ValueData &data,
                    const rt::Stream &s);
};

/// A delayed-scaling state's parts as both backends return them:
/// "amax_history" (f32, history x 1) and "scale" (f32, 1 x 1).
ValueData stateValueData(std::vector<uint8_t> history,
                         std::vector<uint8_t> scale, bool inexact = false);
/// The device copy of state `name` (read on `s`, which is synchronised).
rt::Expected<ValueData> readState(const DeviceStore &store,
                                  const std::string &name, const rt::Stream &s);

/// Copies `bytes` into `buffer` on the legacy default stream and waits.
rt::Status uploadNow(rt::DeviceBuffer &buffer,
                     const std::vector<uint8_t> &bytes);

/// How one entry's plan buffers map onto a DeviceStore.
struct StoreBinding {
  /// Per plan buffer: the store's buffer standing in for it, or null.
  std::vector<std::shared_ptr<rt::DeviceBuffer>> buffers;
  /// Persistent results the entry cannot write in place (it still reads
  /// the old value afterwards): plan buffer -> the store's buffer, copied
  /// after the entry's kernels.
  std::vector<std::pair<int, std::shared_ptr<rt::DeviceBuffer>>> copyOut;
};

/// Binds the persistent arguments and results and the delayed-scaling
/// states of `e` to `store`, allocating the store's buffers on first use
/// (sizes must agree with other entries'; a new state's buffers get their
/// initial contents at once, before bindToStore returns). A result is written
/// in place into its argument's buffers only where updatesInPlace allows, else
/// through copyOut. Returning an argument as a persistent value of another name
/// is Unsupported.
rt::Expected<StoreBinding> bindToStore(const cg::Entry &e,
                                       const cg::EntryPlan &plan,
                                       const rt::Target &target,
                                       DeviceStore &store);

/// Whether `e` reads a persistent argument `store` does not hold; the
/// message names it ("" when all are held).
std::string unheldArgument(const cg::Entry &e, const DeviceStore &store);

/// Marks every persistent result of `e` written in `store`.
void markWritten(const cg::Entry &e, DeviceStore &store);

} // namespace te::exec

#endif // TE_EXEC_PERSISTENT_H
