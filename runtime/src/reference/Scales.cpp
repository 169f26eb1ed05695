//===- runtime/src/reference/Scales.cpp - Scale computations ----*- C++ -*-===//
//
// Each function is a transcription of a docs/Numerics.md formula into fp32 C++.
// Plain float operators are IEEE round-to-nearest-even when float expressions
// are evaluated in float (FLT_EVAL_METHOD == 0, e.g. x86-64 SSE or AArch64),
// which stands in for the __fdiv_rn / __frcp_rn intrinsics; products are
// never fused into FMAs because each one is stored to a float first, and the
// build uses -ffp-contract=off as well.
//
//===----------------------------------------------------------------------===//

#include "te/runtime/reference/Scales.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "the reference scales need float arithmetic evaluated in float"
#endif

namespace te {
namespace rt {
namespace ref {

float amaxOf(const float *data, size_t count) {
  float amax = 0.0f;
  // NaN elements are ignored (docs/Numerics.md §3 step 1). Test explicitly:
  // glibc's fmaxf returns NaN for a signalling-NaN operand.
  for (size_t i = 0; i < count; ++i)
    if (!std::isnan(data[i]))
      amax = std::fmax(amax, std::fabs(data[i]));
  return amax;
}

float computeScaleFromAmax(float amax, float fp8Max, bool pow2, float eps,
                           float valueForInf) {
  // docs/Numerics.md §3 step 3. A NaN amax fails `amax < eps` and returns 1
  // below.
  if (amax < eps)
    amax = eps;
  if (std::isinf(amax) || amax == 0.0f || std::isnan(amax))
    return 1.0f;
  float scale = fp8Max / amax;
  if (std::isinf(scale))
    scale = valueForInf;
  if (pow2)
    scale = bitsToFloat(floatToBits(scale) & 0xFF800000u);
  return scale;
}

float scaleInvFromScale(float scale) { return 1.0f / scale; }

float delayedScaledMax(float fp8Max, int margin) {
  // TE's host computes scaled_max as float * std::pow(2.f, -margin); a power
  // of two in [2^-32, 1], so the product is exact.
  return fp8Max *
         static_cast<float>(std::pow(2.0f, static_cast<float>(-margin)));
}

void updateDelayedScaling(DelayedScalingState &state, AmaxAlgo algo,
                          float fp8Max, int margin, float reducedAmax,
                          bool pow2) {
  // docs/Numerics.md §4 step 2 (delayed_scaling.cu kernel_bulk), one column.
  std::vector<float> &hist = state.history;
  size_t length = hist.size();
  float last =
      reducedAmax != 0.0f ? reducedAmax : (length > 0 ? hist[0] : 0.0f);
  float windowMax = 0.0f;
  if (last != 0.0f && length > 0) {
    // Roll: hist'[i] = hist[i + 1] for 0 < i < L-1, hist'[L-1] = last,
    // hist'[0] = 0; the max runs over the new window (fmaxf ignores NaN).
    std::vector<float> rolled(length);
    for (size_t i = 0; i < length; ++i) {
      float a = i + 1 < length ? hist[i + 1] : last;
      windowMax = std::fmax(windowMax, a);
      rolled[i] = i > 0 ? a : 0.0f;
    }
    hist.swap(rolled);
  }
  float amax = algo == AmaxAlgo::MostRecent ? last : windowMax;

  float scale = state.scale;
  if (std::isfinite(amax) && amax > 0.0f) {
    scale = delayedScaledMax(fp8Max, margin) / amax;
    if (std::isinf(scale))
      scale = std::numeric_limits<float>::max();
    // tejit's pow2 option: round a new scale down to a power of two, as
    // current scaling does (FLT_MAX becomes 2^127).
    if (pow2)
      scale = bitsToFloat(floatToBits(scale) & 0xFF800000u);
  }
  state.scale = scale;
}

float mxfp8MaxNormReciprocal(Fp8Format format) {
  return bitsToFloat(format == Fp8Format::E4M3 ? 0x3B124925u : 0x37924925u);
}

uint8_t mxfp8BlockExponent(float blockAmax, Fp8Format format) {
  // docs/Numerics.md §5.1: E = e8m0(fl(amax * RCP)).
  float ratio = blockAmax * mxfp8MaxNormReciprocal(format);
  return encodeE8M0(ratio);
}

float nvfp4OneSixth() { return bitsToFloat(0x3E2AAAABu); }

float nvfp4OneOver2688() { return bitsToFloat(0x39C30C31u); }

float nvfp4GlobalEncodeScale(float globalAmax) {
  // docs/Numerics.md §6.2 (compute_global_encode_scaling_factor_FP4).
  float sEnc = 2688.0f / globalAmax;
  sEnc = std::fmin(sEnc, FLT_MAX);
  if (globalAmax == 0.0f || sEnc == 0.0f)
    return 1.0f;
  return sEnc;
}

float nvfp4GlobalDecodeScale(float sEnc) {
  return static_cast<float>(1.0 / static_cast<double>(sEnc));
}

uint8_t nvfp4BlockScale(float blockAmax, float sEnc) {
  float mult6 = sEnc * nvfp4OneSixth();
  float scaled = blockAmax * mult6;
  return encodeE4M3(std::fmin(scaled, FLT_MAX));
}

float nvfp4BlockEncodeFactor(uint8_t sB, float sDec) {
  float blockDecode = decodeE4M3(sB) * sDec;
  float factor = 1.0f / blockDecode;
  return std::fmin(factor, FLT_MAX);
}

float nvfp4DequantFactor(uint8_t sB, float globalAmax) {
  float scaledAmax = decodeE4M3(sB) * globalAmax;
  return scaledAmax * nvfp4OneOver2688();
}

float sourceTypeMaxFinite(SourceType src) {
  switch (src) {
  case SourceType::BF16:
    return bitsToFloat(0x7F7F0000u);
  case SourceType::F16:
    return 65504.0f;
  case SourceType::F32:
    break;
  }
  return FLT_MAX;
}

float fp8BlockScale(float blockAmax, Fp8Format format, bool pow2, float eps,
                    SourceType src) {
  return computeScaleFromAmax(blockAmax, fp8MaxNorm(format), pow2, eps,
                              sourceTypeMaxFinite(src));
}

float fp8BlockScaleInv(float scale) {
  return static_cast<float>(1.0 / static_cast<double>(scale));
}

} // namespace ref
} // namespace rt
} // namespace te
