//===- runtime/src/reference/Gemm.cpp - Reference GEMMs ---------*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR and no CUDA.
//
//===----------------------------------------------------------------------===//
//
// Straight loops with the summation order written out: the point is a fixed,
// documented result, not speed. The block-scaled GEMM follows what cuBLASLt
// 13.1 computes on H100, measured bit for bit by GemmGpuTest
// (docs/Numerics.md): per 128-element K block with partial sum P,
// 1x128 x 1x128 accumulates y = fma(P * sx, sw, y) (as docs/Numerics.md §7.3
// says), and a pairing with a 128x128 operand y = fma(P, sx * sw, y) (7.3
// says fma(P * sx, sw, y) there; measured for 1D x 2D, assumed for 2D x 1D,
// which the product sx * sw makes symmetric). std::fma is the correctly
// rounded fused multiply-add; nothing else may be contracted
// (-ffp-contract=off).
//
//===----------------------------------------------------------------------===//

#include "te/runtime/reference/Gemm.h"

#include "te/runtime/reference/Codecs.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <thread>

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "the reference GEMM needs float arithmetic evaluated in float"
#endif

namespace te {
namespace rt {
namespace ref {

/// Runs body(i) for every row i in [0, m) on all cores. Each output row is
/// computed by one thread in the documented order, so the result does not
/// depend on the number of threads.
template <typename Body> static void forEachRow(int64_t m, Body body) {
  int64_t threads = std::max<int64_t>(
      1, std::min<int64_t>(m, std::thread::hardware_concurrency()));
  if (threads == 1) {
    for (int64_t i = 0; i < m; ++i)
      body(i);
    return;
  }
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int64_t i = t; i < m; i += threads)
        body(i);
    });
  for (std::thread &th : pool)
    th.join();
}

/// op(X) as a row-major [rows, k] copy (K contiguous): the loops below then
/// read both operands with unit stride. Copying changes no value.
static std::vector<float> kContiguous(const float *x, bool kMajorStored,
                                      int64_t rows, int64_t k) {
  std::vector<float> out(static_cast<size_t>(rows * k));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t kk = 0; kk < k; ++kk)
      out[r * k + kk] = kMajorStored ? x[r * k + kk] : x[kk * rows + r];
  return out;
}

std::vector<float> referenceGemm(const float *a, bool transA, const float *b,
                                 bool transB, int64_t m, int64_t n, int64_t k,
                                 const float *bias, bool accumulateInF64,
                                 std::vector<float> *absSum) {
  std::vector<float> at = kContiguous(a, !transA, m, k);
  std::vector<float> bt = kContiguous(b, transB, n, k);
  std::vector<float> d(static_cast<size_t>(m * n));
  if (absSum)
    absSum->assign(static_cast<size_t>(m * n), 0.0f);
  forEachRow(m, [&](int64_t i) {
    const float *ai = &at[i * k];
    for (int64_t j = 0; j < n; ++j) {
      const float *bj = &bt[j * k];
      float accF = 0.0f, mag = 0.0f;
      double accD = 0.0;
      for (int64_t kk = 0; kk < k; ++kk) {
        if (accumulateInF64)
          accD =
              accD + static_cast<double>(ai[kk]) * static_cast<double>(bj[kk]);
        else
          accF = accF + ai[kk] * bj[kk];
        if (absSum)
          mag = mag + std::fabs(ai[kk] * bj[kk]);
      }
      if (absSum)
        (*absSum)[i * n + j] = bias ? mag + std::fabs(bias[j]) : mag;
      if (accumulateInF64) {
        if (bias)
          accD = accD + static_cast<double>(bias[j]);
        d[i * n + j] = static_cast<float>(accD);
      } else {
        if (bias)
          accF = accF + bias[j];
        d[i * n + j] = accF;
      }
    }
  });
  return d;
}

BlockScaledOperand blockScaledOperand(const QuantizedDirection &q,
                                      const Scheme &scheme) {
  BlockScaledOperand op;
  op.codes = q.data.bytes;
  op.rows = q.data.desc.rows;
  op.k = q.data.desc.cols;
  op.scaleStride = q.scaleInv.desc.cols;
  op.scaleInv.resize(static_cast<size_t>(q.scaleInv.desc.numElements()));
  for (size_t i = 0; i < op.scaleInv.size(); ++i)
    op.scaleInv[i] = loadF32(q.scaleInv, static_cast<int64_t>(i));
  op.format = scheme.element == DType::E5M2 ? Fp8Format::E5M2 : Fp8Format::E4M3;
  op.tile2d = scheme.tileRows == 128;
  return op;
}

static float blockScaleOf(const BlockScaledOperand &op, int64_t row,
                          int64_t kBlock) {
  return op.tile2d ? op.scaleInv[(row / 128) * op.scaleStride + kBlock]
                   : op.scaleInv[kBlock * op.scaleStride + row];
}

static std::string checkOperand(const BlockScaledOperand &op,
                                const char *name) {
  std::string n(name);
  if (op.rows < 1 || op.k < 1)
    return n + " is empty";
  if (op.codes.size() != static_cast<size_t>(op.rows * op.k))
    return n + " has " + std::to_string(op.codes.size()) +
           " codes, expected rows * k";
  int64_t kBlocks = (op.k + 127) / 128, rowBlocks = (op.rows + 127) / 128;
  int64_t needRows = op.tile2d ? rowBlocks : kBlocks;
  int64_t needCols = op.tile2d ? kBlocks : op.rows;
  if (op.scaleStride < needCols ||
      op.scaleInv.size() < static_cast<size_t>(needRows * op.scaleStride))
    return n + " scale_inv buffer is too small for its GEMM_READY layout";
  return "";
}

/// Why x and w cannot form a block-scaled GEMM, or "".
static std::string checkPair(const BlockScaledOperand &x,
                             const BlockScaledOperand &w) {
  if (x.tile2d && w.tile2d)
    return "block-scaled GEMMs do not pair two 128x128-scaled operands";
  if (x.k != w.k)
    return "operands disagree on K";
  std::string e = checkOperand(x, "x");
  return e.empty() ? checkOperand(w, "w") : e;
}

static std::vector<float> decodeAll(const BlockScaledOperand &op) {
  std::vector<float> v(op.codes.size());
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = decodeFp8(op.format, op.codes[i]);
  return v;
}

std::vector<float> dequantizeBlockScaled(const BlockScaledOperand &op) {
  std::vector<float> v = decodeAll(op);
  for (int64_t r = 0; r < op.rows; ++r)
    for (int64_t kk = 0; kk < op.k; ++kk)
      v[size_t(r * op.k + kk)] *= blockScaleOf(op, r, kk / 128);
  return v;
}

/// One output of a block-scaled GEMM, row i of x against row j of w (the
/// decoded codes xv, wv): the rule of docs/Numerics.md §7.3.
static float blockScaledDot(const BlockScaledOperand &x,
                            const BlockScaledOperand &w,
                            const std::vector<float> &xv,
                            const std::vector<float> &wv, int64_t i,
                            int64_t j) {
  int64_t k = x.k;
  float acc = 0.0f;
  for (int64_t kb = 0; kb * 128 < k; ++kb) {
    float partial = 0.0f;
    for (int64_t kk = kb * 128; kk < std::min(k, kb * 128 + 128); ++kk)
      partial = partial + xv[i * k + kk] * wv[j * k + kk];
    float sx = blockScaleOf(x, i, kb), sw = blockScaleOf(w, j, kb);
    if (x.tile2d || w.tile2d)
      acc = std::fma(partial, sx * sw, acc);
    else
      acc = std::fma(partial * sx, sw, acc);
  }
  return acc;
}

std::vector<float> blockScaledGemm(const BlockScaledOperand &x,
                                   const BlockScaledOperand &w,
                                   const float *bias, std::string *error) {
  if (std::string e = checkPair(x, w); !e.empty()) {
    if (error)
      *error = e;
    return {};
  }
  int64_t m = x.rows, n = w.rows;
  std::vector<float> xv = decodeAll(x), wv = decodeAll(w);
  std::vector<float> y(static_cast<size_t>(m * n));
  forEachRow(m, [&](int64_t i) {
    for (int64_t j = 0; j < n; ++j) {
      float acc = blockScaledDot(x, w, xv, wv, i, j);
      if (bias)
        acc = acc + bias[j];
      y[i * n + j] = acc;
    }
  });
  return y;
}

/// Why x and w cannot form an MXFP8 GEMM, or "".
static std::string checkMxfp8(const Mxfp8Operand &x, const Mxfp8Operand &w) {
  if (x.k != w.k || x.k % 32 != 0)
    return "MXFP8 operands need one K, a multiple of 32";
  for (const Mxfp8Operand *op : {&x, &w})
    if (op->codes.size() < size_t(op->rows * op->k) ||
        op->scaleStride < op->k / 32 ||
        op->scales.size() < size_t(op->rows * op->scaleStride))
      return "an MXFP8 operand's codes or scales are too small";
  return "";
}

static std::vector<float> decodeCodes(const Mxfp8Operand &op) {
  std::vector<float> v(op.codes.size());
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = decodeFp8(op.format, op.codes[i]);
  return v;
}

/// Row i of x against row j of w (decoded codes xv, wv): docs/Numerics.md
/// §5.4.
static float mxfp8Dot(const Mxfp8Operand &x, const Mxfp8Operand &w,
                      const std::vector<float> &xv,
                      const std::vector<float> &wv, int64_t i, int64_t j) {
  const int64_t k = x.k;
  float acc = 0.0f;
  for (int64_t b = 0; b < k / 32; ++b) {
    float partial = 0.0f;
    for (int64_t kk = 32 * b; kk < 32 * b + 32; ++kk)
      partial = partial + xv[i * k + kk] * wv[j * k + kk];
    acc = std::fma(partial * decodeE8M0(x.scales[i * x.scaleStride + b]),
                   decodeE8M0(w.scales[j * w.scaleStride + b]), acc);
  }
  return acc;
}

std::vector<float> mxfp8Gemm(const Mxfp8Operand &x, const Mxfp8Operand &w,
                             const float *bias, std::string *error) {
  if (std::string why = checkMxfp8(x, w); !why.empty()) {
    if (error)
      *error = why;
    return {};
  }
  const int64_t m = x.rows, n = w.rows;
  std::vector<float> xv = decodeCodes(x), wv = decodeCodes(w);
  std::vector<float> y(static_cast<size_t>(m * n));
  forEachRow(m, [&](int64_t i) {
    for (int64_t j = 0; j < n; ++j) {
      float acc = mxfp8Dot(x, w, xv, wv, i, j);
      y[i * n + j] = bias ? acc + bias[j] : acc;
    }
  });
  return y;
}

Mxfp8Operand mxfp8Operand(const QuantizedDirection &q, const Scheme &scheme) {
  Mxfp8Operand op;
  op.codes = q.data.bytes;
  op.rows = q.data.desc.rows;
  op.k = q.data.desc.cols;
  op.scales = q.scaleInv.bytes;
  op.scaleStride = q.scaleInv.desc.cols;
  op.format = scheme.element == DType::E5M2 ? Fp8Format::E5M2 : Fp8Format::E4M3;
  return op;
}

std::vector<float> groupedMxfp8Gemm(const Mxfp8Operand &x,
                                    const Mxfp8Operand &w,
                                    const std::vector<int64_t> &splits,
                                    std::string *error) {
  std::string why = checkMxfp8(x, w);
  const int64_t groups = static_cast<int64_t>(splits.size());
  if (why.empty() && (groups < 1 || w.rows % groups != 0))
    why = "the stacked weight's rows are not G experts' N rows";
  if (!why.empty()) {
    if (error)
      *error = why;
    return {};
  }
  const int64_t m = x.rows, n = w.rows / groups;
  std::vector<int64_t> expert = expertOfRows(splits, m);
  std::vector<float> xv = decodeCodes(x), wv = decodeCodes(w);
  std::vector<float> y(static_cast<size_t>(m * n), 0.0f);
  forEachRow(m, [&](int64_t i) {
    if (expert[i] < 0)
      return;
    for (int64_t j = 0; j < n; ++j)
      y[i * n + j] = mxfp8Dot(x, w, xv, wv, i, expert[i] * n + j);
  });
  return y;
}

static std::string checkNvfp4(const Nvfp4Operand &x, const Nvfp4Operand &w) {
  if (x.k != w.k || x.k % 16 != 0)
    return "NVFP4 operands need one K, a multiple of 16";
  for (const Nvfp4Operand *op : {&x, &w})
    if (op->codes.size() < size_t(op->rows * op->k / 2) ||
        op->scaleStride < op->k / 16 ||
        op->scales.size() < size_t(op->rows * op->scaleStride))
      return "an NVFP4 operand's codes or scales are too small";
  return "";
}

/// Each element's exact value e2m1 · s_b (row-major rows x k).
static std::vector<float> nvfp4Values(const Nvfp4Operand &op) {
  std::vector<float> v(static_cast<size_t>(op.rows * op.k));
  for (int64_t r = 0; r < op.rows; ++r)
    for (int64_t c = 0; c < op.k; ++c) {
      uint8_t byte = op.codes[size_t((r * op.k + c) / 2)];
      uint8_t code = c % 2 == 0 ? unpackE2M1Low(byte) : unpackE2M1High(byte);
      v[size_t(r * op.k + c)] =
          decodeE2M1(code) *
          decodeE4M3(op.scales[size_t(r * op.scaleStride + c / 16)]);
    }
  return v;
}

std::vector<float> nvfp4Gemm(const Nvfp4Operand &x, const Nvfp4Operand &w,
                             const float *bias, std::string *error) {
  if (std::string why = checkNvfp4(x, w); !why.empty()) {
    if (error)
      *error = why;
    return {};
  }
  const int64_t m = x.rows, n = w.rows, k = x.k;
  const float alpha = (x.amax * w.amax) * bitsToFloat(0x34149B93u);
  std::vector<float> xv = nvfp4Values(x), wv = nvfp4Values(w);
  std::vector<float> y(static_cast<size_t>(m * n));
  forEachRow(m, [&](int64_t i) {
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int64_t kk = 0; kk < k; ++kk)
        acc = acc + xv[size_t(i * k + kk)] * wv[size_t(j * k + kk)];
      acc = acc * alpha;
      y[size_t(i * n + j)] = bias ? acc + bias[j] : acc;
    }
  });
  return y;
}

std::vector<int64_t> clampSplits(const std::vector<int64_t> &splits,
                                 int64_t mTotal) {
  std::vector<int64_t> out(splits.size());
  int64_t rows = 0;
  for (size_t g = 0; g < splits.size(); ++g) {
    out[g] = std::min(std::max<int64_t>(splits[g], 0), mTotal - rows);
    rows += out[g];
  }
  return out;
}

std::vector<int64_t> expertOfRows(const std::vector<int64_t> &splits,
                                  int64_t mTotal) {
  std::vector<int64_t> expert(static_cast<size_t>(mTotal), -1);
  int64_t row = 0;
  std::vector<int64_t> clamped = clampSplits(splits, mTotal);
  for (size_t g = 0; g < clamped.size(); ++g)
    for (int64_t r = 0; r < clamped[g]; ++r)
      expert[row++] = static_cast<int64_t>(g);
  return expert;
}

/// Each expert's rows of x times its weight (experts[g], [n, K]; with
/// `stacked`, experts[0] is the whole [G·n, K] stack and expert g its rows
/// g·n ..), blockScaledDot's rule per output; padding rows +0. A non-empty
/// `why` (the operands' check) is reported through `error` instead.
static std::vector<float>
groupedDots(const BlockScaledOperand &x,
            const std::vector<BlockScaledOperand> &experts, bool stacked,
            int64_t n, const std::vector<int64_t> &splits,
            const std::string &why, std::string *error) {
  if (!why.empty()) {
    if (error)
      *error = why;
    return {};
  }
  int64_t m = x.rows;
  std::vector<int64_t> expert = expertOfRows(splits, m);
  std::vector<float> xv = decodeAll(x);
  std::vector<std::vector<float>> wv;
  for (const BlockScaledOperand &wg : experts)
    wv.push_back(decodeAll(wg));
  std::vector<float> y(static_cast<size_t>(m * n), 0.0f);
  forEachRow(m, [&](int64_t i) {
    int64_t g = expert[i];
    if (g < 0)
      return;
    int64_t op = stacked ? 0 : g, first = stacked ? g * n : 0;
    for (int64_t j = 0; j < n; ++j)
      y[i * n + j] = blockScaledDot(x, experts[op], xv, wv[op], i, first + j);
  });
  return y;
}

std::vector<float> groupedBlockScaledGemm(const BlockScaledOperand &x,
                                          const BlockScaledOperand &w,
                                          const std::vector<int64_t> &splits,
                                          std::string *error) {
  int64_t groups = static_cast<int64_t>(splits.size());
  std::string e;
  if (groups < 1 || w.rows % groups != 0)
    e = "the stacked weight's rows are not G equal experts";
  // Each expert's weight as its own operand: 128x128 scales are per expert
  // ([G][ceil(N/128)][stride]); 1x128 ones run along rows, so the stacked
  // layout serves every expert.
  int64_t n = e.empty() ? w.rows / groups : 0;
  int64_t tileRows = (n + 127) / 128;
  std::vector<BlockScaledOperand> experts;
  // (1x128: one operand, the stack itself, serves every expert.)
  for (int64_t g = 0; e.empty() && g < (w.tile2d ? groups : 1); ++g) {
    BlockScaledOperand wg = w;
    wg.rows = n;
    wg.codes.assign(w.codes.begin() + g * n * w.k,
                    w.codes.begin() + (g + 1) * n * w.k);
    if (w.tile2d) {
      size_t from = static_cast<size_t>(g * tileRows * w.scaleStride);
      size_t count = static_cast<size_t>(tileRows * w.scaleStride);
      if (w.scaleInv.size() < from + count) {
        e = "w scale_inv buffer is too small for G experts' 128x128 tiles";
        break;
      }
      wg.scaleInv.assign(w.scaleInv.begin() + from,
                         w.scaleInv.begin() + from + count);
    } else {
      wg = w; // scales and codes indexed by stacked row
    }
    if (e.empty())
      e = checkPair(x, wg);
    experts.push_back(std::move(wg));
  }
  return groupedDots(x, experts, !w.tile2d, n, splits, e, error);
}

std::vector<float> groupedBlockScaledGemmColumnwise(
    const BlockScaledOperand &x, const BlockScaledOperand &w,
    const std::vector<int64_t> &splits, std::string *error) {
  int64_t groups = static_cast<int64_t>(splits.size());
  std::string e;
  if (!w.tile2d)
    e = "a weight read columnwise must have 128x128 tiles";
  else if (groups < 1 || w.k % (128 * groups) != 0)
    e = "the stack's columnwise storage is not G experts of whole 128-column "
        "blocks";
  // w is [n, G·k]: expert g's [n, k] weight is its columns g·k .. g·k+k-1,
  // its scales the matching block columns of each 128-row block.
  int64_t n = w.rows, k = e.empty() ? w.k / groups : 0;
  int64_t kBlocks = k / 128, rowBlocks = (n + 127) / 128;
  std::vector<BlockScaledOperand> experts;
  for (int64_t g = 0; e.empty() && g < groups; ++g) {
    BlockScaledOperand wg = w;
    wg.k = k;
    wg.codes.resize(static_cast<size_t>(n * k));
    for (int64_t r = 0; r < n; ++r)
      std::copy_n(w.codes.begin() + r * w.k + g * k, k,
                  wg.codes.begin() + r * k);
    wg.scaleStride = kBlocks;
    wg.scaleInv.assign(static_cast<size_t>(rowBlocks * kBlocks), 0.0f);
    for (int64_t rb = 0; rb < rowBlocks; ++rb)
      for (int64_t kb = 0; kb < kBlocks; ++kb) {
        size_t from =
            static_cast<size_t>(rb * w.scaleStride + g * kBlocks + kb);
        if (from >= w.scaleInv.size()) {
          e = "w scale_inv buffer is too small for its columnwise layout";
          break;
        }
        wg.scaleInv[size_t(rb * kBlocks + kb)] = w.scaleInv[from];
      }
    if (e.empty())
      e = checkPair(x, wg);
    experts.push_back(std::move(wg));
  }
  return groupedDots(x, experts, false, n, splits, e, error);
}

std::vector<float> groupedGemm(const float *x, const float *w, int64_t mTotal,
                               int64_t n, int64_t k,
                               const std::vector<int64_t> &splits,
                               bool weightColumnwise) {
  std::vector<float> y(static_cast<size_t>(mTotal * n), 0.0f);
  int64_t row = 0;
  std::vector<int64_t> clamped = clampSplits(splits, mTotal);
  for (size_t g = 0; g < clamped.size(); ++g) {
    if (clamped[g] == 0)
      continue;
    std::vector<float> part = referenceGemm(
        x + row * k, false, w + g * n * k, !weightColumnwise, clamped[g], n, k);
    std::copy(part.begin(), part.end(), y.begin() + row * n);
    row += clamped[g];
  }
  return y;
}

std::vector<uint16_t> roundToBF16(const std::vector<float> &values) {
  std::vector<uint16_t> out(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    out[i] = floatToBF16(values[i]);
  return out;
}

std::vector<float> biasGrad(const void *dy, SourceType type, int64_t m,
                            int64_t n, int64_t chunkRows) {
  std::vector<float> values = widenToF32(dy, type, m * n);
  if (chunkRows <= 0 || chunkRows >= m)
    chunkRows = m;
  std::vector<float> total(static_cast<size_t>(n), 0.0f);
  std::vector<float> partial(static_cast<size_t>(n));
  for (int64_t r0 = 0; r0 < m; r0 += chunkRows) {
    std::fill(partial.begin(), partial.end(), 0.0f);
    for (int64_t r = r0; r < std::min(m, r0 + chunkRows); ++r)
      for (int64_t c = 0; c < n; ++c)
        partial[c] = partial[c] + values[r * n + c];
    for (int64_t c = 0; c < n; ++c)
      total[c] = total[c] + partial[c];
  }
  return total;
}

} // namespace ref
} // namespace rt
} // namespace te
