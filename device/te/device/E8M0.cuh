//===- te/device/E8M0.cuh - E8M0 block-scale exponents ----------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The unsigned power-of-two scale of MXFP8 blocks (docs/Numerics.md §1.5).
// sm_90 has no E8M0 conversion (cvt.rp.satfinite.ue8m0x2.f32 is sm_100+), so
// the encoder is the exact bit formula on every target; decoding builds the
// fp32 bit pattern directly.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_E8M0_CUH
#define TE_DEVICE_E8M0_CUH

#include "te/device/Bits.cuh"

namespace te {
namespace dev {

/// Smallest E with 2^(E-127) >= |v| (round toward +Inf), saturated at 0xFE:
/// NaN -> 0xFF, +-Inf -> 0xFE, +-0 and fp32 subnormals <= 2^-127 -> 0x00.
/// The sign of a negative input is ignored (TE passes only v >= 0).
TE_HD u8 encodeE8M0(float v) {
  u32 absBits = floatToBits(v) & kF32AbsMask;
  if (absBits > kF32InfBits)
    return 0xFF;
  if (absBits == kF32InfBits)
    return 0xFE;
  u32 expField = absBits >> 23;
  u32 manField = absBits & kF32ManMask;
  // A power of two keeps its exponent; anything above it rounds up, except
  // in the largest binade (saturate) and for subnormals up to 2^-127, which
  // E = 0 already covers.
  bool roundUp = manField != 0 && expField != 0xFEu &&
                 (expField != 0 || manField > 0x400000u);
  return u8(expField + (roundUp ? 1u : 0u));
}

/// 2^(E-127), the dequantization scale: 0xFF -> NaN (0x7FFFFFFF), 0x00 ->
/// 2^-127 (the fp32 subnormal 0x00400000).
TE_HD float decodeE8M0(u8 e) {
  if (e == 0xFF)
    return bitsToFloat(0x7FFFFFFFu);
  if (e == 0)
    return bitsToFloat(0x00400000u);
  return bitsToFloat(u32(e) << 23);
}

/// 2^(127-E), the quantization multiplier: 0xFF -> NaN, 0xFE -> 2^-127
/// (0x00400000), otherwise bits (254 - E) << 23.
TE_HD float e8m0ReciprocalScale(u8 e) {
  if (e == 0xFF)
    return bitsToFloat(0x7FFFFFFFu);
  if (e == 0xFE)
    return bitsToFloat(0x00400000u);
  return bitsToFloat((254u - e) << 23);
}

} // namespace dev
} // namespace te

#endif // TE_DEVICE_E8M0_CUH
