//===- te/device/Scales.cuh - Scale-factor math -----------------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Scale computations of every recipe, written with the explicitly rounded
// operations of Arith.cuh in exactly the order docs/Numerics.md gives (§3, 5.1,
// 6.2, 7.1), so that a kernel computing a scale on the device gets the bits
// the reference computes on the host.
//
// The reference computes the NVFP4 decode scale and the FP8 block scale_inv
// as (float)(1.0 / (double)x). Here they are rcp_rn(x): a double quotient
// has 53 >= 2 * 24 + 2 bits, so rounding it again to fp32 is innocuous and
// both give the correctly rounded reciprocal (the host test checks this on
// millions of inputs), without double arithmetic on the GPU.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_SCALES_CUH
#define TE_DEVICE_SCALES_CUH

#include "te/device/Arith.cuh"
#include "te/device/E8M0.cuh"
#include "te/device/Fp8.cuh"

namespace te {
namespace dev {

//===----------------------------------------------------------------------===//
// Amax and per-tensor scales (docs/Numerics.md §3, 7.1)
//===----------------------------------------------------------------------===//

/// One step of max |x| with fmaxf semantics: a NaN element is ignored, an
/// infinite one makes the result Inf. Start from 0. Compared as integers
/// (order-preserving for non-negative floats), so subnormals count even
/// under -ftz=true.
TE_HD float amaxAccumulate(float amax, float x) {
  u32 absBits = floatToBits(x) & kF32AbsMask;
  bool larger = absBits <= kF32InfBits && absBits > floatToBits(amax);
  return larger ? bitsToFloat(absBits) : amax;
}

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
/// amaxAccumulate in one instruction for the f32 hot loops: max.f32 returns
/// the other operand for a NaN and takes |x| as an operand modifier, which
/// is the same result bit for bit - unless subnormals are flushed
/// (-ftz=true, which tejit never passes; the portable form then).
__device__ __forceinline__ float amaxAccumulateF32(float amax, float x) {
#if defined(__CUDA_FTZ) && __CUDA_FTZ
  return amaxAccumulate(amax, x);
#else
  return fmaxf(amax, fabsf(x));
#endif
}
#endif

/// compute_scale_from_amax (docs/Numerics.md §3 step 3):
///   amax < eps -> amax = eps; amax 0, Inf or NaN -> 1;
///   s = div_rn(fp8Max, amax); Inf -> valueForInf;
///   pow2 -> s with its mantissa bits cleared (rounded down to 2^k).
TE_HD float computeScaleFromAmax(float amax, float fp8Max, bool pow2, float eps,
                                 float valueForInf) {
  if (amax < eps) // a NaN amax compares false and returns 1 below
    amax = eps;
  if (isInf(amax) || isNaN(amax) || isZero(amax))
    return 1.0f;
  float scale = divRn(fp8Max, amax);
  if (isInf(scale))
    scale = valueForInf;
  if (pow2)
    scale = bitsToFloat(floatToBits(scale) & 0xFF800000u);
  return scale;
}

/// scale_inv written by the per-tensor cast kernels: rcp_rn(scale).
TE_HD float scaleInvFromScale(float scale) { return rcpRn(scale); }

/// The scale per-tensor FP8 current scaling casts by: compute_scale_from_
/// amax of the tensor's amax, an infinite scale becoming the largest float
/// (the dense cast stage and the per-expert grouped casts alike).
template <Fp8Format F, bool Pow2>
TE_HD float fp8CurrentScale(float amax, float eps) {
  return computeScaleFromAmax(amax, fp8MaxNorm(F), Pow2, eps, maxFiniteF32());
}

//===----------------------------------------------------------------------===//
// MXFP8 (docs/Numerics.md §5.1)
//===----------------------------------------------------------------------===//

/// fl(1 / fp8Max): E4M3 0x3B124925, E5M2 0x37924925.
TE_HD float mxfp8MaxNormReciprocal(Fp8Format format) {
  return bitsToFloat(format == Fp8Format::E4M3 ? 0x3B124925u : 0x37924925u);
}

/// E = e8m0(fl(blockAmax * fl(1 / fp8Max))), the stored scale byte. Data is
/// then encodeFp8(fl(x * e8m0ReciprocalScale(E))).
TE_HD u8 mxfp8BlockExponent(float blockAmax, Fp8Format format) {
  return encodeE8M0(mulRn(blockAmax, mxfp8MaxNormReciprocal(format)));
}

//===----------------------------------------------------------------------===//
// NVFP4 (docs/Numerics.md §6.2)
//===----------------------------------------------------------------------===//

/// fl(1/6) = 0x3E2AAAAB.
TE_HD float nvfp4OneSixth() { return bitsToFloat(0x3E2AAAABu); }
/// fl(1/2688) = 0x39C30C31.
TE_HD float nvfp4OneOver2688() { return bitsToFloat(0x39C30C31u); }

/// S_enc = fminf(div_rn(2688, A), FLT_MAX); 1 when A is 0 or the quotient is
/// 0 (A = Inf). A NaN amax gives FLT_MAX.
TE_HD float nvfp4GlobalEncodeScale(float globalAmax) {
  float sEnc = minWithMaxFinite(divRn(2688.0f, globalAmax));
  if (isZero(globalAmax) || isZero(sEnc))
    return 1.0f;
  return sEnc;
}

/// S_dec = rcp_rn(S_enc) (== (float)(1.0 / (double)S_enc)).
TE_HD float nvfp4GlobalDecodeScale(float sEnc) { return rcpRn(sEnc); }

/// Stored E4M3 block scale:
///   e4m3_satfinite(fminf(fl(blockAmax * fl(sEnc * fl(1/6))), FLT_MAX)).
TE_HD u8 nvfp4BlockScale(float blockAmax, float sEnc) {
  float mult6 = mulRn(sEnc, nvfp4OneSixth());
  return encodeE4M3(minWithMaxFinite(mulRn(blockAmax, mult6)));
}

/// Per-block encode factor fminf(div_rn(1, fl(e4m3(sB) * sDec)), FLT_MAX);
/// elements are quantized as e2m1(fl(x * factor)). sB is nvfp4BlockScale's,
/// never a NaN code.
TE_HD float nvfp4BlockEncodeFactor(u8 sB, float sDec) {
  float blockDecode = mulRn(decodeE4M3NotNaN(sB), sDec);
  return minWithMaxFinite(rcpRn(blockDecode)); // == div_rn(1, x)
}

/// Dequantization factor fl(fl(e4m3(sB) * A) * fl(1/2688)); x = e2m1 * it.
/// `HardwareDecode`: sB through the hardware conversion (decodeE4M3NotNaN)
/// instead of the integer decode's dozen instructions - the same bits for
/// every byte, a NaN code too (its NaN, whichever decoder gave it, becomes
/// the canonical one in the multiply). The dequantize kernels, which decode
/// a stored scale a run, take it; in the quantize kernels ptxas gave the
/// 16x16 NVFP4 stack cast 24 bytes of spills with it, so they keep the
/// integer decode.
template <bool HardwareDecode = false>
TE_HD float nvfp4DequantFactor(u8 sB, float globalAmax) {
  const float s = HardwareDecode ? decodeE4M3NotNaN(sB) : decodeE4M3(sB);
  return mulRn(mulRn(s, globalAmax), nvfp4OneOver2688());
}

//===----------------------------------------------------------------------===//
// FP8 block scaling (docs/Numerics.md §7.1)
//===----------------------------------------------------------------------===//

/// Largest finite value of the source dtype: 0x1.FEp127, 65504, FLT_MAX.
TE_HD float sourceTypeMaxFinite(SourceType src) {
  if (src == SourceType::BF16)
    return bitsToFloat(0x7F7F0000u);
  if (src == SourceType::F16)
    return 65504.0f;
  return maxFiniteF32();
}

/// computeScaleFromAmax with valueForInf = max finite of the source dtype.
TE_HD float fp8BlockScale(float blockAmax, Fp8Format format, bool pow2,
                          float eps, SourceType src) {
  return computeScaleFromAmax(blockAmax, fp8MaxNorm(format), pow2, eps,
                              sourceTypeMaxFinite(src));
}

/// Stored fp32 block scale_inv: rcp_rn(scale) (== (float)(1.0/(double)s)).
TE_HD float fp8BlockScaleInv(float scale) { return rcpRn(scale); }

} // namespace dev
} // namespace te

#endif // TE_DEVICE_SCALES_CUH
