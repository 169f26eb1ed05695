//===- te/device/Fp8.cuh - E4M3 and E5M2 codecs -----------------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// fp32 -> FP8 with RNE + SATFINITE and exact FP8 -> fp32 (docs/Numerics.md
// §1.1, 1.2). On sm_89+ the encoders are the PTX instruction TransformerEngine
// uses, cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32; elsewhere (host, older GPUs)
// an exact integer path that equals the reference codecs bit for bit.
//
// NaN: the software path gives the reference codes (E4M3 0x7F | sign, E5M2
// 0x7E | sign). The hardware path keeps the instruction's own NaN code, which
// is what TransformerEngine stores (docs/Numerics.md §1.6): measured on an
// H100, every NaN input, either sign, becomes 0x7F for both E4M3 and E5M2.
// Every non-NaN input encodes identically on both paths (checked on the H100
// over all BF16 patterns times scales, rounding edges and an fp32 sweep).
//
// Decoders are exact integer code on every target: a NaN code decodes to the
// quiet NaN 0x7FC00000 with the code's sign, like the reference.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_FP8_CUH
#define TE_DEVICE_FP8_CUH

#include "te/device/Rounding.cuh"

namespace te {
namespace dev {

//===----------------------------------------------------------------------===//
// Software encoders (every target)
//===----------------------------------------------------------------------===//

/// fp32 -> E4M3, exact integer path: |y| <= 2^-10 -> signed 0, finite
/// overflow and +-Inf -> +-448 (0x7E | sign), NaN -> 0x7F | sign.
TE_HD u8 encodeE4M3Sw(float y) {
  u32 bits = floatToBits(y);
  u32 sign = (bits >> 24) & 0x80u;
  u32 absBits = bits & kF32AbsMask;
  if (absBits > kF32InfBits)
    return u8(0x7Fu | sign);
  u32 code = detail::roundMagnitudeToGrid</*ManBits=*/3, /*Bias=*/7>(absBits);
  return u8((code < 0x7Eu ? code : 0x7Eu) | sign);
}

/// fp32 -> E5M2, exact integer path: |y| <= 2^-17 -> signed 0, |y| >= 61440
/// and +-Inf -> +-57344 (0x7B | sign), NaN -> 0x7E | sign.
TE_HD u8 encodeE5M2Sw(float y) {
  u32 bits = floatToBits(y);
  u32 sign = (bits >> 24) & 0x80u;
  u32 absBits = bits & kF32AbsMask;
  if (absBits > kF32InfBits)
    return u8(0x7Eu | sign);
  u32 code = detail::roundMagnitudeToGrid</*ManBits=*/2, /*Bias=*/15>(absBits);
  return u8((code < 0x7Bu ? code : 0x7Bu) | sign);
}

//===----------------------------------------------------------------------===//
// Encoders (hardware on sm_89+)
//===----------------------------------------------------------------------===//

/// Two elements at once: `first` (the lower address) goes to the low byte.
TE_HD u16 encodeE4M3x2(float first, float second) {
#if TE_DEVICE_HW_FP8
  u16 packed;
  // The first source operand fills the HIGH byte of the destination.
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;"
      : "=h"(packed)
      : "f"(second), "f"(first));
  return packed;
#else
  return u16(encodeE4M3Sw(first) | (u32(encodeE4M3Sw(second)) << 8));
#endif
}

TE_HD u16 encodeE5M2x2(float first, float second) {
#if TE_DEVICE_HW_FP8
  u16 packed;
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;"
      : "=h"(packed)
      : "f"(second), "f"(first));
  return packed;
#else
  return u16(encodeE5M2Sw(first) | (u32(encodeE5M2Sw(second)) << 8));
#endif
}

/// fp32 -> E4M3, RNE + SATFINITE (the quantize cast of docs/Numerics.md §1.2).
TE_HD u8 encodeE4M3(float y) {
#if TE_DEVICE_HW_FP8
  return u8(encodeE4M3x2(y, 0.0f) & 0xFFu);
#else
  return encodeE4M3Sw(y);
#endif
}

/// fp32 -> E5M2, RNE + SATFINITE.
TE_HD u8 encodeE5M2(float y) {
#if TE_DEVICE_HW_FP8
  return u8(encodeE5M2x2(y, 0.0f) & 0xFFu);
#else
  return encodeE5M2Sw(y);
#endif
}

//===----------------------------------------------------------------------===//
// Decoders (exact integer code on every target)
//===----------------------------------------------------------------------===//

/// E4M3 -> fp32. 0x7F / 0xFF are NaN; there is no Inf.
TE_HD float decodeE4M3(u8 code) {
  u32 sign = u32(code & 0x80u) << 24;
  u32 expField = (code >> 3) & 0xFu;
  u32 manField = code & 0x7u;
  if ((code & 0x7Fu) == 0x7Fu)
    return bitsToFloat(kF32QuietNaNBits | sign);
  if (expField == 0) // subnormal: man * 2^-9, exact in fp32
    return bitsToFloat(floatToBits(float(manField) * 0x1p-9f) | sign);
  return bitsToFloat(sign | ((expField + 120u) << 23) | (manField << 20));
}

/// E5M2 -> fp32. 0x7C / 0xFC are +-Inf, 0x7D..0x7F / 0xFD..0xFF NaN.
TE_HD float decodeE5M2(u8 code) {
  u32 sign = u32(code & 0x80u) << 24;
  u32 expField = (code >> 2) & 0x1Fu;
  u32 manField = code & 0x3u;
  if (expField == 0x1Fu)
    return bitsToFloat((manField ? kF32QuietNaNBits : kF32InfBits) | sign);
  if (expField == 0) // subnormal: man * 2^-16, exact in fp32
    return bitsToFloat(floatToBits(float(manField) * 0x1p-16f) | sign);
  return bitsToFloat(sign | ((expField + 112u) << 23) | (manField << 21));
}

#if TE_DEVICE_HW_FP8
/// An f16x2 register (low half first) widened to two floats, exactly.
__device__ __forceinline__ void widenF16x2(u32 h2, float &first,
                                           float &second) {
  asm("{\n\t.reg .b16 lo, hi;\n\t"
      "mov.b32 {lo, hi}, %2;\n\t"
      "cvt.f32.f16 %0, lo;\n\t"
      "cvt.f32.f16 %1, hi;\n\t}"
      : "=f"(first), "=f"(second)
      : "r"(h2));
}
#endif

//===----------------------------------------------------------------------===//
// Format-generic forms
//===----------------------------------------------------------------------===//

/// Largest finite magnitude: 448 (E4M3) or 57344 (E5M2).
TE_HD float fp8MaxNorm(Fp8Format format) {
  return format == Fp8Format::E4M3 ? 448.0f : 57344.0f;
}

template <Fp8Format Format> TE_HD u8 encodeFp8(float y) {
  return Format == Fp8Format::E4M3 ? encodeE4M3(y) : encodeE5M2(y);
}

template <Fp8Format Format> TE_HD float decodeFp8(u8 code) {
  return Format == Fp8Format::E4M3 ? decodeE4M3(code) : decodeE5M2(code);
}

#if TE_DEVICE_HW_FP8
/// Two codes (`pair`'s low byte first) as an f16x2 register, low half
/// first: exact, every E4M3 and E5M2 value being an f16 (sm_89+).
template <Fp8Format Format>
__device__ __forceinline__ u32 fp8x2ToF16x2(u16 pair) {
  u32 h2;
  if (Format == Fp8Format::E4M3)
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"(pair));
  else
    asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(h2) : "h"(pair));
  return h2;
}
#endif

/// Two codes at once, `pair`'s low byte first, for a use that multiplies
/// them: every value exactly as decodeFp8 gives it, except that a NaN code
/// yields a NaN of unspecified sign and payload (a GPU multiplication
/// returns the canonical NaN for any NaN operand). sm_89+: one conversion to
/// f16x2 (every E4M3 and E5M2 value is an f16) and two exact widenings, a
/// third of the integer decode's instructions.
template <Fp8Format Format>
TE_HD void decodeFp8x2(u16 pair, float &first, float &second) {
#if TE_DEVICE_HW_FP8
  widenF16x2(fp8x2ToF16x2<Format>(pair), first, second);
#else
  first = decodeFp8<Format>(u8(pair & 0xFFu));
  second = decodeFp8<Format>(u8(pair >> 8));
#endif
}

/// decodeE4M3 of a code that is not a NaN (0x7F, 0xFF), such as a block
/// scale tejit encoded (satfinite, from an amax that is never NaN): on
/// sm_89+ one conversion and one widening instead of the integer decode's
/// branches. A NaN code gives a NaN whose sign and payload may differ from
/// decodeE4M3's: callers that multiply it at once (which canonicalises a
/// NaN on the device) may pass any code.
TE_HD float decodeE4M3NotNaN(u8 code) {
#if TE_DEVICE_HW_FP8
  float value;
  asm("{\n\t.reg .b16 lo, hi;\n\t.reg .b32 h2;\n\t"
      "cvt.rn.f16x2.e4m3x2 h2, %1;\n\t"
      "mov.b32 {lo, hi}, h2;\n\t"
      "cvt.f32.f16 %0, lo;\n\t}"
      : "=f"(value)
      : "h"(u16(code)));
  return value;
#else
  return decodeE4M3(code);
#endif
}

TE_HD u8 encodeFp8(Fp8Format format, float y) {
  return format == Fp8Format::E4M3 ? encodeE4M3(y) : encodeE5M2(y);
}

TE_HD float decodeFp8(Fp8Format format, u8 code) {
  return format == Fp8Format::E4M3 ? decodeE4M3(code) : decodeE5M2(code);
}

} // namespace dev
} // namespace te

#endif // TE_DEVICE_FP8_CUH
