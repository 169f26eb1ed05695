//===- te/device/gemm/GroupedGemmSm90.cuh - Grouped GEMM -*- CUDA -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The M-grouped GEMM of a Mixture-of-Experts layer on Hopper, written on
// CuTe's SM90 atoms: TMA tile loads (SM90_TMA_LOAD_2D), warpgroup MMAs
// (SM90::GMMA, both operands K-major in 128-byte-swizzled shared memory)
// and CUTLASS's transaction barriers. Codegen (codegen/cuda's
// GroupedGemmEmitter) instantiates it for one shape and recipe; the host
// side is plain values and CUtensorMaps the runtime encodes, so no kernel
// type is ever needed on the host.
//
// Problem: G experts; tokens X [M_total, K] sorted by expert; weights W
// [G, N, K]; split sizes (int64, on the device) m_0..m_{G-1}, sum <= M_total:
//   Y[r, :] = X[r, :] · W_g^T   for the rows r of expert g,
//   Y[r, :] = 0                 for the padding rows past the sum.
// dgrad is the same GEMM with the weight read columnwise: B_g = W'_g^T for
// the layer's weight W' [G, N', K'] (here N = K', K = N'), whose FP8 block
// columnwise storage is the transpose of the stack, [K', G·N'] - each
// expert's reduction range is its own columns, so it is K-major as the
// tensor cores want (GroupedGemmConfig's WeightColumnwise). A BF16 weight
// has no transposed copy: the stack itself, [G·N', K'] row-major, is read
// MN-major (each stage 64 of the expert's rows, 64-column boxes side by
// side), which the BF16 tensor-core MMA takes as it is.
// Operands: BF16 x BF16, or FP8 block-scaled, each side E4M3 or E5M2 (not
// both E5M2: an E5M2 gradient's dgrad) (X 1x128 blocks, scales in the
// GEMM_READY layout [K/128][roundup(M_total,4)]; W 128x128 tiles, scales
// [G][ceil(N/128)][roundup(K/128,4)]), docs/Numerics.md §7; or MXFP8 x
// MXFP8 (fprop; both read rowwise, 1x32 blocks along K, E8M0 scales in the
// compact layout [rows][K/32], docs/Numerics.md §5.4); or NVFP4 x NVFP4
// (fprop; both rowwise, 1x16 E4M3 blocks, docs/Numerics.md §6.7).
//
// Schedule: persistent CTAs (one per SM) walk the tiles of every expert
// (BLOCK_M x BLOCK_N output tiles that never cross an expert boundary) in
// one order worked out on the device from the split sizes, so the launch
// needs no host synchronisation and replays in a CUDA graph with new split
// sizes. Warpgroup 2 is the producer (one thread issues the TMA loads into
// a ring of kStages stages); warpgroups 0 and 1 each own 64 rows of the
// tile and run the MMAs. FP8: every 128-element K block is accumulated by
// the tensor cores into a fresh partial sum P, then promoted in fp32 as
// y = fma(P, s_x · s_w, y), the rule cuBLASLt's block-scaled GEMM follows
// on the H100 (docs/Numerics.md §7.3), while the next block's MMAs run
// (pipelinedFp8Blocks). MXFP8: every 32-element K step is its own partial
// sum, promoted as y = fma(P · s_x, s_w, y) with the two E8M0 scales of
// its row and column (pipelinedMxSteps, Mxfp8Steps.cuh); the producer's other
// three warps turn the stages' E8M0 bytes into fp32 scales in shared memory.
// NVFP4: the tensor cores multiply exact f16 products of codes and block
// scales, which the producer's other three warps and the math warps (while
// their MMAs run) write into each stage from its packed codes
// (Nvfp4Steps.cuh); the global scales multiply the total.
// Clusters of 2 CTAs along N share the x tile; 2 x 2 clusters (ClusterM = 2)
// also share the W tile between row-tile pairs.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_GEMM_GROUPEDGEMMSM90_CUH
#define TE_DEVICE_GEMM_GROUPEDGEMMSM90_CUH

#include "te/device/GroupedSplits.cuh"
#include "te/device/gemm/GroupedGemmConfig.cuh"
#include "te/device/gemm/GroupedGemmEpilogue.cuh"
#include "te/device/gemm/Mxfp8Steps.cuh"
#include "te/device/gemm/Nvfp4Steps.cuh"
#include "te/device/gemm/Sm90Mma.cuh"
#include "te/device/gemm/TileStore.cuh"

namespace te {
namespace gemm {

namespace detail {

using namespace cute;

/// Work item `t` of the schedule for cluster rank `rank`. A work item is
/// kCluster column blocks of kClusterM row tiles (a row unit) of one
/// expert; rank = rankM · kCluster + rankN. tileEnd[g] is the prefix sum of
/// the experts' row-unit counts (kRowUnit rows each). Each expert's items
/// come in bands of kBandUnits row units (the last band may be shorter),
/// walked row unit first: consecutive items - the clusters running at one
/// time - share a W tile, and a band's x rows are read from DRAM once. A
/// whole expert's W often exceeds the L2 (29 MB at N = 4096, K = 7168), so
/// walking whole rows, every row tile streamed all of W again.
template <class C>
__device__ __forceinline__ Tile locate(int t, int rank, const int *tileEnd,
                                       const int *rowEnd) {
  constexpr int kItemsPerRow = C::kNBlocks / C::kCluster;
  constexpr int kItemsPerBand = kItemsPerRow * C::kBandUnits;
  int lo = 0, hi = C::kGroups - 1; // first expert whose items end past t
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (tileEnd[mid] * kItemsPerRow > t)
      hi = mid;
    else
      lo = mid + 1;
  }
  const int firstUnit = lo ? tileEnd[lo - 1] : 0;
  const int firstRow = lo ? rowEnd[lo - 1] : 0;
  const int local = t - firstUnit * kItemsPerRow;
  const int band = local / kItemsPerBand;
  const int bandUnits =
      min(C::kBandUnits, tileEnd[lo] - firstUnit - band * C::kBandUnits);
  const int inBand = local - band * kItemsPerBand;
  const int unit = band * C::kBandUnits + inBand % bandUnits;
  const int item = inBand / bandUnits;
  const int rankN = rank % C::kCluster, rankM = rank / C::kCluster;
  return {lo, firstRow + unit * C::kRowUnit + rankM * C::kBlockM, rowEnd[lo],
          (item * C::kCluster + rankN) * C::kBlockN};
}

/// The FP8 K loop of one tile, software-pipelined over two partial-sum
/// accumulators: the MMAs of block kb + 1 are issued (into the other
/// accumulator) before block kb, now complete, is promoted, so the tensor
/// cores keep working through the fp32 promotion (measured on the H100: +5 %
/// on a dense 8192^3 GEMM, up to +10 % on grouped shapes). Each step names
/// its two accumulators statically (two inlined calls per loop trip, roles
/// swapped) and waits for every MMA before the next step writes the
/// accumulator it read: ptxas then sees that no promotion reads registers
/// an MMA in flight writes, and keeps the MMAs asynchronous (else C7514).
template <class C, class Mma, int N, class Release>
__device__ __forceinline__ void
pipelinedFp8Blocks(uint64_t descA0, uint64_t descB0,
                   const unsigned char *stageSX,
                   cutlass::arch::ClusterTransactionBarrier *full, int row0,
                   int wg, int rowInWg, const float *swTile, float (&accA)[N],
                   float (&accB)[N], float (&total)[N], int &stage,
                   uint32_t &phase, Release release) {
  constexpr int kBlocks = C::kKBlocks;
  // The scales of the block whose MMAs are in flight.
  float sxLo, sxHi, sw;
  // Waits for `stage`, reads its scales and issues its MMAs into `d`.
  auto issue = [&](int kb, float(&d)[N], float &lo, float &hi, float &w) {
    full[stage].wait(phase);
    const float *sx =
        reinterpret_cast<const float *>(stageSX + stage * C::kStageSA) +
        (row0 & 3) + wg * 64;
    lo = sx[rowInWg];
    hi = sx[rowInWg + 8];
    w = __ldg(swTile + kb);
    mmaSlab<Mma>(descPlus(descA0, stage * C::kStageA),
                 descPlus(descB0, stage * C::kStageB), d, true);
    if (++stage == C::kStages) {
      stage = 0;
      phase ^= 1;
    }
  };
  // Block kb's MMAs (into `cur`) are in flight: with `Next`, issue kb + 1
  // into `nxt` first; wait for kb, hand its stage back and promote it.
  auto step = [&](auto next, int kb, float(&cur)[N], float(&nxt)[N]) {
    const int curStage = stage == 0 ? C::kStages - 1 : stage - 1;
    const float lo = sxLo * sw, hi = sxHi * sw;
    pipelineStep(
        next, cur, nxt, [&](float(&d)[N]) { issue(kb + 1, d, sxLo, sxHi, sw); },
        [&](float(&c)[N]) {
          release(curStage);
#pragma unroll
          for (int i = 0; i < N; ++i)
            total[i] = fmaf(c[i], (i & 2) ? hi : lo, total[i]);
        });
  };
  using Issue = cute::true_type;
  using Last = cute::false_type;
  // Every branch is static (the block count is a constant), so each wait
  // has the same MMA groups in flight on every path.
  issue(0, accA, sxLo, sxHi, sw);
  constexpr int kPairs = (kBlocks - 1) / 2;
  for (int p = 0; p < kPairs; ++p) {
    step(Issue{}, 2 * p, accA, accB);
    step(Issue{}, 2 * p + 1, accB, accA);
  }
  if constexpr ((kBlocks - 1) % 2 == 1) {
    step(Issue{}, kBlocks - 2, accA, accB);
    step(Last{}, kBlocks - 1, accB, accA);
  } else {
    step(Last{}, kBlocks - 1, accA, accB);
  }
}

/// Expert `expert`'s bias of output columns col and col + 1, widened from
/// bf16; zeros without a bias (the epilogues add nothing then, not even +0,
/// which would turn a -0 total into +0).
template <class C>
__device__ __forceinline__ float2 biasPair(const dev::u16 *bias, int expert,
                                           int col) {
  if (bias == nullptr)
    return make_float2(0.f, 0.f);
  const unsigned pair = __ldg(reinterpret_cast<const unsigned *>(
      bias + (long long)expert * C::kN + col));
  return make_float2(__uint_as_float(pair << 16),
                     __uint_as_float(pair & 0xffff0000u));
}

} // namespace detail

/// Math warpgroup `WG`: rows [64·WG, +64) of each tile. A template
/// parameter, so that every shared-memory descriptor the MMAs take is
/// uniform across the warpgroup as the compiler sees it (computed once,
/// in uniform registers, not rebuilt per MMA). `E`: what the epilogue
/// writes besides y (Epilogue).
template <class C, int WG, class E, class Work>
__device__ __forceinline__ void mathWarpgroup(
    int lane, int rank, int cluster, int clusters, int numItems,
    const int *tileEnd, const int *rowEnd, const unsigned char *stageA,
    const unsigned char *stageB, const unsigned char *stageSX,
    unsigned char *outShared, cutlass::arch::ClusterTransactionBarrier *full,
    cutlass::arch::ClusterTransactionBarrier *empty, const float *sw,
    const dev::u16 *bias, dev::u16 *y, int mTotal,
    const cute::TmaDescriptor *tmY, const cute::TmaDescriptor *tmYCodes,
    const float *amaxX, const float *amaxW, float *amaxY,
    const detail::QuantizedY &quantY, Work whileMmas) {
  using namespace cute;
  cutlass::arch::warpgroup_reg_alloc<C::kMathRegisters>();
  // Its TMA stores are complete before the kernel ends.
  detail::DrainTileStores drain{C::kTmaStore && threadIdx.x % 128 == 0};
  using Mma =
      typename detail::MmaFor<C::kFp8Block, C::kBlockN, C::kWeightMnMajor,
                              C::kAE5M2, C::kBE5M2, C::kFp4>::type;
  constexpr int kAccum = C::kAccum;
  const int wgThread = threadIdx.x % 128;
  // This thread's accumulator rows within the warpgroup's 64: r and r + 8.
  const int rowInWg = (wgThread / 32) * 16 + lane / 4;
  const int colInTile = (lane % 4) * 2;
  // The MMA operands of stage 0: the warpgroup's 64 rows of the x tile, the
  // W tile (K-major, or MN-major atoms kMnAtomBytes apart).
  const uint64_t descA0 =
      detail::kMajorSw128Desc(cast_smem_ptr_to_uint(stageA) + WG * 64 * 128);
  const uint32_t bAddr = cast_smem_ptr_to_uint(stageB);
  const uint64_t descB0 =
      C::kWeightMnMajor ? detail::mnMajorSw128Desc(bAddr, detail::kMnAtomBytes)
                        : detail::kMajorSw128Desc(bAddr);
  // Hands a stage back to every producer that writes into it.
  // Block FP8 and BF16: thread 0 of the warpgroup, once the stage's MMAs
  // are done (every warp read its scales before issuing them). MXFP8: each
  // warp, after its own promotion of the stage's last step has read the
  // stage's scales (another warp of the warpgroup may still be reading).
  auto release = [&](int stage) {
    if constexpr (C::kMx)
      __syncwarp();
    if (C::kMx ? lane == 0 : wgThread == 0) {
      if (C::kClusterSize == 1)
        empty[stage].arrive();
      else
        for (int peer = 0; peer < C::kClusterSize; ++peer)
          empty[stage].arrive(peer);
    }
  };

  // Padding rows past the experts' rows are zeros (quantized: zero codes,
  // each block's scale_inv paddingScaleInv).
  {
    int firstPad = rowEnd[C::kGroups - 1];
    long long padWords = (long long)(mTotal - firstPad) * C::kN / 2;
    unsigned *pad =
        reinterpret_cast<unsigned *>(y + (long long)firstPad * C::kN);
    for (long long i = blockIdx.x * 256 + threadIdx.x; i < padWords;
         i += (long long)gridDim.x * 256)
      pad[i] = 0u;
    if constexpr (E::kBlockQuant) {
      unsigned short *padCodes = reinterpret_cast<unsigned short *>(
          quantY.codes + (long long)firstPad * C::kN);
      for (long long i = blockIdx.x * 256 + threadIdx.x; i < padWords;
           i += (long long)gridDim.x * 256)
        padCodes[i] = 0;
      const float zeroScaleInv = detail::paddingScaleInv<E>(quantY);
      const long long stride = ((long long)mTotal + 3) / 4 * 4,
                      padRows = mTotal - firstPad;
      for (long long i = blockIdx.x * 256 + threadIdx.x;
           i < padRows * ((C::kN + 127) / 128); i += (long long)gridDim.x * 256)
        quantY.scaleInv[(i / padRows) * stride + firstPad + i % padRows] =
            zeroScaleInv;
    }
  }

  // NVFP4: the warp converts its part of the first stage; after each slab's
  // MMAs are issued, its part of the next (Fp4Converter).
  whileMmas();

  // AmaxY: max |y| of the bf16 pairs this thread stored of the tile, folded
  // as the amax pass folds its input (a NaN never enters; docs/Numerics.md
  // §7.4), then per warp into the tile's expert: one atomic a warp a tile.
  unsigned seen = 0u;
  auto see = [&](unsigned pair) {
    if constexpr (E::kAmaxY)
      seen = dev::magnitudeMax2(seen, pair);
  };
  auto flushAmax = [&](int expert) {
    if constexpr (E::kAmaxY) {
      seen &= 0x7FFF7FFFu; // magnitudeMax2 leaves the signs undefined
      float a = fmaxf(dev::bf16Lo(seen), dev::bf16Hi(seen));
#pragma unroll
      for (int d = 16; d > 0; d /= 2)
        a = fmaxf(a, __shfl_xor_sync(0xffffffffu, a, d));
      if (lane == 0 && a > 0.f)
        atomicMax(reinterpret_cast<unsigned *>(amaxY + expert),
                  __float_as_uint(a));
      seen = 0u;
    }
  };

  float total[kAccum];
  // The block quantize of y, each 128-column block's codes through the
  // warpgroup's first output box and stored by TMA as y's parts are (`tma`:
  // all 64 rows are the expert's and kTmaCodes), else stored from
  // registers (the expert's last rows, none past its end). One inlined
  // copy for both: a second one costs the NVFP4 kernel spills.
  auto quantizeTile = [&](const detail::Tile &tile, bool tma,
                          float expertScale) {
    if constexpr (E::kBlockQuant) {
      const int wgRow0 = tile.row0 + WG * 64;
      unsigned char *box =
          outShared + WG * C::kOutBoxes * detail::kTileStoreBoxBytes;
      auto warpgroupSync = [] {
        asm volatile("bar.sync %0, 128;" ::"r"(1 + WG) : "memory");
      };
#pragma unroll
      for (int b = 0; b < C::kBlockN / 128; ++b) {
        const int block0 = tile.col0 + 128 * b;
        if (block0 >= C::kN)
          break;
        if (tma) {
          // The box is free once every store of this warpgroup has read it.
          if (wgThread == 0)
            cute::tma_store_wait<0>();
          warpgroupSync();
        }
        detail::quantizeRowBlock<C, E>(
            total, tile, b, wgRow0, rowInWg, colInTile, lane, mTotal, quantY,
            expertScale, [&](int r, int c, unsigned short codes) {
              if (tma) { // 128-byte swizzle: 16-byte chunk c/16 at ^ r % 8
                *reinterpret_cast<unsigned short *>(
                    box + r * 128 + (((c / 16) ^ (r % 8)) * 16) + c % 16) =
                    codes;
              } else if (wgRow0 + r < tile.rowEnd && block0 + c < C::kN) {
                *reinterpret_cast<unsigned short *>(
                    quantY.codes + (long long)(wgRow0 + r) * C::kN + block0 +
                    c) = codes;
              }
            });
        if (tma) {
          asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
          warpgroupSync();
          if (wgThread == 0) {
            cute::SM90_TMA_STORE_2D::copy(tmYCodes, box, block0, wgRow0);
            cute::tma_store_arrive();
          }
        }
      }
    }
  };
  // FP8: two partial-sum accumulators, so that the MMAs of K block kb + 1
  // run while block kb is promoted (pipelinedFp8Blocks); BF16 accumulates
  // into the total.
  float acc[C::kFp8Block ? kAccum : 1], acc2[C::kFp8Block ? kAccum : 1];
  int stage = 0;
  uint32_t phase = 0;
  for (int t = cluster; t < numItems; t += clusters) {
    detail::Tile tile = detail::locate<C>(t, rank, tileEnd, rowEnd);
    // The expert's scale of the per-expert cast of y, loaded now so that
    // the main loop hides its latency (loaded in the epilogue, once per
    // 128-column block, it cost the GEMM 6-9 %).
    float expertScale = 0.f;
    if constexpr (E::kExpertScale)
      expertScale = __ldg(quantY.expertScale + tile.expert);
    // The tile's 128x128 weight-scale row (FP8 tiles are 128 wide); read
    // columnwise, the expert's blocks start at column g·K/128 of it.
    const float *swTile =
        C::kMx || C::kFp4 ? nullptr
        : C::kWeightColumnwise
            ? sw + (long long)(tile.col0 / 128) * C::kSwStride +
                  tile.expert * (C::kK / 128)
            : sw + ((long long)tile.expert * ((C::kN + 127) / 128) +
                    tile.col0 / 128) *
                       C::kSwStride;
#pragma unroll
    for (int i = 0; i < kAccum; ++i)
      total[i] = 0.f;
    if constexpr (C::kMx) {
      detail::pipelinedMxSteps<C, Mma>(descA0, descB0, stageSX, full, WG,
                                       rowInWg, colInTile, acc, acc2, total,
                                       stage, phase, release);
    } else if constexpr (C::kFp8Block) {
      detail::pipelinedFp8Blocks<C, Mma>(descA0, descB0, stageSX, full,
                                         tile.row0, WG, rowInWg, swTile, acc,
                                         acc2, total, stage, phase, release);
    } else {
      detail::bf16Slabs<C, Mma>(descA0, descB0, full, C::kKBlocks, total, stage,
                                phase, release, whileMmas);
      if constexpr (C::kFp4) {
        // The two operands' global scales, once (docs/Numerics.md §6.7).
        const float alpha = detail::nvfp4Alpha(amaxX, amaxW, tile.expert);
#pragma unroll
        for (int i = 0; i < kAccum; ++i)
          total[i] = __fmul_rn(total[i], alpha);
      }
    }
    // Epilogue: + the expert's bias (fp32), bf16 (round to nearest even),
    // rows of this expert only. With the block quantize, the bias goes into
    // the accumulators first, which both the quantize and the store read.
    const dev::u16 *tileBias = bias;
    if constexpr (E::kBlockQuant) {
      if (bias != nullptr) {
#pragma unroll
        for (int j = 0; j < C::kBlockN / 8; ++j) {
          const int col = tile.col0 + j * 8 + colInTile;
          if (col >= C::kN)
            continue;
          const float2 b = detail::biasPair<C>(bias, tile.expert, col);
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            total[j * 4 + 2 * h] += b.x;
            total[j * 4 + 2 * h + 1] += b.y;
          }
        }
      }
      tileBias = nullptr;
    }
    // All 64 rows of the warpgroup are the expert's: the tile leaves by TMA.
    const bool whole = C::kTmaStore && tile.row0 + WG * 64 + 64 <= tile.rowEnd;
    if constexpr (C::kTmaStore) {
      const int wgRow0 = tile.row0 + WG * 64;
      if (whole) {
        // Without a bias nothing is added (not even +0: a -0 stays -0, as
        // in the register path).
        unsigned char *boxes =
            outShared + WG * C::kOutBoxes * detail::kTileStoreBoxBytes;
        if (tileBias != nullptr)
          detail::storeTileThroughShared<WG, C::kBlockN, C::kOutBoxes, false>(
              total, boxes, tmY, tile.col0, wgRow0, C::kN, wgThread, lane,
              rowInWg, colInTile,
              [&](int, int col) {
                return detail::biasPair<C>(tileBias, tile.expert, col);
              },
              see);
        else
          detail::storeTileThroughShared<WG, C::kBlockN, C::kOutBoxes, false>(
              total, boxes, tmY, tile.col0, wgRow0, C::kN, wgThread, lane,
              rowInWg, colInTile, detail::NoExtra{}, see);
      }
      // Else the expert's last rows: stored directly, none past its end.
    }
    const int r0 = tile.row0 + WG * 64 + rowInWg;
#pragma unroll
    for (int j = 0; j < C::kBlockN / 8 && !whole; ++j) {
      int col = tile.col0 + j * 8 + colInTile;
      if (col >= C::kN)
        continue;
      if (tileBias != nullptr) {
        const float2 b = detail::biasPair<C>(tileBias, tile.expert, col);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          total[j * 4 + 2 * h] += b.x;
          total[j * 4 + 2 * h + 1] += b.y;
        }
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        int row = r0 + 8 * h;
        if (row < tile.rowEnd) {
          const unsigned pair = dev::floatToBF16x2(total[j * 4 + 2 * h],
                                                   total[j * 4 + 2 * h + 1]);
          see(pair);
          *reinterpret_cast<unsigned *>(y + (long long)row * C::kN + col) =
              pair;
        }
      }
    }
    flushAmax(tile.expert);
    quantizeTile(tile, C::kTmaCodes && whole, expertScale);
  }
}

/// The kernel body. `tmX`/`tmW`/`tmSX`/`tmY` are 2-D tensor maps over X
/// [M_total, K] (box: kBlockM / kCluster rows), W [G·N, K] or, columnwise,
/// [N, G·K] (box: kBlockN / kClusterM rows) or, BF16 columnwise, [G·K, N]
/// (box: 64 x 64), (FP8) the x scales [K/128, roundup(M_total,4)], and
/// (kTmaStore) Y [M_total, N] (box: 64 x 64, 128-byte swizzle); `sw` the
/// weight scales (block FP8: fp32 128x128 tile scales; MXFP8: E8M0
/// [roundup(G·N,128)][K/32]; NVFP4: E4M3 [G·N][K/16]), `sx` (MXFP8) the x
/// scales [roundup(M_total, 128)][K/32] E8M0 (NVFP4: E4M3 [M_total][K/16];
/// block FP8 reads its x scales through `tmSX`), `splits` G int64 on the
/// device, `bias` null or [G, N] bf16 (added in fp32 before the rounding),
/// `y` [M_total, N] bf16, `amaxX` / `amaxW` (NVFP4) each expert's global
/// amax of x and of W ([G] f32; null for the other operands), and what
/// the epilogue `E` writes besides y: with E::kAmaxY `amaxY` [G] f32, into
/// which each expert's amax of its y rows is max-accumulated (the caller
/// zeroes it) - the amax a per-tensor scaled quantize of y would otherwise
/// take in a pass of its own; with E::kBlockQuant y's block-FP8 codes and
/// scales (`yCodes`, `yScaleInv`, the scheme's `yEps`; `tmYCodes` a 2-D
/// tensor map over the codes, box 64 x 128 bytes, 128-byte swizzle, where
/// kTmaCodes), with E::kExpertScale by each expert's scale `yScale[g]`.
template <class C, class E = Epilogue<>>
__device__ __forceinline__ void
groupedGemmSm90(const cute::TmaDescriptor *tmX, const cute::TmaDescriptor *tmW,
                const cute::TmaDescriptor *tmSX, const cute::TmaDescriptor *tmY,
                const void *sw, const void *sx, const long long *splits,
                const dev::u16 *bias, dev::u16 *y, int mTotal,
                const float *amaxX, const float *amaxW, float *amaxY,
                dev::u8 *yCodes, float *yScaleInv, float yEps,
                const cute::TmaDescriptor *tmYCodes,
                const float *yScale = nullptr) {
  using namespace cute;
  using Barrier = cutlass::arch::ClusterTransactionBarrier;
  extern __shared__ __align__(1024) unsigned char sharedRaw[];
  // The swizzled stages need 1024-byte alignment of their start (the same
  // offset in every CTA, as multicast writes need).
  unsigned char *shared = detail::alignedShared(sharedRaw);
  unsigned char *stageA = shared;
  unsigned char *stageB = stageA + C::kStages * C::kStageA;
  unsigned char *outShared = stageB + C::kStages * C::kStageB;
  unsigned char *stageSX = outShared + C::kOutBytes;
  Barrier *full =
      reinterpret_cast<Barrier *>(stageSX + C::kSAStages * C::kStageSA);
  Barrier *empty = full + C::kStages;
  // NVFP4: the packed-code ring's (the TMA fills a stage, the converting warps
  // free it).
  Barrier *rawFull = empty + C::kStages;
  Barrier *rawEmpty = rawFull + C::kRawStages;
  int *tileEnd = reinterpret_cast<int *>(full + C::kBarriers);
  int *rowEnd = tileEnd + C::kGroups + 1;

  // Warp-uniform as far as the compiler can see (a shuffle from lane 0):
  // warpgroup MMAs on a path it thinks divergent get serialised (ptxas
  // C7518).
  const int warpgroup = __shfl_sync(0xffffffffu, threadIdx.x / 128, 0);
  const int lane = threadIdx.x % 32;
  const int rank = C::kClusterSize == 1 ? 0 : int(block_rank_in_cluster());
  const int cluster = blockIdx.x / C::kClusterSize;
  const int clusters = gridDim.x / C::kClusterSize;
  if (threadIdx.x == 0) {
    for (int s = 0; s < C::kStages; ++s) {
      full[s].init(C::kFullArrivals);
      // Every math warpgroup of the cluster frees a stage (MXFP8: every
      // math warp): multicast writes into every CTA's copy of it.
      empty[s].init(C::kMathWarpgroups * C::kReleasesPerWarpgroup *
                    C::kClusterSize);
    }
    for (int s = 0; s < C::kRawStages; ++s) {
      rawFull[s].init(1);
      rawEmpty[s].init(detail::kFp4Converters);
    }
    cutlass::arch::fence_barrier_init();
    // The experts' row ranges and tile counts (split sizes clamped).
    int rows = 0, tiles = 0;
    for (int g = 0; g < C::kGroups; ++g) {
      long long m = te::dev::clampedSplit(splits[g], rows, mTotal);
      rows += static_cast<int>(m);
      tiles += static_cast<int>((m + C::kRowUnit - 1) / C::kRowUnit);
      rowEnd[g] = rows;
      tileEnd[g] = tiles;
    }
  }
  // The peer's barriers must be initialised before anything reaches them.
  if (C::kClusterSize > 1)
    cluster_sync();
  else
    __syncthreads();
  const int numItems = tileEnd[C::kGroups - 1] * (C::kNBlocks / C::kCluster);
  auto tileOf = [&](int t) {
    return detail::locate<C>(t, rank, tileEnd, rowEnd);
  };

  if (warpgroup == C::kMathWarpgroups) {
    // Producer: one thread issues every TMA load.
    cutlass::arch::warpgroup_reg_dealloc<C::kProducerRegisters>();
    if (threadIdx.x % 128 == 0) {
      prefetch_tma_descriptor(tmX);
      prefetch_tma_descriptor(tmW);
      if (C::kScaleTma)
        prefetch_tma_descriptor(tmSX);
      if (C::kTmaStore)
        prefetch_tma_descriptor(tmY);
      if (E::kBlockQuant && C::kTmaCodes)
        prefetch_tma_descriptor(tmYCodes);
      constexpr uint64_t kEvictNormal = 0x1000000000000000ull;
      // This CTA's share of the x tile (multicast to the CTAs of its
      // cluster row, which compute the same rows) and of the W tile
      // (multicast to the CTAs of its cluster column: the same columns).
      constexpr int kRowsPerCta = C::kBlockM / C::kCluster;
      constexpr int kWRowsPerCta = C::kBlockN / C::kClusterM;
      const int rankN = rank % C::kCluster, rankM = rank / C::kCluster;
      const uint16_t rowPeers =
          uint16_t(((1 << C::kCluster) - 1) << (rankM * C::kCluster));
      const uint16_t columnPeers =
          uint16_t((1 << rankN) | (1 << (C::kCluster + rankN)));
      int stage = 0;
      uint32_t phase = 0;
      for (int t = cluster; t < numItems; t += clusters) {
        detail::Tile tile = tileOf(t);
        // The W tile: rows of the expert's weight (fprop), or rows of the
        // output and the expert's reduction columns (columnwise).
        int wRow =
            C::kWeightColumnwise ? tile.col0 : tile.expert * C::kN + tile.col0;
        int wCol0 = C::kWeightColumnwise ? tile.expert * C::kK : 0;
        for (int kb = 0; kb < C::kKBlocks; ++kb) {
          if constexpr (C::kFp4) {
            // The packed codes of the x and W tiles, 32 bytes (64 codes) of
            // each row, into the packed-code ring (its own stage count).
            rawEmpty[stage].wait(phase ^ 1);
            uint64_t *raw = reinterpret_cast<uint64_t *>(&rawFull[stage]);
            rawFull[stage].arrive_and_expect_tx(C::kStageSA);
            unsigned char *dst = stageSX + stage * C::kStageSA;
            SM90_TMA_LOAD_2D::copy(tmX, raw, kEvictNormal, dst, kb * 32,
                                   tile.row0);
            SM90_TMA_LOAD_2D::copy(tmW, raw, kEvictNormal, dst + C::kRawA,
                                   kb * 32, wRow);
          } else {
            empty[stage].wait(phase ^ 1);
            uint64_t *bar = reinterpret_cast<uint64_t *>(&full[stage]);
            full[stage].arrive_and_expect_tx(
                C::kStageA + C::kStageB +
                (C::kScaleTma ? C::kScaleBox * 4 : 0));
            unsigned char *a =
                stageA + stage * C::kStageA + rankN * kRowsPerCta * 128;
            if (C::kCluster == 1)
              SM90_TMA_LOAD_2D::copy(tmX, bar, kEvictNormal, a, kb * C::kBlockK,
                                     tile.row0);
            else
              SM90_TMA_LOAD_MULTICAST_2D::copy(tmX, bar, rowPeers, kEvictNormal,
                                               a, kb * C::kBlockK,
                                               tile.row0 + rankN * kRowsPerCta);
            if (C::kWeightMnMajor) {
              // The expert's 64 reduction rows, 64 output columns a box.
              for (int h = 0; h < C::kBlockN / 64; ++h)
                SM90_TMA_LOAD_2D::copy(
                    tmW, bar, kEvictNormal,
                    stageB + stage * C::kStageB + h * detail::kMnAtomBytes,
                    tile.col0 + 64 * h, tile.expert * C::kK + kb * C::kBlockK);
            } else if (C::kClusterM == 1) {
              SM90_TMA_LOAD_2D::copy(tmW, bar, kEvictNormal,
                                     stageB + stage * C::kStageB,
                                     wCol0 + kb * C::kBlockK, wRow);
            } else {
              SM90_TMA_LOAD_MULTICAST_2D::copy(
                  tmW, bar, columnPeers, kEvictNormal,
                  stageB + stage * C::kStageB + rankM * kWRowsPerCta * 128,
                  wCol0 + kb * C::kBlockK, wRow + rankM * kWRowsPerCta);
            }
            if (C::kScaleTma)
              SM90_TMA_LOAD_2D::copy(tmSX, bar, kEvictNormal,
                                     stageSX + stage * C::kStageSA,
                                     tile.row0 & ~3, kb);
          }
          // The ring these loads fill: the stages, or NVFP4's packed codes.
          if (++stage == (C::kFp4 ? C::kRawStages : C::kStages)) {
            stage = 0;
            phase ^= 1;
          }
        }
      }
    } else if (C::kMx && threadIdx.x / 32 % 4 != 0) {
      detail::mxScaleWarp<C>(threadIdx.x / 32 % 4 - 1, lane, cluster, clusters,
                             numItems, tileOf, stageSX, full, empty,
                             static_cast<const dev::u8 *>(sx),
                             static_cast<const dev::u8 *>(sw), mTotal);
    } else if constexpr (C::kFp4) {
      if (threadIdx.x / 32 % 4 != 0)
        detail::fp4ConvertWarp(detail::Fp4Converter<C, decltype(tileOf)>(
            threadIdx.x / 32 % 4 - 1, lane, cluster, clusters, numItems, tileOf,
            stageA, stageB, stageSX, full, empty, rawFull, rawEmpty,
            static_cast<const dev::u8 *>(sx), static_cast<const dev::u8 *>(sw),
            mTotal));
    }
  } else {
    const detail::QuantizedY quantY{yCodes, yScaleInv, yEps, yScale};
    auto math = [&](auto whileMmas) {
      if (warpgroup == 0)
        mathWarpgroup<C, 0, E>(lane, rank, cluster, clusters, numItems, tileEnd,
                               rowEnd, stageA, stageB, stageSX, outShared, full,
                               empty, static_cast<const float *>(sw), bias, y,
                               mTotal, tmY, tmYCodes, amaxX, amaxW, amaxY,
                               quantY, whileMmas);
      else
        mathWarpgroup<C, 1, E>(lane, rank, cluster, clusters, numItems, tileEnd,
                               rowEnd, stageA, stageB, stageSX, outShared, full,
                               empty, static_cast<const float *>(sw), bias, y,
                               mTotal, tmY, tmYCodes, amaxX, amaxW, amaxY,
                               quantY, whileMmas);
    };
    if constexpr (C::kFp4) {
      // Warp-uniform as the compiler sees it (a shuffle from lane 0).
      const int warp = __shfl_sync(0xffffffffu, threadIdx.x / 32, 0);
      detail::Fp4Converter<C, decltype(tileOf)> converter(
          detail::kFp4ProducerConverters + warp, lane, cluster, clusters,
          numItems, tileOf, stageA, stageB, stageSX, full, empty, rawFull,
          rawEmpty, static_cast<const dev::u8 *>(sx),
          static_cast<const dev::u8 *>(sw), mTotal);
      math([&] {
        if (converter.more())
          converter.convertNext();
      });
    } else {
      math(detail::NoWork{});
    }
  }
  // No CTA leaves while its peer may still arrive on its barriers.
  if (C::kClusterSize > 1)
    cluster_sync();
}

} // namespace gemm
} // namespace te

#endif // TE_DEVICE_GEMM_GROUPEDGEMMSM90_CUH
