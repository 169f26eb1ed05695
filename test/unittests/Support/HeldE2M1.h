//===- Support/HeldE2M1.h - checks of e2m1x8ToE4M3 --------------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The inputs and the check of te::dev::e2m1x8ToE4M3 (eight packed E2M1 codes
// to their E4M3 codes), shared by the host test and the GPU test: every
// pattern of four codes in each half of the word, the other half holding
// another pattern.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TEST_UNITTESTS_SUPPORT_HELDE2M1_H
#define TE_TEST_UNITTESTS_SUPPORT_HELDE2M1_H

#include "te/runtime/reference/Codecs.h"

#include "Support/Tally.h"

#include <cstdint>
#include <string>
#include <vector>

namespace te::test {

/// Two words per pattern p of four codes: p in the low half, then in the
/// high half.
inline std::vector<uint32_t> e2m1WordsOfEveryFourCodes() {
  std::vector<uint32_t> words;
  for (uint32_t p = 0; p < 0x10000; ++p) {
    uint32_t other = (p * 0x9E37u + 0x5A5Au) & 0xFFFFu;
    words.push_back(p | (other << 16));
    words.push_back((p << 16) | other);
  }
  return words;
}

/// Tallies byte i of `lo` (codes 0-3) and `hi` (codes 4-7) against the E4M3
/// code of code i's value.
inline void checkHeldE2M1(Tally &tally, uint32_t word, uint32_t lo,
                          uint32_t hi) {
  for (int i = 0; i < 8; ++i) {
    uint8_t code = static_cast<uint8_t>((word >> (4 * i)) & 0xFu);
    uint32_t held = i < 4 ? lo : hi;
    tally.code(std::to_string(word) + " code " + std::to_string(i),
               static_cast<uint8_t>(held >> (8 * (i % 4))),
               rt::ref::encodeE4M3(rt::ref::decodeE2M1(code)));
  }
}

} // namespace te::test

#endif // TE_TEST_UNITTESTS_SUPPORT_HELDE2M1_H
