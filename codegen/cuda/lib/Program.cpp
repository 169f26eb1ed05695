//===- Program.cpp - The kernel-level program -----------------------------===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//

#include "te/codegen/Program.h"
#include "te/codegen/ScalingState.h"

#include "te/formats/Sharding.h"

#include "te/formats/GemmRules.h"

#include <algorithm>

namespace te::cg {

bool GroupedGemmKernel::readsPerExpertCodes() const {
  return rt::groupedPerExpertReadsCodes(xScheme, wScheme);
}

bool GroupedGemmKernel::readsPerExpertValues() const {
  return quantizesPerExpert() && !readsPerExpertCodes() && !nvfp4Codes;
}

int64_t Value::rows() const {
  int64_t r = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i)
    r *= shape[i];
  return r;
}

const Entry *Program::find(const std::string &name) const {
  for (const Entry &e : entries)
    if (e.name == name)
      return &e;
  return nullptr;
}

static const std::string &nameAt(const std::vector<std::string> &names,
                                 size_t i) {
  static const std::string none;
  return i < names.size() ? names[i] : none;
}

const std::string &Entry::persistentArg(size_t i) const {
  return nameAt(argPersistent, i);
}

const std::string &Entry::persistentResult(size_t i) const {
  return nameAt(resultPersistent, i);
}

/// The values kernel `k` reads.
static std::vector<int> readsOf(const Kernel &k) {
  return std::visit(
      Overloaded{
          [](const QuantizeKernel &q) { return std::vector<int>{q.input}; },
          [](const DequantizeKernel &d) { return std::vector<int>{d.input}; },
          [](const GemmKernel &g) {
            return std::vector<int>{g.a, g.b, g.bias};
          },
          [](const GroupedGemmKernel &g) {
            return std::vector<int>{g.x, g.w, g.splits, g.bias};
          },
          [](const GroupedWgradKernel &g) {
            return std::vector<int>{g.dy, g.x, g.splits};
          },
          [](const AllGatherKernel &g) { return std::vector<int>{g.input}; },
          [](const ShardedQuantizeKernel &q) { return q.shards; },
          [](const AdamKernel &a) {
            std::vector<int> out = {a.lr, a.step};
            for (const AdamTensor &t : a.tensors)
              out.insert(out.end(), {t.param, t.grad, t.expAvg, t.expAvgSq});
            return out;
          }},
      k);
}

bool updatesInPlace(const Entry &e, int in, int out) {
  // The old value returned as well must survive the update.
  if (std::count(e.results.begin(), e.results.end(), in))
    return false;
  for (size_t i = 0; i < e.kernels.size(); ++i) {
    const Kernel &k = e.kernels[i];
    std::vector<int> reads = readsOf(k);
    if (std::count(reads.begin(), reads.end(), in) == 0)
      continue;
    // The first kernel reading `in` must be the update, reading it once.
    const auto *adam = std::get_if<AdamKernel>(&k);
    if (!adam || std::count(reads.begin(), reads.end(), in) != 1)
      return false;
    bool pairs = false;
    for (const AdamTensor &t : adam->tensors)
      for (auto [old, next] : t.updates())
        pairs |= old == in && next == out;
    if (!pairs)
      return false;
    for (size_t j = i + 1; j < e.kernels.size(); ++j) {
      std::vector<int> later = readsOf(e.kernels[j]);
      if (std::count(later.begin(), later.end(), in))
        return false;
    }
    return true;
  }
  return false;
}

rt::DirectionStorage directionStorage(const Value &v, rt::Direction d,
                                      const rt::Target &target) {
  const std::optional<rt::Scheme> &s = v.scheme(d);
  if (!s)
    return {};
  rt::DirectionStorage st = rt::storageFor(*s, d, v.rows(), v.cols(), target);
  bool hybrid = v.rowwise && v.columnwise && *v.rowwise != *v.columnwise;
  if (hybrid || !v.rowwise)
    st.sharesRowwiseData = st.sharesRowwiseScale = false;
  return st;
}

static bool isHighPrecision(rt::DType t) {
  return t == rt::DType::BF16 || t == rt::DType::F16 || t == rt::DType::F32;
}

static bool inRange(const Entry &e, int v) {
  return v >= 0 && size_t(v) < e.values.size();
}

/// Why an Adam kernel is malformed ("" when it is not).
static std::string validateAdam(const Entry &e, const AdamKernel &a) {
  auto scalar = [&](int v, rt::DType t) {
    return inRange(e, v) && !e.values[v].isQuantized() &&
           e.values[v].dtype == t &&
           e.values[v].rows() * e.values[v].cols() == 1;
  };
  if (!scalar(a.lr, rt::DType::F32))
    return "lr must be an f32 scalar value";
  if (!scalar(a.step, rt::DType::I64))
    return "step must be an i64 scalar value";
  if (a.tensors.empty())
    return "updates no tensor";
  for (const AdamTensor &t : a.tensors) {
    for (int v : {t.param, t.grad, t.expAvg, t.expAvgSq, t.newParam,
                  t.newExpAvg, t.newExpAvgSq})
      if (!inRange(e, v) || e.values[v].isQuantized() ||
          e.values[v].shape != e.values[t.param].shape)
        return "every operand and result of a tensor must be a tensor of its "
               "parameter's shape";
    for (int v : {t.param, t.expAvg, t.expAvgSq, t.newParam, t.newExpAvg,
                  t.newExpAvgSq})
      if (e.values[v].dtype != rt::DType::F32)
        return "parameters and moments must be f32";
    if (!isHighPrecision(e.values[t.grad].dtype))
      return "gradients must be bf16, f16 or f32";
    if (e.values[t.grad].dtype != e.values[a.tensors[0].grad].dtype)
      return "every gradient of one launch must have the same type";
    if (t.quantized.size() != a.tensors[0].quantized.size())
      return "every tensor must have as many quantized results";
    for (int v : t.quantized)
      if (!inRange(e, v) || !e.values[v].isQuantized() ||
          e.values[v].shape != e.values[t.param].shape)
        return "a requantized parameter must be quantized with its shape";
    for (const Stage &s : a.stages) {
      if (s.value < 0 || size_t(s.value) >= t.quantized.size())
        return "a stage names quantized slot " + std::to_string(s.value) +
               " of " + std::to_string(t.quantized.size());
      const Value &q = e.values[t.quantized[size_t(s.value)]];
      if (!q.scheme(s.dir) || *q.scheme(s.dir) != s.scheme)
        return "'" + q.name + "' does not hold the " +
               rt::directionName(s.dir) + " direction with the stage's scheme";
      if (s.dir == rt::Direction::Columnwise && q.columnwiseSource)
        return "'" + q.name +
               "' is double-quantized (columnwise_source = "
               "rowwise_dequantized), which the optimizer kernel does not "
               "requantize into (te-fuse-optimizer leaves such quantizes "
               "on their own)";
    }
  }
  return "";
}

/// Why GEMM `g` of `e` is malformed, or "".
static std::string validateGemm(const Entry &e, const GemmKernel &g) {
  if (!inRange(e, g.a) || !inRange(e, g.b) || !inRange(e, g.output) ||
      (g.bias >= 0 && !inRange(e, g.bias)))
    return "value index out of range";
  const Value &a = e.values[g.a], &b = e.values[g.b];
  const Value &out = e.values[g.output];
  if (a.shape.size() != 2 || b.shape.size() != 2 || out.shape.size() != 2 ||
      out.isQuantized())
    return "operands and result must be 2-D, the result a tensor";
  if (a.isQuantized() && !a.scheme(g.directionA()))
    return "operand A does not hold the direction it is read in";
  if (b.isQuantized() && !b.scheme(g.directionB()))
    return "operand B does not hold the direction it is read in";
  int64_t m = g.transposeA ? a.shape[1] : a.shape[0];
  int64_t k = g.transposeA ? a.shape[0] : a.shape[1];
  int64_t k2 = g.transposeB ? b.shape[1] : b.shape[0];
  int64_t n = g.transposeB ? b.shape[0] : b.shape[1];
  if (k != k2 || out.shape[0] != m || out.shape[1] != n)
    return "shapes do not chain";
  if (g.bias >= 0 && (e.values[g.bias].isQuantized() ||
                      e.values[g.bias].shape != std::vector<int64_t>{n}))
    return "bias must be a tensor of N elements";
  // The pairing rule te.gemm's verifier applies (te/formats/GemmRules.h).
  auto operand = [](const Value &v, rt::Direction d) {
    return rt::GemmOperand{v.isQuantized() ? v.scheme(d) : std::nullopt, d,
                           v.dtype};
  };
  rt::GemmOperand ra = operand(a, g.directionA()),
                  rb = operand(b, g.directionB());
  if (rt::gemmMixesFamilies(ra, rb))
    return "operands of two scheme families (" +
           rt::gemmSchemeFamily(*ra.scheme) + " and " +
           rt::gemmSchemeFamily(*rb.scheme) +
           ") have no GEMM kernel: dequantize them first (te-legalize-target's "
           "emulated path)";
  return rt::gemmOperandsError(ra, rb);
}

/// Why grouped GEMM `g` of `e` is malformed, or "".
/// A grouped kernel's operand quantized per expert by `scheme` names its
/// experts' delayed-scaling states exactly when the scheme is fp8_delayed
/// (a missing state is validateScalingStates' to report).
static std::string expertStateError(const std::optional<rt::Scheme> &scheme,
                                    const std::string &state) {
  if (!state.empty() && (!scheme || scheme->kind != rt::SchemeKind::Fp8Delayed))
    return "delayed-scaling state '" + state +
           "' on an operand not quantized by fp8_delayed";
  return "";
}

static std::string validateGroupedGemm(const Entry &e,
                                       const GroupedGemmKernel &g) {
  if (!inRange(e, g.x) || !inRange(e, g.w) || !inRange(e, g.splits) ||
      !inRange(e, g.output))
    return "value index out of range";
  const Value &x = e.values[g.x], &w = e.values[g.w];
  const Value &s = e.values[g.splits], &out = e.values[g.output];
  if (x.shape.size() != 2 || w.shape.size() != 3 || out.shape.size() != 2 ||
      out.isQuantized())
    return g.weightColumnwise ? "x must be [M, N], w [G, N, K] and the result "
                                "an [M, K] tensor"
                              : "x must be [M, K], w [G, N, K] and the result "
                                "an [M, N] tensor";
  int64_t m = x.shape[0], groups = w.shape[0];
  // The expert's GEMM: reduction `red`, output columns `cols`.
  int64_t red = g.weightColumnwise ? w.shape[1] : w.shape[2];
  int64_t cols = g.weightColumnwise ? w.shape[2] : w.shape[1];
  if (x.shape[1] != red || out.shape[0] != m || out.shape[1] != cols)
    return "shapes do not chain";
  if (s.isQuantized() || s.dtype != rt::DType::I64 ||
      s.shape != std::vector<int64_t>{groups})
    return "split sizes must be a tensor of G i64";
  if (g.bias >= 0) {
    if (!inRange(e, g.bias))
      return "value index out of range";
    const Value &b = e.values[g.bias];
    if (g.weightColumnwise)
      return "a grouped GEMM reading its weight columnwise takes no bias";
    if (b.isQuantized() || b.shape != std::vector<int64_t>{groups, cols} ||
        b.dtype != out.dtype)
      return "the bias must be a [G, N] tensor of the result's type";
  }
  if (g.quantizedOutput >= 0) {
    if (!inRange(e, g.quantizedOutput))
      return "value index out of range";
    const Value &q = e.values[g.quantizedOutput];
    if (!q.isQuantized() || q.shape != out.shape || q.dtype != out.dtype ||
        out.dtype != rt::DType::BF16 || !q.rowwise || q.columnwise)
      return "the quantized output must be the bf16 result's shape and type, "
             "held rowwise only";
    if (std::string why = rt::groupedEpilogueQuantizeError(
            *q.rowwise, rt::Direction::Rowwise);
        !why.empty())
      return why;
  }
  if (x.isQuantized() != w.isQuantized())
    return "x and w must both be quantized or both be tensors";
  for (auto [scheme, state] : {std::make_pair(&g.xScheme, &g.xState),
                               std::make_pair(&g.wScheme, &g.wState)})
    if (std::string why = expertStateError(*scheme, *state); !why.empty())
      return why;
  if (g.nvfp4Codes && !(g.xScheme && g.wScheme))
    return "reads NVFP4 codes, but does not quantize both operands per expert";
  if (g.quantizesPerExpert()) {
    // Quantized per expert from bf16; an operand that is not is the bf16
    // values of another family's (dequantized before).
    if (x.isQuantized() || x.dtype != rt::DType::BF16 ||
        w.dtype != rt::DType::BF16)
      return "operands quantized per expert, and another family's values "
             "beside one, must be bf16 tensors";
    if (std::string why = rt::groupedPerExpertSchemesError(g.xScheme, g.wScheme,
                                                           g.weightColumnwise);
        !why.empty())
      return why;
    if (std::string why = rt::groupedPerExpertShapeError(
            g.xScheme, g.wScheme, g.weightColumnwise, x.shape[1], w.shape[1],
            w.shape[2]);
        !why.empty())
      return why;
    return g.nvfp4Codes
               ? rt::groupedNvfp4CodesError(*g.xScheme, *g.wScheme,
                                            g.weightColumnwise, w.shape[2])
               : "";
  }
  if (!x.isQuantized())
    return ""; // a tensor weight read columnwise is the stack read along N
  auto blockFp8 = [](const Value &v, rt::Direction d, int64_t rows) {
    const std::optional<rt::Scheme> &sc = v.scheme(d);
    return sc && sc->kind == rt::SchemeKind::Fp8Block && sc->tileRows == rows &&
           sc->tileCols == 128;
  };
  auto mxfp8 = [](const Value &v, rt::Direction d) {
    const std::optional<rt::Scheme> &sc = v.scheme(d);
    return sc && sc->kind == rt::SchemeKind::Mxfp8;
  };
  if (mxfp8(x, rt::Direction::Rowwise) && !g.weightColumnwise &&
      mxfp8(w, rt::Direction::Rowwise)) {
    // The engine's MXFP8 kernel (te-legalize-target's `generated` path).
    if (w.shape[2] % 128 != 0)
      return "K must be a multiple of 128: the MXFP8 kernel contracts whole "
             "128-element stages";
    return rt::gemmOperandsError(
        {x.scheme(rt::Direction::Rowwise), rt::Direction::Rowwise},
        {w.scheme(rt::Direction::Rowwise), rt::Direction::Rowwise});
  }
  if (!blockFp8(x, rt::Direction::Rowwise, 1) ||
      !blockFp8(w, g.weightDirection(), 128))
    return std::string("quantized operands must be block FP8, x 1x128 read "
                       "rowwise and w 128x128 read ") +
           rt::directionName(g.weightDirection()) +
           ", or MXFP8 both read rowwise";
  if (w.shape[1] % 128 != 0)
    return "N must be a multiple of 128: each expert's 128x128 weight tiles "
           "are its own";
  // e4m3 or e5m2 on each side, not e5m2 on both.
  return rt::gemmOperandsError(
      {x.scheme(rt::Direction::Rowwise), rt::Direction::Rowwise},
      {w.scheme(g.weightDirection()), g.weightDirection()});
}

static std::string validateDequantize(const Entry &e,
                                      const DequantizeKernel &d) {
  if (!inRange(e, d.input) || !inRange(e, d.output) ||
      !e.values[d.input].isQuantized() || e.values[d.output].isQuantized() ||
      !e.values[d.input].scheme(d.dir))
    return "dequantize '" + d.name +
           "' needs a quantized input holding "
           "the direction it reads and a tensor output";
  return "";
}

static std::string validateQuantize(const Entry &e, const QuantizeKernel &q) {
  if (!inRange(e, q.input) || e.values[q.input].isQuantized())
    return "quantize '" + q.name + "' needs a tensor input";
  const Value &in = e.values[q.input];
  for (const Stage &s : q.stages) {
    if (!inRange(e, s.value) || !e.values[s.value].isQuantized())
      return "quantize '" + q.name +
             "' writes a stage into a non-quantized "
             "value";
    const Value &out = e.values[s.value];
    if (out.shape != in.shape)
      return "quantize '" + q.name + "': output '" + out.name +
             "' has another shape than the input";
    if (!out.scheme(s.dir) || *out.scheme(s.dir) != s.scheme)
      return "quantize '" + q.name + "': output '" + out.name +
             "' does not hold the " + rt::directionName(s.dir) +
             " direction with the stage's scheme";
  }
  if (q.amaxRanks < 1)
    return "quantize '" + q.name + "': amax ranks must be positive";
  for (const Stage &s : q.stages)
    if (q.amaxRanks > 1 && s.dir == rt::Direction::Columnwise &&
        e.values[s.value].columnwiseSource)
      return "quantize '" + q.name +
             "': a row shard cannot be double-quantized yet (the columnwise "
             "amax would be the dequantized tensor's, reduced over the ranks)";
  if (q.amaxRanks > 1)
    for (const Stage &s : q.stages) {
      std::string why = rt::validateRowShard(s.scheme, s.dir, in.rows());
      if (!why.empty())
        return "quantize '" + q.name + "' of a row shard: " + why;
    }
  if (q.biasGrad >= 0 &&
      (!inRange(e, q.biasGrad) || e.values[q.biasGrad].isQuantized() ||
       e.values[q.biasGrad].dtype != rt::DType::F32 ||
       e.values[q.biasGrad].shape != std::vector<int64_t>{in.cols()}))
    return "quantize '" + q.name +
           "': the bias gradient must be an f32 "
           "tensor of the input's last dimension";
  return "";
}

/// Why sharded quantize `q` of `e` is malformed, or "".
static std::string validateShardedQuantize(const Entry &e,
                                           const ShardedQuantizeKernel &q) {
  if (q.stages.empty())
    return "writes no stage";
  for (const Stage &s : q.stages)
    if (!inRange(e, s.value) || !e.values[s.value].isQuantized())
      return "writes a stage into a non-quantized value";
  const Value &out = e.values[q.stages.front().value];
  if (q.ranks() > ShardedQuantizeKernel::kMaxShards)
    return std::to_string(q.ranks()) + " shards; one kernel takes at most " +
           std::to_string(ShardedQuantizeKernel::kMaxShards);
  if (q.perProcess() && q.shards.size() != 1)
    return "one process per rank takes its own shard alone";
  std::vector<int64_t> sizes;
  for (int s : q.shards) {
    if (!inRange(e, s))
      return "value index out of range";
    const Value &v = e.values[s];
    if (v.isQuantized() || v.shape.size() != 1 || v.dtype != out.dtype)
      return "shard '" + v.name + "' must be a 1-D tensor of " +
             rt::dtypeName(out.dtype);
    sizes.push_back(v.shape[0]);
  }
  std::string why =
      q.perProcess()
          ? rt::validateRankOffsets(q.rankOffsets, out.rows() * out.cols(),
                                    sizes.front())
          : rt::validateShardSizes(sizes, out.rows() * out.cols());
  if (!why.empty())
    return why;
  for (const Stage &s : q.stages) {
    const Value &v = e.values[s.value];
    if (v.shape != out.shape || v.dtype != out.dtype)
      return "every output must have one shape and element type";
    if (!v.scheme(s.dir) || *v.scheme(s.dir) != s.scheme)
      return "output '" + v.name + "' does not hold the " +
             rt::directionName(s.dir) + " direction with the stage's scheme";
    if (s.dir == rt::Direction::Columnwise && v.columnwiseSource)
      return "a sharded master cannot be double-quantized (the columnwise "
             "copy would need the rowwise one of other ranks' elements)";
    why = rt::validateMasterShards(s.scheme, s.dir);
    if (!why.empty())
      return why;
  }
  return "";
}

static std::string validateAllGather(const Entry &e, const AllGatherKernel &g) {
  if (!inRange(e, g.input) || !inRange(e, g.output) || g.ranks < 1)
    return "value index or rank count out of range";
  const Value &in = e.values[g.input], &out = e.values[g.output];
  if (in.isQuantized() != out.isQuantized() || in.dtype != out.dtype ||
      in.shape.empty() || out.shape.size() != in.shape.size() ||
      out.shape[0] != in.shape[0] * g.ranks ||
      !std::equal(in.shape.begin() + 1, in.shape.end(), out.shape.begin() + 1))
    return "the output must be the input's type with " +
           std::to_string(g.ranks) + " times its first dimension";
  if (!out.isQuantized())
    return "";
  if (!out.rowwise && !out.columnwise)
    return "the output holds no direction";
  unsigned read = g.shardDirections(e);
  for (rt::Direction d : {rt::Direction::Rowwise, rt::Direction::Columnwise}) {
    if (!out.scheme(d))
      continue;
    if ((read & unsigned(d)) && in.scheme(d) != out.scheme(d))
      return std::string("the input does not hold the ") +
             rt::directionName(d) + " direction with the output's scheme";
    std::string why = rt::validateRowShard(*out.scheme(d), d, in.rows());
    if (!why.empty())
      return why;
  }
  return "";
}

unsigned AllGatherKernel::shardDirections(const Entry &e) const {
  const Value &out = e.values[size_t(output)];
  unsigned whole = (out.rowwise ? unsigned(rt::Direction::Rowwise) : 0u) |
                   (out.columnwise ? unsigned(rt::Direction::Columnwise) : 0u);
  return rt::shardDirectionsRead(out.rowwise ? &*out.rowwise : nullptr,
                                 out.columnwise ? &*out.columnwise : nullptr,
                                 whole, sendColumnwise);
}

/// Why grouped wgrad `g` of `e` is malformed, or "".
static std::string validateGroupedWgrad(const Entry &e,
                                        const GroupedWgradKernel &g) {
  for (int v : {g.dy, g.x, g.splits, g.output})
    if (!inRange(e, v))
      return "value index out of range";
  if (g.biasGrad >= 0 && !inRange(e, g.biasGrad))
    return "value index out of range";
  const Value &dy = e.values[g.dy], &x = e.values[g.x];
  const Value &s = e.values[g.splits], &dw = e.values[g.output];
  if (dy.isQuantized() || x.isQuantized() || dy.shape.size() != 2 ||
      x.shape.size() != 2 || dy.dtype != rt::DType::BF16 ||
      x.dtype != rt::DType::BF16)
    return "dy [M, N] and x [M, K] must be bf16 tensors";
  int64_t m = dy.shape[0], n = dy.shape[1], k = x.shape[1];
  if (x.shape[0] != m)
    return "dy and x must have the same rows";
  if (s.isQuantized() || s.dtype != rt::DType::I64 || s.shape.size() != 1)
    return "split sizes must be a tensor of G i64";
  int64_t groups = s.shape[0];
  if (dw.isQuantized() || dw.dtype != rt::DType::F32 ||
      dw.shape != std::vector<int64_t>{groups, n, k})
    return "dW must be an f32 [G, N, K] tensor";
  if (g.biasGrad >= 0) {
    const Value &db = e.values[g.biasGrad];
    if (db.isQuantized() || db.dtype != rt::DType::F32 ||
        db.shape != std::vector<int64_t>{groups, n})
      return "the bias gradient must be an f32 [G, N] tensor";
  }
  for (auto [scheme, state] : {std::make_pair(g.dyScheme, &g.dyState),
                               std::make_pair(g.xScheme, &g.xState)})
    if (std::string why = expertStateError(scheme, *state); !why.empty())
      return why;
  if (std::string why = rt::groupedWgradSchemesError(g.dyScheme, g.xScheme);
      !why.empty())
    return "dy and x: " + why;
  if (n % 8 != 0 || k % 8 != 0)
    return "N and K must be multiples of 8";
  if ((g.dyScheme.kind == rt::SchemeKind::Nvfp4 && n % 16 != 0) ||
      (g.xScheme.kind == rt::SchemeKind::Nvfp4 && k % 16 != 0))
    return "an NVFP4 operand's features (N for dy, K for x) must be a "
           "multiple of 16";
  return "";
}

std::string validateKernel(const Entry &e, const Kernel &k) {
  return std::visit(
      Overloaded{
          [&](const QuantizeKernel &q) { return validateQuantize(e, q); },
          [&](const DequantizeKernel &d) { return validateDequantize(e, d); },
          [&](const GemmKernel &g) {
            std::string why = validateGemm(e, g);
            return why.empty() ? why : "gemm '" + g.name + "': " + why;
          },
          [&](const AdamKernel &a) {
            std::string why = validateAdam(e, a);
            return why.empty() ? why : "adam '" + a.name + "': " + why;
          },
          [&](const GroupedGemmKernel &g) {
            std::string why = validateGroupedGemm(e, g);
            return why.empty() ? why : "grouped gemm '" + g.name + "': " + why;
          },
          [&](const GroupedWgradKernel &g) {
            std::string why = validateGroupedWgrad(e, g);
            return why.empty() ? why : "grouped wgrad '" + g.name + "': " + why;
          },
          [&](const AllGatherKernel &g) {
            std::string why = validateAllGather(e, g);
            return why.empty() ? why : "all-gather '" + g.name + "': " + why;
          },
          [&](const ShardedQuantizeKernel &q) {
            std::string why = validateShardedQuantize(e, q);
            return why.empty() ? why
                               : "sharded quantize '" + q.name + "': " + why;
          }},
      k);
}

bool sameType(const Value &a, const Value &b) {
  return a.kind == b.kind && a.shape == b.shape && a.dtype == b.dtype &&
         a.rowwise == b.rowwise && a.columnwise == b.columnwise &&
         a.columnwiseSource == b.columnwiseSource;
}

std::map<std::string, Value> persistentValues(const Program &p) {
  std::map<std::string, Value> out;
  for (const Entry &e : p.entries) {
    for (size_t i = 0; i < e.args.size(); ++i)
      if (!e.persistentArg(i).empty())
        out.emplace(e.persistentArg(i), e.values[size_t(e.args[i])]);
    for (size_t i = 0; i < e.results.size(); ++i)
      if (!e.persistentResult(i).empty())
        out.emplace(e.persistentResult(i), e.values[size_t(e.results[i])]);
  }
  return out;
}

std::string validate(const Entry &e) {
  auto inRange = [&](int v) {
    return v >= 0 && v < static_cast<int>(e.values.size());
  };
  for (const Value &v : e.values) {
    bool scalar = v.shape.empty();
    if (scalar && v.isQuantized())
      return "quantized value '" + v.name + "' has no shape";
    // i64: an optimizer's step (a scalar) or a grouped GEMM's split sizes.
    bool i64 =
        v.dtype == rt::DType::I64 && !v.isQuantized() && v.shape.size() <= 1;
    if (!isHighPrecision(v.dtype) && !i64)
      return "value '" + v.name +
             "' must have a bf16, f16 or f32 type (i64 only as a scalar or "
             "a vector of split sizes)";
    for (rt::Direction d :
         {rt::Direction::Rowwise, rt::Direction::Columnwise}) {
      const std::optional<rt::Scheme> &s = v.scheme(d);
      if (!s)
        continue;
      std::string why = s->validate();
      if (why.empty())
        why = rt::validateShape(*s, d, v.rows(), v.cols());
      if (!why.empty())
        return "value '" + v.name + "': " + why;
    }
    if (v.isQuantized() && !v.rowwise && !v.columnwise)
      return "quantized value '" + v.name + "' holds no direction";
  }
  for (int a : e.args)
    if (!inRange(a))
      return "argument index out of range";
  for (int r : e.results)
    if (!inRange(r))
      return "result index out of range";
  if ((!e.argPersistent.empty() && e.argPersistent.size() != e.args.size()) ||
      (!e.resultPersistent.empty() &&
       e.resultPersistent.size() != e.results.size()))
    return "persistent names do not match the arguments and results";
  // A value is stored once: one argument and one result per name.
  for (const std::vector<std::string> *names :
       {&e.argPersistent, &e.resultPersistent})
    for (size_t i = 0; i < names->size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (!(*names)[i].empty() && (*names)[i] == (*names)[j])
          return "persistent '" + (*names)[i] + "' is named twice";
  for (size_t i = 0; i < e.resultPersistent.size(); ++i)
    for (size_t j = 0; j < e.results.size(); ++j)
      if (j != i && !e.resultPersistent[i].empty() &&
          e.results[j] == e.results[i])
        return "result " + std::to_string(i) + " (persistent '" +
               e.resultPersistent[i] + "') is returned twice";
  for (const Kernel &k : e.kernels) {
    std::string why = validateKernel(e, k);
    if (!why.empty())
      return why;
  }
  return validateScalingStates(e);
}

} // namespace te::cg
