//===- test/unittests/Runtime/PhiloxTest.cpp - Philox tests -----*- C++ -*-===//
//
// Checks Philox4x32 against the published Random123 known-answer vectors
// (kat_vectors, philox4x32_10 and philox4x32_7) and pins tejit's stochastic
// rounding byte mapping (docs/Numerics.md §6.5) through those same vectors, so
// the expectations never come from the implementation under test.
//
//===----------------------------------------------------------------------===//

#include "te/runtime/reference/Philox.h"

#include "gtest/gtest.h"

#include <array>
#include <cstdint>
#include <vector>

using namespace te::rt::ref;

namespace {

using Counter = std::array<uint32_t, 4>;
using Key = std::array<uint32_t, 2>;

const Counter kZeroCounter = {0, 0, 0, 0};
const Key kZeroKey = {0, 0};
const Counter kOnesCounter = {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu,
                              0xFFFFFFFFu};
const Key kOnesKey = {0xFFFFFFFFu, 0xFFFFFFFFu};
// Digits of pi, as in Random123's kat_vectors.
const Counter kPiCounter = {0x243F6A88u, 0x85A308D3u, 0x13198A2Eu, 0x03707344u};
const Key kPiKey = {0xA4093822u, 0x299F31D0u};

/// The 16 bytes of a Philox output in srRandomByte order (word 0 first,
/// little-endian within a word), spelled out byte by byte.
std::vector<uint8_t> littleEndianBytes(const Counter &words) {
  std::vector<uint8_t> bytes;
  for (uint32_t w : words) {
    bytes.push_back(static_cast<uint8_t>(w & 0xFF));
    bytes.push_back(static_cast<uint8_t>((w >> 8) & 0xFF));
    bytes.push_back(static_cast<uint8_t>((w >> 16) & 0xFF));
    bytes.push_back(static_cast<uint8_t>((w >> 24) & 0xFF));
  }
  return bytes;
}

} // namespace

TEST(PhiloxTest, TenRoundsMatchRandom123KnownAnswers) {
  EXPECT_EQ(philox4x32(kZeroCounter, kZeroKey),
            (Counter{0x6627E8D5u, 0xE169C58Du, 0xBC57AC4Cu, 0x9B00DBD8u}));
  EXPECT_EQ(philox4x32(kOnesCounter, kOnesKey),
            (Counter{0x408F276Du, 0x41C83B0Eu, 0xA20BC7C6u, 0x6D5451FDu}));
  EXPECT_EQ(philox4x32(kPiCounter, kPiKey),
            (Counter{0xD16CFE09u, 0x94FDCCEBu, 0x5001E420u, 0x24126EA1u}));
}

TEST(PhiloxTest, SevenRoundsMatchRandom123KnownAnswers) {
  EXPECT_EQ(philox4x32(kZeroCounter, kZeroKey, 7),
            (Counter{0x5F6FB709u, 0x0D893F64u, 0x4F121F81u, 0x4F730A48u}));
  EXPECT_EQ(philox4x32(kOnesCounter, kOnesKey, 7),
            (Counter{0x5207DDC2u, 0x45165E59u, 0x4D8EE751u, 0x8C52F662u}));
  EXPECT_EQ(philox4x32(kPiCounter, kPiKey, 7),
            (Counter{0x4DFCCABAu, 0x190A87F0u, 0xC47362BAu, 0xB6B5242Au}));
}

TEST(PhiloxTest, OneRoundIsTheMultiplyXorPermutation) {
  // Counter (1, 2, 3, 4), key (5, 6):
  //   M0 * 1 = 0x00000000_D2511F53, M1 * 3 = 0x00000002_68DBA805
  //   out = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0)
  //       = (2 ^ 2 ^ 5, 0x68DBA805, 0 ^ 4 ^ 6, 0xD2511F53).
  EXPECT_EQ(philox4x32(Counter{1, 2, 3, 4}, Key{5, 6}, 1),
            (Counter{5u, 0x68DBA805u, 2u, 0xD2511F53u}));
  EXPECT_EQ(philox4x32Round(Counter{1, 2, 3, 4}, Key{5, 6}),
            (Counter{5u, 0x68DBA805u, 2u, 0xD2511F53u}));
  // Zero rounds is the identity.
  EXPECT_EQ(philox4x32(kPiCounter, kPiKey, 0), kPiCounter);
}

TEST(PhiloxTest, SrRandomByteTakesLittleEndianBytesOfTheBlock) {
  // seed 0, offset 0, elements 0..15: counter 0, key 0 (first KAT).
  std::vector<uint8_t> want = {0xD5, 0xE8, 0x27, 0x66, 0x8D, 0xC5, 0x69, 0xE1,
                               0x4C, 0xAC, 0x57, 0xBC, 0xD8, 0xDB, 0x00, 0x9B};
  for (uint64_t i = 0; i < 16; ++i)
    EXPECT_EQ(srRandomByte(0, 0, i), want[i]) << i;
}

TEST(PhiloxTest, SrRandomByteMapsSeedOffsetAndGroupOntoKeyAndCounter) {
  // (The all-ones vector is out of reach: element groups stop at 2^60 - 1.)
  // Pi vector: offset = (hi 0x85A308D3, lo 0x243F6A88), group = (hi
  // 0x03707344, lo 0x13198A2E), seed = (hi 0x299F31D0, lo 0xA4093822).
  std::vector<uint8_t> pi =
      littleEndianBytes({0xD16CFE09u, 0x94FDCCEBu, 0x5001E420u, 0x24126EA1u});
  for (uint64_t b = 0; b < 16; ++b)
    EXPECT_EQ(srRandomByte(0x299F31D0A4093822ull, 0x85A308D3243F6A88ull,
                           0x0370734413198A2Eull * 16 + b),
              pi[b])
        << b;
}

TEST(PhiloxTest, SrRandomByteDependsOnlyOnSeedOffsetAndIndex) {
  // Same arguments -> same byte, regardless of evaluation order.
  std::vector<uint8_t> forward, backward(4096);
  for (uint64_t i = 0; i < 4096; ++i)
    forward.push_back(srRandomByte(42, 7, i));
  for (uint64_t i = 4096; i-- > 0;)
    backward[i] = srRandomByte(42, 7, i);
  EXPECT_EQ(forward, backward);
  // Changing seed, offset or block changes the bytes.
  int sameSeed = 0, sameOffset = 0, sameBlock = 0;
  for (uint64_t i = 0; i < 256; ++i) {
    sameSeed += srRandomByte(42, 7, i) == srRandomByte(43, 7, i);
    sameOffset += srRandomByte(42, 7, i) == srRandomByte(42, 8, i);
    sameBlock += srRandomByte(42, 7, i) == srRandomByte(42, 7, i + 16);
  }
  // 256 independent bytes agree about once by chance; allow a few.
  EXPECT_LT(sameSeed, 8);
  EXPECT_LT(sameOffset, 8);
  EXPECT_LT(sameBlock, 8);
}

TEST(PhiloxTest, SrRandomBytesAreUniform) {
  // Chi-square over 2^18 bytes in 256 bins (255 degrees of freedom); the
  // bound 400 is far in the tail (p < 1e-8) for a uniform source.
  const int n = 1 << 18;
  std::vector<int> histogram(256, 0);
  for (uint64_t i = 0; i < static_cast<uint64_t>(n); ++i)
    ++histogram[srRandomByte(0x0123456789ABCDEFull, 1024, i)];
  double expected = n / 256.0, chi2 = 0;
  for (int count : histogram)
    chi2 += (count - expected) * (count - expected) / expected;
  EXPECT_LT(chi2, 400.0);
  EXPECT_GT(chi2, 150.0); // suspiciously perfect would mean a counter leak
}
