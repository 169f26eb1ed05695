//===- test/unittests/Runtime/AdamTest.cpp - Adam ---------------*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR and no CUDA.
//
//===----------------------------------------------------------------------===//
//
// The expected values of the IEEE steps were worked out off-line by
// evaluating docs/Numerics.md §9.2 one fp32 operation at a time (each exact
// double result rounded to binary32, which is the correctly rounded fp32 result
// for
// +, -, *, / and sqrt) and are written here as hex floats. The fast-math
// variant is checked for flush-to-zero, for its FMA contractions on a case
// where they change the result, and for staying within a few ulp of the
// IEEE variant on random data.
//
//===----------------------------------------------------------------------===//

#include "te/runtime/reference/Adam.h"

#include "te/runtime/reference/Codecs.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace te::rt::ref;

namespace {

AdamConfig config(float lr, float wd, bool adamW, bool fast = false) {
  AdamConfig c;
  c.lr = lr;
  c.weightDecay = wd;
  c.adamW = adamW;
  c.fastMath = fast;
  return c;
}

TEST(AdamBiasCorrection, DoublePowerBySquaring) {
  AdamConfig c;
  AdamBiasCorrection bc = adamBiasCorrection(c, 1);
  // 1 - 0.9f = 0x1.9999ap-4 exactly (0.9f = 0x1.ccccccp-1).
  EXPECT_EQ(bc.bc1, 0x1.9999ap-4f);
  EXPECT_EQ(bc.bc2, 0x1.0624p-10f);
  bc = adamBiasCorrection(c, 3);
  EXPECT_EQ(bc.bc1, 0x1.15810ap-2f);
  EXPECT_EQ(bc.bc2, 0x1.88d16p-9f);
  // Close to std::pow (each squaring doubles the relative error: about
  // 1e-12 at step 1e5), far below the float rounding of 1 - beta^step.
  for (int64_t step : {1, 2, 10, 1000, 123457})
    for (float beta : {0.9f, 0.95f, 0.999f, 0.9999f}) {
      double p = powBySquaring(double(beta), step);
      double q = std::pow(double(beta), double(step));
      EXPECT_LE(std::fabs(p - q), 1e-10 * q) << beta << "^" << step;
    }
  c.biasCorrection = false;
  bc = adamBiasCorrection(c, 3);
  EXPECT_EQ(bc.bc1, 1.0f);
  EXPECT_EQ(bc.bc2, 1.0f);
}

TEST(AdamIeee, TwoHandComputedSteps) {
  // Step 1: m = (1-0.9f)*0.5, v = (1-0.999f)*0.25, m_hat = 0.5 and
  // v_hat = 0.25 exactly (the bias corrections equal 1-beta exactly),
  // denom = fl(0.5 + 1e-8) = 0.5, update 1, p = fl(1 - 0.1f) = 0.9f.
  float p = 1.0f, m = 0.0f, v = 0.0f, g = 0.5f;
  AdamConfig c = config(0.1f, 0.0f, true);
  adamStep(&p, &m, &v, &g, SourceType::F32, 1, 1, c);
  EXPECT_EQ(p, 0x1.ccccccp-1f);
  EXPECT_EQ(m, 0x1.9999ap-5f);
  EXPECT_EQ(v, 0x1.0624p-12f);
  // Step 2 with g = -0.25.
  g = -0.25f;
  adamStep(&p, &m, &v, &g, SourceType::F32, 1, 2, c);
  EXPECT_EQ(p, 0x1.bf29dep-1f);
  EXPECT_EQ(m, 0x1.47ae18p-6f);
  EXPECT_EQ(v, 0x1.4769e4p-12f);
}

TEST(AdamIeee, EpsIsAddedAfterTheSquareRoot) {
  // g = 1e-6: m_hat = 0x1.0c6f7ap-20 = sqrt(v_hat), denom = sqrt + 1e-8 =
  // 0x1.0f1eacp-20, update = 0.990099 = 0x1.faee42p-1, p = 0x1.cd4e94p-1.
  // (With eps inside the root the update would be about 0.01.)
  float p = 1.0f, m = 0.0f, v = 0.0f, g = 1e-6f;
  adamStep(&p, &m, &v, &g, SourceType::F32, 1, 1, config(0.1f, 0.0f, true));
  EXPECT_EQ(m, 0x1.ad7f3p-24f);
  EXPECT_EQ(v, 0x1.203a06p-50f);
  EXPECT_EQ(p, 0x1.cd4e94p-1f);
}

TEST(AdamIeee, AdamWDecouplesWeightDecayFromL2) {
  // p = 2, g = 0.5, wd = 0.1, lr = 0.01, step 1. AdamW: update =
  // 1 + wd*p = 1.2 -> p = 2 - 0.012; L2: g = 0.5 + 0.2 = 0.7 enters the
  // moments, update = 1 -> p = 2 - 0.01.
  float pw = 2.0f, mw = 0.0f, vw = 0.0f, g = 0.5f;
  adamStep(&pw, &mw, &vw, &g, SourceType::F32, 1, 1, config(0.01f, 0.1f, true));
  float pl = 2.0f, ml = 0.0f, vl = 0.0f;
  adamStep(&pl, &ml, &vl, &g, SourceType::F32, 1, 1,
           config(0.01f, 0.1f, false));
  EXPECT_EQ(pw, 0x1.fced92p+0f);
  EXPECT_EQ(mw, 0x1.9999ap-5f);
  EXPECT_EQ(vw, 0x1.0624p-12f);
  EXPECT_EQ(pl, 0x1.fd70a4p+0f);
  EXPECT_EQ(ml, 0x1.1eb856p-4f);
  EXPECT_EQ(vl, 0x1.00e5d6p-11f);
  EXPECT_NEAR(pl - pw, 0.002f, 1e-6f);
}

TEST(AdamIeee, GradientTypesAndSixteenBitParams) {
  // bf16 / f16 gradients are widened exactly: the result equals the fp32
  // step on the widened values. The 16-bit parameter copy is the RNE cast.
  std::vector<float> gf = {0.5f, -1.25f, 3.0f, 1e-3f};
  std::vector<uint16_t> gb, gh;
  for (float x : gf) {
    gb.push_back(floatToBF16(x));
    gh.push_back(floatToF16(x));
  }
  AdamConfig c = config(0.05f, 0.01f, true);
  for (SourceType type : {SourceType::BF16, SourceType::F16}) {
    const std::vector<uint16_t> &g16 = type == SourceType::BF16 ? gb : gh;
    std::vector<float> widened;
    for (uint16_t h : g16)
      widened.push_back(type == SourceType::BF16 ? bf16ToFloat(h)
                                                 : f16ToFloat(h));
    std::vector<float> p1 = {1.0f, -2.0f, 0.3f, 4.0f}, m1(4, 0.1f), v1(4, 0.2f);
    std::vector<float> p2 = p1, m2 = m1, v2 = v1;
    std::vector<uint16_t> out(4);
    adamStep(p1.data(), m1.data(), v1.data(), g16.data(), type, 4, 5, c,
             out.data(), SourceType::BF16);
    adamStep(p2.data(), m2.data(), v2.data(), widened.data(), SourceType::F32,
             4, 5, c);
    EXPECT_EQ(p1, p2);
    EXPECT_EQ(m1, m2);
    EXPECT_EQ(v1, v2);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(out[i], floatToBF16(p1[i]));
  }
  // lr = 0 keeps p = 1 + 3*2^-12, which is above the f16 midpoint
  // 1 + 2^-11 and rounds up to 1 + 2^-10 (0x3C01).
  float p = 1.0f + 0x3p-12f, m = 0, v = 0, g = 0;
  uint16_t half;
  adamStep(&p, &m, &v, &g, SourceType::F32, 1, 1, config(0.0f, 0.0f, true),
           &half, SourceType::F16);
  EXPECT_EQ(p, 1.0f + 0x3p-12f);
  EXPECT_EQ(half, 0x3C01);
}

/// Spacing of fp32 values at |x| (the ulp of x).
double ulpOf(float x) {
  float a = std::fabs(x);
  return double(std::nextafter(a, INFINITY)) - double(a);
}

TEST(AdamFastMath, FlushesSubnormalsToZero) {
  // A subnormal gradient: IEEE keeps it (m becomes 0.1 * g, still
  // subnormal); fast-math flushes it, so the moments stay 0 and p does not
  // move. A subnormal parameter is flushed on the way through too.
  float g = 1e-40f;
  float p1 = 1.0f, m1 = 0, v1 = 0, p2 = 1.0f, m2 = 0, v2 = 0;
  adamStep(&p1, &m1, &v1, &g, SourceType::F32, 1, 1, config(0.1f, 0, true));
  adamStep(&p2, &m2, &v2, &g, SourceType::F32, 1, 1,
           config(0.1f, 0, true, true));
  EXPECT_NE(m1, 0.0f);
  EXPECT_EQ(std::fpclassify(m1), FP_SUBNORMAL);
  EXPECT_EQ(m2, 0.0f);
  EXPECT_EQ(v2, 0.0f);
  EXPECT_EQ(p2, 1.0f);
  float p = 1e-39f, m = 0, v = 0, g1 = 0.0f;
  adamStep(&p, &m, &v, &g1, SourceType::F32, 1, 1,
           config(0.1f, 0.5f, true, true));
  EXPECT_EQ(p, 0.0f);
}

TEST(AdamFastMath, ContractsTheListedMultiplyAdds) {
  // m = fma(1-b1, g, b1*m) and v = fma(g, (1-b2)*g, b2*v), written out
  // here with std::fma, on an input (found by a search) where fusing
  // changes m.
  AdamConfig c = config(1e-3f, 0.0f, true, true);
  float g = 0x1.0438e6p-2f, m0 = 0x1.a3a5ap-2f, v0 = 0x1.3579bdp-3f;
  float oneMinusB1 = 1.0f - c.beta1, oneMinusB2 = 1.0f - c.beta2;
  float fusedM = std::fma(oneMinusB1, g, c.beta1 * m0);
  float plainM = c.beta1 * m0 + oneMinusB1 * g;
  float fusedV = std::fma(g, oneMinusB2 * g, c.beta2 * v0);
  ASSERT_EQ(fusedM, 0x1.93b45ap-2f);
  ASSERT_EQ(plainM, 0x1.93b458p-2f);
  float p = 1.0f, m = m0, v = v0;
  AdamBiasCorrection bc = adamBiasCorrection(c, 7);
  adamElement(g, p, m, v, c, bc);
  EXPECT_EQ(m, fusedM);
  EXPECT_EQ(v, fusedV);
  float mHat = fusedM / bc.bc1, vHat = fusedV / bc.bc2;
  float update = mHat / (std::sqrt(vHat) + c.eps);
  EXPECT_EQ(p, 1.0f - c.lr * update);
  // AdamW: update = fma(p, wd, m_hat / denom).
  c.weightDecay = 0.01f;
  p = 1.5f;
  m = m0;
  v = v0;
  adamElement(g, p, m, v, c, bc);
  float updateW = std::fma(1.5f, 0.01f, update);
  EXPECT_EQ(p, 1.5f - c.lr * updateW);
  // L2: g = fma(wd, p, g) (an assumption, see Adam.h).
  c.adamW = false;
  p = 1.5f;
  m = m0;
  v = v0;
  adamElement(g, p, m, v, c, bc);
  float gL2 = std::fma(0.01f, 1.5f, g);
  EXPECT_EQ(m, std::fma(oneMinusB1, gL2, c.beta1 * m0));
}

TEST(AdamFastMath, WithinFewUlpOfIeeeOnRandomData) {
  // Errors are measured in ulps of the largest term of the last operation
  // (b1*m or (1-b1)*g for m, b2*v or (1-b2)*g*g for v, p or lr*update for
  // p): the results can cancel to nearly zero, where a result-relative ulp
  // count means nothing.
  uint64_t state = 12345;
  auto next = [&]() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>(state >> 40) / 16777216.0f; // [0, 1)
  };
  double worstP = 0, worstM = 0, worstV = 0;
  int differ = 0;
  for (bool adamW : {true, false}) {
    AdamConfig ieee = config(1e-3f, 0.01f, adamW);
    AdamConfig fast = config(1e-3f, 0.01f, adamW, true);
    for (int i = 0; i < 20000; ++i) {
      float g = (next() * 2 - 1) * 4;
      float p = (next() * 2 - 1) * 2, m = (next() * 2 - 1) * 0.5f,
            v = next() * 0.5f + 1e-4f;
      int64_t step = 1 + i % 50;
      float p1 = p, m1 = m, v1 = v, p2 = p, m2 = m, v2 = v;
      adamStep(&p1, &m1, &v1, &g, SourceType::F32, 1, step, ieee);
      adamStep(&p2, &m2, &v2, &g, SourceType::F32, 1, step, fast);
      float gEff = adamW ? g : g + 0.01f * p;
      float mScale = std::max(std::fabs(0.9f * m), std::fabs(0.1f * gEff));
      float vScale = std::max(0.999f * v, 0.001f * gEff * gEff);
      float pScale = std::max(std::fabs(p), std::fabs(p1 - p));
      worstM = std::max(worstM, std::fabs(double(m1) - m2) / ulpOf(mScale));
      worstV = std::max(worstV, std::fabs(double(v1) - v2) / ulpOf(vScale));
      worstP = std::max(worstP, std::fabs(double(p1) - p2) / ulpOf(pScale));
      differ += p1 != p2 || m1 != m2 || v1 != v2;
    }
  }
  // A contraction saves one rounding of a product (at most half an ulp of
  // the largest term) and can move the final rounding by one grid step: m
  // and v stay within 2 ulps of their largest term; p within 2 (the
  // update's few-ulp difference is scaled by lr before the subtraction).
  EXPECT_LE(worstM, 2.0);
  EXPECT_LE(worstV, 2.0);
  EXPECT_LE(worstP, 2.0);
  std::printf("fast-math vs IEEE, worst ulps of the largest term: m %g, "
              "v %g, p %g\n",
              worstM, worstV, worstP);
  EXPECT_GT(differ, 0) << "the variants never differed";
}

} // namespace
