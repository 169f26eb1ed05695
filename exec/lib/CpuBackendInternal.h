//===- CpuBackendInternal.h - What the CPU backend's files share -*- C++
//-*-===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//
//
// CpuBackend.cpp runs the quantize, dequantize, GEMM and Adam kernels with
// the reference numerics; CpuGrouped.cpp the MoE kernels. Both hold values
// as HostValue and state GEMM bounds the same way.
//
//===----------------------------------------------------------------------===//

#ifndef TE_EXEC_LIB_CPUBACKENDINTERNAL_H
#define TE_EXEC_LIB_CPUBACKENDINTERNAL_H

#include "te/codegen/Program.h"
#include "te/exec/Persistent.h"
#include "te/runtime/Collective.h"
#include "te/runtime/Status.h"
#include "te/runtime/reference/Quantize.h"

#include <map>
#include <vector>

namespace te::exec::detail {

/// What the CPU backend holds for a value.
struct HostValue {
  std::vector<uint8_t> tensor;
  rt::ref::QuantizedTensor quantized;
  /// A GEMM output: the bound another summation order stays within.
  std::vector<float> tolerance;
  /// Computed from a GEMM output: no bound is stated.
  bool unbounded = false;
  bool inexact() const { return unbounded || !tolerance.empty(); }
};

rt::Status fail(const std::string &what);
/// The output dtype's bytes of fp32 values (RNE narrowing).
std::vector<uint8_t> narrow(const std::vector<float> &f, rt::DType t);
/// The fp32 values of a tensor value's bytes.
std::vector<float> widen(const std::vector<uint8_t> &bytes, rt::DType t);
/// The per-element GEMM bound of docs/Numerics.md ("GEMM results") on
/// outputs `d` whose |a||b| sums are `absSum` (see CpuBackend.cpp).
std::vector<float> gemmBound(const std::vector<float> &d,
                             const std::vector<float> &absSum, int64_t k,
                             bool fp8, rt::DType outType, const float *bias,
                             int64_t n);

class CallStates;

/// The MoE kernels with the reference (CpuGrouped.cpp); `random` the
/// program's NVFP4 stochastic rounding state, `states` the call's
/// delayed-scaling states (each expert's own).
rt::Status runGroupedGemm(const cg::Entry &e, const cg::GroupedGemmKernel &g,
                          const cg::RandomState &random, CallStates &states,
                          std::vector<HostValue> &values);
rt::Status runGroupedWgrad(const cg::Entry &e, const cg::GroupedWgradKernel &g,
                           const cg::RandomState &random, CallStates &states,
                           std::vector<HostValue> &values);

/// The whole tensor's amaxes a quantize of a row shard scales by
/// (QuantizeKernel::amaxRanks), reduced over the ranks; `shared` false when
/// the kernel needs none.
struct RankAmax {
  bool shared = false;
  float tensor = 0, rht = 0; ///< of the input; of its Hadamard transform
};
rt::Status rankAmaxes(const cg::QuantizeKernel &q, const cg::Value &in,
                      const std::vector<float> &x,
                      rt::HostCollective *collective, RankAmax &out);
/// One process per rank of a sharded master quantize: every rank's shard
/// (the first elements of each rank's buffer) concatenated into `whole`.
rt::Status gatherMasterShards(const cg::ShardedQuantizeKernel &q,
                              const cg::Entry &e,
                              const std::vector<HostValue> &values,
                              rt::HostCollective *collective,
                              std::vector<uint8_t> &whole);
rt::Status runAllGather(const cg::Program &p, const cg::Entry &e,
                        const cg::AllGatherKernel &g,
                        std::vector<HostValue> &values,
                        rt::HostCollective *collective);

/// The delayed-scaling states one CPU call casts with (CpuScaling.cpp):
/// working copies of the store's (created fresh on first use) or, without
/// a store, fresh ones of the call's own. finish() updates them and writes
/// them back: a call that fails leaves the store as it was.
class CallStates {
public:
  /// Binds every state `e` uses; fails when a held state's history has
  /// another length than its scheme's.
  rt::Status bind(const cg::Entry &e, HostStore *store);
  /// The state named `name` (null for "").
  rt::ref::DelayedScalingState *get(const std::string &name);
  /// Whether state `name` came from inexact values (false for "").
  bool inexact(const std::string &name) const;
  /// The end of the call: each state's update (the casts recorded into
  /// history[0]); a state recorded from an inexact value becomes inexact.
  void finish(const cg::Entry &e, const std::vector<HostValue> &values);

private:
  std::map<std::string, HostStore::State> own_;
  std::map<std::string, HostStore::State *> bound_;
  HostStore *store_ = nullptr;
};

/// A state's parts as HostStore::read returns them.
ValueData stateData(const HostStore::State &s);

} // namespace te::exec::detail

#endif // TE_EXEC_LIB_CPUBACKENDINTERNAL_H
