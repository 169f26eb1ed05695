//===- te/device/gemm/Mxfp8Steps.cuh - MXFP8 on FP8 tensor cores -*- CUDA
//-*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The MXFP8 parts of the engine's Hopper GEMM (GroupedGemmSm90.cuh with
// GroupedGemmConfig's Mx): the scale warps that decode each stage's E8M0
// block scales into fp32 in shared memory, and the math warpgroups' K loop
// that promotes every 32-element K step's partial sum with the scales of
// its row and column (docs/Numerics.md §5.4). C is the kernel's
// GroupedGemmConfig.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_GEMM_MXFP8STEPS_CUH
#define TE_DEVICE_GEMM_MXFP8STEPS_CUH

#include "te/device/E8M0.cuh"
#include "te/device/gemm/Sm90Mma.cuh"

namespace te {
namespace gemm {
namespace detail {

/// Warps of the producer warpgroup that load MXFP8 scales (all but the
/// TMA thread's).
constexpr int kMxScaleWarps = 3;

/// MXFP8: the scale warps (the producer warpgroup's other three) follow
/// the TMA thread through the stage ring, warp w taking every third stage
/// from the w-th. For a stage a warp reads the E8M0 scales of the tile's 128
/// x rows and 128 W rows over the stage's 128 K (one 32-bit word a row: four
/// 1x32 blocks), decodes them to fp32 (dev::decodeE8M0, which keeps 2^-127
/// and NaN) and stores them as [4][128] x scales then [4][128] W scales;
/// each lane arrives on the stage's full barrier after its stores. A warp
/// loads its next stage's words before it waits for and publishes its
/// current one, so three stages' loads are in flight: one warp, waiting for
/// each stage's loads in turn, held the kernel to a third of its speed
/// (measured on the H100; docs/Performance.md). Rows past M_total and
/// columns past N (never stored) get scale 1. `tileOf(t)` is work item t's
/// tile (its expert, first row and first column), as the TMA thread walks
/// them.
template <class C, class TileOf>
__device__ __forceinline__ void
mxScaleWarp(int warp, int lane, int cluster, int clusters, int numItems,
            TileOf tileOf, unsigned char *stageScales,
            cutlass::arch::ClusterTransactionBarrier *full,
            cutlass::arch::ClusterTransactionBarrier *empty, const dev::u8 *sx,
            const dev::u8 *sw, int mTotal) {
  constexpr unsigned kOnes = 0x7F7F7F7Fu; // four E8M0 1.0
  constexpr long long kStride = C::kMxScaleStride;
  // The stage and phase of the next stage of the sequence, and of the one
  // this warp has loaded and not yet published.
  int stage = 0, pendingStage = 0;
  uint32_t phase = 0, pendingPhase = 0;
  unsigned words[8];
  bool pending = false;
  auto publish = [&] {
    empty[pendingStage].wait(pendingPhase ^ 1);
    float *dst =
        reinterpret_cast<float *>(stageScales + pendingStage * C::kStageSA);
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j)
        dst[(i / 4) * 512 + j * 128 + (i % 4) * 32 + lane] =
            dev::decodeE8M0(dev::u8(words[i] >> (8 * j)));
    full[pendingStage].arrive();
  };
  int turn = 0; // whose stage the next one is
  for (int t = cluster; t < numItems; t += clusters) {
    const auto tile = tileOf(t);
    const dev::u8 *wRows = sw + (long long)tile.expert * C::kN * kStride;
    for (int kb = 0; kb < C::kKBlocks; ++kb) {
      const int thisStage = stage;
      const uint32_t thisPhase = phase;
      if (++stage == C::kStages) {
        stage = 0;
        phase ^= 1;
      }
      const bool mine = turn == warp;
      if (++turn == kMxScaleWarps)
        turn = 0;
      if (!mine)
        continue;
      unsigned next[8];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int row = tile.row0 + lane + 32 * i;
        const int col = tile.col0 + lane + 32 * i;
        next[i] = row < mTotal ? __ldg(reinterpret_cast<const unsigned *>(
                                     sx + row * kStride + kb * 4))
                               : kOnes;
        next[4 + i] = col < C::kN ? __ldg(reinterpret_cast<const unsigned *>(
                                        wRows + col * kStride + kb * 4))
                                  : kOnes;
      }
      if (pending)
        publish();
#pragma unroll
      for (int i = 0; i < 8; ++i)
        words[i] = next[i];
      pending = true;
      pendingStage = thisStage;
      pendingPhase = thisPhase;
    }
  }
  if (pending)
    publish();
}

/// The MXFP8 K loop of one tile: every 32-element K step (one MMA) is its
/// own partial sum P, promoted as y = fma(P · s_x, s_w, y) with the fp32
/// scales of its row and column that the scale warp wrote into the stage
/// (docs/Numerics.md §5.4), pipelined over two accumulators as the FP8
/// block kernel's blocks are: step q + 1's MMA runs while step q is
/// promoted. The four steps of a stage are unrolled, so that every offset
/// and every wait is static; a stage goes back once its last step is
/// promoted (the scales are read then).
template <class C, class Mma, int N, class Release>
__device__ __forceinline__ void pipelinedMxSteps(
    uint64_t descA0, uint64_t descB0, const unsigned char *stageScales,
    cutlass::arch::ClusterTransactionBarrier *full, int wg, int rowInWg,
    int colInTile, float (&accA)[N], float (&accB)[N], float (&total)[N],
    int &stage, uint32_t &phase, Release release) {
  // The stage of the step being promoted (`stage`: of the one issued).
  int promoteStage = stage;
  auto issue = [&](auto j, float(&d)[N]) {
    if constexpr (decltype(j)::value == 0)
      full[stage].wait(phase);
    constexpr int kOffset = 32 * decltype(j)::value;
    mmaStep<Mma>(descPlus(descA0, stage * C::kStageA + kOffset),
                 descPlus(descB0, stage * C::kStageB + kOffset), d);
    if constexpr (decltype(j)::value == 3) {
      if (++stage == C::kStages) {
        stage = 0;
        phase ^= 1;
      }
    }
  };
  // A step's scales, read from the stage before the wait for its MMA (the
  // wait orders shared-memory reads after it, so a load placed after it
  // stalls the first multiply): the row scales and the first kEarly column
  // pairs; the promotion loads the rest while it multiplies.
  constexpr int kEarly = 8;
  struct Scales {
    float sx0, sx1;
    float2 w[kEarly];
    const float *sw;
  };
  auto load = [&](auto j) {
    const float *scales = reinterpret_cast<const float *>(
                              stageScales + promoteStage * C::kStageSA) +
                          decltype(j)::value * 128;
    Scales s;
    s.sx0 = scales[wg * 64 + rowInWg];
    s.sx1 = scales[wg * 64 + rowInWg + 8];
    s.sw = scales + 4 * 128 + colInTile;
#pragma unroll
    for (int i = 0; i < kEarly; ++i)
      s.w[i] = *reinterpret_cast<const float2 *>(s.sw + 8 * i);
    return s;
  };
  auto promote = [&](auto j, const Scales &s, float(&c)[N]) {
    const float sx0 = s.sx0, sx1 = s.sx1;
#pragma unroll
    for (int i = 0; i < N / 4; ++i) {
      const float2 w = i < kEarly
                           ? s.w[i < kEarly ? i : 0]
                           : *reinterpret_cast<const float2 *>(s.sw + 8 * i);
      total[4 * i] = fmaf(c[4 * i] * sx0, w.x, total[4 * i]);
      total[4 * i + 1] = fmaf(c[4 * i + 1] * sx0, w.y, total[4 * i + 1]);
      total[4 * i + 2] = fmaf(c[4 * i + 2] * sx1, w.x, total[4 * i + 2]);
      total[4 * i + 3] = fmaf(c[4 * i + 3] * sx1, w.y, total[4 * i + 3]);
    }
    if constexpr (decltype(j)::value == 3) {
      release(promoteStage);
      if (++promoteStage == C::kStages)
        promoteStage = 0;
    }
  };
  using Issue = cute::true_type;
  using Last = cute::false_type;
  // Step j of a stage (in `cur`) is in flight: issue step j + 1 (the next
  // stage's first after j = 3) into `nxt` unless `next` is Last, promote j.
  auto step = [&](auto next, auto j, float(&cur)[N], float(&nxt)[N]) {
    const Scales s = load(j);
    pipelineStep(
        next, cur, nxt,
        [&](float(&d)[N]) {
          issue(cute::Int<(decltype(j)::value + 1) % 4>{}, d);
        },
        [&](float(&c)[N]) { promote(j, s, c); });
  };
  using cute::Int;
  issue(Int<0>{}, accA);
  for (int kb = 0; kb + 1 < C::kKBlocks; ++kb) {
    step(Issue{}, Int<0>{}, accA, accB);
    step(Issue{}, Int<1>{}, accB, accA);
    step(Issue{}, Int<2>{}, accA, accB);
    step(Issue{}, Int<3>{}, accB, accA);
  }
  step(Issue{}, Int<0>{}, accA, accB);
  step(Issue{}, Int<1>{}, accB, accA);
  step(Issue{}, Int<2>{}, accA, accB);
  step(Last{}, Int<3>{}, accB, accA);
}

} // namespace detail
} // namespace gemm
} // namespace te

#endif // TE_DEVICE_GEMM_MXFP8STEPS_CUH
