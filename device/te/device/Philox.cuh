//===- te/device/Philox.cuh - Philox4x32 and SR random bytes ----*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Counter-based Philox4x32-R (Random123 / cuRAND Philox, docs/Numerics.md §6.5)
// and tejit's element -> random byte mapping for stochastic rounding. The
// mapping is the reference's (te/runtime/reference/Philox.h) exactly, so the
// host recomputes any element's random bits and checks a GPU kernel bit for
// bit: key = (lo32(seed), hi32(seed)), counter = (lo32(offset),
// hi32(offset), lo32(i / 16), hi32(i / 16)); the 16 output bytes (word 0
// first, little-endian within a word) belong to elements 16 * (i / 16) + 0
// .. 15. Only (seed, offset, element index) matter, never the thread layout.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_PHILOX_CUH
#define TE_DEVICE_PHILOX_CUH

#include "te/device/Common.cuh"

namespace te {
namespace dev {

/// Four 32-bit Philox words: a counter or an output block.
struct Philox4x32 {
  u32 w0, w1, w2, w3;
};

constexpr u32 kPhiloxW0 = 0x9E3779B9u;
constexpr u32 kPhiloxW1 = 0xBB67AE85u;
constexpr u32 kPhiloxM0 = 0xD2511F53u;
constexpr u32 kPhiloxM1 = 0xCD9E8D57u;

/// hi and lo halves of the 64-bit product a * b.
TE_HD void mulWide32(u32 a, u32 b, u32 &hi, u32 &lo) {
#if TE_DEVICE_CODE
  hi = __umulhi(a, b);
  lo = a * b;
#else
  u64 product = u64(a) * u64(b);
  hi = u32(product >> 32);
  lo = u32(product);
#endif
}

/// One Philox4x32 round: products of words 0 and 2, their high halves
/// xor-ed with words 3 / 1 and the key.
TE_HD Philox4x32 philoxRound(Philox4x32 ctr, u32 key0, u32 key1) {
  u32 hi0, lo0, hi1, lo1;
  mulWide32(kPhiloxM0, ctr.w0, hi0, lo0);
  mulWide32(kPhiloxM1, ctr.w2, hi1, lo1);
  return Philox4x32{hi1 ^ ctr.w1 ^ key0, lo1, hi0 ^ ctr.w3 ^ key1, lo0};
}

/// Philox4x32-Rounds block function; the key is bumped by (W0, W1) between
/// consecutive rounds. TE's default is 10 rounds.
template <int Rounds = 10>
TE_HD Philox4x32 philox4x32(Philox4x32 counter, u32 key0, u32 key1) {
  TE_UNROLL
  for (int r = 0; r < Rounds; ++r) {
    if (r > 0) {
      key0 += kPhiloxW0;
      key1 += kPhiloxW1;
    }
    counter = philoxRound(counter, key0, key1);
  }
  return counter;
}

/// Word `index` (0..3) of a block, without dynamic indexing (which would
/// put the block in local memory on the device).
TE_HD u32 philoxWord(const Philox4x32 &block, u32 index) {
  return index == 0
             ? block.w0
             : (index == 1 ? block.w1 : (index == 2 ? block.w2 : block.w3));
}

/// The 16 random bytes of elements 16 * group .. 16 * group + 15 under the
/// RNG state (seed, offset). Word j's byte k (bits [8k, 8k+8)) belongs to
/// element 16 * group + 4 * j + k, so two words feed encodeE2M1x8Stochastic
/// for eight consecutive elements directly.
TE_HD Philox4x32 srRandomBlock(u64 seed, u64 offset, u64 group) {
  Philox4x32 counter{u32(offset), u32(offset >> 32), u32(group),
                     u32(group >> 32)};
  return philox4x32<10>(counter, u32(seed), u32(seed >> 32));
}

/// The 32 random bits of elements 4 * (i / 4) .. 4 * (i / 4) + 3, i =
/// `elementIndex` (byte k for element 4 * (i / 4) + k).
TE_HD u32 srRandomWord(u64 seed, u64 offset, u64 elementIndex) {
  Philox4x32 block = srRandomBlock(seed, offset, elementIndex / 16);
  return philoxWord(block, u32(elementIndex % 16) / 4);
}

/// The 8 random bits that stochastically round element `elementIndex`.
TE_HD u8 srRandomByte(u64 seed, u64 offset, u64 elementIndex) {
  u32 word = srRandomWord(seed, offset, elementIndex);
  return u8(word >> (8 * (u32(elementIndex % 4))));
}

} // namespace dev
} // namespace te

#endif // TE_DEVICE_PHILOX_CUH
