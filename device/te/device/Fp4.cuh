//===- te/device/Fp4.cuh - E2M1 codecs and packing --------------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// FP4 E2M1 (docs/Numerics.md §1.3, 1.4, 6.6). sm_90 has no E2M1 conversion, so
// both roundings are exact software: round to nearest with three integer
// roundings (encodeE2M1), stochastic rounding by counting the grid values
// below the dithered magnitude. Every step is an exact compare or a single
// IEEE rounding far above the subnormals (flush-to-zero cannot change it),
// so host and device agree for every input.
//
// NaN encodes as code 7 (+6) under both roundings, as the reference does
// (TE: satfinite maps NaN to positive MAX_NORM). +-Inf saturate to +-6.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_FP4_CUH
#define TE_DEVICE_FP4_CUH

#include "te/device/Arith.cuh"
#include "te/device/Fp8.cuh"

namespace te {
namespace dev {

/// fp32 -> 4-bit E2M1 code, round to nearest (ties to the even code) onto
/// {0, .5, 1, 1.5, 2, 3, 4, 6}, saturating; -0.25 <= y < 0 gives 8 (-0).
///
/// The grid has step 0.5 on [0, 2), 1 on [2, 4) and 2 from 4, and a code's
/// parity is its mantissa bit, so on each piece the code is an integer
/// rounding: rint(2a), rint(a) + 2, rint(a / 2) + 4. Each piece's formula is
/// <= the others exactly on that piece, so the code is their minimum.
/// Each rint is one fma against 2^23 (+ the offset): the integer lands in
/// the low mantissa bits, rounded to nearest even. y is first clamped to
/// [-6, 6] with NaN going to +6 (min / max return the number), which
/// saturates (a > 6 and +-Inf give +-6's code 7, NaN +6's) and caps the
/// codes at 7; the sign is then the clamped value's.
TE_HD float clampToE2M1Range(float y) { return maxNum(minNum(y, 6.0f), -6.0f); }

/// The bits of 2^23 (kE2M1MagnitudeBase): encodeE2M1's roundings hold the
/// code in the low bits of a float in [2^23, 2^23 + 8).
constexpr u32 kE2M1MagnitudeBase = 0x4B000000u;

/// kE2M1MagnitudeBase + the magnitude code (0-7) of c, a clamped value.
TE_HD u32 e2m1MagnitudeBits(float c) {
  float a = absF32(c);
  u32 c1 = floatToBits(fmaRn(a, 2.0f, 0x1p23f));
  u32 c2 = floatToBits(fmaRn(a, 1.0f, 0x1p23f + 2.0f));
  u32 c3 = floatToBits(fmaRn(a, 0.5f, 0x1p23f + 4.0f));
  u32 code = c1 < c2 ? c1 : c2;
  return code < c3 ? code : c3;
}

TE_HD u8 encodeE2M1(float y) {
  float c = clampToE2M1Range(y);
  return u8((e2m1MagnitudeBits(c) & 0x7u) | ((floatToBits(c) >> 28) & 0x8u));
}

/// Eight elements fl(v[i] * mult) as encodeE2M1 codes, packed as the NVFP4
/// data holds them (element i in bits 4i .. 4i + 3). The packing costs two
/// instructions an element where a code at a time took four: the
/// magnitudes go in by word * 16 + e2m1MagnitudeBits, which adds every
/// element's kE2M1MagnitudeBase too - a constant sum, taken off once at the
/// end; the signs by shifting each clamped value's top nibble (its sign and
/// three exponent bits) into a second word, of whose nibbles only the top
/// bit is kept.
TE_HD u32 encodeE2M1x8(const float *v, float mult) {
  constexpr u32 kBases = kE2M1MagnitudeBase * 0x11111111u; // mod 2^32
  u32 magnitudes = 0u, tops = 0u;
  TE_UNROLL
  for (int i = 7; i >= 0; --i) {
    float c = clampToE2M1Range(mulRn(v[i], mult));
    magnitudes = magnitudes * 16u + e2m1MagnitudeBits(c);
    tops = shiftInTopNibble(tops, floatToBits(c));
  }
  return (magnitudes - kBases) | (tops & 0x88888888u);
}

/// Stochastic rounding as TE's software emulation of cvt.rs.satfinite.e2m1x4
/// (docs/Numerics.md §1.4): u = (rbits & 0xFF) / 256, t = fmaf(u, step(|x|),
/// |x|), then |x| becomes the largest grid value <= t, clamped to 6. NaN ->
/// code 7.
///
/// x is first clamped to [-6, 6] with NaN going to +6, as in encodeE2M1:
/// from |x| = 6 every t gives code 7, as for any larger |x|. Then t < 8, and
/// from 1 on the grid is every value with one mantissa bit, so the code is
/// read off t's exponent and top mantissa bit (t >> 22, less 252 for 1.0's
/// code 2); below 1 the grid is 0 and 0.5.
TE_HD u32 e2m1StochasticMagnitude(float c, u32 rbits) {
  float a = absF32(c);
  float u = float(rbits & 0xFFu) * 0x1p-8f; // exact
  float step = a >= 4.0f ? 2.0f : (a >= 2.0f ? 1.0f : 0.5f);
  float t = fmaRn(u, step, a);
  return t < 1.0f ? u32(t >= 0.5f) : (floatToBits(t) >> 22) - 252u;
}

TE_HD u8 encodeE2M1Stochastic(float x, u32 rbits) {
  float c = clampToE2M1Range(x);
  return u8(e2m1StochasticMagnitude(c, rbits) |
            ((floatToBits(c) >> 28) & 0x8u));
}

/// Eight elements fl(v[i] * mult) as encodeE2M1Stochastic codes, packed as
/// encodeE2M1x8 packs them: element i draws byte i % 4 of `rbitsLow` (i <
/// 4) or `rbitsHigh` (docs/Numerics.md §1.4).
TE_HD u32 encodeE2M1x8Stochastic(const float *v, float mult, u32 rbitsLow,
                                 u32 rbitsHigh) {
  u32 magnitudes = 0u, tops = 0u;
  TE_UNROLL
  for (int i = 7; i >= 0; --i) {
    float c = clampToE2M1Range(mulRn(v[i], mult));
    u32 rbits = (i < 4 ? rbitsLow : rbitsHigh) >> (8 * (i % 4));
    magnitudes = magnitudes * 16u + e2m1StochasticMagnitude(c, rbits);
    tops = shiftInTopNibble(tops, floatToBits(c));
  }
  return magnitudes | (tops & 0x88888888u);
}

/// 4-bit code (high nibble ignored) -> fp32, exact.
TE_HD float decodeE2M1(u8 code4) {
  u32 sign = u32(code4 & 0x8u) << 28;
  u32 expField = (code4 >> 1) & 0x3u;
  u32 manField = code4 & 0x1u;
  // Code 1 is the subnormal 0.5; other codes are (1 + m/2) * 2^(e-1).
  u32 magnitude = expField == 0 ? (manField ? 0x3F000000u : 0u)
                                : ((expField + 126u) << 23) | (manField << 22);
  return bitsToFloat(sign | magnitude);
}

/// The E4M3 codes of the E2M1 magnitudes 0, 0.5, 1, 1.5 (bytes 0-3) and 2,
/// 3, 4, 6 (bytes 0-3 of the second word): the byte tables of the two
/// conversions below.
constexpr u32 kE2M1AsE4M3Low = 0x3C383000u;
constexpr u32 kE2M1AsE4M3High = 0x4C484440u;

/// Two codes at once (`pair`: bits 0-3 the first, bits 8-11 the second, the
/// rest ignored), exactly as decodeE2M1. sm_89+: every E2M1 value is an
/// E4M3 value, so a byte permutation maps the magnitudes to E4M3 codes and
/// the FP8 pair conversion does the rest (half the integer decode's
/// instructions).
TE_HD void decodeE2M1x2(u32 pair, float &first, float &second) {
#if TE_DEVICE_HW_FP8
  u32 select = (pair & 0x7u) | ((pair >> 4) & 0x70u);
  u32 e4m3 = __byte_perm(kE2M1AsE4M3Low, kE2M1AsE4M3High, select) |
             ((pair & 0x0808u) << 4);
  decodeFp8x2<Fp8Format::E4M3>(u16(e4m3), first, second);
#else
  first = decodeE2M1(u8(pair & 0xFu));
  second = decodeE2M1(u8((pair >> 8) & 0xFu));
#endif
}

/// Eight E2M1 codes packed two a byte as the NVFP4 data holds them (code i
/// in bits 4i .. 4i + 3 of `x`) as bytes of a code table with the code's
/// sign in the top bit: codes 0-3 in bytes 0-3 of `lo`, 4-7 in those of
/// `hi`. `Low` holds the bytes of the magnitudes 0, 0.5, 1, 1.5, `High`
/// those of 2, 3, 4, 6 (all below 0x80). A byte permutation over the tables
/// gives four magnitudes at once and another four signs (code i's sign is
/// the top bit of byte i / 2 of x << 4 for even i, of x for odd i).
template <u32 Low, u32 High>
TE_HD void e2m1x8ToSignedBytes(u32 x, u32 &lo, u32 &hi) {
  constexpr u32 kSigns = 0x80808080u;
  const u32 shifted = x << 4;
  lo = permuteBytes(Low, High, x & 0x7777u) |
       (permuteBytes(shifted, x, 0x5140u) & kSigns);
  hi = permuteBytes(Low, High, (x >> 16) & 0x7777u) |
       (permuteBytes(shifted, x, 0x7362u) & kSigns);
}

/// The E4M3 codes of eight E2M1 codes (e2m1x8ToSignedBytes' layout): every
/// E2M1 value is an E4M3 value, whose sign is its code's top bit;
/// decodeFp8x2<E4M3> then decodes two codes in one conversion.
TE_HD void e2m1x8ToE4M3(u32 x, u32 &lo, u32 &hi) {
  e2m1x8ToSignedBytes<kE2M1AsE4M3Low, kE2M1AsE4M3High>(x, lo, hi);
}

/// The high bytes of the f16 values of the E2M1 magnitudes 0, 0.5, 1, 1.5
/// and 2, 3, 4, 6 (whose low bytes are all zero).
constexpr u32 kE2M1AsF16HighLow = 0x3E3C3800u;
constexpr u32 kE2M1AsF16HighHigh = 0x46444240u;

/// The f16 values of eight E2M1 codes packed as the NVFP4 data holds them
/// (code i in bits 4i .. 4i + 3 of `x`), exactly: `h[j]` holds codes 2j
/// (low half) and 2j + 1 - the f16x2 pairs a K-major f16 MMA operand holds.
/// An E2M1 value's f16 code is one byte of a table (its magnitude) with the
/// sign in the top bit, then a zero low byte: the E4M3 conversion's byte
/// permutations with another table, and one more permutation a pair.
TE_HD void e2m1x8ToF16x2(u32 x, u32 (&h)[4]) {
  u32 lo, hi;
  e2m1x8ToSignedBytes<kE2M1AsF16HighLow, kE2M1AsF16HighHigh>(x, lo, hi);
  h[0] = permuteBytes(lo, 0u, 0x1404u);
  h[1] = permuteBytes(lo, 0u, 0x3424u);
  h[2] = permuteBytes(hi, 0u, 0x1404u);
  h[3] = permuteBytes(hi, 0u, 0x3424u);
}

/// Two codes in a byte: the even element in the low nibble (docs/Numerics.md
/// §6.6).
TE_HD u8 packE2M1(u8 even, u8 odd) {
  return u8((even & 0xFu) | ((odd & 0xFu) << 4));
}
TE_HD u8 unpackE2M1Low(u8 byte) { return u8(byte & 0xFu); }
TE_HD u8 unpackE2M1High(u8 byte) { return u8((byte >> 4) & 0xFu); }

/// Encodes and packs two consecutive elements (`even` at the lower index).
TE_HD u8 encodeE2M1x2(float even, float odd) {
  return packE2M1(encodeE2M1(even), encodeE2M1(odd));
}

} // namespace dev
} // namespace te

#endif // TE_DEVICE_FP4_CUH
