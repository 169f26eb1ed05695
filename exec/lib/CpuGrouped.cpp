//===- CpuGrouped.cpp - The MoE kernels on the CPU backend ----------------===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//
//
// The grouped GEMM (fprop, dgrad, with a bias) and the grouped wgrad with
// the reference numerics: each expert's rows as that expert's own GEMM
// computes them, with the GEMM bound of each output (docs/Numerics.md
// §7.4).
//
//===----------------------------------------------------------------------===//

#include "CpuBackendInternal.h"

#include "te/codegen/GroupedWgradEmitter.h"
#include "te/formats/GemmRules.h"
#include "te/runtime/reference/Codecs.h"
#include "te/runtime/reference/Gemm.h"
#include "te/runtime/reference/GroupedQuantize.h"
#include "te/runtime/reference/Quantize.h"

#include <algorithm>
#include <cstring>
#include <optional>

namespace te::exec::detail {

using namespace cg;
using rt::Direction;
using rt::DType;
namespace ref = rt::ref;

/// Each expert's delayed-scaling state of an operand whose states are
/// `state` (rt::expertStateName), or nothing when it has none.
static std::optional<std::vector<ref::DelayedScalingState *>>
expertStates(CallStates &states, const std::string &state, int64_t groups) {
  if (state.empty())
    return std::nullopt;
  std::vector<ref::DelayedScalingState *> out;
  for (int64_t g = 0; g < groups; ++g)
    out.push_back(states.get(rt::expertStateName(state, g)));
  return out;
}

/// A grouped GEMM that quantizes one or both bf16 operands per expert
/// (GroupedGemmKernel::quantizesPerExpert): each expert's rows and weight
/// (for the dgrad its columnwise copy) quantized as their own tensors, then
/// as the kernel's plan runs it - both per-tensor FP8
/// (ref::groupedTensorScaledQuantize): the block-scaled grouped GEMM over
/// each expert's scale repeated per block; NVFP4 x NVFP4 with nvfp4Codes:
/// ref::nvfp4Gemm on each expert's codes; otherwise the BF16 grouped GEMM
/// on each expert's dequantized values (ref::groupedNvfp4Values,
/// ref::groupedTensorScaledValues) and, for an operand not quantized per
/// expert, the values it holds (another family's, dequantized before).
/// `x` and `w` receive the operands' logical values (for the bound); empty
/// with `error` set on failure.
static std::vector<float>
perExpertScaledGemm(const Entry &e, const GroupedGemmKernel &g,
                    const RandomState &random, CallStates &states,
                    const std::vector<HostValue> &values,
                    const std::vector<int64_t> &splits, std::vector<float> &x,
                    std::vector<float> &w, std::string *error) {
  const int64_t groups = e.values[g.w].shape[0];
  auto bitsOf = [&](int index) {
    const Value &v = e.values[index];
    std::vector<uint16_t> bits(static_cast<size_t>(v.rows() * v.cols()));
    std::memcpy(bits.data(), values[index].tensor.data(), bits.size() * 2);
    return bits;
  };
  if (!g.readsPerExpertCodes()) {
    // NVFP4: each expert quantized alone - its dequantized values (for the
    // dgrad, the stack's columnwise ones in its own layout) and, rowwise,
    // its codes and block scales. Per-tensor FP8: its codes' values (the
    // same in either direction).
    std::vector<ref::GroupedNvfp4Values> nvfp4(2);
    auto quantized = [&](int index, const std::optional<rt::Scheme> &scheme,
                         bool stack, std::vector<float> &f) {
      const Value &v = e.values[index];
      if (!scheme) { // another family's values, dequantized before
        f = widen(values[index].tensor, v.dtype);
        return true;
      }
      std::vector<uint16_t> bits = bitsOf(index), out;
      const std::vector<int64_t> rowsSplits =
          stack ? std::vector<int64_t>{} : splits;
      if (scheme->kind == rt::SchemeKind::Nvfp4) {
        ref::GroupedNvfp4Values &q = nvfp4[stack ? 1 : 0];
        q = ref::groupedNvfp4Values(bits.data(), v.rows(), v.cols(), rowsSplits,
                                    groups, *scheme, random.seed, random.offset,
                                    stack && g.weightColumnwise);
        *error = q.error;
        out = q.values;
      } else {
        auto delayed =
            expertStates(states, stack ? g.wState : g.xState, groups);
        ref::GroupedTensorScaled q = ref::groupedTensorScaledQuantize(
            bits.data(), v.rows(), v.cols(), rowsSplits, groups, *scheme, false,
            delayed ? &*delayed : nullptr);
        *error = q.error;
        if (error->empty())
          out = ref::groupedTensorScaledValues(q, v.rows(), v.cols(),
                                               rowsSplits, groups, *scheme);
      }
      f.resize(out.size());
      for (size_t i = 0; i < f.size(); ++i)
        f[i] = ref::bf16ToFloat(out[i]);
      return error->empty();
    };
    if (!quantized(g.x, g.xScheme, false, x) ||
        !quantized(g.w, g.wScheme, true, w))
      return {};
    const Value &xv = e.values[g.x];
    const int64_t m = xv.rows(), k = xv.cols(), n = e.values[g.output].shape[1];
    if (!g.nvfp4Codes) // the BF16 grouped GEMM on the values
      return ref::groupedGemm(x.data(), w.data(), m, n, k, splits,
                              g.weightColumnwise);
    const ref::GroupedNvfp4Values &qx = nvfp4[0], &qw = nvfp4[1];
    // The engine's NVFP4 kernel: each expert's codes by ref::nvfp4Gemm's
    // rule (exact f16 products, its amaxes' alpha); padding rows +0.
    std::vector<float> d(static_cast<size_t>(m * n), 0.0f);
    std::vector<int64_t> counts = ref::clampSplits(splits, m);
    auto slice = [&](const ref::GroupedNvfp4Values &q, int64_t row0,
                     int64_t rows, int64_t expert) {
      ref::Nvfp4Operand op;
      op.rows = rows;
      op.k = k;
      op.scaleStride = k / 16;
      op.codes.assign(q.codes.begin() + row0 * k / 2,
                      q.codes.begin() + (row0 + rows) * k / 2);
      op.scales.assign(q.scales.begin() + row0 * k / 16,
                       q.scales.begin() + (row0 + rows) * k / 16);
      op.amax = q.amax[size_t(expert)];
      return op;
    };
    int64_t row0 = 0;
    for (int64_t ex = 0; ex < groups; ++ex) {
      const int64_t rows = counts[size_t(ex)];
      if (rows > 0) {
        std::vector<float> y =
            ref::nvfp4Gemm(slice(qx, row0, rows, ex), slice(qw, ex * n, n, ex),
                           nullptr, error);
        if (y.empty())
          return {};
        std::copy(y.begin(), y.end(), d.begin() + row0 * n);
      }
      row0 += rows;
    }
    return d;
  }
  // Both per-tensor FP8: the block-scaled GEMM on the codes.
  auto operand = [&](int index, const rt::Scheme &scheme, bool stack,
                     ref::BlockScaledOperand &op) {
    const Value &v = e.values[index];
    const bool columnwise = stack && g.weightColumnwise;
    std::vector<uint16_t> bits = bitsOf(index);
    auto delayed = expertStates(states, stack ? g.wState : g.xState, groups);
    ref::GroupedTensorScaled q = ref::groupedTensorScaledQuantize(
        bits.data(), v.rows(), v.cols(),
        stack ? std::vector<int64_t>{} : splits, groups, scheme, columnwise,
        delayed ? &*delayed : nullptr);
    op.codes = std::move(q.codes);
    op.scaleInv = std::move(q.blockScaleInv);
    // The columnwise copy is [cols, rows]: K-major along the stack's rows.
    op.rows = columnwise ? v.cols() : v.rows();
    op.k = columnwise ? v.rows() : v.cols();
    op.scaleStride = q.blockStride;
    op.format = scheme.element == DType::E5M2 ? ref::Fp8Format::E5M2
                                              : ref::Fp8Format::E4M3;
    op.tile2d = stack;
    *error = q.error;
    return q.error.empty();
  };
  ref::BlockScaledOperand xo, wo;
  if (!operand(g.x, *g.xScheme, false, xo) ||
      !operand(g.w, *g.wScheme, true, wo))
    return {};
  std::vector<float> d =
      g.weightColumnwise
          ? ref::groupedBlockScaledGemmColumnwise(xo, wo, splits, error)
          : ref::groupedBlockScaledGemm(xo, wo, splits, error);
  x = ref::dequantizeBlockScaled(xo);
  w = ref::dequantizeBlockScaled(wo);
  if (g.weightColumnwise) { // back to the stack's logical [G·N, K]
    std::vector<float> t(w.size());
    for (int64_t r = 0; r < wo.k; ++r)
      for (int64_t c = 0; c < wo.rows; ++c)
        t[size_t(r * wo.rows + c)] = w[size_t(c * wo.k + r)];
    w = std::move(t);
  }
  return d;
}

/// A grouped GEMM with the reference (perExpertScaledGemm for operands
/// quantized per expert, ref::groupedBlockScaledGemm for block FP8,
/// ref::groupedMxfp8Gemm for MXFP8, ref::groupedGemm otherwise) and the
/// GEMM bound per output, each expert's |a||b| sums from its own rows and
/// weight. Padding rows are exact zeros.
rt::Status runGroupedGemm(const Entry &e, const GroupedGemmKernel &g,
                          const RandomState &random, CallStates &states,
                          std::vector<HostValue> &values) {
  const Value &xv = e.values[g.x], &wv = e.values[g.w];
  // Each expert's GEMM: [m_g, k] x [k, n] (n the output columns).
  int64_t m = xv.shape[0], k = xv.shape[1];
  int64_t groups = wv.shape[0], n = e.values[g.output].shape[1];
  std::vector<int64_t> splits(static_cast<size_t>(groups));
  std::memcpy(splits.data(), values[g.splits].tensor.data(),
              splits.size() * sizeof(int64_t));
  auto logical = [&](int index, Direction dir) -> std::vector<float> {
    const Value &v = e.values[index];
    if (!v.isQuantized())
      return widen(values[index].tensor, v.dtype);
    return ref::dequantize(values[index].quantized, dir, *v.scheme(dir),
                           v.rows(), v.cols());
  };
  std::vector<float> x, w, d;
  if (g.quantizesPerExpert()) {
    std::string error;
    d = perExpertScaledGemm(e, g, random, states, values, splits, x, w, &error);
    if (d.empty())
      return fail(g.name + ": " + error);
  } else {
    x = logical(g.x, Direction::Rowwise);
    w = logical(g.w, g.weightDirection());
    if (x.empty() || w.empty())
      return fail(g.name + ": the reference could not dequantize an operand");
    const std::optional<rt::Scheme> &xScheme = xv.scheme(Direction::Rowwise);
    if (xv.isQuantized() && xScheme->kind == rt::SchemeKind::Mxfp8) {
      // The engine's MXFP8 kernel (both read rowwise, validated): its rule
      // (the tensor cores' order inside a 32-element block may differ; the
      // bound below covers it).
      std::string error;
      d = ref::groupedMxfp8Gemm(
          ref::mxfp8Operand(*values[g.x].quantized.rowwise, *xScheme),
          ref::mxfp8Operand(*values[g.w].quantized.rowwise,
                            *wv.scheme(Direction::Rowwise)),
          splits, &error);
      if (d.empty())
        return fail(g.name + ": " + error);
    } else if (xv.isQuantized()) {
      auto operand = [&](int index, Direction dir) {
        const Value &v = e.values[index];
        const ref::QuantizedTensor &q = values[index].quantized;
        return ref::blockScaledOperand(
            dir == Direction::Rowwise ? *q.rowwise : *q.columnwise,
            *v.scheme(dir));
      };
      std::string error;
      ref::BlockScaledOperand xo = operand(g.x, Direction::Rowwise);
      ref::BlockScaledOperand wo = operand(g.w, g.weightDirection());
      d = g.weightColumnwise
              ? ref::groupedBlockScaledGemmColumnwise(xo, wo, splits, &error)
              : ref::groupedBlockScaledGemm(xo, wo, splits, &error);
      if (d.empty())
        return fail(g.name + ": " + error);
    } else {
      d = ref::groupedGemm(x.data(), w.data(), m, n, k, splits,
                           g.weightColumnwise);
    }
  }
  // Expert g's bias row, added in fp32 to each of its rows (as the single
  // GEMMs add theirs: fl(acc + bias)).
  std::vector<float> bias;
  std::vector<int64_t> expertOf;
  if (g.bias >= 0) {
    bias = widen(values[g.bias].tensor, e.values[g.bias].dtype);
    expertOf = ref::expertOfRows(splits, m);
    for (int64_t i = 0; i < m; ++i)
      if (expertOf[size_t(i)] >= 0)
        for (int64_t j = 0; j < n; ++j)
          d[size_t(i * n + j)] += bias[size_t(expertOf[size_t(i)] * n + j)];
  }
  // |a||b| sums, expert by expert (zero on padding rows).
  std::vector<float> absSum(d.size(), 0.0f);
  int64_t row = 0;
  std::vector<int64_t> clamped = ref::clampSplits(splits, m);
  for (int64_t ex = 0; ex < groups; ++ex) {
    if (clamped[ex] == 0)
      continue;
    // w holds expert ex's [n, k] (rowwise) or [k, n] (columnwise) weight.
    std::vector<float> sums;
    ref::referenceGemm(x.data() + row * k, false, w.data() + ex * n * k,
                       !g.weightColumnwise, clamped[ex], n, k,
                       bias.empty() ? nullptr : bias.data() + ex * n, false,
                       &sums);
    std::copy(sums.begin(), sums.end(), absSum.begin() + row * n);
    row += clamped[ex];
  }
  HostValue &out = values[g.output];
  out.tensor = narrow(d, e.values[g.output].dtype);
  out.unbounded = values[g.x].inexact() || values[g.w].inexact() ||
                  values[g.splits].inexact() ||
                  (g.bias >= 0 && values[g.bias].inexact());
  if (!out.unbounded)
    out.tolerance =
        gemmBound(d, absSum, k, xv.isQuantized() || g.readsPerExpertCodes(),
                  e.values[g.output].dtype, nullptr, n);
  if (g.quantizedOutput >= 0) {
    // The epilogue's quantization: y as stored, quantized as a quantize
    // kernel over y would, and as inexact as y (runQuantize's rule).
    const Value &q = e.values[g.quantizedOutput];
    ref::QuantizedTensor t =
        ref::quantize(out.tensor.data(), ref::SourceType::BF16, m, n,
                      *q.rowwise, ref::kRowwiseMask, ref::QuantizeOptions{});
    if (!t.ok())
      return fail(g.name + ": " + t.error);
    values[g.quantizedOutput].quantized.rowwise = std::move(t.rowwise);
    values[g.quantizedOutput].unbounded = out.inexact();
  }
  return rt::Status::ok();
}

/// The wgrad of an MoE layer with the reference: dy and x laid out per
/// expert as the kernel's grouped quantize does (ref::groupedColumnwise
/// Quantize), then each expert's dW_g = dy_g^T x_g as its own GEMM
/// (ref::blockScaledGemm for block FP8, referenceGemm for bf16) with the
/// GEMM bound; the bias gradients are exact (each expert's own fused one).
rt::Status runGroupedWgrad(const Entry &e, const GroupedWgradKernel &g,
                           const RandomState &random, CallStates &states,
                           std::vector<HostValue> &values) {
  const Value &dyv = e.values[g.dy];
  int64_t m = dyv.shape[0], n = dyv.shape[1], k = e.values[g.x].shape[1];
  int64_t groups = e.values[g.output].shape[0];
  std::vector<int64_t> splits(static_cast<size_t>(groups));
  std::memcpy(splits.data(), values[g.splits].tensor.data(),
              splits.size() * sizeof(int64_t));
  // The kernel's layout and capacity (every split fits it).
  int64_t capacity = groupedWgradCapacity(m, groups);
  // FP8 codes and 1x128 scales (block FP8, or per-tensor FP8 with each
  // expert's scale over its blocks) where both are FP8 of one family, else
  // bf16 values.
  const bool fp8 = rt::groupedWgradReadsCodes(g.dyScheme, g.xScheme);
  auto layout = [&](int index, const rt::Scheme &scheme, int64_t cols,
                    const std::string &state) {
    std::vector<uint16_t> bits(static_cast<size_t>(m * cols));
    std::memcpy(bits.data(), values[index].tensor.data(), bits.size() * 2);
    auto delayed = expertStates(states, state, groups);
    return ref::groupedColumnwiseQuantize(
        bits.data(), m, cols, splits, scheme, capacity, random.seed,
        random.offset, delayed ? &*delayed : nullptr, /*fp8Values=*/!fp8);
  };
  ref::GroupedColumnwise a = layout(g.dy, g.dyScheme, n, g.dyState);
  ref::GroupedColumnwise b = layout(g.x, g.xScheme, k, g.xState);
  for (const ref::GroupedColumnwise *t : {&a, &b})
    if (!t->error.empty())
      return fail(g.name + ": " + t->error);
  std::vector<float> dw(static_cast<size_t>(groups * n * k), 0.0f);
  std::vector<float> absSum(dw.size(), 0.0f);
  int64_t longest = m; // the bound's contraction length
  std::vector<int64_t> clamped = ref::clampSplits(splits, m);
  for (int64_t ex = 0; ex < groups; ++ex) {
    if (clamped[ex] == 0)
      continue;
    // The segment's rows the GEMM contracts (NVFP4: padded to 16, whose
    // transformed values are non-zero; both operands pad alike).
    int64_t first = a.segmentStart[ex],
            rows = std::max(ref::groupedColumnwiseRows(g.dyScheme, clamped[ex]),
                            ref::groupedColumnwiseRows(g.xScheme, clamped[ex]));
    longest = std::max(longest, rows);
    // Expert ex's operands: [n, rows] and [k, rows], and their values.
    auto operand = [&](const ref::GroupedColumnwise &t, int64_t r,
                       const rt::Scheme &scheme) {
      ref::BlockScaledOperand o;
      o.rows = r;
      o.k = rows;
      o.scaleStride = r;
      o.format = scheme.element == DType::E5M2 ? ref::Fp8Format::E5M2
                                               : ref::Fp8Format::E4M3;
      int64_t width = fp8 ? 1 : 2, pad = (r + 3) / 4 * 4;
      o.codes.resize(static_cast<size_t>(r * rows * width));
      for (int64_t i = 0; i < r; ++i)
        std::memcpy(&o.codes[i * rows * width],
                    &t.data[(i * capacity + first * 128) * width],
                    static_cast<size_t>(rows * width));
      if (fp8) {
        int64_t blocks = (rows + 127) / 128;
        o.scaleInv.resize(static_cast<size_t>(blocks * r));
        for (int64_t blk = 0; blk < blocks; ++blk)
          for (int64_t i = 0; i < r; ++i)
            o.scaleInv[blk * r + i] = t.scaleInv[(first + blk) * pad + i];
      }
      return o;
    };
    ref::BlockScaledOperand ao = operand(a, n, g.dyScheme);
    ref::BlockScaledOperand bo = operand(b, k, g.xScheme);
    std::vector<float> av, bv, d;
    if (fp8) {
      std::string error;
      d = ref::blockScaledGemm(ao, bo, nullptr, &error);
      if (d.empty())
        return fail(g.name + ": " + error);
      av = ref::dequantizeBlockScaled(ao);
      bv = ref::dequantizeBlockScaled(bo);
    } else {
      av = widen(ao.codes, DType::BF16);
      bv = widen(bo.codes, DType::BF16);
      d = ref::referenceGemm(av.data(), false, bv.data(), true, n, k, rows);
    }
    std::vector<float> sums;
    ref::referenceGemm(av.data(), false, bv.data(), true, n, k, rows, nullptr,
                       false, &sums);
    std::copy(d.begin(), d.end(), dw.begin() + ex * n * k);
    std::copy(sums.begin(), sums.end(), absSum.begin() + ex * n * k);
  }
  HostValue &out = values[g.output];
  out.tensor = narrow(dw, DType::F32);
  out.unbounded = values[g.dy].inexact() || values[g.x].inexact() ||
                  values[g.splits].inexact();
  if (!out.unbounded)
    out.tolerance = gemmBound(dw, absSum, longest, fp8, DType::F32, nullptr, k);
  if (g.biasGrad >= 0) {
    HostValue &db = values[g.biasGrad];
    db.tensor = narrow(a.biasGrad, DType::F32);
    db.unbounded = values[g.dy].inexact() || values[g.splits].inexact();
  }
  return rt::Status::ok();
}

} // namespace te::exec::detail
