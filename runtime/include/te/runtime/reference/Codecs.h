//===- te/runtime/reference/Codecs.h - Element codecs -----------*- C++ -*-===//
//
// Plain-C++ reference encoders and decoders for the element formats used by
// low-precision training: FP8 (E4M3, E5M2), the E8M0 block-scale exponent,
// FP4 (E2M1, round-to-nearest and stochastic), BF16 and F16. These functions
// are the bit-level specification in code (docs/Numerics.md §1): generated
// kernels are checked against them, so every function is exact for every
// fp32 input and depends on neither the host FPU rounding of intermediate
// results nor FMA contraction.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_REFERENCE_CODECS_H
#define TE_RUNTIME_REFERENCE_CODECS_H

#include <cstdint>

namespace te {
namespace rt {
namespace ref {

/// Bit casts between fp32 and its IEEE-754 binary32 encoding.
float bitsToFloat(uint32_t bits);
uint32_t floatToBits(float value);

//===----------------------------------------------------------------------===//
// FP8 (docs/Numerics.md §1.1, 1.2)
//===----------------------------------------------------------------------===//

enum class Fp8Format { E4M3, E5M2 };

/// fp32 -> E4M3 with RNE + SATFINITE (PTX cvt.rn.satfinite.e4m3x2.f32):
/// subnormals are produced, |y| <= 2^-10 becomes a signed zero, finite
/// overflow and +-Inf saturate to +-448 (0x7E | sign). NaN encodes as
/// 0x7F | sign (the cuda_fp8.hpp software path; the hardware NaN payload is
/// unverified, docs/Numerics.md §1.6).
uint8_t encodeE4M3(float y);
/// fp32 -> E5M2 with RNE + SATFINITE: |y| <= 2^-17 becomes a signed zero,
/// |y| >= 61440 and +-Inf saturate to +-57344 (0x7B | sign). NaN encodes as
/// 0x7E | sign (a quiet NaN, as the cuda_fp8.hpp software path).
uint8_t encodeE5M2(float y);
/// E4M3 -> fp32 (exact). 0x7F / 0xFF decode to a quiet NaN.
float decodeE4M3(uint8_t code);
/// E5M2 -> fp32 (exact). 0x7C / 0xFC decode to +-Inf, 0x7D..0x7F and
/// 0xFD..0xFF to a quiet NaN.
float decodeE5M2(uint8_t code);

uint8_t encodeFp8(Fp8Format format, float y);
float decodeFp8(Fp8Format format, uint8_t code);
/// Largest finite magnitude: 448 (E4M3) or 57344 (E5M2).
float fp8MaxNorm(Fp8Format format);

//===----------------------------------------------------------------------===//
// E8M0 block-scale exponent (docs/Numerics.md §1.5)
//===----------------------------------------------------------------------===//

/// Smallest E with 2^(E-127) >= |v|, saturated at 0xFE (round toward +Inf,
/// satfinite; the bit formula of ptx_arch_spec.cuh float_to_e8m0). NaN ->
/// 0xFF, +-Inf -> 0xFE, +-0 -> 0x00. TE only passes v >= 0; the sign bit of a
/// negative input is ignored (the magnitude is encoded).
uint8_t encodeE8M0(float v);
/// 2^(E-127) (the dequantization scale, exp2f in ptx.cuh); 0xFF -> NaN and
/// 0x00 -> 2^-127 (fp32 subnormal 0x00400000).
float decodeE8M0(uint8_t e);
/// 2^(127-E) (the quantization multiplier, exp2f_rcp in ptx.cuh): 0xFF -> NaN,
/// 0xFE -> 2^-127 (bits 0x00400000), otherwise bits (254 - E) << 23.
float e8m0ReciprocalScale(uint8_t e);

//===----------------------------------------------------------------------===//
// E2M1 / FP4 (docs/Numerics.md §1.1, 1.3, 1.4, 6.6)
//===----------------------------------------------------------------------===//

/// fp32 -> 4-bit E2M1 code with RNE onto {0, .5, 1, 1.5, 2, 3, 4, 6} (ties to
/// the even code) and saturation to +-6; -0.25 <= y < 0 gives code 8 (-0).
/// +-Inf saturate to +-6. NaN -> code 7 (+6): TE's software SR emulation says
/// satfinite maps NaN to positive MAX_NORM; for the RN hardware path this is
/// unverified (docs/Numerics.md §1.3) and we use the same rule.
uint8_t encodeE2M1(float y);
/// 4-bit code (high nibble ignored) -> fp32 (exact).
float decodeE2M1(uint8_t code4);
/// Stochastic rounding exactly as TE's software emulation of
/// cvt.rs.satfinite.e2m1x4 (docs/Numerics.md §1.4): the low 8 bits of rbits8
/// give u = rbits8 / 256, t = fmaf(u, step(|x|), |x|), the magnitude is t
/// truncated onto the grid and clamped to 6. A NaN input gives +6 (code 7); a
/// negative input that rounds to zero gives code 8 (-0).
uint8_t encodeE2M1Stochastic(float x, uint8_t rbits8);
/// Packs two E2M1 codes into a byte: the even element in the low nibble, the
/// odd element in the high nibble (docs/Numerics.md §6.6).
uint8_t packE2M1(uint8_t even, uint8_t odd);
uint8_t unpackE2M1Low(uint8_t byte);
uint8_t unpackE2M1High(uint8_t byte);

//===----------------------------------------------------------------------===//
// 16-bit floats
//===----------------------------------------------------------------------===//

/// fp32 -> bf16 with RNE; overflow rounds to +-Inf. NaN stays NaN with its
/// sign and payload top bits, quieted (bit 6 of the bf16 mantissa set).
uint16_t floatToBF16(float value);
float bf16ToFloat(uint16_t bits);
/// fp32 -> IEEE binary16 with RNE, gradual underflow (subnormals produced)
/// and overflow to +-Inf (|x| >= 65520). NaN stays NaN with its sign, quieted.
uint16_t floatToF16(float value);
float f16ToFloat(uint16_t bits);

} // namespace ref
} // namespace rt
} // namespace te

#endif // TE_RUNTIME_REFERENCE_CODECS_H
