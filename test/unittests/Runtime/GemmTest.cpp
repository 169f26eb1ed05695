//===- test/unittests/Runtime/GemmTest.cpp - GEMMs --------------*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR and no CUDA.
//
//===----------------------------------------------------------------------===//
//
// The plain GEMM is checked against exact small-integer products for every
// transpose combination and for its documented summation order; the
// block-scaled GEMM exactly on integer-valued operands (every product, sum
// and power-of-two scale is exact, so any correct order gives the same
// bits), against an fp64 GEMM of the dequantized operands within the fp32
// summation error bound, for its operand-order rule (which scale multiplies
// the partial sum first) and for TE's three Linear GEMMs built from rowwise
// and columnwise quantized operands. The bias gradient is checked for both
// documented orders.
//
//===----------------------------------------------------------------------===//

#include "te/runtime/reference/Gemm.h"

#include "te/runtime/reference/Codecs.h"

#include "gtest/gtest.h"

#include "Support/TestSupport.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

using namespace te::rt;
using namespace te::rt::ref;

namespace {

uint64_t splitmix(uint64_t &state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// Integers in [-range, range].
std::vector<float> smallInts(int64_t n, int range, uint64_t seed) {
  std::vector<float> v(n);
  for (float &x : v)
    x = static_cast<float>(static_cast<int>(splitmix(seed) % (2 * range + 1)) -
                           range);
  return v;
}

std::vector<float> transpose(const std::vector<float> &x, int64_t rows,
                             int64_t cols) {
  std::vector<float> t(x.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      t[c * rows + r] = x[r * cols + c];
  return t;
}

/// D = A B (+ bias) in double for row-major A (M x K) and B (K x N).
std::vector<double> exactGemm(const std::vector<float> &a,
                              const std::vector<float> &b, int64_t m, int64_t n,
                              int64_t k,
                              const std::vector<float> *bias = nullptr) {
  std::vector<double> d(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t kk = 0; kk < k; ++kk)
        d[i * n + j] += double(a[i * k + kk]) * b[kk * n + j];
      if (bias)
        d[i * n + j] += (*bias)[j];
    }
  return d;
}

//===----------------------------------------------------------------------===//
// referenceGemm
//===----------------------------------------------------------------------===//

TEST(ReferenceGemm, AllTransposeCombinationsExactOnIntegers) {
  const int64_t m = 7, n = 5, k = 9;
  std::vector<float> a = smallInts(m * k, 5, 1), b = smallInts(k * n, 5, 2);
  std::vector<float> bias = smallInts(n, 3, 3);
  std::vector<double> want = exactGemm(a, b, m, n, k, &bias);
  std::vector<float> at = transpose(a, m, k), bt = transpose(b, k, n);
  for (int combo = 0; combo < 4; ++combo) {
    bool ta = combo & 1, tb = combo & 2;
    for (bool f64 : {false, true}) {
      SCOPED_TRACE(std::to_string(combo) + (f64 ? " f64" : " f32"));
      std::vector<float> d = referenceGemm(ta ? at.data() : a.data(), ta,
                                           tb ? bt.data() : b.data(), tb, m, n,
                                           k, bias.data(), f64);
      ASSERT_EQ(d.size(), size_t(m * n));
      for (int64_t i = 0; i < m * n; ++i)
        EXPECT_EQ(double(d[i]), want[i]) << i;
    }
  }
  // Without bias.
  std::vector<double> noBias = exactGemm(a, b, m, n, k);
  std::vector<float> d =
      referenceGemm(a.data(), false, b.data(), false, m, n, k);
  for (int64_t i = 0; i < m * n; ++i)
    EXPECT_EQ(double(d[i]), noBias[i]);
}

TEST(ReferenceGemm, Fp32SumsInOrderFp64RoundsOnce) {
  // a = [1e8, 1, -1e8], b = ones: fp32 in order gives fl(1e8 + 1) = 1e8,
  // then 0; fp64 gives 1. Reversed order in fp32 would also give 0 + 1 = 1.
  std::vector<float> a = {1e8f, 1.0f, -1e8f}, b = {1.0f, 1.0f, 1.0f};
  EXPECT_EQ(referenceGemm(a.data(), false, b.data(), false, 1, 1, 3)[0], 0.0f);
  EXPECT_EQ(referenceGemm(a.data(), false, b.data(), false, 1, 1, 3, nullptr,
                          true)[0],
            1.0f);
  // The bias is added after the sum: fl(fl(0) + 0.5).
  float bias = 0.5f;
  EXPECT_EQ(referenceGemm(a.data(), false, b.data(), false, 1, 1, 3, &bias)[0],
            0.5f);
}

//===----------------------------------------------------------------------===//
// blockScaledGemm
//===----------------------------------------------------------------------===//

/// Quantizes row-major `x` (rows x k) with a block-FP8 scheme, rowwise.
QuantizedDirection quantizeRows(const std::vector<float> &x, int64_t rows,
                                int64_t k, const Scheme &s) {
  QuantizedTensor t = quantize(x.data(), SourceType::F32, rows, k, s,
                               kRowwiseMask, QuantizeOptions());
  EXPECT_TRUE(t.ok()) << t.error;
  return *t.rowwise;
}

TEST(BlockScaledGemm, ExactOnIntegerOperandsWithBias) {
  // Integers |v| <= 4 with power-of-two scales: a block amax of 4, 3, 2 or
  // 1 gives the scale 64, 128, 128 or 256, and each |v| <= amax times it is
  // an E4M3 value, so dequantization is exact; every product
  // and partial sum is a small integer and the scales are powers of two, so
  // the result is the exact integer GEMM for every accumulation order.
  const int64_t m = 24, n = 16, k = 300; // 3 K blocks, the last one partial
  std::vector<float> x = smallInts(m * k, 4, 10), w = smallInts(n * k, 4, 11);
  std::vector<float> bias = smallInts(n, 9, 12);
  std::vector<double> want = exactGemm(x, transpose(w, n, k), m, n, k, &bias);
  Scheme s1 = Scheme::fp8Block(DType::E4M3, 1, 128, /*pow2=*/true);
  Scheme s2 = Scheme::fp8Block(DType::E4M3, 128, 128, /*pow2=*/true);
  struct Pair {
    const Scheme *x, *w;
  };
  for (Pair p : {Pair{&s1, &s1}, Pair{&s1, &s2}, Pair{&s2, &s1}}) {
    BlockScaledOperand ox =
        blockScaledOperand(quantizeRows(x, m, k, *p.x), *p.x);
    BlockScaledOperand ow =
        blockScaledOperand(quantizeRows(w, n, k, *p.w), *p.w);
    std::string error;
    std::vector<float> y = blockScaledGemm(ox, ow, bias.data(), &error);
    ASSERT_EQ(y.size(), size_t(m * n)) << error;
    for (int64_t i = 0; i < m * n; ++i)
      ASSERT_EQ(double(y[i]), want[i]) << i;
  }
}

TEST(BlockScaledGemm, WithinFp32BoundOfDequantizedFp64Gemm) {
  // The codes multiply exactly; what remains is fp32 summation of K terms
  // and the scale multiplies: |y - exact| <= (K + 2*blocks) * 2^-24 *
  // sum |dq_x * dq_w| (a standard gamma_n bound with room to spare).
  const int64_t m = 40, n = 24, k = 300;
  uint64_t seed = 20;
  std::vector<float> x(m * k), w(n * k);
  for (float &v : x)
    v = bf16ToFloat(floatToBF16(
        std::ldexp(float(splitmix(seed) % 2001) / 1000.0f - 1.0f, 3)));
  for (float &v : w)
    v = bf16ToFloat(floatToBF16(float(splitmix(seed) % 2001) / 1000.0f - 1.0f));
  Scheme s1 = Scheme::fp8Block(DType::E4M3, 1, 128);
  Scheme s2 = Scheme::fp8Block(DType::E4M3, 128, 128);
  for (int pairing = 0; pairing < 3; ++pairing) {
    const Scheme &sx = pairing == 2 ? s2 : s1, &sw = pairing == 1 ? s2 : s1;
    QuantizedDirection qx = quantizeRows(x, m, k, sx);
    QuantizedDirection qw = quantizeRows(w, n, k, sw);
    std::vector<float> dx = dequantize(qx, Direction::Rowwise, sx, m, k);
    std::vector<float> dw = dequantize(qw, Direction::Rowwise, sw, n, k);
    std::vector<float> y =
        blockScaledGemm(blockScaledOperand(qx, sx), blockScaledOperand(qw, sw));
    ASSERT_EQ(y.size(), size_t(m * n));
    std::vector<float> dwT = transpose(dw, n, k);
    std::vector<float> ref =
        referenceGemm(dx.data(), false, dwT.data(), false, m, n, k, nullptr,
                      /*accumulateInF64=*/true);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double absSum = 0;
        for (int64_t kk = 0; kk < k; ++kk)
          absSum += std::fabs(double(dx[i * k + kk]) * dw[j * k + kk]);
        double bound = (k + 2 * 3) * std::ldexp(1.0, -24) * absSum;
        EXPECT_LE(std::fabs(double(y[i * n + j]) - ref[i * n + j]), bound)
            << pairing << " " << i << "," << j;
      }
  }
}

TEST(BlockScaledGemm, AppliesScalesAsCublasLtDoes) {
  // One K block whose only non-zero code pair gives P = 3 * 1:
  // 1D x 1D:               y = fma(P * sx, sw, 0) = fl(fl(P*sx) * sw);
  // with a 128x128 operand: y = fma(P, sx * sw, 0) = fl(P * fl(sx*sw))
  // (measured on H100 / cuBLASLt 13.1, docs/Numerics.md). The scales are the
  // first pair (sx, sw) = (fl(1/i), fl(1.1 i)) for which the orders differ.
  auto operand = [](uint8_t code, float scale, bool tile2d) {
    BlockScaledOperand op;
    op.rows = 1;
    op.k = 128;
    op.codes.assign(128, 0);
    op.codes[0] = code;
    op.tile2d = tile2d;
    op.scaleStride = 4;
    op.scaleInv.assign(4, 0.0f);
    op.scaleInv[0] = scale;
    return op;
  };
  uint8_t three = encodeE4M3(3.0f), one = encodeE4M3(1.0f);
  float sx = 0, sw = 0, xFirst = 0, product = 0;
  for (int i = 3; i < 1000 && xFirst == product; ++i) {
    sx = 1.0f / static_cast<float>(i);
    sw = static_cast<float>(i) * 1.1f;
    xFirst = (3.0f * sx) * sw;
    product = 3.0f * (sx * sw);
  }
  ASSERT_NE(xFirst, product);
  std::vector<float> y =
      blockScaledGemm(operand(three, sx, false), operand(one, sw, false));
  EXPECT_EQ(y[0], xFirst);
  y = blockScaledGemm(operand(three, sx, false), operand(one, sw, true));
  EXPECT_EQ(y[0], product);
  y = blockScaledGemm(operand(three, sx, true), operand(one, sw, false));
  EXPECT_EQ(y[0], product);
  // Across K blocks y accumulates with a fused multiply-add: two blocks
  // with P = 3 each give fma(fl(3*sx), sw, fl(fl(3*sx)*sw)).
  // (xFirst is that first block's fma(fl(3*sx), sw, 0).)
  BlockScaledOperand x2 = operand(three, sx, false),
                     w2 = operand(one, sw, false);
  x2.k = w2.k = 256;
  x2.codes.resize(256, 0);
  w2.codes.resize(256, 0);
  x2.codes[128] = three;
  w2.codes[128] = one;
  x2.scaleInv.assign(8, 0.0f);
  w2.scaleInv.assign(8, 0.0f);
  x2.scaleInv[0] = x2.scaleInv[4] = sx; // [kb][row], stride 4
  w2.scaleInv[0] = w2.scaleInv[4] = sw;
  y = blockScaledGemm(x2, w2);
  EXPECT_EQ(y[0], std::fma(3.0f * sx, sw, xFirst));
}

TEST(BlockScaledGemm, RejectsTwoSquareOperandsAndMismatches) {
  BlockScaledOperand a;
  a.rows = 1;
  a.k = 128;
  a.codes.assign(128, 0);
  a.scaleStride = 4;
  a.scaleInv.assign(4, 1.0f);
  a.tile2d = true;
  std::string error;
  EXPECT_TRUE(blockScaledGemm(a, a, nullptr, &error).empty());
  EXPECT_NE(error.find("128x128"), std::string::npos);
  BlockScaledOperand b = a;
  b.tile2d = false;
  b.k = 64;
  b.codes.assign(64, 0);
  error.clear();
  EXPECT_TRUE(blockScaledGemm(b, a, nullptr, &error).empty());
  EXPECT_FALSE(error.empty());
  b.k = 128;
  b.codes.assign(128, 0);
  b.scaleInv.clear();
  error.clear();
  EXPECT_TRUE(blockScaledGemm(b, a, nullptr, &error).empty());
  EXPECT_FALSE(error.empty());
}

TEST(BlockScaledGemm, LinearLayerGemmsFromBothDirections) {
  // y = X W^T (fprop: X row, W row), dX = dY W (dgrad: dY row, W col),
  // dW = dY^T X (wgrad: dY col, X col); every operand is TN (K contiguous):
  // columnwise block-FP8 data is the transpose. Integer data with pow2
  // scales makes each result exact.
  const int64_t tokens = 136, in = 130, out = 72;
  std::vector<float> x = smallInts(tokens * in, 4, 30);
  std::vector<float> w = smallInts(out * in, 4, 31);
  std::vector<float> dy = smallInts(tokens * out, 4, 32);
  for (std::vector<float> *v : {&x, &w, &dy})
    for (size_t i = 0; i < v->size(); i += 7)
      (*v)[i] = 4.0f; // every 128-block holds an amax of 4
  Scheme s1 = Scheme::fp8Block(DType::E4M3, 1, 128, true);
  Scheme s2 = Scheme::fp8Block(DType::E4M3, 128, 128, true);
  auto both = [](const std::vector<float> &v, int64_t r, int64_t c,
                 const Scheme &s) {
    QuantizedTensor t = quantize(v.data(), SourceType::F32, r, c, s,
                                 kBothDirections, QuantizeOptions());
    EXPECT_TRUE(t.ok()) << t.error;
    return t;
  };
  QuantizedTensor qx = both(x, tokens, in, s1), qw = both(w, out, in, s2),
                  qdy = both(dy, tokens, out, s1);
  auto check = [](const std::vector<float> &got,
                  const std::vector<double> &want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(double(got[i]), want[i]) << i;
  };
  check(blockScaledGemm(blockScaledOperand(*qx.rowwise, s1),
                        blockScaledOperand(*qw.rowwise, s2)),
        exactGemm(x, transpose(w, out, in), tokens, out, in));
  check(blockScaledGemm(blockScaledOperand(*qdy.rowwise, s1),
                        blockScaledOperand(*qw.columnwise, s2)),
        exactGemm(dy, w, tokens, in, out));
  check(blockScaledGemm(blockScaledOperand(*qdy.columnwise, s1),
                        blockScaledOperand(*qx.columnwise, s1)),
        exactGemm(transpose(dy, tokens, out), x, out, in, tokens));
}

//===----------------------------------------------------------------------===//
// Output cast and bias gradient
//===----------------------------------------------------------------------===//

// The MXFP8 rule (docs/Numerics.md §5.4): each 32-element block's partial
// product P is taken as fma(P · s_x, s_w, y) in block order, each block
// with its own pair of scales: two blocks whose scaled products cancel,
// then a third whose x scale is 2^-127 (E8M0 0x00, the fp32 subnormal,
// not zero).
TEST(Mxfp8Gemm, PromotesEachBlockWithBothScales) {
  Mxfp8Operand x, w;
  x.rows = w.rows = 1;
  x.k = w.k = 96;
  x.scaleStride = w.scaleStride = 3;
  x.codes.assign(96, encodeFp8(Fp8Format::E4M3, 1.0f));
  w.codes.assign(96, encodeFp8(Fp8Format::E4M3, 1.0f));
  for (int k = 32; k < 64; ++k)
    w.codes[k] = encodeFp8(Fp8Format::E4M3, -1.0f);
  // Block 0: P = 32, scales 2^20 x 2^0; block 1: P = -32, 2^0 x 2^20;
  // block 2: P = 32, 2^-127 x 2^100.
  x.scales = {127 + 20, 127, 0};
  w.scales = {127, 127 + 20, 127 + 100};
  std::string error;
  std::vector<float> y = mxfp8Gemm(x, w, nullptr, &error);
  ASSERT_EQ(error, "");
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0], 32.0f * std::ldexp(1.0f, -27));
  // With a bias, added after the blocks in fp32.
  float bias = 1.0f;
  EXPECT_EQ(mxfp8Gemm(x, w, &bias)[0], 1.0f + 32.0f * std::ldexp(1.0f, -27));
  // E5M2 codes decode as E5M2.
  Mxfp8Operand x5 = x;
  x5.format = Fp8Format::E5M2;
  x5.codes.assign(96, encodeFp8(Fp8Format::E5M2, 2.0f));
  EXPECT_EQ(mxfp8Gemm(x5, w)[0], 64.0f * std::ldexp(1.0f, -27));
  // Bad operands are refused with the reason.
  Mxfp8Operand shortK = w;
  shortK.k = 64;
  mxfp8Gemm(x, shortK, nullptr, &error);
  EXPECT_NE(error.find("one K"), std::string::npos) << error;
  Mxfp8Operand fewScales = w;
  fewScales.scales.resize(2);
  EXPECT_TRUE(mxfp8Gemm(x, fewScales, nullptr, &error).empty());
  EXPECT_NE(error.find("too small"), std::string::npos) << error;
}

// The grouped form: each expert's rows are mxfp8Gemm of those rows against
// the expert's own rows of the stacked weight, padding rows +0, split sizes
// clamped.
TEST(Mxfp8Gemm, GroupedRowsAreEachExpertsOwnGemm) {
  const int64_t m = 7, n = 3, g = 2, k = 64;
  auto operand = [&](int64_t rows, uint32_t seed) {
    Mxfp8Operand op;
    op.rows = rows;
    op.k = k;
    op.scaleStride = 4; // roundup(K/32, 4)
    for (int64_t i = 0; i < rows * k; ++i)
      op.codes.push_back(uint8_t((i * 37 + seed * 11) % 0x7E)); // finite
    for (int64_t i = 0; i < rows * 4; ++i)
      op.scales.push_back(uint8_t(120 + (i * 5 + seed) % 15));
    return op;
  };
  Mxfp8Operand x = operand(m, 1), w = operand(g * n, 2);
  std::string error;
  std::vector<float> y = groupedMxfp8Gemm(x, w, {4, 9}, &error); // 4, then 3
  ASSERT_EQ(error, "");
  ASSERT_EQ(y.size(), size_t(m * n));
  for (int64_t e = 0; e < g; ++e) {
    const int64_t row0 = e == 0 ? 0 : 4, rows = e == 0 ? 4 : 3;
    Mxfp8Operand xe = x, we = w;
    xe.rows = rows;
    xe.codes.assign(x.codes.begin() + row0 * k,
                    x.codes.begin() + (row0 + rows) * k);
    xe.scales.assign(x.scales.begin() + row0 * 4,
                     x.scales.begin() + (row0 + rows) * 4);
    we.rows = n;
    we.codes.assign(w.codes.begin() + e * n * k,
                    w.codes.begin() + (e + 1) * n * k);
    we.scales.assign(w.scales.begin() + e * n * 4,
                     w.scales.begin() + (e + 1) * n * 4);
    std::vector<float> alone = mxfp8Gemm(xe, we);
    for (int64_t i = 0; i < rows * n; ++i)
      EXPECT_EQ(y[size_t(row0 * n + i)], alone[size_t(i)]) << e << " " << i;
  }
  std::vector<float> padded = groupedMxfp8Gemm(x, w, {2, 1});
  for (int64_t i = 3 * n; i < m * n; ++i)
    EXPECT_EQ(padded[size_t(i)], 0.0f);
  EXPECT_TRUE(groupedMxfp8Gemm(x, operand(5, 3), {4, 3}, &error).empty());
  EXPECT_NE(error.find("G experts' N rows"), std::string::npos) << error;
}

TEST(GemmHelpers, RoundToBf16) {
  std::vector<uint16_t> r = roundToBF16({1.0f, 1.0f + 0x1p-8f, 1.0f + 0x3p-9f});
  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even -> 1.0 (0x3F80);
  // 1 + 3*2^-9 rounds up to 1 + 2^-7 (0x3F81).
  EXPECT_EQ(r, (std::vector<uint16_t>{0x3F80, 0x3F80, 0x3F81}));
}

TEST(BiasGrad, SequentialAndChunkedOrders) {
  // One column [1, 1, 1e8, -1e8]: sequential fp32 gives fl(2 + 1e8) = 1e8,
  // then 0; chunks of 2 give partials 2 and 0, then 2.
  std::vector<float> dy = {1.0f, 1.0f, 1e8f, -1e8f};
  EXPECT_EQ(biasGrad(dy.data(), SourceType::F32, 4, 1)[0], 0.0f);
  EXPECT_EQ(biasGrad(dy.data(), SourceType::F32, 4, 1, 2)[0], 2.0f);
  EXPECT_EQ(biasGrad(dy.data(), SourceType::F32, 4, 1, 4)[0], 0.0f);
  EXPECT_EQ(biasGrad(dy.data(), SourceType::F32, 4, 1, 100)[0], 0.0f);
  // bf16 input, several columns, a chunk height that does not divide M.
  const int64_t m = 5, n = 3;
  std::vector<uint16_t> h;
  std::vector<double> want(n, 0.0);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < n; ++c) {
      float v = static_cast<float>(r * n + c) - 6.5f;
      h.push_back(floatToBF16(v));
      want[c] += v;
    }
  for (int64_t chunk : {int64_t(0), int64_t(2), int64_t(3)}) {
    std::vector<float> got = biasGrad(h.data(), SourceType::BF16, m, n, chunk);
    ASSERT_EQ(got.size(), size_t(n));
    for (int64_t c = 0; c < n; ++c)
      EXPECT_EQ(double(got[c]), want[c]);
  }
}

} // namespace

// The M-grouped GEMM (docs/Numerics.md §7.4): each expert's rows are the
// GEMM of that expert alone, bit for bit; rows past the experts' are +0;
// split sizes past M_total are clamped. N = 200 is not a multiple of 128,
// so each expert has its own 128x128 weight tiles.
TEST(GroupedGemm, EachExpertsRowsAreItsOwnGemm) {
  const int64_t g = 3, n = 200, k = 300, mTotal = 100;
  std::vector<float> x = smallInts(mTotal * k, 4, 30);
  std::vector<float> w = smallInts(g * n * k, 4, 31);
  for (size_t i = 0; i < x.size(); ++i) // not every scale a power of two
    x[i] *= 1.0f + float(i % 7) / 8.0f;
  Scheme s1 = Scheme::fp8Block(DType::E4M3, 1, 128);
  Scheme s2 = Scheme::fp8Block(DType::E4M3, 128, 128);
  BlockScaledOperand ox =
      blockScaledOperand(quantizeRows(x, mTotal, k, s1), s1);
  // The stacked weight: the experts' codes and their own tiles' scales.
  BlockScaledOperand ow;
  std::vector<BlockScaledOperand> alone;
  for (int64_t e = 0; e < g; ++e) {
    std::vector<float> we(w.begin() + e * n * k, w.begin() + (e + 1) * n * k);
    alone.push_back(blockScaledOperand(quantizeRows(we, n, k, s2), s2));
    ow.codes.insert(ow.codes.end(), alone.back().codes.begin(),
                    alone.back().codes.end());
    ow.scaleInv.insert(ow.scaleInv.end(), alone.back().scaleInv.begin(),
                       alone.back().scaleInv.end());
    ow.scaleStride = alone.back().scaleStride;
  }
  ow.rows = g * n;
  ow.k = k;
  ow.tile2d = true;
  for (const std::vector<int64_t> &splits :
       {std::vector<int64_t>{40, 0, 50}, {60, 100, 5}}) {
    std::string error;
    std::vector<float> y = groupedBlockScaledGemm(ox, ow, splits, &error);
    ASSERT_EQ(y.size(), size_t(mTotal * n)) << error;
    std::vector<float> plain =
        groupedGemm(x.data(), w.data(), mTotal, n, k, splits);
    int64_t row = 0;
    std::vector<int64_t> clamped = clampSplits(splits, mTotal);
    for (int64_t e = 0; e < g; ++e) {
      if (clamped[e] == 0)
        continue;
      std::vector<float> xe(x.begin() + row * k,
                            x.begin() + (row + clamped[e]) * k);
      BlockScaledOperand oxe =
          blockScaledOperand(quantizeRows(xe, clamped[e], k, s1), s1);
      std::vector<float> want = blockScaledGemm(oxe, alone[e], nullptr, &error);
      std::vector<float> wantPlain = referenceGemm(
          xe.data(), false, w.data() + e * n * k, true, clamped[e], n, k);
      for (int64_t i = 0; i < clamped[e] * n; ++i) {
        ASSERT_EQ(te::test::bitsOf(y[row * n + i]), te::test::bitsOf(want[i]))
            << "expert " << e << " element " << i;
        ASSERT_EQ(te::test::bitsOf(plain[row * n + i]),
                  te::test::bitsOf(wantPlain[i]))
            << "expert " << e << " element " << i;
      }
      row += clamped[e];
    }
    for (int64_t i = row * n; i < mTotal * n; ++i) {
      ASSERT_EQ(te::test::bitsOf(y[i]), 0u) << "padding element " << i;
      ASSERT_EQ(te::test::bitsOf(plain[i]), 0u) << "padding element " << i;
    }
  }
  EXPECT_EQ(clampSplits({60, 100, 5}, 100), (std::vector<int64_t>{60, 40, 0}));
  EXPECT_EQ(clampSplits({-3, 7}, 5), (std::vector<int64_t>{0, 5}));
  std::string error;
  EXPECT_TRUE(
      groupedBlockScaledGemm(ox, ow, std::vector<int64_t>(7, 10), &error)
          .empty()); // 600 rows are not 7 experts
  EXPECT_NE(error.find("not G equal experts"), std::string::npos) << error;
}
