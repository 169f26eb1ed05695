//===- Support/TestSupport.h - helpers shared by numerics tests -*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Bit casts, printing and a deterministic generator for the numerics tests
// (reference, device library on host and GPU, GEMMs). Deliberately separate
// from the code under test: the reference's own bit casts are not used here.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TEST_UNITTESTS_SUPPORT_TESTSUPPORT_H
#define TE_TEST_UNITTESTS_SUPPORT_TESTSUPPORT_H

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>

namespace te::test {

inline uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

inline float floatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

inline std::string hexOf(uint32_t value) {
  std::ostringstream os;
  os << "0x" << std::hex << value;
  return os.str();
}

/// "%a (0xbits)" of a float, for failure messages.
inline std::string describe(float value) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%a (0x%08x)", static_cast<double>(value),
                bitsOf(value));
  return buf;
}

/// Deterministic 64-bit generator (splitmix64).
struct SplitMix64 {
  uint64_t state;
  explicit SplitMix64(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint32_t next32() { return static_cast<uint32_t>(next() >> 32); }
  /// Uniform in [lo, hi) (float arithmetic; used for inputs only).
  float uniform(float lo, float hi) {
    return lo + (hi - lo) * static_cast<float>(next() >> 40) * 0x1p-24f;
  }
};

} // namespace te::test

#endif // TE_TEST_UNITTESTS_SUPPORT_TESTSUPPORT_H
