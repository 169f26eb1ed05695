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
// warpgroup's other three warps and the eight math warps (Fp4Converter)
// turn them into the stage's f16 tiles, in the 128-byte swizzled K-major
// layout the TMA would have written, and publish the stage. C is the
// kernel's GroupedGemmConfig.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_GEMM_NVFP4STEPS_CUH
#define TE_DEVICE_GEMM_NVFP4STEPS_CUH

#include "te/device/Fp4.cuh"
#include "te/device/gemm/Sm90Mma.cuh"

namespace te {
namespace gemm {
namespace detail {

/// Warps that convert NVFP4 stages: the producer warpgroup's three besides
/// the TMA thread's, and the eight math warps, which convert between
/// issuing a stage's MMAs and waiting for the next (Fp4Converter).
constexpr int kFp4ProducerConverters = 3;
constexpr int kFp4Converters = kFp4ProducerConverters + 8;

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

/// One warp's share of converting every stage of the ring: the stage's
/// kBlockM x rows and kBlockN W rows, in units of 16 rows (x's first), go
/// to the kFp4Converters warps in turn - warp `index` takes units index,
/// index + kFp4Converters, ... Whole stages per warp left the tensor cores
/// waiting (230-250 TFLOP/s on the H100), and so did a third of every stage
/// per producer warp (295-380 in the call that measured this version: each
/// warp ran ~770 instructions a stage at a quarter of an instruction a
/// clock); spread over eleven warps a warp converts two or three units
/// (400-477; docs/Performance.md). The producer's warps convert stage after
/// stage; a math warp converts the stage after the one whose MMAs it has
/// just issued, while they run.
///
/// A unit's lane l converts half row l (row l / 2, codes 32 (l % 2) .. +31)
/// from the stage's packed codes (32 bytes a row, x's rows then W's) into
/// f16 values times their E4M3 block scales at the f16 tile (128 bytes a
/// row, 16-byte chunk c of row r at chunk c ^ (r % 8): the TMA's 128-byte
/// swizzle); eight lanes read 128 contiguous bytes and store to eight
/// distinct chunk columns, so neither side conflicts. Each lane loads its
/// row's scale word (the row's four 1x16 blocks of the stage's 64 K) one
/// stage ahead, so its latency hides behind the conversion before. Rows past
/// M_total and columns past N (never stored) get scale 0: their codes (the
/// TMA's zero fill, or the next expert's rows of W) give +-0. A stage
/// converted, every lane fences the async proxy (the tensor cores read
/// through it) and arrives on its full barrier, and lane 0 frees the
/// packed-code stage. `tileOf(t)` is work item t's tile, as the TMA thread
/// walks them.
template <class C, class TileOf> class Fp4Converter {
public:
  static constexpr int kUnits = (C::kBlockM + C::kBlockN) / 16;
  static constexpr int kXUnits = C::kBlockM / 16;
  static constexpr int kMaxUnits =
      (kUnits + kFp4Converters - 1) / kFp4Converters;

  __device__ __forceinline__
  Fp4Converter(int index, int lane, int cluster, int clusters, int numItems,
               TileOf tileOf, unsigned char *stageA, unsigned char *stageB,
               const unsigned char *stageRaw,
               cutlass::arch::ClusterTransactionBarrier *full,
               cutlass::arch::ClusterTransactionBarrier *empty,
               cutlass::arch::ClusterTransactionBarrier *rawFull,
               cutlass::arch::ClusterTransactionBarrier *rawEmpty,
               const dev::u8 *sx, const dev::u8 *sw, int mTotal)
      : index_(index), lane_(lane), clusters_(clusters), numItems_(numItems),
        tileOf_(tileOf), stageA_(stageA), stageB_(stageB), stageRaw_(stageRaw),
        full_(full), empty_(empty), rawFull_(rawFull), rawEmpty_(rawEmpty),
        sx_(sx), sw_(sw), mTotal_(mTotal), t_(cluster) {
    if (t_ < numItems_) {
      tile_ = tileOf_(t_);
      loadWords(words_);
    }
  }

  /// Whether a stage is left to convert.
  __device__ __forceinline__ bool more() const { return t_ < numItems_; }

  /// Converts the next stage, loading the scale words of the one after it
  /// first.
  __device__ __forceinline__ void convertNext() {
    uint32_t words[kMaxUnits];
#pragma unroll
    for (int i = 0; i < kMaxUnits; ++i)
      words[i] = words_[i];
    const int stage = stage_, raw = raw_;
    const uint32_t phase = phase_, rawPhase = rawPhase_;
    advance();
    if (more())
      loadWords(words_);
    rawFull_[raw].wait(rawPhase);
    empty_[stage].wait(phase ^ 1);
    const unsigned char *codes = stageRaw_ + raw * C::kStageSA;
    uint4 in[kMaxUnits];
#pragma unroll
    for (int i = 0; i < kMaxUnits; ++i)
      if (unit(i) < kUnits)
        in[i] = *reinterpret_cast<const uint4 *>(codes +
                                                 (32 * unit(i) + lane_) * 16);
#pragma unroll
    for (int i = 0; i < kMaxUnits; ++i)
      if (unit(i) < kUnits) {
        const int u = unit(i);
        const int row = (u < kXUnits ? u : u - kXUnits) * 16 + lane_ / 2;
        unsigned char *rowBase = (u < kXUnits ? stageA_ + stage * C::kStageA
                                              : stageB_ + stage * C::kStageB) +
                                 row * 128;
        convertHalfRow(in[i], words[i], rowBase, row);
      }
    // The tensor cores read shared memory through the async proxy.
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    full_[stage].arrive();
    // Every lane's codes are read (their values stored): the TMA may
    // refill the packed-code stage.
    __syncwarp();
    if (lane_ == 0)
      rawEmpty_[raw].arrive();
  }

private:
  int index_, lane_, clusters_, numItems_;
  TileOf tileOf_;
  unsigned char *stageA_, *stageB_;
  const unsigned char *stageRaw_;
  cutlass::arch::ClusterTransactionBarrier *full_, *empty_, *rawFull_,
      *rawEmpty_;
  const dev::u8 *sx_, *sw_;
  int mTotal_;
  // The next stage to convert: work item t_'s K block kb_, in f16 stage
  // stage_ and packed-code stage raw_; its units' scale words.
  int t_, kb_ = 0, stage_ = 0, raw_ = 0;
  uint32_t phase_ = 0, rawPhase_ = 0;
  decltype((*static_cast<TileOf *>(nullptr))(0)) tile_;
  uint32_t words_[kMaxUnits];

  __device__ __forceinline__ int unit(int i) const {
    return index_ + kFp4Converters * i;
  }

  /// Loads the scale word of each of this lane's rows of the stage at the
  /// cursor (0 for rows past M_total or past N).
  __device__ __forceinline__ void loadWords(uint32_t (&words)[kMaxUnits]) {
    constexpr long long kStride = C::kK / 16; // scale bytes a row
#pragma unroll
    for (int i = 0; i < kMaxUnits; ++i) {
      const int u = unit(i);
      words[i] = 0u;
      if (u >= kUnits)
        continue;
      const bool x = u < kXUnits;
      const int r = (x ? u : u - kXUnits) * 16 + lane_ / 2;
      const long long row =
          x ? tile_.row0 + r : (long long)tile_.expert * C::kN + tile_.col0 + r;
      const bool inside = x ? tile_.row0 + r < mTotal_ : tile_.col0 + r < C::kN;
      if (inside)
        words[i] = __ldg(reinterpret_cast<const unsigned *>(
            (x ? sx_ : sw_) + row * kStride + kb_ * 4));
    }
  }

  __device__ __forceinline__ void advance() {
    if (++kb_ == C::kKBlocks) {
      kb_ = 0;
      t_ += clusters_;
      if (t_ < numItems_)
        tile_ = tileOf_(t_);
    }
    if (++stage_ == C::kStages) {
      stage_ = 0;
      phase_ ^= 1;
    }
    if (++raw_ == C::kRawStages) {
      raw_ = 0;
      rawPhase_ ^= 1;
    }
  }

  /// This lane's half row: 32 codes (four words of eight) times the row's
  /// block scales 2h and 2h + 1 (h = lane % 2), into chunks 4h .. 4h + 3.
  __device__ __forceinline__ void convertHalfRow(uint4 codes, uint32_t word,
                                                 unsigned char *rowBase,
                                                 int row) const {
    const int half = lane_ % 2;
    const uint32_t s0 = e4m3ScaleAsF16x2(word, 2 * half);
    const uint32_t s1 = e4m3ScaleAsF16x2(word, 2 * half + 1);
    const uint32_t in[4] = {codes.x, codes.y, codes.z, codes.w};
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
};

/// The producer's convert warps: every stage in turn.
template <class C, class TileOf>
__device__ __forceinline__ void
fp4ConvertWarp(Fp4Converter<C, TileOf> converter) {
  while (converter.more())
    converter.convertNext();
}

} // namespace detail
} // namespace gemm
} // namespace te

#endif // TE_DEVICE_GEMM_NVFP4STEPS_CUH
