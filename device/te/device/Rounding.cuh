//===- te/device/Rounding.cuh - Exact RNE onto small grids ------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// One integer routine rounds an fp32 magnitude to nearest-even onto the grid
// of a narrower binary float format (FP8, F16). Integer arithmetic is exact
// for all inputs and independent of the FPU mode, so this is the software
// path on the host, and on devices that lack a conversion instruction.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_ROUNDING_CUH
#define TE_DEVICE_ROUNDING_CUH

#include "te/device/Bits.cuh"

namespace te {
namespace dev {
namespace detail {

/// RNE of `value >> shift` for 0 < shift < 32 and value < 2^31.
TE_HD u32 shiftRightRNE(u32 value, u32 shift) {
  u32 halfMinusOne = (1u << (shift - 1)) - 1u;
  u32 keptLsb = (value >> shift) & 1u;
  return (value + halfMinusOne + keptLsb) >> shift;
}

/// Rounds the non-NaN fp32 magnitude `absBits` (sign bit clear) to nearest,
/// ties to even, on the grid of a binary format with ManBits explicit
/// mantissa bits and exponent bias Bias, with gradual underflow. Returns the
/// magnitude code (biasedExponent << ManBits | mantissa). Values past the
/// largest finite code, including +Inf, give a larger code; the caller
/// saturates (FP8) or maps it to Inf (F16). The format must have a much
/// smaller range than fp32 (Bias <= 15), so fp32 subnormals round to 0.
template <int ManBits, int Bias> TE_HD u32 roundMagnitudeToGrid(u32 absBits) {
  static_assert(ManBits >= 1 && ManBits <= 10 && Bias >= 1 && Bias <= 15,
                "format outside the supported range");
  constexpr u32 kDropped = 23 - ManBits;
  // 2^(1 - Bias): the smallest normal of the target format.
  constexpr u32 kMinNormalBits = u32(128 - Bias) << 23;
  if (absBits >= kMinNormalBits) {
    // Re-bias the exponent in place; a mantissa carry bumps the exponent.
    u32 rebased = absBits - (u32(127 - Bias) << 23);
    return shiftRightRNE(rebased, kDropped);
  }
  // Target subnormal range: value = sig * 2^(expField - 150), grid spacing
  // 2^(1 - Bias - ManBits). The shift is at least 24 - ManBits >= 14.
  u32 expField = absBits >> 23;
  if (expField == 0)
    return 0;
  u32 sig = (absBits & kF32ManMask) | 0x800000u;
  u32 shift = u32(151 - Bias - ManBits) - expField;
  // sig < 2^24 <= half a grid step: rounds to zero.
  if (shift > 24)
    return 0;
  return shiftRightRNE(sig, shift);
}

} // namespace detail
} // namespace dev
} // namespace te

#endif // TE_DEVICE_ROUNDING_CUH
