//===- te/device/Hadamard.cuh - NVFP4's random Hadamard transform -*- C++
//-*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The 16-point RHT of NVFP4's columnwise (wgrad) data (docs/Numerics.md §6.4):
// y = v * R with R = diag(s) * H16 * 0.25. The summation order is the
// reference's (te::rt::ref::rht16): for each output, acc = +0 then
// acc += fl(v[k] * R[k][j]) for k = 0..15, every product and sum rounded to
// fp32 with no fma. The products are exact (entries are +-0.25), so only
// the order matters, and host and device agree bit for bit. With the loops
// unrolled every sign is a compile-time constant.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_HADAMARD_CUH
#define TE_DEVICE_HADAMARD_CUH

#include "te/device/Arith.cuh"
#include "te/device/Bf16.cuh"

namespace te {
namespace dev {

/// Sign vector s as a mask: bit i set <=> s_i = -1.
constexpr u32 kRhtSignMask = 0xD7E8u;

/// Entry R[k][j] = s_k * (-1)^popcount(k & j) * 0.25.
TE_HD float rhtEntry(int k, int j) {
  u32 bits = u32(k & j);
  bits ^= bits >> 2;
  bits ^= bits >> 1;
  u32 negative = ((kRhtSignMask >> k) ^ bits) & 1u;
  return negative ? -0.25f : 0.25f;
}

/// y = v * R in the reference's order (not yet rounded to bf16).
TE_HD void rht16(const float *v, float *y) {
  TE_UNROLL
  for (int j = 0; j < 16; ++j) {
    float acc = 0.0f;
    TE_UNROLL
    for (int k = 0; k < 16; ++k)
      acc = addRn(acc, mulRn(v[k], rhtEntry(k, j)));
    y[j] = acc;
  }
}

/// The columnwise RHT input as the reference materializes it: each output
/// rounded to nearest even bf16 and widened back.
TE_HD void rht16Bf16(const float *v, float *y) {
  rht16(v, y);
  TE_UNROLL
  for (int j = 0; j < 16; ++j)
    y[j] = bf16ToFloat(floatToBF16(y[j]));
}

} // namespace dev
} // namespace te

#endif // TE_DEVICE_HADAMARD_CUH
