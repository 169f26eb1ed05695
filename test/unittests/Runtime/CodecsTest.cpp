//===- test/unittests/Runtime/CodecsTest.cpp - Codec tests ------*- C++ -*-===//
//
// Checks the reference element codecs against derivations written here from
// the format definitions of docs/Numerics.md §1 alone: every finite code value
// is enumerated from its sign/exponent/mantissa formula, and an input is
// expected to encode to the nearest such value (ties to the even code) with
// the format's saturation, zero and NaN rules. None of the expectations call
// the library's encoders, so a rounding bug in the library makes them fail.
//
//===----------------------------------------------------------------------===//

#include "te/runtime/reference/Codecs.h"

#include "gtest/gtest.h"

#include "Support/Minifloat.h"
#include "Support/TestSupport.h"
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

using namespace te::rt::ref;

namespace {

using te::test::bitsOf;
using te::test::floatOf;
using te::test::hexOf;
using te::test::minifloatValue;

//===----------------------------------------------------------------------===//
// Independent helpers
//===----------------------------------------------------------------------===//

/// Deterministic 64-bit generator (splitmix64) for sampled sweeps.
struct SplitMix64 {
  uint64_t state;
  explicit SplitMix64(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

/// One non-negative representable value of a format and its code.
struct GridPoint {
  double value;
  uint32_t code;
};

/// Sorted grid of the non-negative finite codes [0, lastCode] of a format.
std::vector<GridPoint> makeGrid(uint32_t lastCode, int manBits, int bias) {
  std::vector<GridPoint> grid;
  for (uint32_t code = 0; code <= lastCode; ++code)
    grid.push_back({minifloatValue(code, manBits, bias), code});
  return grid;
}

const std::vector<GridPoint> &e4m3Grid() {
  // 0x7F is NaN; 0x7E = 448 is the largest finite code.
  static const std::vector<GridPoint> grid = makeGrid(0x7E, 3, 7);
  return grid;
}

const std::vector<GridPoint> &e5m2Grid() {
  // 0x7C.. are Inf/NaN; 0x7B = 57344 is the largest finite code.
  static const std::vector<GridPoint> grid = makeGrid(0x7B, 2, 15);
  return grid;
}

const std::vector<GridPoint> &e2m1Grid() {
  static const std::vector<GridPoint> grid = makeGrid(0x7, 1, 1);
  return grid;
}

/// F16 and BF16 grids end with Inf placed where the next binade would start
/// (2^16 resp. 2^128), so IEEE overflow rounding falls out of the same
/// nearest-even search.
const std::vector<GridPoint> &f16Grid() {
  static const std::vector<GridPoint> grid = [] {
    std::vector<GridPoint> g = makeGrid(0x7BFF, 10, 15);
    g.push_back({65536.0, 0x7C00});
    return g;
  }();
  return grid;
}

const std::vector<GridPoint> &bf16Grid() {
  static const std::vector<GridPoint> grid = [] {
    std::vector<GridPoint> g = makeGrid(0x7F7F, 7, 127);
    g.push_back({std::ldexp(1.0, 128), 0x7F80});
    return g;
  }();
  return grid;
}

/// Nearest grid code to a >= 0, ties to the even code; a at or above the last
/// grid value maps to the last code (saturation, or Inf for F16/BF16).
uint32_t nearestEvenCode(double a, const std::vector<GridPoint> &grid) {
  if (a >= grid.back().value)
    return grid.back().code;
  auto hi = std::upper_bound(
      grid.begin(), grid.end(), a,
      [](double v, const GridPoint &p) { return v < p.value; });
  auto lo = hi - 1;
  if (a == lo->value)
    return lo->code;
  double mid = (lo->value + hi->value) / 2; // exact: both have few bits
  if (a < mid)
    return lo->code;
  if (a > mid)
    return hi->code;
  return (lo->code % 2 == 0) ? lo->code : hi->code;
}

/// Largest grid value <= a and smallest grid value >= a (a >= 0, finite,
/// below the last grid value).
std::pair<double, double> bracket(double a, const std::vector<GridPoint> &g) {
  double lo = 0, hi = g.back().value;
  for (const GridPoint &p : g) {
    if (p.value <= a)
      lo = p.value;
    if (p.value >= a) {
      hi = p.value;
      break;
    }
  }
  return {lo, hi};
}

/// Expected saturating-format code of y: NaN -> nanCode, sign bit copied,
/// magnitude nearest-even with |y| >= max -> max.
uint32_t expectedSatfinite(float y, const std::vector<GridPoint> &grid,
                           uint32_t signBit, uint32_t nanCode) {
  if (std::isnan(y))
    return nanCode;
  uint32_t code = nearestEvenCode(std::fabs(static_cast<double>(y)), grid);
  return std::signbit(y) ? (code | signBit) : code;
}

uint32_t expectedE4M3(float y) {
  return expectedSatfinite(y, e4m3Grid(), 0x80, std::signbit(y) ? 0xFF : 0x7F);
}

uint32_t expectedE5M2(float y) {
  return expectedSatfinite(y, e5m2Grid(), 0x80, std::signbit(y) ? 0xFE : 0x7E);
}

uint32_t expectedE2M1(float y) {
  return expectedSatfinite(y, e2m1Grid(), 0x8, 0x7);
}

/// Expected IEEE-style 16-bit code for a non-NaN y.
uint32_t expectedSixteen(float y, const std::vector<GridPoint> &grid) {
  uint32_t code = nearestEvenCode(std::fabs(static_cast<double>(y)), grid);
  return std::signbit(y) ? (code | 0x8000) : code;
}

/// Scales applied to every bf16 pattern: exact powers of two, values with
/// long mantissas, overflow and deep underflow.
std::vector<float> encodeScales() {
  return {1.0f,
          std::ldexp(1.0f, -10),
          0.75f,
          3.1e-5f,
          448.0f / 3.0f,
          1e30f,
          std::ldexp(1.0f, -130),
          std::ldexp(1.0f, -149),
          57344.0f / 7.0f,
          1.0f / 6.0f,
          6.0f,
          1e-38f,
          std::ldexp(1.0f, 20),
          -2.5f};
}

/// Runs `encode` against `expected` on every bf16 pattern times every scale;
/// returns the number of mismatches and reports the first few.
template <typename Encode, typename Expected>
int countScaledBF16Mismatches(const char *name, Encode encode,
                              Expected expected) {
  int mismatches = 0;
  for (float scale : encodeScales()) {
    for (uint32_t pattern = 0; pattern < 0x10000; ++pattern) {
      float y = floatOf(pattern << 16) * scale;
      uint32_t got = encode(y);
      uint32_t want = expected(y);
      if (got != want && ++mismatches <= 10)
        ADD_FAILURE() << name << "(" << hexOf(bitsOf(y)) << " = " << y
                      << ") got " << hexOf(got) << " want " << hexOf(want);
    }
  }
  return mismatches;
}

/// Float inputs sitting on, just below and just above every midpoint and
/// every grid value of `grid`, plus both signs.
std::vector<float> gridEdgeInputs(const std::vector<GridPoint> &grid) {
  std::vector<float> inputs;
  auto addAround = [&](double v) {
    float f = static_cast<float>(v); // exact for these grids
    float inf = std::numeric_limits<float>::infinity();
    for (float x : {f, std::nextafter(f, inf), std::nextafter(f, 0.0f)}) {
      inputs.push_back(x);
      inputs.push_back(-x);
    }
  };
  for (size_t i = 0; i < grid.size(); ++i) {
    addAround(grid[i].value);
    if (i + 1 < grid.size())
      addAround((grid[i].value + grid[i + 1].value) / 2);
  }
  // Past the top: the satfinite / overflow threshold region.
  double top = grid.back().value;
  addAround(top * 1.0625);
  addAround(top * 1.125);
  addAround(top * 2);
  return inputs;
}

template <typename Encode, typename Expected>
int countMismatches(const char *name, const std::vector<float> &inputs,
                    Encode encode, Expected expected) {
  int mismatches = 0;
  for (float y : inputs) {
    uint32_t got = encode(y);
    uint32_t want = expected(y);
    if (got != want && ++mismatches <= 10)
      ADD_FAILURE() << name << "(" << hexOf(bitsOf(y)) << " = " << y << ") got "
                    << hexOf(got) << " want " << hexOf(want);
  }
  return mismatches;
}

std::vector<float> randomFloats(uint64_t seed, size_t count) {
  SplitMix64 rng(seed);
  std::vector<float> values;
  values.reserve(count);
  for (size_t i = 0; i < count; ++i)
    values.push_back(floatOf(static_cast<uint32_t>(rng.next())));
  return values;
}

/// Random floats concentrated on the small formats' range: random mantissa
/// and sign, exponent uniform in [2^-20, 2^20).
std::vector<float> randomSmallRangeFloats(uint64_t seed, size_t count) {
  SplitMix64 rng(seed);
  std::vector<float> values;
  values.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    uint64_t r = rng.next();
    uint32_t exp = 127 - 20 + static_cast<uint32_t>((r >> 32) % 40);
    uint32_t bits = (static_cast<uint32_t>(r) & 0x807FFFFFu) | (exp << 23);
    values.push_back(floatOf(bits));
  }
  return values;
}

/// fp32 inputs for the 16-bit conversions: every exponent and sign with
/// mantissas around the bf16 and f16 rounding positions.
std::vector<float> sixteenBitEdgeInputs() {
  const uint32_t mantissas[] = {
      0,        1,        2,        3,        0xFFF,    0x1000,   0x1001,
      0x1FFF,   0x2000,   0x2001,   0x3000,   0x3001,   0x5000,   0x7FFF,
      0x8000,   0x8001,   0xFFFF,   0x10000,  0x17FFF,  0x18000,  0x18001,
      0x28000,  0x400000, 0x7FE000, 0x7FEFFF, 0x7FF000, 0x7FF001, 0x7F7FFF,
      0x7F8000, 0x7F8001, 0x7FFFFE, 0x7FFFFF};
  std::vector<float> inputs;
  for (uint32_t exp = 0; exp < 255; ++exp)
    for (uint32_t man : mantissas)
      for (uint32_t sign : {0u, 0x80000000u})
        inputs.push_back(floatOf(sign | (exp << 23) | man));
  inputs.push_back(std::numeric_limits<float>::infinity());
  inputs.push_back(-std::numeric_limits<float>::infinity());
  return inputs;
}

bool sameFloatBits(float a, float b) { return bitsOf(a) == bitsOf(b); }

} // namespace

//===----------------------------------------------------------------------===//
// Derivation sanity (the test's own grids)
//===----------------------------------------------------------------------===//

TEST(CodecsTest, DerivedGridsHaveTheDocumentedExtrema) {
  // docs/Numerics.md §1.1 table, checked so the derivation itself can be
  // trusted.
  EXPECT_EQ(e4m3Grid().back().value, 448.0);
  EXPECT_EQ(e4m3Grid()[1].value, std::ldexp(1.0, -9));
  EXPECT_EQ(e4m3Grid()[8].value, std::ldexp(1.0, -6));
  EXPECT_EQ(e5m2Grid().back().value, 57344.0);
  EXPECT_EQ(e5m2Grid()[1].value, std::ldexp(1.0, -16));
  EXPECT_EQ(e5m2Grid()[4].value, std::ldexp(1.0, -14));
  std::vector<double> e2m1;
  for (const GridPoint &p : e2m1Grid())
    e2m1.push_back(p.value);
  EXPECT_EQ(e2m1, (std::vector<double>{0, 0.5, 1, 1.5, 2, 3, 4, 6}));
  EXPECT_EQ(f16Grid()[f16Grid().size() - 2].value, 65504.0);
  EXPECT_EQ(bf16Grid()[bf16Grid().size() - 2].value,
            static_cast<double>(floatOf(0x7F7F0000u)));
}

//===----------------------------------------------------------------------===//
// FP8 encode
//===----------------------------------------------------------------------===//

TEST(CodecsTest, E4M3EncodeMatchesDerivationForAllScaledBF16Patterns) {
  EXPECT_EQ(countScaledBF16Mismatches("encodeE4M3", encodeE4M3, expectedE4M3),
            0);
}

TEST(CodecsTest, E5M2EncodeMatchesDerivationForAllScaledBF16Patterns) {
  EXPECT_EQ(countScaledBF16Mismatches("encodeE5M2", encodeE5M2, expectedE5M2),
            0);
}

TEST(CodecsTest, E4M3EncodeMatchesDerivationAtEveryMidpointAndNeighbour) {
  EXPECT_EQ(countMismatches("encodeE4M3", gridEdgeInputs(e4m3Grid()),
                            encodeE4M3, expectedE4M3),
            0);
}

TEST(CodecsTest, E5M2EncodeMatchesDerivationAtEveryMidpointAndNeighbour) {
  EXPECT_EQ(countMismatches("encodeE5M2", gridEdgeInputs(e5m2Grid()),
                            encodeE5M2, expectedE5M2),
            0);
}

TEST(CodecsTest, Fp8EncodeMatchesDerivationForRandomFloatBitPatterns) {
  std::vector<float> inputs = randomFloats(1, 1 << 20);
  std::vector<float> near = randomSmallRangeFloats(2, 1 << 20);
  inputs.insert(inputs.end(), near.begin(), near.end());
  EXPECT_EQ(countMismatches("encodeE4M3", inputs, encodeE4M3, expectedE4M3), 0);
  EXPECT_EQ(countMismatches("encodeE5M2", inputs, encodeE5M2, expectedE5M2), 0);
}

TEST(CodecsTest, Fp8EncodeSaturatesOverflowAndInfinityToMaxNorm) {
  const float inf = std::numeric_limits<float>::infinity();
  // E4M3: 464 = 448 + half ulp is a tie that rounds to even 448 (0x7E).
  EXPECT_EQ(encodeE4M3(448.0f), 0x7E);
  EXPECT_EQ(encodeE4M3(464.0f), 0x7E);
  EXPECT_EQ(encodeE4M3(std::nextafter(464.0f, inf)), 0x7E);
  EXPECT_EQ(encodeE4M3(1e30f), 0x7E);
  EXPECT_EQ(encodeE4M3(inf), 0x7E);
  EXPECT_EQ(encodeE4M3(-inf), 0xFE);
  EXPECT_EQ(encodeE4M3(-500.0f), 0xFE);
  // E5M2: 61440 would round to 65536 (Inf) and saturates instead.
  EXPECT_EQ(encodeE5M2(57344.0f), 0x7B);
  EXPECT_EQ(encodeE5M2(std::nextafter(61440.0f, 0.0f)), 0x7B);
  EXPECT_EQ(encodeE5M2(61440.0f), 0x7B);
  EXPECT_EQ(encodeE5M2(inf), 0x7B);
  EXPECT_EQ(encodeE5M2(-inf), 0xFB);
}

TEST(CodecsTest, Fp8EncodeFlushesAtHalfMinSubnormalToSignedZero) {
  // |y| <= mindenorm / 2 -> +-0; just above it -> the min subnormal.
  float halfE4M3 = std::ldexp(1.0f, -10);
  EXPECT_EQ(encodeE4M3(halfE4M3), 0x00);
  EXPECT_EQ(encodeE4M3(-halfE4M3), 0x80);
  EXPECT_EQ(encodeE4M3(std::nextafter(halfE4M3, 1.0f)), 0x01);
  EXPECT_EQ(encodeE4M3(-std::nextafter(halfE4M3, 1.0f)), 0x81);
  EXPECT_EQ(encodeE4M3(-0.0f), 0x80);
  EXPECT_EQ(encodeE4M3(floatOf(1)), 0x00);
  float halfE5M2 = std::ldexp(1.0f, -17);
  EXPECT_EQ(encodeE5M2(halfE5M2), 0x00);
  EXPECT_EQ(encodeE5M2(-halfE5M2), 0x80);
  EXPECT_EQ(encodeE5M2(std::nextafter(halfE5M2, 1.0f)), 0x01);
  // 3 * 2^-10 is a tie between subnormal codes 1 and 2: even code 2 wins.
  EXPECT_EQ(encodeE4M3(3 * halfE4M3), 0x02);
}

TEST(CodecsTest, Fp8EncodeMapsNaNToDocumentedCodes) {
  const float nans[] = {std::numeric_limits<float>::quiet_NaN(),
                        floatOf(0x7F800001u), floatOf(0x7FFFFFFFu)};
  for (float nan : nans) {
    EXPECT_EQ(encodeE4M3(nan), 0x7F);
    EXPECT_EQ(encodeE4M3(-nan), 0xFF);
    EXPECT_EQ(encodeE5M2(nan), 0x7E);
    EXPECT_EQ(encodeE5M2(-nan), 0xFE);
  }
}

TEST(CodecsTest, Fp8FormatDispatchAndMaxNorm) {
  EXPECT_EQ(fp8MaxNorm(Fp8Format::E4M3), 448.0f);
  EXPECT_EQ(fp8MaxNorm(Fp8Format::E5M2), 57344.0f);
  for (float y : {0.3f, -7.0f, 1000.0f, 1e-6f}) {
    EXPECT_EQ(encodeFp8(Fp8Format::E4M3, y), expectedE4M3(y));
    EXPECT_EQ(encodeFp8(Fp8Format::E5M2, y), expectedE5M2(y));
  }
  EXPECT_EQ(decodeFp8(Fp8Format::E4M3, 0x7E), 448.0f);
  EXPECT_EQ(decodeFp8(Fp8Format::E5M2, 0x7B), 57344.0f);
}

//===----------------------------------------------------------------------===//
// Decode
//===----------------------------------------------------------------------===//

TEST(CodecsTest, E4M3DecodesEveryCodeToItsDefinitionValue) {
  for (uint32_t code = 0; code < 256; ++code) {
    int e = (code >> 3) & 0xF, m = code & 0x7;
    double sign = (code & 0x80) ? -1.0 : 1.0;
    float got = decodeE4M3(static_cast<uint8_t>(code));
    if (e == 15 && m == 7) {
      EXPECT_TRUE(std::isnan(got)) << hexOf(code);
      continue;
    }
    double magnitude = minifloatValue(code & 0x7F, 3, 7);
    EXPECT_TRUE(sameFloatBits(got, static_cast<float>(sign * magnitude)))
        << hexOf(code) << " got " << got;
  }
}

TEST(CodecsTest, E5M2DecodesEveryCodeToItsDefinitionValue) {
  for (uint32_t code = 0; code < 256; ++code) {
    int e = (code >> 2) & 0x1F, m = code & 0x3;
    double sign = (code & 0x80) ? -1.0 : 1.0;
    float got = decodeE5M2(static_cast<uint8_t>(code));
    if (e == 31) {
      if (m == 0) {
        EXPECT_EQ(got, static_cast<float>(sign * HUGE_VAL)) << hexOf(code);
      } else {
        EXPECT_TRUE(std::isnan(got)) << hexOf(code);
      }
      continue;
    }
    double magnitude = minifloatValue(code & 0x7F, 2, 15);
    EXPECT_TRUE(sameFloatBits(got, static_cast<float>(sign * magnitude)))
        << hexOf(code) << " got " << got;
  }
}

TEST(CodecsTest, E2M1DecodesEveryNibbleToTheTableValue) {
  // docs/Numerics.md §1.1 code table; the high nibble of the argument is
  // ignored.
  const float table[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,
                           4.0f,  6.0f,  -0.0f, -0.5f, -1.0f, -1.5f,
                           -2.0f, -3.0f, -4.0f, -6.0f};
  for (uint32_t code = 0; code < 16; ++code) {
    EXPECT_TRUE(
        sameFloatBits(decodeE2M1(static_cast<uint8_t>(code)), table[code]))
        << code;
    EXPECT_TRUE(sameFloatBits(decodeE2M1(static_cast<uint8_t>(code | 0xA0)),
                              table[code]))
        << code;
  }
}

TEST(CodecsTest, E8M0DecodesEveryCodeToPowerOfTwo) {
  for (uint32_t e = 0; e < 255; ++e) {
    float want = static_cast<float>(std::ldexp(1.0, static_cast<int>(e) - 127));
    EXPECT_TRUE(sameFloatBits(decodeE8M0(static_cast<uint8_t>(e)), want)) << e;
  }
  EXPECT_TRUE(std::isnan(decodeE8M0(0xFF)));
  EXPECT_EQ(bitsOf(decodeE8M0(0x00)), 0x00400000u);
  EXPECT_EQ(decodeE8M0(127), 1.0f);
}

TEST(CodecsTest, E8M0ReciprocalScaleIsTwoToTheNegatedExponent) {
  for (uint32_t e = 0; e < 255; ++e) {
    float want = static_cast<float>(std::ldexp(1.0, 127 - static_cast<int>(e)));
    EXPECT_TRUE(
        sameFloatBits(e8m0ReciprocalScale(static_cast<uint8_t>(e)), want))
        << e;
    // decode * reciprocal == 1 except where one side is an fp32 subnormal.
    if (e >= 1 && e <= 253) {
      EXPECT_EQ(decodeE8M0(static_cast<uint8_t>(e)) *
                    e8m0ReciprocalScale(static_cast<uint8_t>(e)),
                1.0f)
          << e;
    }
  }
  EXPECT_TRUE(std::isnan(e8m0ReciprocalScale(0xFF)));
  EXPECT_EQ(bitsOf(e8m0ReciprocalScale(0xFE)), 0x00400000u);
  EXPECT_EQ(bitsOf(e8m0ReciprocalScale(0x00)), 0x7F000000u);
}

TEST(CodecsTest, DecodedFiniteCodesEncodeBackToThemselves) {
  for (uint32_t code = 0; code < 256; ++code) {
    uint8_t c = static_cast<uint8_t>(code);
    if ((code & 0x7F) != 0x7F) {
      EXPECT_EQ(encodeE4M3(decodeE4M3(c)), c) << hexOf(code);
    }
    if ((code & 0x7F) < 0x7C) {
      EXPECT_EQ(encodeE5M2(decodeE5M2(c)), c) << hexOf(code);
    }
    if (code < 255) {
      EXPECT_EQ(encodeE8M0(decodeE8M0(c)), c) << hexOf(code);
    }
    if (code < 16) {
      EXPECT_EQ(encodeE2M1(decodeE2M1(c)), c) << hexOf(code);
    }
  }
}

//===----------------------------------------------------------------------===//
// E8M0 encode
//===----------------------------------------------------------------------===//

namespace {

/// Smallest E in [0, 254] with 2^(E-127) >= |v|, else 254; NaN 255, Inf 254,
/// zero 0 (docs/Numerics.md §1.5, from the round-up definition, not the bit
/// trick).
uint32_t expectedE8M0(float v) {
  if (std::isnan(v))
    return 0xFF;
  double a = std::fabs(static_cast<double>(v));
  for (int e = 0; e <= 254; ++e)
    if (std::ldexp(1.0, e - 127) >= a)
      return static_cast<uint32_t>(e);
  return 0xFE;
}

} // namespace

TEST(CodecsTest, E8M0EncodeRoundsUpForEveryExponentAndEdgeMantissa) {
  const uint32_t mantissas[] = {0, 1, 0x400000, 0x400001, 0x7FFFFF};
  for (uint32_t exp = 0; exp < 256; ++exp) {
    for (uint32_t man : mantissas) {
      for (uint32_t sign : {0u, 0x80000000u}) {
        float v = floatOf(sign | (exp << 23) | man);
        EXPECT_EQ(encodeE8M0(v), expectedE8M0(v))
            << hexOf(bitsOf(v)) << " = " << v;
      }
    }
  }
}

TEST(CodecsTest, E8M0EncodeMatchesRoundUpDefinitionForRandomFloats) {
  EXPECT_EQ(countMismatches("encodeE8M0", randomFloats(3, 1 << 18), encodeE8M0,
                            expectedE8M0),
            0);
}

TEST(CodecsTest, E8M0EncodeSpecialValues) {
  EXPECT_EQ(encodeE8M0(0.0f), 0x00);
  EXPECT_EQ(encodeE8M0(-0.0f), 0x00);
  EXPECT_EQ(encodeE8M0(std::numeric_limits<float>::infinity()), 0xFE);
  EXPECT_EQ(encodeE8M0(std::numeric_limits<float>::quiet_NaN()), 0xFF);
  EXPECT_EQ(encodeE8M0(std::numeric_limits<float>::max()), 0xFE);
  EXPECT_EQ(encodeE8M0(1.0f), 127);
  EXPECT_EQ(encodeE8M0(std::nextafter(1.0f, 2.0f)), 128);
  EXPECT_EQ(encodeE8M0(0.75f), 127);
  EXPECT_EQ(encodeE8M0(floatOf(0x00400000u)), 0x00); // 2^-127
  EXPECT_EQ(encodeE8M0(floatOf(0x00400001u)), 0x01);
  EXPECT_EQ(encodeE8M0(floatOf(0x00000001u)), 0x00);
  // Negative inputs encode their magnitude (documented choice).
  EXPECT_EQ(encodeE8M0(-3.0f), encodeE8M0(3.0f));
}

//===----------------------------------------------------------------------===//
// E2M1 round-to-nearest
//===----------------------------------------------------------------------===//

TEST(CodecsTest, E2M1EncodeMatchesDerivationForAllScaledBF16Patterns) {
  EXPECT_EQ(countScaledBF16Mismatches("encodeE2M1", encodeE2M1, expectedE2M1),
            0);
}

TEST(CodecsTest, E2M1EncodeMatchesDerivationAtEveryMidpointAndNeighbour) {
  std::vector<float> inputs = gridEdgeInputs(e2m1Grid());
  std::vector<float> random = randomSmallRangeFloats(4, 1 << 18);
  inputs.insert(inputs.end(), random.begin(), random.end());
  EXPECT_EQ(countMismatches("encodeE2M1", inputs, encodeE2M1, expectedE2M1), 0);
}

TEST(CodecsTest, E2M1EncodeTieTableOfNumerics13) {
  struct Case {
    float in;
    uint8_t code;
  };
  const float inf = std::numeric_limits<float>::infinity();
  // Value -> code: 0:0 .5:1 1:2 1.5:3 2:4 3:5 4:6 6:7.
  const Case cases[] = {{0.25f, 0}, {0.75f, 2}, {1.25f, 2}, {1.75f, 4},
                        {2.5f, 4},  {3.5f, 6},  {5.0f, 6},  {5.5f, 7},
                        {6.0f, 7},  {7.0f, 7},  {1e30f, 7}, {inf, 7},
                        {0.0f, 0},  {0.26f, 1}, {0.24f, 0}, {2.49f, 4},
                        {2.51f, 5}, {4.99f, 6}, {5.01f, 7}};
  for (const Case &c : cases) {
    EXPECT_EQ(encodeE2M1(c.in), c.code) << c.in;
    EXPECT_EQ(encodeE2M1(-c.in), c.code | 0x8) << -c.in;
  }
  // -0.25 <= y < 0 -> code 8 (-0).
  EXPECT_EQ(encodeE2M1(-0.25f), 0x8);
  EXPECT_EQ(encodeE2M1(-1e-40f), 0x8);
  EXPECT_EQ(encodeE2M1(-0.0f), 0x8);
  EXPECT_EQ(encodeE2M1(-std::nextafter(0.25f, 1.0f)), 0x9);
}

TEST(CodecsTest, E2M1EncodeMapsNaNToPositiveSix) {
  EXPECT_EQ(encodeE2M1(std::numeric_limits<float>::quiet_NaN()), 0x7);
  EXPECT_EQ(encodeE2M1(-std::numeric_limits<float>::quiet_NaN()), 0x7);
  EXPECT_EQ(encodeE2M1(floatOf(0xFF800001u)), 0x7);
}

//===----------------------------------------------------------------------===//
// E2M1 stochastic rounding
//===----------------------------------------------------------------------===//

namespace {

/// SR inputs: every bf16 value with |x| < 8 plus random floats below 7.
std::vector<float> stochasticInputs() {
  std::vector<float> inputs;
  for (uint32_t pattern = 0; pattern < 0x10000; pattern += 3) {
    float x = floatOf(pattern << 16);
    if (std::fabs(x) < 8.0f)
      inputs.push_back(x);
  }
  SplitMix64 rng(5);
  for (int i = 0; i < 4096; ++i) {
    double u = static_cast<double>(rng.next() >> 11) * std::ldexp(1.0, -53);
    inputs.push_back(static_cast<float>((u * 2 - 1) * 7.0));
  }
  return inputs;
}

} // namespace

TEST(CodecsTest, E2M1StochasticReturnsOneOfTheTwoBracketingGridPoints) {
  int failures = 0;
  for (float x : stochasticInputs()) {
    double a = std::fabs(static_cast<double>(x));
    auto [lo, hi] =
        a >= 6.0 ? std::make_pair(6.0, 6.0) : bracket(a, e2m1Grid());
    for (uint32_t r = 0; r < 256; ++r) {
      uint8_t code = encodeE2M1Stochastic(x, static_cast<uint8_t>(r));
      double v = decodeE2M1(code);
      bool ok = code < 16 && (std::fabs(v) == lo || std::fabs(v) == hi) &&
                (((code & 0x8) != 0) == std::signbit(x));
      if (!ok && ++failures <= 10)
        ADD_FAILURE() << "x=" << x << " rbits=" << r << " code=" << int(code);
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST(CodecsTest, E2M1StochasticZeroRandomBitsRoundsMagnitudeDown) {
  for (float x : stochasticInputs()) {
    double a = std::fabs(static_cast<double>(x));
    double lo = a >= 6.0 ? 6.0 : bracket(a, e2m1Grid()).first;
    EXPECT_EQ(std::fabs(decodeE2M1(encodeE2M1Stochastic(x, 0))), lo) << x;
  }
}

TEST(CodecsTest, E2M1StochasticIsMonotoneInTheRandomBits) {
  for (float x : stochasticInputs()) {
    float previous = 0.0f;
    for (uint32_t r = 0; r < 256; ++r) {
      float v = std::fabs(
          decodeE2M1(encodeE2M1Stochastic(x, static_cast<uint8_t>(r))));
      ASSERT_GE(v, previous) << "x=" << x << " rbits=" << r;
      previous = v;
    }
  }
}

TEST(CodecsTest, E2M1StochasticMeanOverAllRandomBitsApproximatesInput) {
  // With u = k/256 the round-up count is about 256 * frac, so the mean over
  // all 256 byte values is within one step/256 of the input (the single
  // rounding of the fma can add at most one more round-up).
  for (float x : stochasticInputs()) {
    double a = std::fabs(static_cast<double>(x));
    if (a >= 6.0)
      continue;
    auto [lo, hi] = bracket(a, e2m1Grid());
    double step = hi > lo ? hi - lo : 0.5;
    double sum = 0;
    for (uint32_t r = 0; r < 256; ++r)
      sum += std::fabs(
          decodeE2M1(encodeE2M1Stochastic(x, static_cast<uint8_t>(r))));
    EXPECT_NEAR(sum / 256, a, step / 256 * 1.0001) << x;
  }
}

TEST(CodecsTest, E2M1StochasticLeavesGridValuesUnchanged) {
  for (uint32_t code = 0; code < 16; ++code) {
    float x = decodeE2M1(static_cast<uint8_t>(code));
    for (uint32_t r = 0; r < 256; ++r)
      EXPECT_EQ(encodeE2M1Stochastic(x, static_cast<uint8_t>(r)), code)
          << code << " rbits=" << r;
  }
}

TEST(CodecsTest, E2M1StochasticHandComputedThresholds) {
  // 0.3 + (k/256) * 0.5 reaches 0.5 first at k = 103 (0.3 needs k > 102.4).
  EXPECT_EQ(encodeE2M1Stochastic(0.3f, 102), 0x0);
  EXPECT_EQ(encodeE2M1Stochastic(0.3f, 103), 0x1);
  EXPECT_EQ(encodeE2M1Stochastic(-0.3f, 102), 0x8);
  EXPECT_EQ(encodeE2M1Stochastic(-0.3f, 103), 0x9);
  // 5 + (k/256) * 2 reaches 6 exactly at k = 128.
  EXPECT_EQ(encodeE2M1Stochastic(5.0f, 127), 0x6);
  EXPECT_EQ(encodeE2M1Stochastic(5.0f, 128), 0x7);
  // 1.75 + (k/256) * 0.5 reaches 2 at k = 128; above 2 the step is 1.
  EXPECT_EQ(encodeE2M1Stochastic(1.75f, 127), 0x3);
  EXPECT_EQ(encodeE2M1Stochastic(1.75f, 128), 0x4);
  EXPECT_EQ(encodeE2M1Stochastic(1.75f, 255), 0x4);
  // Saturation, infinities and NaN (NaN -> +6).
  EXPECT_EQ(encodeE2M1Stochastic(6.5f, 0), 0x7);
  EXPECT_EQ(encodeE2M1Stochastic(1e30f, 255), 0x7);
  EXPECT_EQ(encodeE2M1Stochastic(std::numeric_limits<float>::infinity(), 9),
            0x7);
  EXPECT_EQ(encodeE2M1Stochastic(-std::numeric_limits<float>::infinity(), 9),
            0xF);
  for (uint32_t r = 0; r < 256; ++r)
    EXPECT_EQ(encodeE2M1Stochastic(std::numeric_limits<float>::quiet_NaN(),
                                   static_cast<uint8_t>(r)),
              0x7);
}

//===----------------------------------------------------------------------===//
// E2M1 packing (docs/Numerics.md §6.6)
//===----------------------------------------------------------------------===//

TEST(CodecsTest, PackE2M1PutsEvenElementInLowNibble) {
  for (uint32_t even = 0; even < 16; ++even) {
    for (uint32_t odd = 0; odd < 16; ++odd) {
      uint8_t byte =
          packE2M1(static_cast<uint8_t>(even), static_cast<uint8_t>(odd));
      EXPECT_EQ(byte, even + 16 * odd);
      EXPECT_EQ(unpackE2M1Low(byte), even);
      EXPECT_EQ(unpackE2M1High(byte), odd);
    }
  }
  // Bits above the nibble are dropped.
  EXPECT_EQ(packE2M1(0x1F, 0x2A), 0xAF);
}

//===----------------------------------------------------------------------===//
// BF16 / F16
//===----------------------------------------------------------------------===//

TEST(CodecsTest, BF16RoundsToNearestEvenOnEdgeAndRandomInputs) {
  std::vector<float> inputs = sixteenBitEdgeInputs();
  std::vector<float> random = randomFloats(6, 1 << 20);
  for (float x : random)
    if (!std::isnan(x))
      inputs.push_back(x);
  EXPECT_EQ(countMismatches(
                "floatToBF16", inputs,
                [](float x) { return uint32_t(floatToBF16(x)); },
                [](float x) { return expectedSixteen(x, bf16Grid()); }),
            0);
}

TEST(CodecsTest, F16RoundsToNearestEvenOnEdgeAndRandomInputs) {
  std::vector<float> inputs = sixteenBitEdgeInputs();
  std::vector<float> random = randomFloats(7, 1 << 20);
  std::vector<float> near = randomSmallRangeFloats(8, 1 << 18);
  inputs.insert(inputs.end(), near.begin(), near.end());
  for (float x : random)
    if (!std::isnan(x))
      inputs.push_back(x);
  EXPECT_EQ(countMismatches(
                "floatToF16", inputs,
                [](float x) { return uint32_t(floatToF16(x)); },
                [](float x) { return expectedSixteen(x, f16Grid()); }),
            0);
}

TEST(CodecsTest, SixteenBitConversionsHandleTiesOverflowAndUnderflow) {
  // bf16: 1 + 2^-8 is a tie between 1 and 1 + 2^-7 -> even (1).
  EXPECT_EQ(floatToBF16(floatOf(0x3F808000u)), 0x3F80);
  EXPECT_EQ(floatToBF16(floatOf(0x3F818000u)), 0x3F82);
  EXPECT_EQ(floatToBF16(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(floatToBF16(floatOf(0x7F7F7FFFu)), 0x7F7F);
  EXPECT_EQ(floatToBF16(-0.0f), 0x8000);
  // f16: 65504 is max, 65520 is the overflow tie -> Inf; 2^-25 -> 0.
  EXPECT_EQ(floatToF16(65504.0f), 0x7BFF);
  EXPECT_EQ(floatToF16(std::nextafter(65520.0f, 0.0f)), 0x7BFF);
  EXPECT_EQ(floatToF16(65520.0f), 0x7C00);
  EXPECT_EQ(floatToF16(-1e6f), 0xFC00);
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(floatToF16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(floatToF16(std::ldexp(3.0f, -25)), 0x0002);
  EXPECT_EQ(floatToF16(-std::ldexp(1.0f, -30)), 0x8000);
  EXPECT_EQ(floatToF16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(floatToF16(1.0f + std::ldexp(3.0f, -11)), 0x3C02);
}

TEST(CodecsTest, SixteenBitConversionsKeepNaNSignAndQuietIt) {
  const uint32_t nans[] = {0x7F800001u, 0x7FC00000u, 0x7FFFFFFFu,
                           0x7F802000u, 0xFF800001u, 0xFFC00000u};
  for (uint32_t bits : nans) {
    float nan = floatOf(bits);
    uint16_t bf = floatToBF16(nan);
    EXPECT_EQ(bf & 0x7F80, 0x7F80) << hexOf(bits);
    EXPECT_NE(bf & 0x0040, 0) << hexOf(bits);
    EXPECT_EQ(bf & 0x8000, (bits >> 16) & 0x8000) << hexOf(bits);
    EXPECT_TRUE(std::isnan(bf16ToFloat(bf)));
    uint16_t h = floatToF16(nan);
    EXPECT_EQ(h & 0x7C00, 0x7C00) << hexOf(bits);
    EXPECT_NE(h & 0x0200, 0) << hexOf(bits);
    EXPECT_EQ(h & 0x8000, (bits >> 16) & 0x8000) << hexOf(bits);
    EXPECT_TRUE(std::isnan(f16ToFloat(h)));
  }
}

TEST(CodecsTest, SixteenBitDecodesEveryPatternToItsDefinitionValue) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    double sign = (bits & 0x8000) ? -1.0 : 1.0;
    // bf16: fp32 with the low 16 mantissa bits zero.
    int be = (bits >> 7) & 0xFF, bm = bits & 0x7F;
    float bf = bf16ToFloat(static_cast<uint16_t>(bits));
    if (be == 0xFF) {
      EXPECT_EQ(std::isnan(bf), bm != 0) << hexOf(bits);
    } else {
      double v = be == 0 ? bm * std::ldexp(1.0, -133)
                         : (1.0 + bm / 128.0) * std::ldexp(1.0, be - 127);
      EXPECT_TRUE(sameFloatBits(bf, static_cast<float>(sign * v)))
          << hexOf(bits);
    }
    int he = (bits >> 10) & 0x1F, hm = bits & 0x3FF;
    float h = f16ToFloat(static_cast<uint16_t>(bits));
    if (he == 0x1F) {
      if (hm == 0) {
        EXPECT_EQ(h, static_cast<float>(sign * HUGE_VAL)) << hexOf(bits);
      } else {
        EXPECT_TRUE(std::isnan(h)) << hexOf(bits);
      }
    } else {
      double v = he == 0 ? hm * std::ldexp(1.0, -24)
                         : (1.0 + hm / 1024.0) * std::ldexp(1.0, he - 15);
      EXPECT_TRUE(sameFloatBits(h, static_cast<float>(sign * v)))
          << hexOf(bits);
    }
  }
}

TEST(CodecsTest, SixteenBitRoundTripIsIdentityOnNonNaNPatterns) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    uint16_t b = static_cast<uint16_t>(bits);
    if ((bits & 0x7FFF) <= 0x7F80) {
      EXPECT_EQ(floatToBF16(bf16ToFloat(b)), b) << hexOf(bits);
    }
    if ((bits & 0x7FFF) <= 0x7C00) {
      EXPECT_EQ(floatToF16(f16ToFloat(b)), b) << hexOf(bits);
    }
  }
}

TEST(CodecsTest, FloatBitCastsRoundTrip) {
  EXPECT_EQ(floatToBits(1.0f), 0x3F800000u);
  EXPECT_EQ(bitsToFloat(0xC0000000u), -2.0f);
  SplitMix64 rng(9);
  for (int i = 0; i < 1000; ++i) {
    uint32_t bits = static_cast<uint32_t>(rng.next());
    EXPECT_EQ(floatToBits(bitsToFloat(bits)), bits);
  }
}
