//===- CpuBackend.cpp - Run an entry with the reference numerics ----------===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//

#include "te/exec/CpuBackend.h"

#include "CpuBackendInternal.h"

#include "te/codegen/ScalingState.h"

#include "te/runtime/reference/Adam.h"
#include "te/runtime/reference/Codecs.h"
#include "te/runtime/reference/Gemm.h"
#include "te/runtime/reference/Quantize.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <new>
#include <tuple>

namespace te::exec {

using namespace cg;

using rt::Direction;
using rt::DType;
namespace ref = rt::ref;
using namespace detail;

static ref::SourceType sourceType(DType t) {
  return t == DType::F32   ? ref::SourceType::F32
         : t == DType::F16 ? ref::SourceType::F16
                           : ref::SourceType::BF16;
}

/// The CPU backend's copy of one persistent value.
struct HostStore::Held {
  Value value;
  HostValue host;
};

void HostStore::markExact(const std::string &name) {
  auto it = values.find(name);
  if (it == values.end())
    return;
  it->second->host.tolerance.clear();
  it->second->host.unbounded = false;
}

rt::Status detail::fail(const std::string &what) {
  return rt::Status(rt::StatusCode::InvalidArgument, what);
}

rt::Status HostStore::write(const std::string &name, const Value &v,
                            const ValueData &parts, const rt::Target &target) {
  auto take = [&](const std::string &part, const rt::BufferDesc &desc,
                  ref::HostBuffer &into) -> rt::Status {
    for (const NamedBuffer &b : parts)
      if (b.name == part) {
        if (int64_t(b.bytes.size()) != desc.bytes())
          return fail("'" + name + "' part " + part + " needs " +
                      std::to_string(desc.bytes()) + " bytes, got " +
                      std::to_string(b.bytes.size()));
        into = {desc, b.bytes};
        return rt::Status::ok();
      }
    return fail("'" + name + "' needs part " + part);
  };
  HostValue h;
  if (!v.isQuantized()) {
    ref::HostBuffer data;
    TE_RETURN_IF_ERROR(take("data", {v.dtype, v.rows(), v.cols()}, data));
    h.tensor = std::move(data.bytes);
  }
  for (Direction d : {Direction::Rowwise, Direction::Columnwise}) {
    if (!v.isQuantized() || !v.scheme(d))
      continue;
    // The layout flags the reference quantizer would have set.
    rt::DirectionStorage st = directionStorage(v, d, target);
    ref::QuantizedDirection q;
    q.dataTransposed = st.dataTransposed;
    q.sharesRowwiseData = st.sharesRowwiseData;
    q.sharesRowwiseScale = st.sharesRowwiseScale;
    q.swizzledScales = ref::QuantizeOptions().swizzleScales;
    std::string prefix = std::string(rt::directionName(d)) + ".";
    for (auto [part, desc, buf] :
         {std::tuple<const char *, rt::BufferDesc, ref::HostBuffer *>{
              "data", st.data, &q.data},
          {"scale_inv", st.scaleInv, &q.scaleInv},
          {"amax", st.amax, &q.amax}})
      if (desc.present())
        TE_RETURN_IF_ERROR(take(prefix + part, desc, *buf));
    // A direction that shares the rowwise buffers keeps a copy of them, as
    // the reference does (each direction dequantizes on its own).
    if (h.quantized.rowwise && q.sharesRowwiseData)
      q.data = h.quantized.rowwise->data;
    if (h.quantized.rowwise && q.sharesRowwiseScale)
      q.scaleInv = h.quantized.rowwise->scaleInv;
    (d == Direction::Rowwise ? h.quantized.rowwise : h.quantized.columnwise) =
        std::move(q);
  }
  values[name] = std::make_shared<Held>(Held{v, std::move(h)});
  return rt::Status::ok();
}

static ValueData toValueData(const Value &v, const HostValue &h) {
  ValueData out;
  if (!v.isQuantized()) {
    out.push_back({"data",
                   {v.dtype, v.rows(), v.cols()},
                   h.tensor,
                   h.tolerance,
                   h.unbounded});
    return out;
  }
  for (Direction d : {Direction::Rowwise, Direction::Columnwise}) {
    const ref::QuantizedDirection *q = h.quantized.get(d);
    if (!q || !v.scheme(d))
      continue;
    std::string prefix = std::string(rt::directionName(d)) + ".";
    for (auto [name, buf] :
         {std::pair<const char *, const ref::HostBuffer *>{"data", &q->data},
          {"scale_inv", &q->scaleInv},
          {"amax", &q->amax}})
      if (buf->present())
        out.push_back({prefix + name, buf->desc, buf->bytes, {}, h.unbounded});
  }
  return out;
}

ValueData HostStore::read(const std::string &name) const {
  if (auto state = scaling.find(name); state != scaling.end())
    return stateData(state->second);
  auto it = values.find(name);
  return it == values.end() ? ValueData()
                            : toValueData(it->second->value, it->second->host);
}

/// The output dtype's bytes of fp32 values (RNE narrowing).
std::vector<uint8_t> detail::narrow(const std::vector<float> &f, DType t) {
  std::vector<uint8_t> out;
  if (t == DType::F32) {
    out.resize(f.size() * 4);
    std::memcpy(out.data(), f.data(), out.size());
    return out;
  }
  out.resize(f.size() * 2);
  for (size_t i = 0; i < f.size(); ++i) {
    uint16_t h =
        t == DType::BF16 ? ref::floatToBF16(f[i]) : ref::floatToF16(f[i]);
    out[2 * i] = uint8_t(h);
    out[2 * i + 1] = uint8_t(h >> 8);
  }
  return out;
}

/// The fp32 values of a tensor value's bytes.
std::vector<float> detail::widen(const std::vector<uint8_t> &bytes, DType t) {
  size_t n = bytes.size() / size_t(rt::dtypeSize(t));
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) {
    if (t == DType::F32) {
      std::memcpy(&out[i], &bytes[4 * i], 4);
      continue;
    }
    uint16_t h = uint16_t(bytes[2 * i] | bytes[2 * i + 1] << 8);
    out[i] = t == DType::BF16 ? ref::bf16ToFloat(h) : ref::f16ToFloat(h);
  }
  return out;
}

/// The spacing of `t`'s values at magnitude |x| (one ulp; the smallest
/// normal spacing at and below the normal range).
static float ulpOf(float x, DType t) {
  int mantissaBits = t == DType::BF16 ? 7 : t == DType::F16 ? 10 : 23;
  int minExponent = t == DType::F16 ? -14 : -126;
  int e = minExponent;
  if (x != 0 && std::isfinite(x)) {
    std::frexp(x, &e); // |x| = f * 2^e, f in [0.5, 1)
    e = std::max(e - 1, minExponent);
  }
  return std::ldexp(1.0f, e - mantissaBits);
}

/// The per-element bound of docs/Numerics.md ("GEMM results") on GEMM
/// outputs `d` (fp32, before the cast to `outType`) whose |a||b| sums are
/// `absSum`: c * S + ulp_out(|D| + c * S), plus ulp_out(|D - bias| + |bias|)
/// with a bias (n columns), c = (K + 1) 2^-22, plus 2^-10 for FP8 operands.
std::vector<float> detail::gemmBound(const std::vector<float> &d,
                                     const std::vector<float> &absSum,
                                     int64_t k, bool fp8, DType outType,
                                     const float *bias, int64_t n) {
  float c = float(k + 1) * 0x1p-22f;
  if (fp8)
    c += 0x1p-10f;
  std::vector<float> tolerance(d.size());
  for (size_t i = 0; i < d.size(); ++i) {
    float spread = c * absSum[i];
    tolerance[i] = spread + ulpOf(std::fabs(d[i]) + spread, outType);
    if (bias) {
      float bj = bias[i % size_t(n)];
      tolerance[i] += ulpOf(std::fabs(d[i] - bj) + std::fabs(bj), outType);
    }
  }
  return tolerance;
}

/// A GEMM with the reference. Block FP8 on both sides multiplies like the
/// Hopper block-scaled GEMM (ref::blockScaledGemm); anything else
/// multiplies the operands' logical values (dequantized in the direction
/// read, or widened) with fp32 accumulation in k order. Either way the
/// library adds in an order of its own, so `tolerance` gets the bound of
/// docs/Numerics.md ("GEMM results"): per element
///   c * S + ulp_out(|D| + c * S) (+ ulp_out(|D - bias| + |bias|) with a
///   bias: cuBLASLt's epilogue rounds once more),
/// S = sum_k |a_ik b_kj| + |bias_j|, c = (K + 1) 2^-22 for fp32 sums of
/// exact products in two orders, plus 2^-10 when the operands are FP8
/// (tensor cores sum FP8 products in a narrower accumulator before the
/// fp32 promotion).
static rt::Expected<std::vector<float>>
runGemm(const Entry &e, const GemmKernel &g,
        const std::vector<HostValue> &values, std::vector<float> &tolerance) {
  const Value &a = e.values[g.a], &b = e.values[g.b];
  int64_t m = g.transposeA ? a.shape[1] : a.shape[0];
  int64_t k = g.transposeA ? a.shape[0] : a.shape[1];
  int64_t n = g.transposeB ? b.shape[0] : b.shape[1];
  std::vector<float> bias;
  if (g.bias >= 0)
    bias = widen(values[g.bias].tensor, e.values[g.bias].dtype);
  const float *biasPtr = bias.empty() ? nullptr : bias.data();

  auto logical = [&](int index, Direction d) -> std::vector<float> {
    const Value &v = e.values[index];
    if (!v.isQuantized())
      return widen(values[index].tensor, v.dtype);
    return ref::dequantize(values[index].quantized, d, *v.scheme(d), v.rows(),
                           v.cols());
  };
  std::vector<float> av = logical(g.a, g.directionA());
  std::vector<float> bv = logical(g.b, g.directionB());
  if (av.empty() || bv.empty())
    return fail(g.name + ": the reference could not dequantize an operand");
  std::vector<float> absSum;
  std::vector<float> d =
      ref::referenceGemm(av.data(), g.transposeA, bv.data(), g.transposeB, m, n,
                         k, biasPtr, false, &absSum);

  auto isFp8 = [](const Value &v, Direction dir) {
    return v.isQuantized() && v.scheme(dir)->kind != rt::SchemeKind::Identity;
  };
  auto blockScaled = [](const Value &v, Direction dir) {
    return v.isQuantized() && v.scheme(dir)->kind == rt::SchemeKind::Fp8Block;
  };
  if (blockScaled(a, g.directionA()) && blockScaled(b, g.directionB())) {
    // TN form: op(A) is the stored data of the direction read (M x K),
    // op(B)^T likewise (N x K) - block FP8 stores columnwise transposed.
    ref::BlockScaledOperand x = ref::blockScaledOperand(
        *values[g.a].quantized.get(g.directionA()), *a.scheme(g.directionA()));
    ref::BlockScaledOperand w = ref::blockScaledOperand(
        *values[g.b].quantized.get(g.directionB()), *b.scheme(g.directionB()));
    // The plain GEMM above still supplies the magnitudes of the bound.
    std::string error;
    d = ref::blockScaledGemm(x, w, biasPtr, &error);
    if (d.empty())
      return fail(g.name + ": " + error);
  }

  tolerance = gemmBound(d, absSum, k,
                        isFp8(a, g.directionA()) || isFp8(b, g.directionB()),
                        e.values[g.output].dtype, biasPtr, n);
  return d;
}

/// Quantizes tensor bytes `x` (value `in`'s type and shape) in the stage's
/// direction into `dst`, as a quantize kernel's stage does: with the
/// stage's delayed-scaling state `delayed` (fp8_delayed), the program's
/// random state.
static rt::Status quantizeStage(const Program &p, const Stage &s,
                                const std::vector<uint8_t> &x, const Value &in,
                                HostValue &dst,
                                ref::DelayedScalingState *delayed = nullptr,
                                const RankAmax &rank = {},
                                const std::optional<rt::Scheme> &source = {}) {
  ref::QuantizeOptions options;
  options.target = p.target;
  if (rank.shared) {
    options.tensorAmax = &rank.tensor;
    options.rhtTensorAmax = &rank.rht;
  }
  options.seed = p.random.seed;
  options.offset = p.random.offset;
  options.delayed = delayed;
  unsigned mask =
      s.dir == Direction::Rowwise ? ref::kRowwiseMask : ref::kColumnwiseMask;
  ref::QuantizedTensor t =
      source
          ? ref::quantizeFromRowwiseDequantized(x.data(), sourceType(in.dtype),
                                                in.rows(), in.cols(), *source,
                                                s.scheme, options)
          : ref::quantize(x.data(), sourceType(in.dtype), in.rows(), in.cols(),
                          s.scheme, mask, options);
  if (!t.ok())
    return fail(t.error);
  if (s.dir == Direction::Rowwise)
    dst.quantized.rowwise = std::move(t.rowwise);
  else
    dst.quantized.columnwise = std::move(t.columnwise);
  return rt::Status::ok();
}

/// An Adam kernel with the reference (ref::adamStep, IEEE or fast-math as
/// the kernel says), then each new parameter quantized by every stage.
static rt::Status runAdam(const Program &p, const Entry &e, const AdamKernel &a,
                          std::vector<HostValue> &values) {
  float lr;
  int64_t step;
  std::memcpy(&lr, values[a.lr].tensor.data(), 4);
  std::memcpy(&step, values[a.step].tensor.data(), 8);
  if (step < 1)
    return fail(a.name + ": step is " + std::to_string(step) +
                "; Adam's step counts from 1 (the step after increment)");
  ref::AdamConfig config;
  config.lr = lr;
  config.beta1 = a.hyper.beta1;
  config.beta2 = a.hyper.beta2;
  config.eps = a.hyper.eps;
  config.weightDecay = a.hyper.weightDecay;
  config.adamW = a.hyper.adamW;
  config.fastMath = a.hyper.fastMath;
  bool scalarsInexact = values[a.lr].inexact() || values[a.step].inexact();
  for (const AdamTensor &t : a.tensors) {
    std::vector<float> param = widen(values[t.param].tensor, DType::F32);
    std::vector<float> m = widen(values[t.expAvg].tensor, DType::F32);
    std::vector<float> v = widen(values[t.expAvgSq].tensor, DType::F32);
    ref::adamStep(param.data(), m.data(), v.data(),
                  values[t.grad].tensor.data(),
                  sourceType(e.values[t.grad].dtype), int64_t(param.size()),
                  step, config);
    bool inexact = scalarsInexact;
    for (int in : {t.param, t.grad, t.expAvg, t.expAvgSq})
      inexact |= values[in].inexact();
    values[t.newParam].tensor = narrow(param, DType::F32);
    values[t.newExpAvg].tensor = narrow(m, DType::F32);
    values[t.newExpAvgSq].tensor = narrow(v, DType::F32);
    for (int out : {t.newParam, t.newExpAvg, t.newExpAvgSq})
      values[out].unbounded = inexact;
    for (const Stage &s : a.stages) {
      HostValue &q = values[t.quantized[size_t(s.value)]];
      rt::Status st = quantizeStage(p, s, values[t.newParam].tensor,
                                    e.values[t.newParam], q);
      if (!st.isOk())
        return fail(a.name + ": " + st.message());
      q.unbounded = inexact;
    }
  }
  return rt::Status::ok();
}

static rt::Status runGemmKernel(const Entry &e, const GemmKernel &g,
                                std::vector<HostValue> &values) {
  std::vector<float> tolerance;
  rt::Expected<std::vector<float>> d = runGemm(e, g, values, tolerance);
  if (!d)
    return d.status();
  HostValue &out = values[g.output];
  out.tensor = narrow(*d, e.values[g.output].dtype);
  out.unbounded = values[g.a].inexact() || values[g.b].inexact() ||
                  (g.bias >= 0 && values[g.bias].inexact());
  if (!out.unbounded)
    out.tolerance = std::move(tolerance);
  return rt::Status::ok();
}

static rt::Status runDequantize(const Entry &e, const DequantizeKernel &d,
                                std::vector<HostValue> &values) {
  const Value &in = e.values[d.input];
  const Value &outV = e.values[d.output];
  std::vector<float> f =
      ref::dequantize(values[d.input].quantized, d.dir, *in.scheme(d.dir),
                      in.rows(), in.cols());
  if (f.empty())
    return fail(d.name + ": the reference could not dequantize '" + in.name +
                "'");
  values[d.output].tensor = narrow(f, outV.dtype);
  values[d.output].unbounded = values[d.input].inexact();
  return rt::Status::ok();
}

static rt::Status runQuantize(const Program &p, const Entry &e,
                              const QuantizeKernel &q,
                              std::vector<HostValue> &values,
                              rt::HostCollective *collective,
                              CallStates &states) {
  const Value &in = e.values[q.input];
  const std::vector<uint8_t> &x = values[q.input].tensor;
  RankAmax rank;
  if (q.amaxRanks > 1) {
    rt::Status st = rankAmaxes(q, in, widen(x, in.dtype), collective, rank);
    if (!st.isOk())
      return fail(q.name + ": " + st.message());
  }
  for (const Stage &s : q.stages) {
    const Value &out = e.values[s.value];
    rt::Status st = quantizeStage(
        p, s, x, in, values[s.value], states.get(s.state), rank,
        s.dir == Direction::Columnwise ? out.columnwiseSource : std::nullopt);
    if (!st.isOk())
      return fail(q.name + ": " + st.message());
    values[s.value].unbounded =
        values[q.input].inexact() || states.inexact(s.state);
  }
  if (q.biasGrad >= 0) {
    std::vector<float> db = ref::biasGrad(x.data(), sourceType(in.dtype),
                                          in.rows(), in.cols(), 128);
    values[q.biasGrad].tensor = narrow(db, DType::F32);
    values[q.biasGrad].unbounded = values[q.input].inexact();
  }
  return rt::Status::ok();
}

/// The definition of a sharded master quantize (docs/Numerics.md §17): the
/// quantization of the concatenated shards. The GPU plan's rank-by-rank
/// algorithm is pinned to this.
static rt::Status runShardedQuantize(const Program &p, const Entry &e,
                                     const ShardedQuantizeKernel &q,
                                     std::vector<HostValue> &values,
                                     rt::HostCollective *collective,
                                     CallStates &states) {
  Value whole = e.values[q.stages.front().value];
  whole.kind = Value::Kind::Tensor;
  std::vector<uint8_t> x;
  bool inexact = false;
  for (int s : q.shards) {
    x.insert(x.end(), values[s].tensor.begin(), values[s].tensor.end());
    inexact |= values[s].inexact();
  }
  if (q.perProcess()) {
    rt::Status st = gatherMasterShards(q, e, values, collective, x);
    if (!st.isOk())
      return st;
  }
  for (const Stage &s : q.stages) {
    rt::Status st =
        quantizeStage(p, s, x, whole, values[s.value], states.get(s.state));
    if (!st.isOk())
      return fail(q.name + ": " + st.message());
    values[s.value].unbounded = inexact || states.inexact(s.state);
  }
  return rt::Status::ok();
}

std::vector<CarriedState> carriedState(const Entry &e) {
  std::vector<CarriedState> out;
  for (const Kernel &k : e.kernels) {
    const auto *adam = std::get_if<AdamKernel>(&k);
    if (!adam)
      continue;
    for (const AdamTensor &t : adam->tensors)
      for (auto [in, next] : t.updates())
        for (size_t a = 0; a < e.args.size(); ++a)
          // A persistent argument is carried by the session's store.
          if (e.args[a] == in && e.persistentArg(a).empty())
            out.push_back({a, next});
  }
  return out;
}

int stepArgument(const Entry &e) {
  for (const Kernel &k : e.kernels)
    if (const auto *adam = std::get_if<AdamKernel>(&k))
      for (size_t a = 0; a < e.args.size(); ++a)
        if (e.args[a] == adam->step && e.persistentArg(a).empty())
          return int(a);
  return -1;
}

/// A kernel's size for progress lines: "MxNxK" for a GEMM, the tensor's
/// "rowsxcols" otherwise.
static std::string kernelWhat(const Entry &e, const Kernel &k) {
  auto dims = [&](int value) {
    const Value &v = e.values[value];
    return std::to_string(v.rows()) + "x" + std::to_string(v.cols());
  };
  return std::visit(
      Overloaded{[&](const QuantizeKernel &q) {
                   return q.name + " (" + dims(q.input) + ")";
                 },
                 [&](const DequantizeKernel &d) {
                   return d.name + " (" + dims(d.input) + ")";
                 },
                 [&](const GemmKernel &g) {
                   const Value &a = e.values[g.a], &b = e.values[g.b];
                   int64_t m = g.transposeA ? a.shape[1] : a.shape[0];
                   int64_t k = g.transposeA ? a.shape[0] : a.shape[1];
                   int64_t n = g.transposeB ? b.shape[0] : b.shape[1];
                   return g.name + " (" + std::to_string(m) + "x" +
                          std::to_string(n) + "x" + std::to_string(k) + ")";
                 },
                 [&](const AdamKernel &a) {
                   return a.name + " (" + std::to_string(a.tensors.size()) +
                          " tensor(s))";
                 },
                 [&](const GroupedGemmKernel &g) {
                   const Value &x = e.values[g.x], &w = e.values[g.w];
                   return g.name + " (" + std::to_string(w.shape[0]) +
                          " experts, " + std::to_string(x.shape[0]) + "x" +
                          std::to_string(w.shape[1]) + "x" +
                          std::to_string(x.shape[1]) + ")";
                 },
                 [&](const AllGatherKernel &g) {
                   return g.name + " (" + dims(g.input) + " from " +
                          std::to_string(g.ranks) + " ranks)";
                 },
                 [&](const ShardedQuantizeKernel &q) {
                   return q.name + " (" + dims(q.stages.front().value) +
                          " from " + std::to_string(q.ranks()) + " shards" +
                          (q.perProcess() ? ", one per process)" : ")");
                 },
                 [&](const GroupedWgradKernel &g) {
                   const Value &dw = e.values[g.output];
                   return g.name + " (" + std::to_string(dw.shape[0]) +
                          " experts, " + std::to_string(dw.shape[1]) + "x" +
                          std::to_string(dw.shape[2]) + "x" +
                          std::to_string(e.values[g.x].shape[0]) + ")";
                 }},
      k);
}

static rt::Expected<std::vector<ValueData>>
runCpuChecked(const Program &p, const Entry &e,
              const std::vector<std::vector<uint8_t>> &args, CpuState *state,
              const std::vector<bool> *inexactArgs, HostStore *store,
              const CpuProgressFn &progress, rt::HostCollective *collective) {
  std::string why = validate(e);
  if (why.empty())
    why = validateScalingStates(p);
  if (!why.empty())
    return fail(e.name + ": " + why);
  TE_RETURN_IF_ERROR(checkCpuMemory(p, e));
  if (args.size() != e.args.size())
    return fail(e.name + " takes " + std::to_string(e.args.size()) +
                " arguments, got " + std::to_string(args.size()));
  std::vector<HostValue> values(e.values.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const Value &v = e.values[e.args[i]];
    const std::string &name = store ? e.persistentArg(i) : std::string();
    if (!name.empty() && store->holds(name)) {
      const HostStore::Held &held = *store->values[name];
      if (!sameType(held.value, v))
        return fail(e.name + ": persistent '" + name +
                    "' has another type in the entry that wrote it");
      values[e.args[i]] = held.host;
      continue;
    }
    if (!name.empty() && v.isQuantized())
      return fail(e.name + " reads persistent '" + name +
                  "' before any entry wrote it");
    uint64_t bytes = uint64_t(v.rows() * v.cols() * rt::dtypeSize(v.dtype));
    if (v.isQuantized() || args[i].size() != bytes)
      return fail("argument " + std::to_string(i) + " ('" + v.name +
                  "') must be a tensor of " + std::to_string(bytes) + " bytes");
    values[e.args[i]].tensor = args[i];
    values[e.args[i]].unbounded =
        inexactArgs && i < inexactArgs->size() && (*inexactArgs)[i];
    if (!name.empty())
      store->values[name] = std::make_shared<HostStore::Held>(
          HostStore::Held{v, values[e.args[i]]});
  }

  CallStates states;
  TE_RETURN_IF_ERROR(states.bind(e, store));

  auto start = std::chrono::steady_clock::now();
  auto report = [&](size_t index, std::string what) {
    if (!progress)
      return;
    std::chrono::duration<double> elapsed =
        std::chrono::steady_clock::now() - start;
    progress({&e, index, e.kernels.size(), std::move(what), elapsed.count()});
  };
  for (size_t index = 0; index < e.kernels.size(); ++index) {
    const Kernel &k = e.kernels[index];
    report(index, kernelWhat(e, k));
    rt::Status st = std::visit(
        Overloaded{
            [&](const QuantizeKernel &q) {
              return runQuantize(p, e, q, values, collective, states);
            },
            [&](const DequantizeKernel &d) {
              return runDequantize(e, d, values);
            },
            [&](const GemmKernel &g) { return runGemmKernel(e, g, values); },
            [&](const AdamKernel &a) { return runAdam(p, e, a, values); },
            [&](const GroupedGemmKernel &g) {
              return runGroupedGemm(e, g, p.random, states, values);
            },
            [&](const GroupedWgradKernel &g) {
              return runGroupedWgrad(e, g, p.random, states, values);
            },
            [&](const AllGatherKernel &g) {
              return runAllGather(p, e, g, values, collective);
            },
            [&](const ShardedQuantizeKernel &q) {
              return runShardedQuantize(p, e, q, values, collective, states);
            }},
        k);
    if (!st.isOk())
      return st;
  }
  report(e.kernels.size(), "");
  states.finish(e, values);

  std::vector<ValueData> out;
  for (int r : e.results)
    out.push_back(toValueData(e.values[r], values[r]));
  if (store)
    for (size_t i = 0; i < e.results.size(); ++i)
      if (!e.persistentResult(i).empty())
        store->values[e.persistentResult(i)] =
            std::make_shared<HostStore::Held>(
                HostStore::Held{e.values[e.results[i]], values[e.results[i]]});
  if (state) {
    state->tensors.clear();
    state->inexact.clear();
    for (HostValue &v : values) {
      state->inexact.push_back(v.inexact());
      state->tensors.push_back(std::move(v.tensor));
    }
  }
  return out;
}

rt::Expected<std::vector<ValueData>>
runCpu(const Program &p, const Entry &e,
       const std::vector<std::vector<uint8_t>> &args, CpuState *state,
       const std::vector<bool> *inexactArgs, HostStore *store,
       const CpuProgressFn &progress, rt::HostCollective *collective) {
  // The estimate of checkCpuMemory can be short, or memory can go to
  // someone else meanwhile: an allocation failure is an error value too.
  try {
    return runCpuChecked(p, e, args, state, inexactArgs, store, progress,
                         collective);
  } catch (const std::bad_alloc &) {
    return rt::Status(rt::StatusCode::ResourceExhausted,
                      "the CPU backend ran out of memory running '" + e.name +
                          "' (it estimated " + formatGiB(cpuMemoryBytes(p, e)) +
                          "; " + formatGiB(availableHostMemory()) +
                          " available)");
  }
}

} // namespace te::exec
