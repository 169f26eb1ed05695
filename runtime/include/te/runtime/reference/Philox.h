//===- te/runtime/reference/Philox.h - Philox4x32 generator -----*- C++ -*-===//
//
// Counter-based Philox4x32-R generator (Salmon et al., "Parallel random
// numbers: as easy as 1, 2, 3", the Random123 / cuRAND Philox) used for NVFP4
// stochastic rounding (docs/Numerics.md §6.5), plus the element -> random byte
// mapping that tejit's generated kernels and this reference share. Being
// counter based, any element's random bits can be recomputed on the host
// without replaying a sequential stream.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_REFERENCE_PHILOX_H
#define TE_RUNTIME_REFERENCE_PHILOX_H

#include <array>
#include <cstdint>

namespace te {
namespace rt {
namespace ref {

/// Philox constants (docs/Numerics.md §6.5): Weyl key increments and
/// multipliers.
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;
constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;
constexpr uint32_t kPhiloxM0 = 0xD2511F53u;
constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;

/// One Philox4x32 round (Random123 philox4x32round): two 32x32->64 products
/// of counter words 0 and 2, whose high halves are xor-ed with the other
/// counter words and the key.
inline std::array<uint32_t, 4> philox4x32Round(std::array<uint32_t, 4> ctr,
                                               std::array<uint32_t, 2> key) {
  uint64_t prod0 = static_cast<uint64_t>(kPhiloxM0) * ctr[0];
  uint64_t prod1 = static_cast<uint64_t>(kPhiloxM1) * ctr[2];
  uint32_t hi0 = static_cast<uint32_t>(prod0 >> 32);
  uint32_t lo0 = static_cast<uint32_t>(prod0);
  uint32_t hi1 = static_cast<uint32_t>(prod1 >> 32);
  uint32_t lo1 = static_cast<uint32_t>(prod1);
  return {hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0};
}

/// Philox4x32-`rounds` block function: `rounds` rounds, the key bumped by
/// (W0, W1) between consecutive rounds (TE default: 10 rounds).
inline std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> counter,
                                          std::array<uint32_t, 2> key,
                                          int rounds = 10) {
  for (int r = 0; r < rounds; ++r) {
    if (r > 0) {
      key[0] += kPhiloxW0;
      key[1] += kPhiloxW1;
    }
    counter = philox4x32Round(counter, key);
  }
  return counter;
}

/// The 8 random bits used to stochastically round element `elementIndex`
/// (docs/Numerics.md §1.4) under the RNG state (seed, offset) of
/// docs/Numerics.md §6.5.
///
/// tejit's mapping: key = (lo32(seed), hi32(seed)), counter = (lo32(offset),
/// hi32(offset), lo32(elementIndex / 16), hi32(elementIndex / 16)); the four
/// output words give 16 bytes (little-endian within each word, word 0 first)
/// and byte elementIndex % 16 belongs to the element. An element's bits thus
/// depend only on (seed, offset, elementIndex), never on how a kernel maps
/// threads to elements. This deliberately differs from TE, whose per-thread
/// subsequences tie the bits to each kernel's thread layout; TE's SR is only
/// checked statistically, so bit-exact parity with it is not a goal.
inline uint8_t srRandomByte(uint64_t seed, uint64_t offset,
                            uint64_t elementIndex) {
  uint64_t group = elementIndex / 16;
  unsigned byteIndex = static_cast<unsigned>(elementIndex % 16);
  std::array<uint32_t, 4> counter = {
      static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32),
      static_cast<uint32_t>(group), static_cast<uint32_t>(group >> 32)};
  std::array<uint32_t, 2> key = {static_cast<uint32_t>(seed),
                                 static_cast<uint32_t>(seed >> 32)};
  std::array<uint32_t, 4> words = philox4x32(counter, key);
  return static_cast<uint8_t>(words[byteIndex / 4] >> (8 * (byteIndex % 4)));
}

} // namespace ref
} // namespace rt
} // namespace te

#endif // TE_RUNTIME_REFERENCE_PHILOX_H
