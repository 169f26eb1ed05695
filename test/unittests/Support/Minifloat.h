//===- Support/Minifloat.h - format values by definition --------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The value of a code of a small binary floating-point format (FP8, FP4,
// F16, BF16) computed from the format's definition alone, so that tests can
// check the codecs under test against something that does not share their
// bit tricks.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TEST_UNITTESTS_SUPPORT_MINIFLOAT_H
#define TE_TEST_UNITTESTS_SUPPORT_MINIFLOAT_H

#include <cmath>
#include <cstdint>

namespace te::test {

/// Value of the non-negative code `code` (no sign bit) of a binary format
/// with `manBits` mantissa bits and exponent bias `bias`: subnormal
/// m * 2^(1-bias-manBits), normal (1 + m / 2^manBits) * 2^(e - bias). Exact
/// in double for every format the tests use. Specials (Inf, NaN) are the
/// caller's business.
inline double minifloatValue(uint32_t code, int manBits, int bias) {
  uint32_t e = code >> manBits;
  uint32_t m = code & ((1u << manBits) - 1);
  if (e == 0)
    return std::ldexp(static_cast<double>(m), 1 - bias - manBits);
  return std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -manBits),
                    static_cast<int>(e) - bias);
}

} // namespace te::test

#endif // TE_TEST_UNITTESTS_SUPPORT_MINIFLOAT_H
