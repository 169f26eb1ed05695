//===- te/device/DelayedScaling.cuh - Delayed-scaling update ---*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The end of a step under FP8 delayed scaling (docs/Numerics.md §4): for
// each state, the amaxes the step's casts recorded are max-folded into
// history[0], the history is rolled and the next scale computed - TE's
// fused amax-and-scale update, one CTA per state, one launch for all
// states of an entry, so the step needs no host synchronisation and
// captures into a CUDA graph. The host twin is
// te::rt::ref::updateDelayedScaling; the two must agree bit for bit.
//
// The states come in one by-value table of 8-byte words: word 0 is the
// state count S, word 1 + s the offset of state s's record, which is
//   scale*, history*, length L, scaledMax (f32 bits), flags, R, R amax*
// (flags: bit 0 most_recent, bit 1 pow2).
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_DELAYEDSCALING_CUH
#define TE_DEVICE_DELAYEDSCALING_CUH

#include "te/device/Arith.cuh"

namespace te {
namespace dev {

template <int N> struct ScalingTable { u64 w[N]; };

constexpr u32 kScalingMostRecent = 1u, kScalingPow2 = 2u;

/// IEEE maxNum as std::fmax computes it on the host: a NaN operand is
/// ignored. Compared through an order-preserving integer key, so
/// subnormals count whatever the flush-to-zero mode.
TE_HD float maxIgnoringNaN(float a, float b) {
  if (isNaN(b))
    return a;
  if (isNaN(a))
    return b;
  i32 ka = i32(floatToBits(a)), kb = i32(floatToBits(b));
  ka = ka >= 0 ? ka : ka ^ 0x7FFFFFFF;
  kb = kb >= 0 ? kb : kb ^ 0x7FFFFFFF;
  return kb > ka ? b : a;
}

/// Updates the state of CTA blockIdx.x: `Threads` threads (a multiple of
/// 32, blockDim.x) of `Per` history entries each, at least the longest
/// history of the table.
template <int N, int Threads, int Per>
__device__ __forceinline__ void updateDelayedScaling(const ScalingTable<N> &t) {
  const u64 *w = &t.w[t.w[1 + blockIdx.x]];
  float *scale = reinterpret_cast<float *>(w[0]);
  float *history = reinterpret_cast<float *>(w[1]);
  const int length = int(w[2]);
  const float scaledMax = bitsToFloat(u32(w[3]));
  const u32 flags = u32(w[4]);
  const int records = int(w[5]);
  __shared__ float shared[Threads / 32];
  __shared__ float lastShared;

  // history[0] and this step's records: TE's atomicMax into its amax slot.
  if (threadIdx.x == 0) {
    float last = history[0];
    for (int r = 0; r < records; ++r)
      last = maxIgnoringNaN(last, *reinterpret_cast<const float *>(w[6 + r]));
    lastShared = last;
  }
  __syncthreads();
  const float last = lastShared;
  // A zero last amax leaves the history as it is (and the window max 0).
  const bool roll = !isZero(last);

  // hist'[i] = hist[i + 1] (i < L - 1), hist'[L - 1] = last, hist'[0] = 0:
  // every thread reads its values before any is overwritten.
  float values[Per];
  float windowMax = 0.0f;
#pragma unroll
  for (int j = 0; j < Per; ++j) {
    int i = int(threadIdx.x) + j * Threads;
    values[j] = 0.0f;
    if (i < length) {
      values[j] = i + 1 < length ? history[i + 1] : last;
      windowMax = maxIgnoringNaN(windowMax, values[j]);
    }
  }
  __syncthreads();
  if (roll) {
#pragma unroll
    for (int j = 0; j < Per; ++j) {
      int i = int(threadIdx.x) + j * Threads;
      if (i < length)
        history[i] = i > 0 ? values[j] : 0.0f;
    }
  }

  // The window maximum over the block (maxIgnoringNaN is order-free: it
  // never returns NaN after the 0 it starts from).
  for (int offset = 16; offset > 0; offset /= 2)
    windowMax = maxIgnoringNaN(
        windowMax, __shfl_down_sync(0xFFFFFFFFu, windowMax, offset));
  if (threadIdx.x % 32 == 0)
    shared[threadIdx.x / 32] = windowMax;
  __syncthreads();
  if (threadIdx.x == 0) {
    float m = 0.0f;
    for (int i = 0; i < Threads / 32; ++i)
      m = maxIgnoringNaN(m, shared[i]);
    float amax = (flags & kScalingMostRecent) ? last : (roll ? m : 0.0f);
    float s = *scale;
    if (!isNaN(amax) && !isInf(amax) && amax > 0.0f) {
      s = divRn(scaledMax, amax);
      if (isInf(s))
        s = maxFiniteF32();
      if (flags & kScalingPow2)
        s = bitsToFloat(floatToBits(s) & 0xFF800000u);
    }
    *scale = s;
  }
}

} // namespace dev
} // namespace te

#endif // TE_DEVICE_DELAYEDSCALING_CUH
