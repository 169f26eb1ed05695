//===- te/device/Arith.cuh - Explicitly rounded fp32 arithmetic -*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// docs/Numerics.md writes scale math with fl() (one RNE rounding per
// operation), div_rn and rcp_rn. On the device these are the PTX instructions
// {mul,div,rcp,fma}.rn.f32 written out as inline assembly rather than the
// __fmul_rn-style intrinsics: nvcc and NVRTC add .ftz to the intrinsics when
// a kernel is compiled with -ftz=true or --use_fast_math, which would flush
// fp32 subnormals (TE keeps them, docs/Numerics.md §1.2). Spelled out, the
// instructions are correctly rounded, never contracted into FMAs and keep
// subnormals under any compile flags. On the host they are plain float
// operations; host builds must use -ffp-contract=off and evaluate float in
// float (FLT_EVAL_METHOD 0).
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_ARITH_CUH
#define TE_DEVICE_ARITH_CUH

#include "te/device/Bits.cuh"

#if !TE_DEVICE_CODE && !defined(__CUDACC_RTC__)
#include <cmath>
#endif

namespace te {
namespace dev {

/// fl(a * b).
TE_HD float mulRn(float a, float b) {
#if TE_DEVICE_CODE
  float result;
  asm("mul.rn.f32 %0, %1, %2;" : "=f"(result) : "f"(a), "f"(b));
  return result;
#else
  return a * b;
#endif
}

/// fl(a + b), never contracted into an fma.
TE_HD float addRn(float a, float b) {
#if TE_DEVICE_CODE
  float result;
  asm("add.rn.f32 %0, %1, %2;" : "=f"(result) : "f"(a), "f"(b));
  return result;
#else
  return a + b;
#endif
}

/// div_rn(a, b): correctly rounded a / b.
TE_HD float divRn(float a, float b) {
#if TE_DEVICE_CODE
  float result;
  asm("div.rn.f32 %0, %1, %2;" : "=f"(result) : "f"(a), "f"(b));
  return result;
#else
  return a / b;
#endif
}

/// rcp_rn(x): correctly rounded 1 / x (== div_rn(1, x)).
TE_HD float rcpRn(float x) {
#if TE_DEVICE_CODE
  float result;
  asm("rcp.rn.f32 %0, %1;" : "=f"(result) : "f"(x));
  return result;
#else
  return 1.0f / x;
#endif
}

/// fl(a * b + c) with a single rounding.
TE_HD float fmaRn(float a, float b, float c) {
#if TE_DEVICE_CODE
  float result;
  asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(result) : "f"(a), "f"(b), "f"(c));
  return result;
#else
  return std::fma(a, b, c);
#endif
}

/// The smaller / larger of a and b where a NaN operand, quiet or signaling,
/// yields the other one: PTX min.f32 / max.f32 (no flush of subnormals
/// under any compile flags). On the host spelled out, since the C library's
/// fmin / fmax return NaN for a signaling NaN.
TE_HD float minNum(float a, float b) {
#if TE_DEVICE_CODE
  float result;
  asm("min.f32 %0, %1, %2;" : "=f"(result) : "f"(a), "f"(b));
  return result;
#else
  return isNaN(a) ? b : isNaN(b) ? a : (b < a ? b : a);
#endif
}
TE_HD float maxNum(float a, float b) {
#if TE_DEVICE_CODE
  float result;
  asm("max.f32 %0, %1, %2;" : "=f"(result) : "f"(a), "f"(b));
  return result;
#else
  return isNaN(a) ? b : isNaN(b) ? a : (a < b ? b : a);
#endif
}

/// |x| as a float operation (abs.f32, which the GPU folds into the
/// instruction that reads it; absBitwise is an integer operation).
TE_HD float absF32(float x) {
#if TE_DEVICE_CODE
  float result;
  asm("abs.f32 %0, %1;" : "=f"(result) : "f"(x));
  return result;
#else
  return std::fabs(x);
#endif
}

/// fminf(x, FLT_MAX): NaN and +Inf become FLT_MAX, everything else is kept.
TE_HD float minWithMaxFinite(float x) {
  float maxFinite = maxFiniteF32();
  return x <= maxFinite ? x : maxFinite;
}

/// x[0] + x[stride] + ... + x[(n - 1) stride] in that order from +0, each
/// add rounded: the second stage of the chunked bias-gradient sum (the
/// partials of consecutive chunks, docs/Numerics.md §10), for the plain and
/// the grouped bias gradient. The adds are a chain but the loads are not:
/// each batch of 32 is loaded (read-only) before it is added, so a GPU
/// thread waits for memory once a batch instead of once an element
/// (64 chunks of 8192 columns on the H100: 10.3 us one load at a time,
/// 5.0 us batched).
TE_HD float orderedStridedSum(const float *x, i64 n, i64 stride) {
  constexpr int kBatch = 32;
  float sum = 0.0f;
  for (i64 i = 0; i < n; i += kBatch) {
    float v[kBatch];
    TE_UNROLL
    for (int j = 0; j < kBatch; ++j) {
      i64 e = i + j;
#if TE_DEVICE_CODE
      v[j] = e < n ? __ldg(x + e * stride) : 0.0f;
#else
      v[j] = e < n ? x[e * stride] : 0.0f;
#endif
    }
    TE_UNROLL
    for (int j = 0; j < kBatch; ++j)
      if (i + j < n)
        sum = addRn(sum, v[j]);
  }
  return sum;
}

} // namespace dev
} // namespace te

#endif // TE_DEVICE_ARITH_CUH
