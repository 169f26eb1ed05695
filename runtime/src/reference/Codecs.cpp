//===- runtime/src/reference/Codecs.cpp - Element codecs --------*- C++ -*-===//
//
// Every encoder that rounds goes through one integer routine,
// roundMagnitudeRNE, which rounds the exact value of an fp32 magnitude onto
// the grid of a small binary float format. Working on the integer
// significand keeps the result exact for all 2^32 inputs and independent of
// the host's floating-point environment (docs/Numerics.md §1.2, 1.3, 13).
//
//===----------------------------------------------------------------------===//

#include "te/runtime/reference/Codecs.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace te {
namespace rt {
namespace ref {

float bitsToFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

uint32_t floatToBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

namespace {

constexpr uint32_t kF32SignMask = 0x80000000u;
constexpr uint32_t kF32ExpMask = 0x7F800000u;
constexpr uint32_t kF32ManMask = 0x007FFFFFu;

bool isNaNBits(uint32_t absBits) { return absBits > kF32ExpMask; }
bool isInfBits(uint32_t absBits) { return absBits == kF32ExpMask; }

/// Index of the most significant set bit of a non-zero value.
int highestBit(uint32_t value) {
  int bit = 0;
  while (value >>= 1)
    ++bit;
  return bit;
}

/// Rounds the finite, non-negative fp32 value whose bits are `absBits` to
/// nearest (ties to even) on the grid of a binary format with `manBits`
/// explicit mantissa bits and exponent bias `bias`, with gradual underflow.
/// Returns the magnitude code (biasedExponent << manBits | mantissa). Values
/// at or beyond 2^(maxBiasedExp - bias + 1), which lie past every finite code,
/// return (maxBiasedExp + 1) << manBits; finite values just past the largest
/// code may also round to a code above it. Callers saturate or map to Inf.
uint32_t roundMagnitudeRNE(uint32_t absBits, int manBits, int bias,
                           int maxBiasedExp) {
  if (absBits == 0)
    return 0;
  uint32_t expField = absBits >> 23;
  uint32_t manField = absBits & kF32ManMask;

  // value = sig * 2^exp exactly, and 2^log2 <= value < 2^(log2 + 1).
  uint64_t sig;
  int exp;
  int log2;
  if (expField == 0) {
    sig = manField;
    exp = -149;
    log2 = highestBit(manField) - 149;
  } else {
    sig = manField | 0x800000u;
    exp = static_cast<int>(expField) - 150;
    log2 = static_cast<int>(expField) - 127;
  }

  uint32_t pastFinite = static_cast<uint32_t>(maxBiasedExp + 1) << manBits;
  if (log2 > maxBiasedExp - bias)
    return pastFinite;

  // Grid spacing 2^quantum of the target binade; binades below the smallest
  // normal share the subnormal spacing. The targets have fewer mantissa bits
  // and no finer subnormals than fp32 (manBits <= 10, bias <= 127), so at
  // least 13 bits are dropped and the shift is positive.
  int minNormalLog2 = 1 - bias;
  int quantum = std::max(log2, minNormalLog2) - manBits;
  int shift = quantum - exp;
  uint64_t n;
  if (shift > 40) {
    // sig < 2^24, so the value is below 2^-17 grid steps: rounds to zero.
    n = 0;
  } else {
    n = sig >> shift;
    uint64_t rem = sig & ((uint64_t(1) << shift) - 1);
    uint64_t half = uint64_t(1) << (shift - 1);
    if (rem > half || (rem == half && (n & 1)))
      ++n;
  }
  // n * 2^quantum with n <= 2^(manBits + 1). For the smallest binade the
  // code is n itself; each binade above adds 2^manBits. A carry to
  // n = 2^(manBits + 1) lands on the first code of the next binade.
  int binadeIndex = quantum + manBits + bias - 1;
  return (static_cast<uint32_t>(binadeIndex) << manBits) +
         static_cast<uint32_t>(n);
}

/// Shared RNE + SATFINITE encoder for the saturating small formats.
uint8_t encodeSatfinite(float y, int manBits, int bias, int maxBiasedExp,
                        uint32_t maxCode, uint32_t signBit, uint8_t nanCode) {
  uint32_t bits = floatToBits(y);
  uint32_t sign = (bits & kF32SignMask) ? signBit : 0;
  uint32_t absBits = bits & ~kF32SignMask;
  if (isNaNBits(absBits))
    return nanCode;
  uint32_t code = maxCode;
  if (!isInfBits(absBits))
    code = std::min(roundMagnitudeRNE(absBits, manBits, bias, maxBiasedExp),
                    maxCode);
  return static_cast<uint8_t>(code | sign);
}

float signedNaN(bool negative) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  return negative ? -nan : nan;
}

} // namespace

//===----------------------------------------------------------------------===//
// FP8
//===----------------------------------------------------------------------===//

uint8_t encodeE4M3(float y) {
  // Exponent field 15 holds finite values (256..448); 0x7F is NaN.
  uint8_t sign = (floatToBits(y) & kF32SignMask) ? 0x80 : 0x00;
  return encodeSatfinite(y, /*manBits=*/3, /*bias=*/7, /*maxBiasedExp=*/15,
                         /*maxCode=*/0x7E, /*signBit=*/0x80,
                         static_cast<uint8_t>(0x7F | sign));
}

uint8_t encodeE5M2(float y) {
  uint8_t sign = (floatToBits(y) & kF32SignMask) ? 0x80 : 0x00;
  return encodeSatfinite(y, /*manBits=*/2, /*bias=*/15, /*maxBiasedExp=*/30,
                         /*maxCode=*/0x7B, /*signBit=*/0x80,
                         static_cast<uint8_t>(0x7E | sign));
}

float decodeE4M3(uint8_t code) {
  bool negative = code & 0x80;
  int expField = (code >> 3) & 0xF;
  int manField = code & 0x7;
  if (expField == 0xF && manField == 0x7)
    return signedNaN(negative);
  float magnitude = expField == 0 ? std::ldexp(static_cast<float>(manField), -9)
                                  : std::ldexp(static_cast<float>(8 + manField),
                                               expField - 10);
  return negative ? -magnitude : magnitude;
}

float decodeE5M2(uint8_t code) {
  bool negative = code & 0x80;
  int expField = (code >> 2) & 0x1F;
  int manField = code & 0x3;
  if (expField == 0x1F) {
    if (manField != 0)
      return signedNaN(negative);
    float inf = std::numeric_limits<float>::infinity();
    return negative ? -inf : inf;
  }
  float magnitude =
      expField == 0
          ? std::ldexp(static_cast<float>(manField), -16)
          : std::ldexp(static_cast<float>(4 + manField), expField - 17);
  return negative ? -magnitude : magnitude;
}

uint8_t encodeFp8(Fp8Format format, float y) {
  return format == Fp8Format::E4M3 ? encodeE4M3(y) : encodeE5M2(y);
}

float decodeFp8(Fp8Format format, uint8_t code) {
  return format == Fp8Format::E4M3 ? decodeE4M3(code) : decodeE5M2(code);
}

float fp8MaxNorm(Fp8Format format) {
  return format == Fp8Format::E4M3 ? 448.0f : 57344.0f;
}

//===----------------------------------------------------------------------===//
// E8M0 (docs/Numerics.md §1.5)
//===----------------------------------------------------------------------===//

uint8_t encodeE8M0(float v) {
  uint32_t absBits = floatToBits(v) & ~kF32SignMask;
  if (isNaNBits(absBits))
    return 0xFF;
  if (isInfBits(absBits))
    return 0xFE;
  if (absBits == 0)
    return 0x00;
  uint32_t expField = absBits >> 23;
  uint32_t manField = absBits & kF32ManMask;
  // Round up unless v is already 2^(E-127); fp32 subnormals <= 2^-127 map to
  // 0, and the largest binade saturates at 0xFE.
  if (manField > 0 && expField != 0xFE &&
      !(expField == 0 && manField <= 0x400000))
    ++expField;
  return static_cast<uint8_t>(expField);
}

float decodeE8M0(uint8_t e) {
  if (e == 0xFF)
    return bitsToFloat(0x7FFFFFFFu);
  if (e == 0x00)
    return bitsToFloat(0x00400000u);
  return bitsToFloat(static_cast<uint32_t>(e) << 23);
}

float e8m0ReciprocalScale(uint8_t e) {
  if (e == 0xFF)
    return bitsToFloat(0x7FFFFFFFu);
  if (e == 0xFE)
    return bitsToFloat(0x00400000u);
  return bitsToFloat(static_cast<uint32_t>(254 - e) << 23);
}

//===----------------------------------------------------------------------===//
// E2M1 (docs/Numerics.md §1.3, 1.4, 6.6)
//===----------------------------------------------------------------------===//

uint8_t encodeE2M1(float y) {
  // E2M1 is a binary format with 1 mantissa bit and bias 1 whose exponent
  // field 3 holds 4 and 6; it has no Inf/NaN codes.
  return encodeSatfinite(y, /*manBits=*/1, /*bias=*/1, /*maxBiasedExp=*/3,
                         /*maxCode=*/0x7, /*signBit=*/0x8, /*nanCode=*/0x7);
}

float decodeE2M1(uint8_t code4) {
  bool negative = code4 & 0x8;
  int expField = (code4 >> 1) & 0x3;
  int manField = code4 & 0x1;
  float magnitude = expField == 0 ? 0.5f * static_cast<float>(manField)
                                  : std::ldexp(static_cast<float>(2 + manField),
                                               expField - 2);
  return negative ? -magnitude : magnitude;
}

uint8_t encodeE2M1Stochastic(float x, uint8_t rbits8) {
  if (std::isnan(x))
    return 0x7;
  // All operations below are exact except the fmaf, which rounds once.
  float u = static_cast<float>(rbits8) / 256.0f;
  float a = std::fabs(x);
  float step = a >= 4.0f ? 2.0f : (a >= 2.0f ? 1.0f : 0.5f);
  float t = std::fma(u, step, a);
  float stepT = t >= 4.0f ? 2.0f : (t >= 2.0f ? 1.0f : 0.5f);
  float q = std::floor(t * (1.0f / stepT)) * stepT;
  q = std::min(q, 6.0f);
  uint8_t code = encodeE2M1(q);
  return std::signbit(x) ? static_cast<uint8_t>(code | 0x8) : code;
}

uint8_t packE2M1(uint8_t even, uint8_t odd) {
  return static_cast<uint8_t>((even & 0xF) | ((odd & 0xF) << 4));
}

uint8_t unpackE2M1Low(uint8_t byte) { return byte & 0xF; }

uint8_t unpackE2M1High(uint8_t byte) { return (byte >> 4) & 0xF; }

//===----------------------------------------------------------------------===//
// BF16 / F16
//===----------------------------------------------------------------------===//

uint16_t floatToBF16(float value) {
  uint32_t bits = floatToBits(value);
  uint32_t sign = (bits & kF32SignMask) >> 16;
  uint32_t absBits = bits & ~kF32SignMask;
  if (isNaNBits(absBits))
    return static_cast<uint16_t>((bits >> 16) | 0x0040);
  if (isInfBits(absBits))
    return static_cast<uint16_t>(sign | 0x7F80);
  // bf16 shares the fp32 exponent range; rounding can carry into Inf (0x7F80).
  uint32_t code = roundMagnitudeRNE(absBits, /*manBits=*/7, /*bias=*/127,
                                    /*maxBiasedExp=*/254);
  return static_cast<uint16_t>(sign | code);
}

float bf16ToFloat(uint16_t bits) {
  return bitsToFloat(static_cast<uint32_t>(bits) << 16);
}

uint16_t floatToF16(float value) {
  uint32_t bits = floatToBits(value);
  uint32_t sign = (bits & kF32SignMask) >> 16;
  uint32_t absBits = bits & ~kF32SignMask;
  if (isNaNBits(absBits))
    return static_cast<uint16_t>(sign | 0x7E00 | ((absBits >> 13) & 0x3FF));
  if (isInfBits(absBits))
    return static_cast<uint16_t>(sign | 0x7C00);
  // Anything that rounds past 65504 is Inf (0x7C00 is the first code past the
  // finite range).
  uint32_t code =
      std::min<uint32_t>(roundMagnitudeRNE(absBits, /*manBits=*/10, /*bias=*/15,
                                           /*maxBiasedExp=*/30),
                         0x7C00);
  return static_cast<uint16_t>(sign | code);
}

float f16ToFloat(uint16_t bits) {
  bool negative = bits & 0x8000;
  int expField = (bits >> 10) & 0x1F;
  int manField = bits & 0x3FF;
  if (expField == 0x1F) {
    if (manField != 0)
      return signedNaN(negative);
    float inf = std::numeric_limits<float>::infinity();
    return negative ? -inf : inf;
  }
  float magnitude =
      expField == 0
          ? std::ldexp(static_cast<float>(manField), -24)
          : std::ldexp(static_cast<float>(1024 + manField), expField - 25);
  return negative ? -magnitude : magnitude;
}

} // namespace ref
} // namespace rt
} // namespace te
