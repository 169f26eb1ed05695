//===- te/device/gemm/GroupedWgradSm90.cuh - K-grouped wgrad -*- CUDA -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The wgrad GEMM of a Mixture-of-Experts layer on Hopper: for every expert
// g, dW_g [N, K] = dY_g^T · X_g, the sum over that expert's token rows (a
// K-grouped GEMM: the experts differ in their reduction range, not in
// their output). Built like GroupedGemmSm90.cuh (TMA, warpgroup MMAs on
// 128-byte-swizzled K-major tiles, a producer warpgroup and two math
// warpgroups, persistent CTAs, split sizes read on the device).
//
// Operands: both transposed and grouped, so that the reduction (the token
// rows) is contiguous and every 128-token block belongs to one expert:
//   A = dY^T as [N, R] and B = X^T as [K, R], where expert g's tokens are
//   columns 128·S_g .. 128·S_g + m_g - 1 with S_g = sum over h < g of
//   ceil(m_h / 128), zero up to the segment's next multiple of 128;
//   R >= 128 · sum ceil(m_g / 128) is the buffers' capacity.
// FP8: E4M3 or E5M2 codes (not both E5M2) with 1x128 scales along the tokens,
// A's [R/128][NS] and B's [R/128][KS] (NS, KS: N and K rounded up to 4), each
// 128-token block's partial sum P promoted as y = fma(P · s_A[n], s_B[k], y),
// the rule of a 1x128 x 1x128 block-scaled GEMM (docs/Numerics.md §7.3). BF16:
// plain. Output: dW [G, N, K] fp32; an expert with no tokens gets zeros. The
// tiles leave through shared memory by TMA store (TileStore.cuh) where the
// rows' 16-byte TMA stride allows (K a multiple of 4), else from registers.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_GEMM_GROUPEDWGRADSM90_CUH
#define TE_DEVICE_GEMM_GROUPEDWGRADSM90_CUH

#include "te/device/GroupedSplits.cuh"
#include "te/device/gemm/TileStore.cuh"

namespace te {
namespace gemm {

/// One instantiation's compile-time shape: dW is [Groups, N, K]. A tile is
/// 128 rows of dW (n) by BlockN columns (k: 128, or 256 for BF16); a stage
/// is one 128-byte swizzle row of tokens.
/// FP8: `AE5M2` / `BE5M2` - dY's / X's codes are E5M2 (else E4M3).
/// OutBoxes: the output boxes (64 rows x 32 fp32) of a math warpgroup.
template <bool Fp8Block, int Stages, int N_, int K_, int Groups_,
          bool AE5M2 = false, bool BE5M2 = false, int Band = 1,
          int BlockN = 128, int OutBoxes = 1>
struct GroupedWgradConfig
    : Sm90TileShape<Fp8Block, Stages, BlockN, AE5M2, BE5M2> {
  using Shape = Sm90TileShape<Fp8Block, Stages, BlockN, AE5M2, BE5M2>;
  using Shape::kBlockK, Shape::kBlockM, Shape::kBlockN, Shape::kStageA,
      Shape::kStageB, Shape::kStages;
  static constexpr int kStagesPerBlock = 128 / kBlockK;
  static constexpr int kN = N_, kK = K_, kGroups = Groups_;
  static constexpr int kMTiles = (kN + kBlockM - 1) / kBlockM;
  static constexpr int kNTiles = (kK + kBlockN - 1) / kBlockN;
  /// dW row tiles per band of the tile order (wgradItem).
  static constexpr int kBand = Band;
  /// One stage's 128 scales of A's rows and of B's rows (FP8).
  static constexpr int kStageScales = Fp8Block ? 2 * 128 * 4 : 0;
  static constexpr int kTableBytes = 2 * 4 * kGroups;
  /// dW tiles leave by TMA store where its rows' stride (4K bytes) is a
  /// multiple of 16; a box is 64 rows x 32 columns, a tile row 4 or 8 parts.
  static constexpr bool kTmaStore = K_ % 4 == 0;
  static constexpr int kOutBoxes = OutBoxes;
  static constexpr int kOutBytes =
      kTmaStore ? 2 * OutBoxes * detail::kTileStoreBoxBytes : 0;
  static constexpr int kSharedBytes =
      kStages * (kStageA + kStageB + kStageScales) + kOutBytes +
      2 * 8 * kStages + kTableBytes + 1024;
  static_assert(kN % 2 == 0 && kK % 2 == 0, "N and K must be even");
  static_assert(Band >= 1, "a band holds at least one row tile");
  static_assert(Fp8Block ? BlockN == 128 : (BlockN == 128 || BlockN == 256),
                "tile widths: FP8 128 (scales of 128 columns a stage), BF16 "
                "128 or 256");
  static_assert(OutBoxes >= 1 && OutBoxes <= 2,
                "a warpgroup stores through one or two output boxes");
  static_assert(kSharedBytes <= 232448, "more shared memory than an SM has");
};

/// Work item `t`: expert-major; within an expert, bands of kBand row tiles
/// of dW (the last band may be shorter), each walked row tile first, so the
/// CTAs running at one time share B's (X's) tiles and the band's rows of A
/// (dY) are read from DRAM once. Row by row, every row tile streamed the
/// expert's whole X again (29 MB at K = 7168 and 4096 tokens).
struct WgradItem {
  int expert, row0, col0;
};
template <class C> __device__ __forceinline__ WgradItem wgradItem(int t) {
  constexpr int kPerExpert = C::kMTiles * C::kNTiles;
  constexpr int kPerBand = C::kBand * C::kNTiles;
  const int local = t % kPerExpert;
  const int band = local / kPerBand;
  const int rows = min(C::kBand, C::kMTiles - band * C::kBand);
  const int inBand = local - band * kPerBand;
  return {t / kPerExpert, (band * C::kBand + inBand % rows) * C::kBlockM,
          inBand / rows * C::kBlockN};
}

namespace detail {

/// The FP8 reduction of one dW tile over its expert's `blocks` 128-token
/// blocks, pipelined as the M-grouped kernel's (pipelinedFp8Blocks): block
/// kb + 1's MMAs are issued into the other partial-sum accumulator before
/// block kb is promoted, y = fma(P · s_A[row], s_B[col], y), with the
/// scales read from kb's stage (the column scales a pair at a time, so that
/// three accumulators fit the registers), which goes back after it. The
/// block count is dynamic, but ptxas keeps MMAs asynchronous only where no
/// register copy touches an accumulator in flight (a loop carrying one in
/// flight copies it at its head: C7514), so every loop trip is a static
/// sequence whose MMAs are all awaited by its end.
template <class C, class Mma, int WG, int N, class Release>
__device__ __forceinline__ void
pipelinedWgradBlocks(uint64_t descA0, uint64_t descB0, const float *stageScales,
                     cutlass::arch::ClusterTransactionBarrier *full,
                     int rowInWg, int colInTile, int blocks, float (&accA)[N],
                     float (&accB)[N], float (&total)[N], int &stage,
                     uint32_t &phase, Release release) {
  auto issue = [&](float(&d)[N]) {
    full[stage].wait(phase);
    mmaSlab<Mma>(descPlus(descA0, stage * C::kStageA),
                 descPlus(descB0, stage * C::kStageB), d, true);
    if (++stage == C::kStages) {
      stage = 0;
      phase ^= 1;
    }
  };
  // Block kb's MMAs (into `cur`) are in flight: with `Next`, issue kb + 1
  // into `nxt` first; wait for kb, promote it and hand its stage back.
  auto step = [&](auto next, float(&cur)[N], float(&nxt)[N]) {
    const int curStage = stage == 0 ? C::kStages - 1 : stage - 1;
    pipelineStep(next, cur, nxt, issue, [&](float(&c)[N]) {
      const float *sa = stageScales + curStage * 256 + WG * 64;
      const float *sb = stageScales + curStage * 256 + 128;
      const float lo = sa[rowInWg], hi = sa[rowInWg + 8];
      // Accumulator i: row r (i & 2 == 0) or r + 8, column
      // 8 (i / 4) + colInTile + (i & 1).
#pragma unroll
      for (int j = 0; j < N / 4; ++j) {
        const float2 cs =
            *reinterpret_cast<const float2 *>(sb + j * 8 + colInTile);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int i = 4 * j + e;
          total[i] =
              fmaf(c[i] * ((e & 2) ? hi : lo), (e & 1) ? cs.y : cs.x, total[i]);
        }
      }
      release(curStage);
    });
  };
  using Issue = cute::true_type;
  using Last = cute::false_type;
  // Pairs of blocks, nothing in flight between pairs: the first block's
  // promotion runs under the second's MMAs. Longer static runs (3, 4 or 8
  // blocks, each promoted under the next's MMAs) made ptxas spill 0.4-1.5
  // KB of registers, and at 8 serialise the MMAs.
  int kb = 0;
  for (; kb + 2 <= blocks; kb += 2) {
    issue(accA);
    step(Issue{}, accA, accB);
    step(Last{}, accB, accA);
  }
  if (kb < blocks) {
    issue(accA);
    step(Last{}, accA, accB);
  }
}

} // namespace detail

/// Math warpgroup `WG`: rows [64·WG, +64) of each dW tile. (A template
/// parameter `WG`: the MMA descriptors are then uniform as the compiler sees
/// them, as in GroupedGemmSm90.cuh.)
template <class C, int WG>
__device__ __forceinline__ void
wgradMath(int lane, const int *segStart, const int *segBlocks,
          const unsigned char *stageA, const unsigned char *stageB,
          const float *stageScales, unsigned char *outShared,
          cutlass::arch::ClusterTransactionBarrier *full,
          cutlass::arch::ClusterTransactionBarrier *empty, float *dw,
          const cute::TmaDescriptor *tmD) {
  using namespace cute;
  cutlass::arch::warpgroup_reg_alloc<232>();
  // Its TMA stores are complete before the kernel ends.
  detail::DrainTileStores drain{C::kTmaStore && threadIdx.x % 128 == 0};
  using Mma = typename detail::MmaFor<C::kFp8Block, C::kBlockN, false,
                                      C::kAE5M2, C::kBE5M2>::type;
  constexpr int kAccum = C::kAccum;
  const int wgThread = threadIdx.x % 128;
  const int rowInWg = (wgThread / 32) * 16 + lane / 4;
  const int colInTile = (lane % 4) * 2;
  const uint64_t descA0 =
      detail::kMajorSw128Desc(cast_smem_ptr_to_uint(stageA) + WG * 64 * 128);
  const uint64_t descB0 =
      detail::kMajorSw128Desc(cast_smem_ptr_to_uint(stageB));
  constexpr int kItems = C::kGroups * C::kMTiles * C::kNTiles;
  auto release = [&](int stage) {
    if (wgThread == 0)
      empty[stage].arrive();
  };
  // FP8: two partial-sum accumulators, so that the MMAs of block kb + 1 run
  // while block kb is promoted (pipelinedWgradBlocks); BF16 accumulates
  // into the total.
  float acc[C::kFp8Block ? kAccum : 1], acc2[C::kFp8Block ? kAccum : 1];
  float total[kAccum];
  int stage = 0;
  uint32_t phase = 0;
  for (int t = blockIdx.x; t < kItems; t += gridDim.x) {
    const auto [expert, row0, col0] = wgradItem<C>(t);
    // Warp-uniform as far as ptxas can see (a shuffle), so that the MMAs in
    // the loop it bounds are not serialised (C7518).
    const int stages =
        __shfl_sync(0xffffffffu, segBlocks[expert] * C::kStagesPerBlock, 0);
#pragma unroll
    for (int i = 0; i < kAccum; ++i)
      total[i] = 0.f;
    if constexpr (C::kFp8Block) {
      detail::pipelinedWgradBlocks<C, Mma, WG>(
          descA0, descB0, stageScales, full, rowInWg, colInTile, stages, acc,
          acc2, total, stage, phase, release);
    } else {
      detail::bf16Slabs<C, Mma>(descA0, descB0, full, stages, total, stage,
                                phase, release);
    }
    // Epilogue: fp32 into dW[expert] - the warpgroup's 64 rows by TMA
    // store (dW as [G·N, K] rows) where they are all the expert's, else
    // pairs from registers, no row past N.
    if constexpr (C::kTmaStore) {
      const int wgRow0 = row0 + WG * 64;
      if (wgRow0 + 64 <= C::kN) {
        detail::storeTileThroughShared<WG, C::kBlockN, C::kOutBoxes, true>(
            total, outShared + WG * C::kOutBoxes * detail::kTileStoreBoxBytes,
            tmD, col0, expert * C::kN + wgRow0, C::kK, wgThread, lane, rowInWg,
            colInTile, detail::NoExtra{});
        continue;
      }
    }
    float *out = dw + (long long)expert * C::kN * C::kK;
    const int r0 = row0 + WG * 64 + rowInWg;
#pragma unroll
    for (int j = 0; j < C::kBlockN / 8; ++j) {
      int col = col0 + j * 8 + colInTile;
      if (col >= C::kK)
        continue;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        int row = r0 + 8 * h;
        if (row < C::kN)
          *reinterpret_cast<float2 *>(out + (long long)row * C::kK + col) =
              make_float2(total[j * 4 + 2 * h], total[j * 4 + 2 * h + 1]);
      }
    }
  }
}

/// The kernel body. `tmA` / `tmB` are 2-D tensor maps over A [N, R] and B
/// [K, R] (box: 128 rows of A, kBlockN rows of B, by one stage of tokens),
/// `tmSA` / `tmSB` (FP8)
/// over their scales [R/128, NS] and [R/128, KS] (box: 128 floats of one
/// block row), (kTmaStore) `tmD` over dW as [G·N, K] fp32 (box: 64 rows x
/// 32 columns, 128-byte swizzle); `splits` G int64 on the device (clamped to
/// M_total rows), `dw` [G, N, K] fp32.
template <class C>
__device__ __forceinline__ void
groupedWgradSm90(const cute::TmaDescriptor *tmA, const cute::TmaDescriptor *tmB,
                 const cute::TmaDescriptor *tmSA,
                 const cute::TmaDescriptor *tmSB,
                 const cute::TmaDescriptor *tmD, const long long *splits,
                 float *dw, int mTotal) {
  using namespace cute;
  using Barrier = cutlass::arch::ClusterTransactionBarrier;
  extern __shared__ __align__(1024) unsigned char sharedRaw[];
  unsigned char *shared = detail::alignedShared(sharedRaw);
  unsigned char *stageA = shared;
  unsigned char *stageB = stageA + C::kStages * C::kStageA;
  // The output boxes after the operand stages (1024-byte aligned, as the
  // 128-byte swizzle needs).
  unsigned char *outShared = stageB + C::kStages * C::kStageB;
  float *stageScales = reinterpret_cast<float *>(outShared + C::kOutBytes);
  Barrier *full = reinterpret_cast<Barrier *>(
      reinterpret_cast<unsigned char *>(stageScales) +
      C::kStages * C::kStageScales);
  Barrier *empty = full + C::kStages;
  int *segStart = reinterpret_cast<int *>(empty + C::kStages);
  int *segBlocks = segStart + C::kGroups;

  const int warpgroup = __shfl_sync(0xffffffffu, threadIdx.x / 128, 0);
  const int lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    for (int s = 0; s < C::kStages; ++s) {
      full[s].init(1);
      empty[s].init(C::kMathWarpgroups);
    }
    cutlass::arch::fence_barrier_init();
    // Each expert's segment of 128-token blocks (split sizes clamped).
    int rows = 0, blocks = 0;
    for (int g = 0; g < C::kGroups; ++g) {
      long long m = te::dev::clampedSplit(splits[g], rows, mTotal);
      rows += static_cast<int>(m);
      segStart[g] = blocks;
      segBlocks[g] = static_cast<int>((m + 127) / 128);
      blocks += segBlocks[g];
    }
  }
  __syncthreads();

  if (warpgroup == C::kMathWarpgroups) {
    cutlass::arch::warpgroup_reg_dealloc<40>();
    if (threadIdx.x % 128 == 0) {
      prefetch_tma_descriptor(tmA);
      prefetch_tma_descriptor(tmB);
      if (C::kTmaStore)
        prefetch_tma_descriptor(tmD);
      if (C::kFp8Block) {
        prefetch_tma_descriptor(tmSA);
        prefetch_tma_descriptor(tmSB);
      }
      constexpr uint64_t kEvictNormal = 0x1000000000000000ull;
      constexpr int kItems = C::kGroups * C::kMTiles * C::kNTiles;
      int stage = 0;
      uint32_t phase = 0;
      for (int t = blockIdx.x; t < kItems; t += gridDim.x) {
        const auto [expert, row0, col0] = wgradItem<C>(t);
        const int stages = segBlocks[expert] * C::kStagesPerBlock;
        for (int kb = 0; kb < stages; ++kb) {
          empty[stage].wait(phase ^ 1);
          uint64_t *bar = reinterpret_cast<uint64_t *>(&full[stage]);
          full[stage].arrive_and_expect_tx(C::kStageA + C::kStageB +
                                           C::kStageScales);
          const int token = segStart[expert] * 128 + kb * C::kBlockK;
          SM90_TMA_LOAD_2D::copy(tmA, bar, kEvictNormal,
                                 stageA + stage * C::kStageA, token, row0);
          SM90_TMA_LOAD_2D::copy(tmB, bar, kEvictNormal,
                                 stageB + stage * C::kStageB, token, col0);
          if (C::kFp8Block) {
            float *scales = stageScales + stage * 256;
            SM90_TMA_LOAD_2D::copy(tmSA, bar, kEvictNormal, scales, row0,
                                   token / 128);
            SM90_TMA_LOAD_2D::copy(tmSB, bar, kEvictNormal, scales + 128, col0,
                                   token / 128);
          }
          if (++stage == C::kStages) {
            stage = 0;
            phase ^= 1;
          }
        }
      }
    }
  } else {
    if (warpgroup == 0)
      wgradMath<C, 0>(lane, segStart, segBlocks, stageA, stageB, stageScales,
                      outShared, full, empty, dw, tmD);
    else
      wgradMath<C, 1>(lane, segStart, segBlocks, stageA, stageB, stageScales,
                      outShared, full, empty, dw, tmD);
  }
}

} // namespace gemm
} // namespace te

#endif // TE_DEVICE_GEMM_GROUPEDWGRADSM90_CUH
