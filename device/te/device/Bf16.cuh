//===- te/device/Bf16.cuh - BF16 and F16 conversions ------------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// 16-bit floats as raw bit patterns (u16), so generated kernels need neither
// cuda_bf16.h nor cuda_fp16.h (lean includes keep NVRTC compiles fast).
// Encoders round to nearest even: on sm_80+ with cvt.rn.{bf16,f16}.f32, on
// the host with exact integer code that equals the reference bit for bit.
// Decoders are exact integer code on every target.
//
// NaN: the software encoders keep the sign and top payload bits and set the
// quiet bit, as the reference does; the hardware returns its canonical NaN
// (measured on an H100: 0x7FFF for BF16 and F16, whatever the input's sign
// and payload). All other inputs, subnormals and overflow to Inf included,
// give identical bits on both paths.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_BF16_CUH
#define TE_DEVICE_BF16_CUH

#include "te/device/Rounding.cuh"

namespace te {
namespace dev {

//===----------------------------------------------------------------------===//
// BF16
//===----------------------------------------------------------------------===//

/// fp32 -> bf16 RNE, exact integer path. bf16 shares the fp32 exponent, so
/// rounding the low 16 bits of the pattern handles subnormals and the carry
/// into Inf; NaN keeps its top bits, quieted.
TE_HD u16 floatToBF16Sw(float value) {
  u32 bits = floatToBits(value);
  if (isNaNBits(bits))
    return u16((bits >> 16) | 0x0040u);
  return u16((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

TE_HD u16 floatToBF16(float value) {
#if TE_DEVICE_HW_16BIT
  u16 result;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(result) : "f"(value));
  return result;
#else
  return floatToBF16Sw(value);
#endif
}

/// Two elements at once: `first` (the lower address) in the low half.
TE_HD u32 floatToBF16x2(float first, float second) {
#if TE_DEVICE_HW_16BIT
  u32 packed;
  // The first source operand fills the HIGH half of the destination.
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(second), "f"(first));
  return packed;
#else
  return u32(floatToBF16Sw(first)) | (u32(floatToBF16Sw(second)) << 16);
#endif
}

/// bf16 -> fp32 (exact: the pattern is the top half of an fp32).
TE_HD float bf16ToFloat(u16 bits) { return bitsToFloat(u32(bits) << 16); }

//===----------------------------------------------------------------------===//
// F16
//===----------------------------------------------------------------------===//

/// fp32 -> IEEE binary16 RNE, exact integer path: gradual underflow,
/// |x| >= 65520 -> +-Inf, NaN keeps its top payload bits, quieted.
TE_HD u16 floatToF16Sw(float value) {
  u32 bits = floatToBits(value);
  u32 sign = (bits >> 16) & 0x8000u;
  u32 absBits = bits & kF32AbsMask;
  if (absBits > kF32InfBits)
    return u16(sign | 0x7E00u | ((absBits >> 13) & 0x3FFu));
  // Codes past 65504 (0x7BFF) round to Inf (0x7C00).
  u32 code = detail::roundMagnitudeToGrid</*ManBits=*/10, /*Bias=*/15>(absBits);
  return u16(sign | (code < 0x7C00u ? code : 0x7C00u));
}

TE_HD u16 floatToF16(float value) {
#if TE_DEVICE_HW_16BIT
  u16 result;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(result) : "f"(value));
  return result;
#else
  return floatToF16Sw(value);
#endif
}

/// binary16 -> fp32, exact; a NaN gives the quiet NaN with the code's sign.
TE_HD float f16ToFloat(u16 bits) {
  u32 sign = u32(bits & 0x8000u) << 16;
  u32 expField = (bits >> 10) & 0x1Fu;
  u32 manField = bits & 0x3FFu;
  if (expField == 0x1Fu)
    return bitsToFloat((manField ? kF32QuietNaNBits : kF32InfBits) | sign);
  if (expField == 0) // subnormal: man * 2^-24, exact in fp32
    return bitsToFloat(floatToBits(float(manField) * 0x1p-24f) | sign);
  return bitsToFloat(sign | ((expField + 112u) << 23) | (manField << 13));
}

} // namespace dev
} // namespace te

#endif // TE_DEVICE_BF16_CUH
