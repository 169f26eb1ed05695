//===- te/device/Bits.cuh - fp32 bit access ---------------------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The codecs work on IEEE-754 bit patterns, because integer operations are
// exact and behave the same on host and device regardless of flush-to-zero
// or fast-math flags. Device code reinterprets with __float_as_uint; host
// code with __builtin_memcpy (GCC and Clang), which needs no <cstring>.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_BITS_CUH
#define TE_DEVICE_BITS_CUH

#include "te/device/Common.cuh"

namespace te {
namespace dev {

constexpr u32 kF32SignMask = 0x80000000u;
constexpr u32 kF32AbsMask = 0x7FFFFFFFu;
constexpr u32 kF32InfBits = 0x7F800000u;
constexpr u32 kF32ManMask = 0x007FFFFFu;
/// The quiet NaN a decoder returns (sign bit added from the code), the same
/// as the reference's std::numeric_limits<float>::quiet_NaN().
constexpr u32 kF32QuietNaNBits = 0x7FC00000u;

/// The 16 bytes at p, of any alignment, as four little-endian words, read
/// a byte at a time (where a 16-byte load's address would be misaligned).
TE_HD void littleEndianWords16(const u8 *p, u32 *w) {
  for (int q = 0; q < 4; ++q)
    w[q] = u32(p[4 * q]) | u32(p[4 * q + 1]) << 8 | u32(p[4 * q + 2]) << 16 |
           u32(p[4 * q + 3]) << 24;
}

TE_HD u32 floatToBits(float value) {
#if TE_DEVICE_CODE
  return __float_as_uint(value);
#else
  u32 bits;
  __builtin_memcpy(&bits, &value, sizeof(bits));
  return bits;
#endif
}

TE_HD float bitsToFloat(u32 bits) {
#if TE_DEVICE_CODE
  return __uint_as_float(bits);
#else
  float value;
  __builtin_memcpy(&value, &bits, sizeof(value));
  return value;
#endif
}

/// Classification on bits: immune to fast-math assumptions about NaN/Inf.
TE_HD bool isNaNBits(u32 bits) { return (bits & kF32AbsMask) > kF32InfBits; }
TE_HD bool isInfBits(u32 bits) { return (bits & kF32AbsMask) == kF32InfBits; }
TE_HD bool isNaN(float x) { return isNaNBits(floatToBits(x)); }
TE_HD bool isInf(float x) { return isInfBits(floatToBits(x)); }
/// x == +-0, decided on bits so that -ftz=true cannot make a subnormal zero.
TE_HD bool isZero(float x) { return (floatToBits(x) & kF32AbsMask) == 0; }
TE_HD bool signBit(float x) { return (floatToBits(x) & kF32SignMask) != 0; }

/// |x| by clearing the sign bit (NaN payloads kept).
TE_HD float absBitwise(float x) {
  return bitsToFloat(floatToBits(x) & kF32AbsMask);
}

/// __byte_perm(a, b, s) on host and device: byte n of the result is byte
/// (s >> 4n) & 7 of the eight bytes {b, a} (a's bytes 0-3, b's 4-7).
TE_HD u32 permuteBytes(u32 a, u32 b, u32 s) {
#if TE_DEVICE_CODE
  return __byte_perm(a, b, s);
#else
  u64 both = (u64(b) << 32) | a;
  u32 r = 0;
  for (int n = 0; n < 4; ++n)
    r |= (u32(both >> (8 * ((s >> (4 * n)) & 7u))) & 0xFFu) << (8 * n);
  return r;
#endif
}

/// (hi << 4) | (lo >> 28): hi shifted one nibble left, taking in lo's top
/// nibble (one funnel shift on the device).
TE_HD u32 shiftInTopNibble(u32 hi, u32 lo) {
#if TE_DEVICE_CODE
  return __funnelshift_l(lo, hi, 4);
#else
  return (hi << 4) | (lo >> 28);
#endif
}

TE_HD float infinity() { return bitsToFloat(kF32InfBits); }
/// FLT_MAX without <cfloat>.
TE_HD float maxFiniteF32() { return 0x1.fffffep127f; }

} // namespace dev
} // namespace te

#endif // TE_DEVICE_BITS_CUH
