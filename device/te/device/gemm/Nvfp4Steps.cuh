//===- te/device/gemm/Nvfp4Steps.cuh - NVFP4 operands on f16 MMAs -*- CUDA
//-*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The NVFP4 parts of the engine's Hopper GEMM (GroupedGemmSm90.cuh with
// GroupedGemmConfig's Fp4): Hopper has no FP4 tensor cores, but an E2M1
// value times its E4M3 block scale is exact in f16 (at most 6 significant
// bits, magnitudes 2^-10 .. 2688), so the kernel multiplies exact f16
// operands on the f16 tensor cores and applies the two tensors' global
// scales to the fp32 accumulator once (docs/Numerics.md §6.7). The TMA
// thread loads each stage's packed codes into a raw area; the producer
// warpgroup's other three warps ("convert warps") turn them into the
// stage's f16 tiles, in the 128-byte swizzled K-major layout the TMA would
// have written, and publish the stage. C is the kernel's GroupedGemmConfig.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_GEMM_NVFP4STEPS_CUH
#define TE_DEVICE_GEMM_NVFP4STEPS_CUH

#include "te/device/Fp4.cuh"
#include "te/device/gemm/Sm90Mma.cuh"

namespace te {
namespace gemm {
namespace detail {

/// Warps of the producer warpgroup that convert NVFP4 stages (all but the
/// TMA thread's).
constexpr int kFp4ConvertWarps = 3;

/// fl(1 / (6 · 448)^2): the global-scale factor of an NVFP4 x NVFP4 product
/// (docs/Numerics.md §6.6, the cuBLAS rule).
constexpr float kNvfp4AlphaFactor = 0x1.293726p-23f; // 0x34149B93

/// Expert g's output factor fl(fl(A_x[g] · A_w[g]) · fl(1/7225344)), from
/// the two operands' global amaxes.
__device__ __forceinline__ float nvfp4Alpha(const float *amaxX,
                                            const float *amaxW, int g) {
  return __fmul_rn(__fmul_rn(__ldg(amaxX + g), __ldg(amaxW + g)),
                   kNvfp4AlphaFactor);
}

/// The E4M3 scale byte `byteIndex` of `word` as an f16x2 pair (both halves),
/// exactly (every E4M3 value is an f16).
__device__ __forceinline__ uint32_t e4m3ScaleAsF16x2(uint32_t word,
                                                     uint32_t byteIndex) {
  const uint32_t pair = __byte_perm(word, 0u, byteIndex | (byteIndex << 4));
  return dev::fp8x2ToF16x2<dev::Fp8Format::E4M3>(uint16_t(pair));
}

__device__ __forceinline__ uint32_t mulF16x2(uint32_t a, uint32_t b) {
  uint32_t r;
  asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}

/// Converts `Rows` rows of one stage's packed codes (`raw`: 32 bytes a row,
/// 64 codes) into f16 values times their block scales at `tile` (128 bytes
/// a row, 16-byte chunk c of row r at chunk c ^ (r % 8): the TMA's 128-byte
/// swizzle). Lane l takes the half rows l, l + 32, ... (row u / 2, codes
/// 32 (u % 2) .. + 31): eight lanes read 128 contiguous bytes and store to
/// eight distinct chunk columns, so neither side conflicts. `scales[i]`
/// holds row lane + 32 i's four E4M3 block scales (one word).
template <int Rows>
__device__ __forceinline__ void
convertFp4Rows(const unsigned char *raw, unsigned char *tile, int lane,
               const uint32_t (&scales)[Rows / 32]) {
  constexpr int kUnits = Rows / 16;
  // Every load and shuffle first, in one branch-free run: each shuffle is
  // preceded by a convergence check (a branch), which between the units
  // kept the compiler from overlapping one unit's latency with another's
  // work (the conversion ran at a fraction of an instruction a clock).
  uint4 codes[kUnits];
  uint32_t words[kUnits];
#pragma unroll
  for (int i = 0; i < kUnits; ++i)
    codes[i] = *reinterpret_cast<const uint4 *>(raw + (lane + 32 * i) * 16);
    // Row lane / 2 + 16 i's scale word is lane (row % 32)'s slot row / 32.
#pragma unroll
  for (int i = 0; i < kUnits; ++i)
    words[i] = __shfl_sync(0xffffffffu, scales[i / 2], lane / 2 + 16 * (i % 2));
  const int half = lane % 2;
#pragma unroll
  for (int i = 0; i < kUnits; ++i) {
    const int row = (lane + 32 * i) / 2;
    const uint32_t s0 = e4m3ScaleAsF16x2(words[i], 2 * half);
    const uint32_t s1 = e4m3ScaleAsF16x2(words[i], 2 * half + 1);
    const uint32_t in[4] = {codes[i].x, codes[i].y, codes[i].z, codes[i].w};
    unsigned char *rowBase = tile + row * 128;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      uint32_t h[4];
      dev::e2m1x8ToF16x2(in[j], h);
      const uint32_t s = j < 2 ? s0 : s1;
      const int chunk = 4 * half + j;
      *reinterpret_cast<uint4 *>(rowBase + ((chunk ^ (row & 7)) << 4)) =
          make_uint4(mulF16x2(h[0], s), mulF16x2(h[1], s), mulF16x2(h[2], s),
                     mulF16x2(h[3], s));
    }
  }
}

/// One convert warp's part of every stage (fp4ConvertWarp): `Rows` rows
/// from row `(part - 1) · Rows` of the W tile (part 1, 2) or the x tile
/// (part 0), whose codes lie `rawOffset` bytes into the stage's raw area,
/// into `tiles` (the ring's x or W tiles). `scales` is x's or the stack's
/// [rows][K/16] E4M3 block scales.
template <class C, int Rows, class TileOf>
__device__ __forceinline__ void
fp4ConvertPart(int part, int lane, int cluster, int clusters, int numItems,
               TileOf tileOf, unsigned char *tiles, int rawOffset,
               const unsigned char *stageRaw,
               cutlass::arch::ClusterTransactionBarrier *full,
               cutlass::arch::ClusterTransactionBarrier *empty,
               cutlass::arch::ClusterTransactionBarrier *rawFull,
               cutlass::arch::ClusterTransactionBarrier *rawEmpty,
               const dev::u8 *scales, int mTotal) {
  constexpr long long kStride = C::kK / 16; // scale bytes a row
  constexpr int kWords = Rows / 32;
  const int firstRow = part == 0 ? 0 : (part - 1) * Rows;
  const int tileOffset = firstRow * 128;
  // The next stage of each ring, and the pending one's (its scale words
  // loaded, not yet converted).
  int stage = 0, raw = 0, pendingStage = 0, pendingRaw = 0;
  uint32_t phase = 0, rawPhase = 0, pendingPhase = 0, pendingRawPhase = 0;
  uint32_t words[kWords];
  bool pending = false;
  auto convert = [&] {
    rawFull[pendingRaw].wait(pendingRawPhase);
    empty[pendingStage].wait(pendingPhase ^ 1);
    convertFp4Rows<Rows>(
        stageRaw + pendingRaw * C::kStageSA + rawOffset,
        tiles + pendingStage * (part == 0 ? C::kStageA : C::kStageB) +
            tileOffset,
        lane, words);
    // The tensor cores read shared memory through the async proxy.
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    full[pendingStage].arrive();
    // Every lane's codes are read (their values stored): the TMA may
    // refill the packed-code stage.
    __syncwarp();
    if (lane == 0)
      rawEmpty[pendingRaw].arrive();
  };
  for (int t = cluster; t < numItems; t += clusters) {
    const auto tile = tileOf(t);
    // The part's first row in the scale matrix, and the rows it has.
    const long long row0 =
        part == 0 ? tile.row0
                  : (long long)tile.expert * C::kN + tile.col0 + firstRow;
    const int rowsLeft =
        part == 0 ? mTotal - tile.row0 : C::kN - tile.col0 - firstRow;
    const dev::u8 *rows = scales + row0 * kStride;
    for (int kb = 0; kb < C::kKBlocks; ++kb) {
      uint32_t next[kWords];
#pragma unroll
      for (int i = 0; i < kWords; ++i) {
        const int r = lane + 32 * i;
        next[i] = r < rowsLeft ? __ldg(reinterpret_cast<const unsigned *>(
                                     rows + r * kStride + kb * 4))
                               : 0u;
      }
      if (pending)
        convert();
#pragma unroll
      for (int i = 0; i < kWords; ++i)
        words[i] = next[i];
      pending = true;
      pendingStage = stage;
      pendingPhase = phase;
      pendingRaw = raw;
      pendingRawPhase = rawPhase;
      if (++stage == C::kStages) {
        stage = 0;
        phase ^= 1;
      }
      if (++raw == C::kRawStages) {
        raw = 0;
        rawPhase ^= 1;
      }
    }
  }
  if (pending)
    convert();
}

/// NVFP4: the convert warps follow the TMA thread through both rings (the
/// packed codes', which the TMA fills, and the f16 stages', which the math
/// warpgroups free), each converting its part of every stage: warp 0 the x
/// tile's 128 rows, warps 1 and 2 a half of the W tile's kBlockN rows each,
/// so that a stage is ready a third of one warp's conversion time after
/// its codes arrive (a warp taking whole stages in turn left the 256-wide
/// tiles' three-stage ring waiting on one warp at a time: 230-250 TFLOP/s
/// on the H100). For a stage a warp loads the E4M3 block-scale words of its
/// rows (one 32-bit word a row: the four 1x16 blocks of the stage's 64 K),
/// waits for the packed codes and for the f16 stage, writes its f16 rows,
/// makes them visible to the tensor cores (the async proxy), arrives on the
/// stage's full barrier (every lane) and frees the packed-code stage (lane
/// 0). It loads its next stage's scale words before it converts the
/// current one, so their latency hides behind the conversion. Rows past M_total
/// and columns past N (never stored) get scale 0: their codes (the TMA's zero
/// fill, or the next expert's rows of W) give +-0. `tileOf(t)` is work item t's
/// tile, as the TMA thread walks them.
template <class C, class TileOf>
__device__ __forceinline__ void
fp4ConvertWarp(int warp, int lane, int cluster, int clusters, int numItems,
               TileOf tileOf, unsigned char *stageA, unsigned char *stageB,
               const unsigned char *stageRaw,
               cutlass::arch::ClusterTransactionBarrier *full,
               cutlass::arch::ClusterTransactionBarrier *empty,
               cutlass::arch::ClusterTransactionBarrier *rawFull,
               cutlass::arch::ClusterTransactionBarrier *rawEmpty,
               const dev::u8 *sx, const dev::u8 *sw, int mTotal) {
  if (warp == 0)
    fp4ConvertPart<C, C::kBlockM>(0, lane, cluster, clusters, numItems, tileOf,
                                  stageA, 0, stageRaw, full, empty, rawFull,
                                  rawEmpty, sx, mTotal);
  else
    fp4ConvertPart<C, C::kBlockN / 2>(
        warp, lane, cluster, clusters, numItems, tileOf, stageB,
        C::kRawA + (warp - 1) * (C::kBlockN / 2) * 32, stageRaw, full, empty,
        rawFull, rawEmpty, sw, mTotal);
}

} // namespace detail
} // namespace gemm
} // namespace te

#endif // TE_DEVICE_GEMM_NVFP4STEPS_CUH
