//===- te/device/gemm/GroupedGemmEpilogue.cuh - Extra outputs *- CUDA -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// What a grouped GEMM's epilogue writes besides its bf16 output y
// (GroupedGemmSm90.cuh's mathWarpgroup runs it): each expert's amax of y,
// and y's rowwise 1x128 FP8 block quantization - the values a pass over y
// would compute, from the same device-library functions
// (docs/CodeGeneration.md, "The GEMM epilogue as the amax's producer" and
// "... as the block quantize").
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_GEMM_GROUPEDGEMMEPILOGUE_CUH
#define TE_DEVICE_GEMM_GROUPEDGEMMEPILOGUE_CUH

#include "te/device/QuantizeCommon.cuh"

namespace te {
namespace gemm {
namespace detail {

/// Where one output tile lies: its expert, first row, the end of that
/// expert's rows, and its first column.
struct Tile {
  int expert, row0, rowEnd, col0;
};

} // namespace detail

/// What the epilogue writes besides y (bf16), chosen per kernel:
/// `AmaxY`, each expert's amax of y max-accumulated into amaxY[expert];
/// `BlockQuant`, y quantized rowwise by FP8 block scaling (1x128 blocks
/// along N, E5M2 codes with `QE5M2`, power-of-two scales with `QPow2`) -
/// the codes [M_total, N] and the scale_inv [ceil(N/128)][roundup(M_total,
/// 4)] a standalone quantize of y writes (docs/Numerics.md §7.4); with
/// `ExpertScale` as well, each expert's rows by one scale it is given (a
/// per-tensor delayed-scaling state's, QuantizedY::expertScale), each block
/// of its rows with that scale's scale_inv: the codes and block scales the
/// next grouped GEMM's per-expert cast of y would write for its
/// block-scaled kernel (padding rows: zero codes, scale_inv 0).
template <bool AmaxY_ = false, bool BlockQuant_ = false, bool QE5M2 = false,
          bool QPow2 = false, bool ExpertScale_ = false>
struct Epilogue {
  static constexpr bool kAmaxY = AmaxY_;
  static constexpr bool kBlockQuant = BlockQuant_;
  static constexpr dev::Fp8Format kFormat =
      QE5M2 ? dev::Fp8Format::E5M2 : dev::Fp8Format::E4M3;
  static constexpr bool kPow2 = QPow2;
  static constexpr bool kExpertScale = ExpertScale_;
  static_assert(!ExpertScale_ || (BlockQuant_ && !QPow2),
                "an expert's given scale is a way of quantizing y");
};

namespace detail {

/// The outputs of the epilogue's block quantize.
struct QuantizedY {
  dev::u8 *codes;  ///< [M_total, N]
  float *scaleInv; ///< [ceil(N/128)][roundup(M_total, 4)]
  float eps;
  const float *expertScale; ///< Epilogue::kExpertScale: [G], else null
};

/// The scale_inv the padding rows' blocks get: that of amax 0 (block
/// scaling), or 0 (an expert's given scale: the rows are no expert's).
template <class E>
__device__ __forceinline__ float paddingScaleInv(const QuantizedY &q) {
  if constexpr (E::kExpertScale)
    return 0.0f;
  return dev::fp8BlockScaleInv(dev::fp8BlockScale(
      0.0f, E::kFormat, E::kPow2, q.eps, dev::SourceType::BF16));
}

/// Epilogue E's block quantize of 128-column block `b` of a warpgroup's 64
/// rows of the tile (rows wgRow0 + rowInWg and + 8 of this thread; `total`
/// already holds y before its bf16 rounding, the bias added): each row's
/// block from the rounded values, as the standalone quantize computes it -
/// the amax over the columns below N (NaN ignored), the scale
/// fp8BlockScale(amax) (E::kExpertScale: `expertScale`, the tile's expert's,
/// as the per-expert cast takes it), codes fl(v · scale), scale_inv
/// rcp(scale). The four
/// lanes of a quad hold a row's columns: two shuffles join their amaxes.
/// Each pair of codes goes to put(r, c, codes) (r the row within the
/// warpgroup's 64, c the even byte within the block); the scale_inv of rows
/// from `rowEnd` on (the next expert's) is not stored, nor are their codes
/// by a `put` that checks.
template <class C, class E, int N, class Put>
__device__ __forceinline__ void
quantizeRowBlock(const float (&total)[N], const Tile &tile, int b, int wgRow0,
                 int rowInWg, int colInTile, int lane, int mTotal,
                 const QuantizedY &q, float expertScale, Put put) {
  static_assert(C::kBlockN % 128 == 0 && N == C::kBlockN / 2,
                "whole 128-column blocks of a 64-row accumulator tile");
  const int block0 = tile.col0 + 128 * b;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    unsigned pairs[16];
    unsigned seen = 0u;
#pragma unroll
    for (int jj = 0; jj < 16; ++jj) {
      const int j = 16 * b + jj;
      pairs[jj] =
          dev::floatToBF16x2(total[j * 4 + 2 * h], total[j * 4 + 2 * h + 1]);
      if (block0 + jj * 8 + colInTile < C::kN)
        seen = dev::magnitudeMax2(seen, pairs[jj]);
    }
    float scale;
    if constexpr (E::kExpertScale) {
      scale = expertScale;
    } else {
      seen &= 0x7FFF7FFFu; // magnitudeMax2 leaves the signs undefined
      float amax = fmaxf(dev::bf16Lo(seen), dev::bf16Hi(seen));
      amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
      amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
      scale = dev::fp8BlockScale(amax, E::kFormat, E::kPow2, q.eps,
                                 dev::SourceType::BF16);
    }
    const int r = rowInWg + 8 * h;
#pragma unroll
    for (int jj = 0; jj < 16; ++jj)
      put(r, jj * 8 + colInTile,
          static_cast<unsigned short>(dev::encodeFp8x2<E::kFormat>(
              dev::mulRn(dev::bf16Lo(pairs[jj]), scale),
              dev::mulRn(dev::bf16Hi(pairs[jj]), scale))));
    const int row = wgRow0 + r;
    if (lane % 4 == 0 && row < tile.rowEnd && block0 < C::kN)
      q.scaleInv[(block0 / 128) * (((long long)mTotal + 3) / 4 * 4) + row] =
          E::kExpertScale ? dev::scaleInvFromScale(scale)
                          : dev::fp8BlockScaleInv(scale);
  }
}

} // namespace detail

} // namespace gemm
} // namespace te

#endif // TE_DEVICE_GEMM_GROUPEDGEMMEPILOGUE_CUH
