//===- te/runtime/reference/Adam.h - Reference Adam / AdamW -----*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR and no CUDA.
//
//===----------------------------------------------------------------------===//
//
// The per-element FusedAdam update of docs/Numerics.md §9 in two arithmetic
// flavours. The IEEE variant is the formula with plain fp32 operations,
// sqrtf and correctly rounded division: the portable definition tejit's own
// optimizer kernels (built without fast-math) must match bit for bit. The
// fast-math variant models TE's adam.cu, which nvcc compiles with
// --use_fast_math: every fp32 operation flushes subnormal inputs and results
// to zero, and multiply-adds are contracted into FMAs exactly where
// docs/Numerics.md §9.2 lists them. Division and square root, which the GPU
// then evaluates with div.approx / sqrt.approx, are modelled here by correctly
// rounded operations; results may therefore differ from TE's GPU by 1-2 ulp
// in m_hat / denom / update (and what follows from them). It is a close
// model for tolerance checks, not a bit-exact one.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_REFERENCE_ADAM_H
#define TE_RUNTIME_REFERENCE_ADAM_H

#include "te/runtime/reference/Scales.h"

#include <cstdint>

namespace te {
namespace rt {
namespace ref {

/// Hyper-parameters as the kernel sees them (fp32, docs/Numerics.md §9.1).
struct AdamConfig {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weightDecay = 0.0f;
  /// true: AdamW (decoupled decay, TE mode 1); false: L2 (mode 0).
  bool adamW = true;
  bool biasCorrection = true;
  /// TE's --use_fast_math arithmetic (see the file comment).
  bool fastMath = false;
};

struct AdamBiasCorrection {
  float bc1 = 1.0f, bc2 = 1.0f;
};

/// bc = (float)(1 - beta^step) with beta^step = powBySquaring((double)beta,
/// step) (step is the already incremented count, >= 1); both 1 when bias
/// correction is off. tejit's kernels compute the same on the device from
/// the run-time step, so host and device agree bit for bit; it differs from
/// std::pow by at most a few double ulps, which the rounding to float hides
/// except in rare ties.
AdamBiasCorrection adamBiasCorrection(const AdamConfig &config, int64_t step);

/// base^e (e >= 0) by binary exponentiation: r = 1, then for each bit of e
/// from the lowest, r = r * base when the bit is set, base = base * base;
/// every product an IEEE double multiply.
double powBySquaring(double base, int64_t e);

/// One element: g is the fp32 gradient, p / m / v the fp32 parameter (or
/// master weight) and moments, updated in place.
///   L2:    g = g + wd*p
///   m = beta1*m + (1-beta1)*g;  v = beta2*v + (1-beta2)*g*g
///   denom = sqrtf(v/bc2) + eps;  upd = (m/bc1)/denom (+ wd*p for AdamW)
///   p = p - lr*upd
/// Fast-math contractions: L2 g = fma(wd, p, g); m = fma(1-beta1, g,
/// beta1*m); v = fma(g, (1-beta2)*g, beta2*v); AdamW upd = fma(p, wd,
/// m_hat/denom); p = p - lr*upd stays unfused. The L2 contraction is not
/// in the experiment of docs/Numerics.md §9.2 and is an assumption.
void adamElement(float g, float &p, float &m, float &v,
                 const AdamConfig &config, const AdamBiasCorrection &bc);

/// Updates `n` elements: `grad` holds bf16 / f16 bits (uint16_t) or f32
/// values per `gradType` and is widened to fp32. If `paramOut16` is given,
/// the updated fp32 values are also stored there rounded RNE to
/// `paramOutType` (bf16 or f16): the 16-bit model weights of a master-weight
/// update. `step` is the incremented step count (first step = 1).
void adamStep(float *params, float *expAvg, float *expAvgSq, const void *grad,
              SourceType gradType, int64_t n, int64_t step,
              const AdamConfig &config, uint16_t *paramOut16 = nullptr,
              SourceType paramOutType = SourceType::BF16);

} // namespace ref
} // namespace rt
} // namespace te

#endif // TE_RUNTIME_REFERENCE_ADAM_H
