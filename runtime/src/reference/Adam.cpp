//===- runtime/src/reference/Adam.cpp - Reference Adam ----------*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR and no CUDA.
//
//===----------------------------------------------------------------------===//
//
// The IEEE variant is adam.cu's AdamFunctor expression by expression, each
// evaluated in fp32 with no contraction. The fast-math variant spells every
// operation as a helper that flushes subnormal operands and results to zero
// (the .ftz of fast-math PTX) and writes the FMAs out with std::fma.
//
//===----------------------------------------------------------------------===//

#include "te/runtime/reference/Adam.h"

#include "te/runtime/reference/Codecs.h"

#include <cfloat>
#include <cmath>

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "the reference Adam needs float arithmetic evaluated in float"
#endif

namespace te {
namespace rt {
namespace ref {

double powBySquaring(double base, int64_t e) {
  double r = 1.0;
  while (e > 0) {
    if (e & 1)
      r = r * base;
    base = base * base;
    e >>= 1;
  }
  return r;
}

AdamBiasCorrection adamBiasCorrection(const AdamConfig &config, int64_t step) {
  AdamBiasCorrection bc;
  if (!config.biasCorrection)
    return bc;
  bc.bc1 = static_cast<float>(
      1.0 - powBySquaring(static_cast<double>(config.beta1), step));
  bc.bc2 = static_cast<float>(
      1.0 - powBySquaring(static_cast<double>(config.beta2), step));
  return bc;
}

namespace {

/// fp32 operations with flush-to-zero of operands and result.
float ftz(float x) {
  return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x;
}
float addF(float a, float b) { return ftz(ftz(a) + ftz(b)); }
float subF(float a, float b) { return ftz(ftz(a) - ftz(b)); }
float mulF(float a, float b) { return ftz(ftz(a) * ftz(b)); }
float divF(float a, float b) { return ftz(ftz(a) / ftz(b)); }
float sqrtF(float a) { return ftz(std::sqrt(ftz(a))); }
float fmaF(float a, float b, float c) {
  return ftz(std::fma(ftz(a), ftz(b), ftz(c)));
}

void adamIeee(float g, float &p, float &m, float &v, const AdamConfig &c,
              const AdamBiasCorrection &bc) {
  if (!c.adamW)
    g = g + c.weightDecay * p;
  m = c.beta1 * m + (1.0f - c.beta1) * g;
  v = c.beta2 * v + (1.0f - c.beta2) * g * g;
  float mHat = m / bc.bc1;
  float vHat = v / bc.bc2;
  float denom = std::sqrt(vHat) + c.eps;
  float update = mHat / denom;
  if (c.adamW)
    update = update + c.weightDecay * p;
  p = p - c.lr * update;
}

void adamFast(float g, float &p, float &m, float &v, const AdamConfig &c,
              const AdamBiasCorrection &bc) {
  if (!c.adamW)
    g = fmaF(c.weightDecay, p, g);
  m = fmaF(subF(1.0f, c.beta1), g, mulF(c.beta1, m));
  v = fmaF(g, mulF(subF(1.0f, c.beta2), g), mulF(c.beta2, v));
  float mHat = divF(m, bc.bc1);
  float vHat = divF(v, bc.bc2);
  float denom = addF(sqrtF(vHat), c.eps);
  float update = divF(mHat, denom);
  if (c.adamW)
    update = fmaF(p, c.weightDecay, update);
  p = subF(p, mulF(c.lr, update));
}

} // namespace

void adamElement(float g, float &p, float &m, float &v,
                 const AdamConfig &config, const AdamBiasCorrection &bc) {
  if (config.fastMath)
    adamFast(g, p, m, v, config, bc);
  else
    adamIeee(g, p, m, v, config, bc);
}

void adamStep(float *params, float *expAvg, float *expAvgSq, const void *grad,
              SourceType gradType, int64_t n, int64_t step,
              const AdamConfig &config, uint16_t *paramOut16,
              SourceType paramOutType) {
  AdamBiasCorrection bc = adamBiasCorrection(config, step);
  const float *g32 = static_cast<const float *>(grad);
  const uint16_t *g16 = static_cast<const uint16_t *>(grad);
  for (int64_t i = 0; i < n; ++i) {
    float g = gradType == SourceType::F32    ? g32[i]
              : gradType == SourceType::BF16 ? bf16ToFloat(g16[i])
                                             : f16ToFloat(g16[i]);
    adamElement(g, params[i], expAvg[i], expAvgSq[i], config, bc);
    if (paramOut16)
      paramOut16[i] = paramOutType == SourceType::F16 ? floatToF16(params[i])
                                                      : floatToBF16(params[i]);
  }
}

} // namespace ref
} // namespace rt
} // namespace te
