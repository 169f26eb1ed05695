//===- test/unittests/Runtime/ScalesTest.cpp - Scale tests ------*- C++ -*-===//
//
// Checks the reference scale computations against values worked out by hand
// (exact rational arithmetic rounded once to fp32, written here as bit
// patterns) and against independent double-precision derivations. Each case
// cites the docs/Numerics.md rule it pins, so a change of the rule in the
// library shows up as a named failure.
//
//===----------------------------------------------------------------------===//

#include "te/runtime/reference/Scales.h"
#include "te/runtime/reference/Quantize.h"

#include "gtest/gtest.h"

#include "Support/TestSupport.h"
#include <cfloat>
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

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kMinSubnormal = floatOf(0x00000001u); // 2^-149

/// Deterministic generator for sampled property checks (splitmix64).
uint64_t nextRandom(uint64_t &state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// Random positive normal floats.
std::vector<float> randomPositiveNormals(uint64_t seed, int count) {
  std::vector<float> values;
  for (int i = 0; i < count; ++i) {
    uint32_t bits = static_cast<uint32_t>(nextRandom(seed)) & 0x7FFFFFFFu;
    uint32_t exp = bits >> 23;
    if (exp == 0 || exp == 0xFF)
      continue;
    values.push_back(floatOf(bits));
  }
  return values;
}

#define EXPECT_FLOAT_BITS(actual, expectedBits)                                \
  EXPECT_EQ(hexOf(bitsOf(actual)), hexOf(expectedBits))

} // namespace

//===----------------------------------------------------------------------===//
// Amax (docs/Numerics.md §3 step 1)
//===----------------------------------------------------------------------===//

TEST(ScalesTest, AmaxIgnoresSignallingNaN) {
  // bf16 0x7F81 widens to the fp32 signalling NaN 0x7F810000; glibc's fmaxf
  // would propagate it, the GPU's max.f32 ignores it (found by the device
  // library tests).
  const float data[3] = {1.5f, bitsToFloat(0x7F810000u), -2.0f};
  EXPECT_EQ(amaxOf(data, 3), 2.0f);
}

TEST(ScalesTest, AmaxIgnoresNaNAndPropagatesInfinity) {
  const float mixed[] = {1.0f, -3.0f, kNaN, 2.0f};
  EXPECT_EQ(amaxOf(mixed, 4), 3.0f);
  const float allNaN[] = {kNaN, -kNaN};
  EXPECT_EQ(amaxOf(allNaN, 2), 0.0f);
  EXPECT_EQ(amaxOf(nullptr, 0), 0.0f);
  const float withInf[] = {1.0f, -kInf, kNaN};
  EXPECT_EQ(amaxOf(withInf, 3), kInf);
  const float tiny[] = {-0.0f, -kMinSubnormal};
  EXPECT_FLOAT_BITS(amaxOf(tiny, 2), 0x00000001u);
  const float negZero[] = {-0.0f};
  EXPECT_FLOAT_BITS(amaxOf(negZero, 1), 0x00000000u);
}

//===----------------------------------------------------------------------===//
// compute_scale_from_amax (docs/Numerics.md §3 step 3, 7.1)
//===----------------------------------------------------------------------===//

TEST(ScalesTest, ComputeScaleFromAmaxE4M3HandComputedTable) {
  struct Case {
    float amax;
    float eps;
    uint32_t scaleBits;
    uint32_t pow2ScaleBits;
  };
  const float eps12 = 1e-12f; // 0x2B8CBCCC
  ASSERT_EQ(bitsOf(eps12), 0x2B8CBCCCu);
  const float big = 3e38f; // 0x7F61B1E6
  ASSERT_EQ(bitsOf(big), 0x7F61B1E6u);
  const uint32_t one = 0x3F800000u, f448 = 0x43E00000u, f256 = 0x43800000u;
  const uint32_t fltMax = 0x7F7FFFFFu, two127 = 0x7F000000u;
  // 448 / 1e-12f = 0x57CBBA10 (447999985582080); truncated: 2^48.
  const uint32_t byEps = 0x57CBBA10u, byEpsPow2 = 0x57800000u;
  const Case cases[] = {
      // amax 0: -> 1 unless eps lifts it.
      {0.0f, 0.0f, one, one},
      {0.0f, eps12, byEps, byEpsPow2},
      {0.0f, 1.0f, f448, f256},
      // Smallest subnormal: 448 / 2^-149 overflows -> FLT_MAX (2^127 pow2).
      {kMinSubnormal, 0.0f, fltMax, two127},
      {kMinSubnormal, eps12, byEps, byEpsPow2},
      {kMinSubnormal, 1.0f, f448, f256},
      // amax 1: eps = 1 does not apply (1 < 1 is false).
      {1.0f, 0.0f, f448, f256},
      {1.0f, eps12, f448, f256},
      {1.0f, 1.0f, f448, f256},
      {448.0f, 0.0f, one, one},
      {448.0f, eps12, one, one},
      {448.0f, 1.0f, one, one},
      // 448 / 3e38f = 0x03FE13D7 (1.4933e-36); truncated: 2^-120.
      {big, 0.0f, 0x03FE13D7u, 0x03800000u},
      {big, eps12, 0x03FE13D7u, 0x03800000u},
      {big, 1.0f, 0x03FE13D7u, 0x03800000u},
      // 448 / FLT_MAX = 1.75 * 2^-120 * (1 + 2^-24 + ...) -> 0x03E00001.
      {FLT_MAX, 0.0f, 0x03E00001u, 0x03800000u},
      {FLT_MAX, eps12, 0x03E00001u, 0x03800000u},
      {FLT_MAX, 1.0f, 0x03E00001u, 0x03800000u},
      // Inf and NaN amax -> 1 (kernel behaviour, docs/Numerics.md §3 edge
      // cases).
      {kInf, 0.0f, one, one},
      {kInf, eps12, one, one},
      {kInf, 1.0f, one, one},
      {kNaN, 0.0f, one, one},
      {kNaN, eps12, one, one},
      {kNaN, 1.0f, one, one},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(testing::Message() << "amax=" << c.amax << " eps=" << c.eps);
    EXPECT_FLOAT_BITS(
        computeScaleFromAmax(c.amax, 448.0f, false, c.eps, FLT_MAX),
        c.scaleBits);
    EXPECT_FLOAT_BITS(
        computeScaleFromAmax(c.amax, 448.0f, true, c.eps, FLT_MAX),
        c.pow2ScaleBits);
  }
}

TEST(ScalesTest, ComputeScaleFromAmaxE5M2HandComputedValues) {
  EXPECT_EQ(computeScaleFromAmax(1.0f, 57344.0f, false, 0.0f, FLT_MAX),
            57344.0f);
  EXPECT_EQ(computeScaleFromAmax(1.0f, 57344.0f, true, 0.0f, FLT_MAX),
            32768.0f);
  // 57344 / 3 = 19114.67 -> 0x46955555; truncated: 16384.
  EXPECT_FLOAT_BITS(computeScaleFromAmax(3.0f, 57344.0f, false, 0.0f, FLT_MAX),
                    0x46955555u);
  EXPECT_FLOAT_BITS(computeScaleFromAmax(3.0f, 57344.0f, true, 0.0f, FLT_MAX),
                    0x46800000u);
}

TEST(ScalesTest, ComputeScaleFromAmaxUsesValueForInfOnlyOnOverflow) {
  EXPECT_EQ(computeScaleFromAmax(kMinSubnormal, 448.0f, false, 0.0f, 123.0f),
            123.0f);
  EXPECT_EQ(computeScaleFromAmax(kMinSubnormal, 448.0f, true, 0.0f, 123.0f),
            64.0f);
  EXPECT_EQ(computeScaleFromAmax(2.0f, 448.0f, false, 0.0f, 123.0f), 224.0f);
}

TEST(ScalesTest, ComputeScaleFromAmaxIsCorrectlyRoundedQuotient) {
  // Independent derivation: the double quotient rounded to float is the
  // correctly rounded fp32 quotient (53 >= 2 * 24 + 2 bits); pow2 keeps the
  // largest power of two <= it.
  for (float amax : randomPositiveNormals(10, 20000)) {
    for (float fp8Max : {448.0f, 57344.0f}) {
      double quotient = static_cast<double>(fp8Max) / amax;
      float want = static_cast<float>(quotient);
      if (std::isinf(want))
        want = FLT_MAX;
      float got = computeScaleFromAmax(amax, fp8Max, false, 0.0f, FLT_MAX);
      ASSERT_EQ(bitsOf(got), bitsOf(want)) << amax;
      float pow2 = computeScaleFromAmax(amax, fp8Max, true, 0.0f, FLT_MAX);
      float wantPow2 = std::ldexp(
          1.0f,
          static_cast<int>(std::floor(std::log2(static_cast<double>(want)))));
      ASSERT_EQ(pow2, wantPow2) << amax;
    }
  }
}

TEST(ScalesTest, ScaleInvIsCorrectlyRoundedReciprocal) {
  EXPECT_FLOAT_BITS(scaleInvFromScale(448.0f), 0x3B124925u);
  EXPECT_FLOAT_BITS(scaleInvFromScale(3.0f), 0x3EAAAAABu);
  EXPECT_FLOAT_BITS(scaleInvFromScale(1.0f), 0x3F800000u);
  // 1 / FLT_MAX is an fp32 subnormal (2^-128 rounded: 0x00200000).
  EXPECT_FLOAT_BITS(scaleInvFromScale(FLT_MAX), 0x00200000u);
  for (float s : randomPositiveNormals(12, 20000))
    ASSERT_EQ(bitsOf(scaleInvFromScale(s)),
              bitsOf(static_cast<float>(1.0 / static_cast<double>(s))))
        << s;
}

//===----------------------------------------------------------------------===//
// Delayed scaling (docs/Numerics.md §4 step 2)
//===----------------------------------------------------------------------===//

namespace {

/// One training step: the casts accumulate `castAmax` into history[0] (an
/// atomicMax, NaN ignored), then the fused update runs.
void step(DelayedScalingState &state, AmaxAlgo algo, float castAmax,
          float reduced = 0.0f, int margin = 0) {
  state.history[0] = std::fmax(state.history[0], castAmax);
  updateDelayedScaling(state, algo, 448.0f, margin, reduced);
}

} // namespace

TEST(ScalesTest, DelayedScalingMaxAlgoRollsHistoryAndUsesWindowMax) {
  DelayedScalingState s{{0, 0, 0, 0}, 1.0f};
  step(s, AmaxAlgo::Max, 2.0f);
  EXPECT_EQ(s.history, (std::vector<float>{0, 0, 0, 2}));
  EXPECT_EQ(s.scale, 224.0f);
  step(s, AmaxAlgo::Max, 8.0f);
  EXPECT_EQ(s.history, (std::vector<float>{0, 0, 2, 8}));
  EXPECT_EQ(s.scale, 56.0f);
  step(s, AmaxAlgo::Max, 1.0f);
  EXPECT_EQ(s.history, (std::vector<float>{0, 2, 8, 1}));
  EXPECT_EQ(s.scale, 56.0f);
  // No cast this step: last == 0 -> no roll, max treated as 0 -> scale kept.
  step(s, AmaxAlgo::Max, 0.0f);
  EXPECT_EQ(s.history, (std::vector<float>{0, 2, 8, 1}));
  EXPECT_EQ(s.scale, 56.0f);
  step(s, AmaxAlgo::Max, 0.5f);
  EXPECT_EQ(s.history, (std::vector<float>{0, 8, 1, 0.5f}));
  EXPECT_EQ(s.scale, 56.0f);
  // The max covers old[1..L-1] and last, so 8 (old[1]) still counts while it
  // is dropped from the stored history.
  step(s, AmaxAlgo::Max, 0.25f);
  EXPECT_EQ(s.history, (std::vector<float>{0, 1, 0.5f, 0.25f}));
  EXPECT_EQ(s.scale, 56.0f);
  // 8 has left the window; a non-zero reduced amax (3) replaces the local
  // slot value (0.125).
  step(s, AmaxAlgo::Max, 0.125f, /*reduced=*/3.0f);
  EXPECT_EQ(s.history, (std::vector<float>{0, 0.5f, 0.25f, 3.0f}));
  EXPECT_FLOAT_BITS(s.scale, 0x43155555u); // 448 / 3
}

TEST(ScalesTest, DelayedScalingMostRecentUsesLastAmax) {
  DelayedScalingState s{{0, 0, 0, 0}, 1.0f};
  step(s, AmaxAlgo::MostRecent, 2.0f);
  EXPECT_EQ(s.scale, 224.0f);
  step(s, AmaxAlgo::MostRecent, 8.0f);
  EXPECT_EQ(s.scale, 56.0f);
  step(s, AmaxAlgo::MostRecent, 1.0f);
  EXPECT_EQ(s.scale, 448.0f);
  EXPECT_EQ(s.history, (std::vector<float>{0, 2, 8, 1}));
  step(s, AmaxAlgo::MostRecent, 0.0f); // last == 0: no roll, scale kept
  EXPECT_EQ(s.history, (std::vector<float>{0, 2, 8, 1}));
  EXPECT_EQ(s.scale, 448.0f);
  step(s, AmaxAlgo::MostRecent, 0.5f);
  EXPECT_EQ(s.scale, 896.0f);
  step(s, AmaxAlgo::MostRecent, 0.125f, /*reduced=*/5.0f);
  EXPECT_FLOAT_BITS(s.scale, 0x42B33333u); // 448 / 5
  EXPECT_EQ(s.history, (std::vector<float>{0, 1, 0.5f, 5.0f}));
}

TEST(ScalesTest, DelayedScalingMarginDividesByPowerOfTwo) {
  DelayedScalingState s{{0, 0}, 1.0f};
  step(s, AmaxAlgo::MostRecent, 1.0f, 0.0f, /*margin=*/2);
  EXPECT_EQ(s.scale, 112.0f);
  step(s, AmaxAlgo::MostRecent, 1.0f, 0.0f, /*margin=*/-1);
  EXPECT_EQ(s.scale, 896.0f);
  step(s, AmaxAlgo::Max, 10.0f, 0.0f, /*margin=*/1);
  EXPECT_FLOAT_BITS(s.scale, 0x41B33333u); // 224 / 10 = 22.4
}

TEST(ScalesTest, DelayedScalingNonFiniteAndTinyAmax) {
  // Inf amax: the history records it, the scale is kept.
  DelayedScalingState s{{0, 0, 0}, 7.0f};
  step(s, AmaxAlgo::MostRecent, kInf);
  EXPECT_EQ(s.history, (std::vector<float>{0, 0, kInf}));
  EXPECT_EQ(s.scale, 7.0f);
  step(s, AmaxAlgo::Max, 1.0f);
  EXPECT_EQ(s.scale, 7.0f); // window {0, Inf, 1}: max Inf
  step(s, AmaxAlgo::Max, 2.0f);
  EXPECT_EQ(s.scale, 7.0f); // window {Inf, 1, 2}: Inf is old[1], still in
  step(s, AmaxAlgo::Max, 2.0f);
  EXPECT_EQ(s.history, (std::vector<float>{0, 2, 2}));
  EXPECT_EQ(s.scale, 224.0f); // window {1, 2, 2}
  // Tiny amax: quotient overflows -> FLT_MAX.
  step(s, AmaxAlgo::MostRecent, kMinSubnormal);
  EXPECT_EQ(s.scale, FLT_MAX);
  // A NaN reduced amax rolls into the history, is ignored by the window max
  // and keeps the scale under most_recent.
  DelayedScalingState n{{0, 0, 3}, 5.0f};
  updateDelayedScaling(n, AmaxAlgo::Max, 448.0f, 0, kNaN);
  ASSERT_EQ(n.history.size(), 3u);
  EXPECT_EQ(n.history[1], 3.0f);
  EXPECT_TRUE(std::isnan(n.history[2]));
  EXPECT_FLOAT_BITS(n.scale, 0x43155555u); // 448 / 3: window max is 3
  updateDelayedScaling(n, AmaxAlgo::MostRecent, 448.0f, 0, kNaN);
  EXPECT_FLOAT_BITS(n.scale, 0x43155555u); // NaN amax: scale kept
}

TEST(ScalesTest, DelayedScalingPow2RoundsANewScaleDown) {
  // 448 / 3 = 149.33 -> 128; a tiny amax's FLT_MAX -> 2^127; a kept scale
  // (amax 0) is not rounded.
  DelayedScalingState s{{0, 0}, 3.0f};
  step(s, AmaxAlgo::MostRecent, 0.0f);
  updateDelayedScaling(s, AmaxAlgo::MostRecent, 448.0f, 0, 3.0f, true);
  EXPECT_EQ(s.scale, 128.0f);
  updateDelayedScaling(s, AmaxAlgo::MostRecent, 448.0f, 0, kMinSubnormal, true);
  EXPECT_EQ(s.scale, 0x1p127f);
  s.scale = 3.0f;
  updateDelayedScaling(s, AmaxAlgo::MostRecent, 448.0f, 0, 0.0f, true);
  EXPECT_EQ(s.scale, 3.0f);
}

TEST(ScalesTest, DelayedScalingSchemeOptionsReachTheUpdate) {
  // e5m2 (57344), margin 2, most_recent, pow2: 57344 / 4 / 5 = 2867.2 ->
  // 2048.
  te::rt::Scheme sch = te::rt::Scheme::fp8Delayed(
      te::rt::DType::E5M2, 2, te::rt::AmaxAlgo::MostRecent, 2, /*pow2=*/true);
  DelayedScalingState s{{5.0f, 0.0f}, 1.0f};
  updateDelayedScaling(s, sch);
  EXPECT_EQ(s.scale, 2048.0f);
  EXPECT_EQ(s.history, (std::vector<float>{0, 5.0f}));
  EXPECT_EQ(delayedScaledMax(sch), 14336.0f);
}

TEST(ScalesTest, DelayedScalingHistoryLengthOne) {
  DelayedScalingState s{{5.0f}, 1.0f};
  updateDelayedScaling(s, AmaxAlgo::Max, 448.0f, 0, 0.0f);
  EXPECT_EQ(s.history, (std::vector<float>{0}));
  EXPECT_FLOAT_BITS(s.scale, 0x42B33333u); // 448 / 5
}

//===----------------------------------------------------------------------===//
// MXFP8 (docs/Numerics.md §5.1)
//===----------------------------------------------------------------------===//

TEST(ScalesTest, Mxfp8ReciprocalConstantsAreRoundedReciprocals) {
  EXPECT_FLOAT_BITS(mxfp8MaxNormReciprocal(Fp8Format::E4M3), 0x3B124925u);
  EXPECT_FLOAT_BITS(mxfp8MaxNormReciprocal(Fp8Format::E5M2), 0x37924925u);
  EXPECT_EQ(mxfp8MaxNormReciprocal(Fp8Format::E4M3),
            static_cast<float>(1.0 / 448.0));
  EXPECT_EQ(mxfp8MaxNormReciprocal(Fp8Format::E5M2),
            static_cast<float>(1.0 / 57344.0));
}

TEST(ScalesTest, Mxfp8BlockExponentHandComputedCases) {
  const Fp8Format e4 = Fp8Format::E4M3, e5 = Fp8Format::E5M2;
  EXPECT_EQ(mxfp8BlockExponent(0.0f, e4), 0);
  EXPECT_EQ(mxfp8BlockExponent(448.0f, e4), 127); // 448 * RCP == 1 exactly
  EXPECT_EQ(mxfp8BlockExponent(449.0f, e4), 128);
  EXPECT_EQ(mxfp8BlockExponent(447.0f, e4), 127);
  EXPECT_EQ(mxfp8BlockExponent(224.0f, e4), 126);
  EXPECT_EQ(mxfp8BlockExponent(57344.0f, e5), 127);
  EXPECT_EQ(mxfp8BlockExponent(57345.0f, e5), 128);
  // Subnormal amax: the product underflows to <= 2^-127 -> 0.
  EXPECT_EQ(mxfp8BlockExponent(kMinSubnormal, e4), 0);
  EXPECT_EQ(mxfp8BlockExponent(floatOf(0x00400000u), e4), 0);
  EXPECT_EQ(mxfp8BlockExponent(std::ldexp(1.0f, -120), e4), 0);
  // FLT_MAX * RCP = 0x7B124924 -> exponent field 246 rounded up.
  EXPECT_EQ(mxfp8BlockExponent(FLT_MAX, e4), 247);
  EXPECT_EQ(mxfp8BlockExponent(FLT_MAX, e5), 240); // 0x77924924
  EXPECT_EQ(mxfp8BlockExponent(kInf, e4), 0xFE);
  EXPECT_EQ(mxfp8BlockExponent(kInf, e5), 0xFE);
  EXPECT_EQ(mxfp8BlockExponent(kNaN, e4), 0xFF);
}

TEST(ScalesTest, Mxfp8BlockExponentOfMaxNormTimesPowerOfTwo) {
  for (int k = -60; k <= 60; ++k) {
    EXPECT_EQ(mxfp8BlockExponent(std::ldexp(448.0f, k), Fp8Format::E4M3),
              127 + k)
        << k;
    EXPECT_EQ(mxfp8BlockExponent(std::ldexp(57344.0f, k), Fp8Format::E5M2),
              127 + k)
        << k;
    // Just above a multiple of max norm needs the next power of two.
    EXPECT_EQ(mxfp8BlockExponent(std::nextafter(std::ldexp(448.0f, k), kInf),
                                 Fp8Format::E4M3),
              128 + k)
        << k;
  }
}

TEST(ScalesTest, Mxfp8BlockExponentMatchesExactRatioForEveryBF16Amax) {
  // docs/Numerics.md §5.1 note: E = ceil(log2(amax / fp8Max)) + 127, clamped to
  // [0, 254], derived here in exact double arithmetic (smallest E with
  // fp8Max * 2^(E-127) >= amax). docs/Numerics.md checked bf16 amax in
  // [2^-27, 2^32]; this covers every positive finite bf16 value.
  for (Fp8Format format : {Fp8Format::E4M3, Fp8Format::E5M2}) {
    double fp8Max = fp8MaxNorm(format);
    for (uint32_t pattern = 0x0001; pattern < 0x7F80; ++pattern) {
      float amax = floatOf(pattern << 16);
      int want = 254;
      for (int e = 0; e <= 254; ++e) {
        if (std::ldexp(fp8Max, e - 127) >= amax) {
          want = e;
          break;
        }
      }
      ASSERT_EQ(mxfp8BlockExponent(amax, format), want)
          << "amax=" << amax << " format=" << static_cast<int>(format);
    }
  }
}

TEST(ScalesTest, Mxfp8BlockExponentKeepsScaledBlockWithinMaxNorm) {
  // Because E rounds up, amax * 2^(127-E) <= fp8Max for every finite bf16
  // amax whose exponent is not clamped (docs/Numerics.md §5.1 notes).
  for (Fp8Format format : {Fp8Format::E4M3, Fp8Format::E5M2}) {
    for (uint32_t pattern = 0x0001; pattern < 0x7F80; ++pattern) {
      float amax = floatOf(pattern << 16);
      uint8_t e = mxfp8BlockExponent(amax, format);
      if (e == 0 || e == 0xFE)
        continue;
      float scaled = amax * e8m0ReciprocalScale(e);
      ASSERT_LE(scaled, fp8MaxNorm(format)) << amax;
      ASSERT_GT(scaled, fp8MaxNorm(format) / 2) << amax;
    }
  }
}

//===----------------------------------------------------------------------===//
// NVFP4 (docs/Numerics.md §6.2)
//===----------------------------------------------------------------------===//

TEST(ScalesTest, Nvfp4ConstantsAreRoundedReciprocals) {
  EXPECT_FLOAT_BITS(nvfp4OneSixth(), 0x3E2AAAABu);
  EXPECT_FLOAT_BITS(nvfp4OneOver2688(), 0x39C30C31u);
  EXPECT_EQ(nvfp4OneSixth(), static_cast<float>(1.0 / 6.0));
  EXPECT_EQ(nvfp4OneOver2688(), static_cast<float>(1.0 / 2688.0));
}

TEST(ScalesTest, Nvfp4GlobalEncodeScaleSpecialAndHandComputedValues) {
  EXPECT_EQ(nvfp4GlobalEncodeScale(0.0f), 1.0f);    // 2688/0 = Inf, amax 0
  EXPECT_EQ(nvfp4GlobalEncodeScale(kInf), 1.0f);    // 2688/Inf = 0
  EXPECT_EQ(nvfp4GlobalEncodeScale(kNaN), FLT_MAX); // fminf(NaN, FLT_MAX)
  EXPECT_EQ(nvfp4GlobalEncodeScale(2688.0f), 1.0f);
  EXPECT_EQ(nvfp4GlobalEncodeScale(1.0f), 2688.0f);
  EXPECT_FLOAT_BITS(nvfp4GlobalEncodeScale(10.0f), 0x43866666u); // 268.8
  EXPECT_EQ(nvfp4GlobalEncodeScale(kMinSubnormal), FLT_MAX);
  EXPECT_FLOAT_BITS(nvfp4GlobalEncodeScale(FLT_MAX), 0x05280001u);
}

TEST(ScalesTest, Nvfp4GlobalDecodeScaleIsCorrectlyRoundedReciprocal) {
  EXPECT_EQ(nvfp4GlobalDecodeScale(1.0f), 1.0f);
  EXPECT_FLOAT_BITS(nvfp4GlobalDecodeScale(2688.0f), 0x39C30C31u);
  EXPECT_FLOAT_BITS(nvfp4GlobalDecodeScale(floatOf(0x43866666u)), 0x3B73CF3Eu);
  EXPECT_FLOAT_BITS(nvfp4GlobalDecodeScale(FLT_MAX), 0x00200000u);
  // (float)(1.0 / (double)x) == rcp_rn(x) (docs/Numerics.md §6.2).
  for (float s : randomPositiveNormals(13, 20000))
    ASSERT_EQ(bitsOf(nvfp4GlobalDecodeScale(s)), bitsOf(1.0f / s)) << s;
}

TEST(ScalesTest, Nvfp4BlockScaleHandComputedExample) {
  // Global amax 10: S_enc = 268.8 (0x43866666), mult6 = fl(S_enc * fl(1/6))
  // = 44.8 (0x42333333). Block amax 3.25: 3.25 * 44.8 = 145.6 (0x43119999),
  // between E4M3 144 and 160 (spacing 16) -> 144 = 1.125 * 2^7 -> 0x71.
  float sEnc = nvfp4GlobalEncodeScale(10.0f);
  EXPECT_EQ(nvfp4BlockScale(3.25f, sEnc), 0x71);
  EXPECT_EQ(decodeE4M3(0x71), 144.0f);
  EXPECT_EQ(nvfp4BlockScale(0.0f, sEnc), 0x00);
  // Global amax 448: S_enc = 6 and mult6 = fl(6 * fl(1/6)) = 1, so the block
  // amax is rounded directly: 152 is the 144/160 tie -> even code 0x72 (160).
  float sEnc448 = nvfp4GlobalEncodeScale(448.0f);
  ASSERT_EQ(sEnc448, 6.0f);
  EXPECT_EQ(nvfp4BlockScale(152.0f, sEnc448), 0x72);
  EXPECT_EQ(nvfp4BlockScale(std::nextafter(152.0f, 0.0f), sEnc448), 0x71);
  EXPECT_EQ(nvfp4BlockScale(136.0f, sEnc448), 0x70); // 128/144 tie -> 128
  // Global amax 3: S_enc = 896, mult6 = fl(896 * fl(1/6)) = 0x43155556, one
  // ulp above 896 / 6. Block amax 1.125 gives 168.00002 (0x43280001), just
  // past the 160/176 tie, so the folded constant selects 176 (0x73) where an
  // exact division by 6 would give the tie and 160 (0x72).
  EXPECT_EQ(nvfp4BlockScale(1.125f, nvfp4GlobalEncodeScale(3.0f)), 0x73);
  // Global amax 2688: S_enc = 1, fl(6 * fl(1/6)) = 1 + 2^-25 -> 1.0.
  EXPECT_EQ(nvfp4BlockScale(6.0f, 1.0f), 0x38);
  // Global amax 1: S_enc = 2688, mult6 = 448 exactly.
  float sEnc1 = nvfp4GlobalEncodeScale(1.0f);
  EXPECT_EQ(nvfp4BlockScale(1.0f, sEnc1), 0x7E);
  EXPECT_EQ(nvfp4BlockScale(2.0f, sEnc1), 0x7E); // saturates
  // 448 * 2^-20 < 2^-10: underflows to E4M3 zero (docs/Numerics.md §6.2 edge).
  EXPECT_EQ(nvfp4BlockScale(std::ldexp(1.0f, -20), sEnc1), 0x00);
  // Inf / NaN block amax: fminf(.., FLT_MAX) = FLT_MAX -> saturates.
  EXPECT_EQ(nvfp4BlockScale(kInf, sEnc1), 0x7E);
  EXPECT_EQ(nvfp4BlockScale(kNaN, sEnc1), 0x7E);
}

TEST(ScalesTest, Nvfp4BlockEncodeFactorHandComputedExample) {
  // S_dec(10) = 0x3B73CF3E; 144 * S_dec = 0x3F092493 (0.5357143);
  // 1 / that = 0x3FEEEEEE (1.8666666).
  float sDec = nvfp4GlobalDecodeScale(nvfp4GlobalEncodeScale(10.0f));
  ASSERT_EQ(bitsOf(sDec), 0x3B73CF3Eu);
  EXPECT_FLOAT_BITS(nvfp4BlockEncodeFactor(0x71, sDec), 0x3FEEEEEEu);
  // Max block under global amax 1: 1 / fl(448 / 2688) = 6 exactly.
  EXPECT_EQ(nvfp4BlockEncodeFactor(0x7E, floatOf(0x39C30C31u)), 6.0f);
  // Zero block scale: 1/0 = Inf -> FLT_MAX.
  EXPECT_EQ(nvfp4BlockEncodeFactor(0x00, sDec), FLT_MAX);
  // -0 (never produced: block amax >= 0) follows the formula: fminf(-Inf, ..).
  EXPECT_EQ(nvfp4BlockEncodeFactor(0x80, sDec), -kInf);
}

TEST(ScalesTest, Nvfp4QuantizesBlockElementsWithTheEncodeFactor) {
  // Global amax 10, block amax 3.25 (scale 0x71, factor 1.8666666):
  //  3.25 -> 6.0667 -> 6 (7); 1.0 -> 1.8667 -> 2 (4);
  // -0.5 -> -0.9333 -> -1 (0xA); 0.2 -> 0.3733 -> 0.5 (1).
  float factor = floatOf(0x3FEEEEEEu);
  EXPECT_EQ(encodeE2M1(3.25f * factor), 0x7);
  EXPECT_EQ(encodeE2M1(1.0f * factor), 0x4);
  EXPECT_EQ(encodeE2M1(-0.5f * factor), 0xA);
  EXPECT_EQ(encodeE2M1(0.2f * factor), 0x1);
}

TEST(ScalesTest, Nvfp4DequantFactorHandComputedExample) {
  // fl(fl(144 * 10) * fl(1/2688)) = fl(1440 * 0x39C30C31) = 0x3F092492:
  // one ulp below the quantization-time 144 * S_dec (0x3F092493).
  EXPECT_FLOAT_BITS(nvfp4DequantFactor(0x71, 10.0f), 0x3F092492u);
  float sDec = nvfp4GlobalDecodeScale(nvfp4GlobalEncodeScale(10.0f));
  EXPECT_FLOAT_BITS(decodeE4M3(0x71) * sDec, 0x3F092493u);
  // 448 * 1 * fl(1/2688) = fl(1/6).
  EXPECT_FLOAT_BITS(nvfp4DequantFactor(0x7E, 1.0f), 0x3E2AAAABu);
  EXPECT_EQ(nvfp4DequantFactor(0x00, 10.0f), 0.0f);
  // The order matters: fl(fl(0.5625 * 3) * fl(1/2688)) = 0x3A249249, while
  // 0.5625 * fl(3 * fl(1/2688)) would be 0x3A24924A.
  EXPECT_FLOAT_BITS(nvfp4DequantFactor(0x31, 3.0f), 0x3A249249u);
}

//===----------------------------------------------------------------------===//
// FP8 block scaling (docs/Numerics.md §7.1)
//===----------------------------------------------------------------------===//

TEST(ScalesTest, Fp8BlockScaleValueForInfDependsOnSourceType) {
  const Fp8Format e4 = Fp8Format::E4M3;
  // bf16 max 0x1.FEp127 (0x7F7F0000), f16 65504, f32 FLT_MAX; with pow2
  // 2^127, 2^15, 2^127.
  EXPECT_FLOAT_BITS(
      fp8BlockScale(kMinSubnormal, e4, false, 0, SourceType::BF16),
      0x7F7F0000u);
  EXPECT_FLOAT_BITS(fp8BlockScale(kMinSubnormal, e4, true, 0, SourceType::BF16),
                    0x7F000000u);
  EXPECT_FLOAT_BITS(fp8BlockScale(kMinSubnormal, e4, false, 0, SourceType::F16),
                    0x477FE000u);
  EXPECT_FLOAT_BITS(fp8BlockScale(kMinSubnormal, e4, true, 0, SourceType::F16),
                    0x47000000u);
  EXPECT_FLOAT_BITS(fp8BlockScale(kMinSubnormal, e4, false, 0, SourceType::F32),
                    0x7F7FFFFFu);
  EXPECT_FLOAT_BITS(fp8BlockScale(kMinSubnormal, e4, true, 0, SourceType::F32),
                    0x7F000000u);
  EXPECT_EQ(sourceTypeMaxFinite(SourceType::F16), 65504.0f);
}

TEST(ScalesTest, Fp8BlockScaleFollowsComputeScaleFromAmaxRules) {
  for (SourceType src : {SourceType::BF16, SourceType::F16, SourceType::F32}) {
    for (bool pow2 : {false, true}) {
      EXPECT_EQ(fp8BlockScale(0.0f, Fp8Format::E4M3, pow2, 0, src), 1.0f);
      EXPECT_EQ(fp8BlockScale(kInf, Fp8Format::E4M3, pow2, 0, src), 1.0f);
      EXPECT_EQ(fp8BlockScale(kNaN, Fp8Format::E4M3, pow2, 0, src), 1.0f);
      EXPECT_EQ(fp8BlockScale(448.0f, Fp8Format::E4M3, pow2, 0, src), 1.0f);
    }
    EXPECT_EQ(fp8BlockScale(1.0f, Fp8Format::E4M3, false, 0, src), 448.0f);
    EXPECT_EQ(fp8BlockScale(1.0f, Fp8Format::E4M3, true, 0, src), 256.0f);
    EXPECT_EQ(fp8BlockScale(1.0f, Fp8Format::E5M2, false, 0, src), 57344.0f);
    EXPECT_EQ(fp8BlockScale(1.0f, Fp8Format::E5M2, true, 0, src), 32768.0f);
    EXPECT_EQ(fp8BlockScale(0.0f, Fp8Format::E4M3, false, 1.0f, src), 448.0f);
    EXPECT_FLOAT_BITS(fp8BlockScale(10.0f, Fp8Format::E4M3, false, 0, src),
                      0x42333333u); // 44.8
    EXPECT_EQ(fp8BlockScale(10.0f, Fp8Format::E4M3, true, 0, src), 32.0f);
  }
}

TEST(ScalesTest, Fp8BlockScaleInvIsCorrectlyRoundedReciprocal) {
  EXPECT_FLOAT_BITS(fp8BlockScaleInv(448.0f), 0x3B124925u);
  EXPECT_EQ(fp8BlockScaleInv(256.0f), 1.0f / 256.0f);
  EXPECT_FLOAT_BITS(fp8BlockScaleInv(floatOf(0x7F7F0000u)), 0x00202020u);
  // The 2D kernel's 1.0f / scale gives the same value (docs/Numerics.md §7.1).
  for (float s : randomPositiveNormals(14, 20000))
    ASSERT_EQ(bitsOf(fp8BlockScaleInv(s)), bitsOf(1.0f / s)) << s;
}
