//===- te/device/GroupedQuantizeKernel.cuh - per-expert columnwise -*- CUDA -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The columnwise quantization of an MoE layer's tokens (x, or dy with its
// per-expert bias gradient) into the grouped transposed layout the wgrad
// GEMM reads (te/device/gemm/GroupedWgradSm90.cuh): for a [M_total, C] bf16
// tensor sorted by expert and the split sizes (read on the device, clamped
// as the grouped GEMMs clamp them), expert g's rows become columns
// 128·S_g .. of a [C, capacity] buffer, S_g = sum over h < g of
// ceil(m_h / 128), zero up to the segment's next multiple of 128.
//   * FP8 block 1x128: each 128-row block of one expert is a scaling block
//     (blocks restart at every expert, as if each expert's rows were their
//     own tensor), scale_inv [capacity/128][roundup(C, 4)] f32 - the bytes
//     of quantizing each expert alone (docs/Numerics.md §7.4).
//   * Identity: the bf16 values transposed (the BF16 wgrad's operands).
//   * Bias gradient: the fp32 column sums of each block, then each
//     expert's sum of its blocks in order: each expert's own fused bias
//     gradient (docs/Numerics.md §10, 128-row chunks).
// One CTA of 256 threads per (block of the capacity, 128 columns); blocks
// past the experts' are left as they are (the wgrad reads none).
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_GROUPEDQUANTIZEKERNEL_CUH
#define TE_DEVICE_GROUPEDQUANTIZEKERNEL_CUH

#include "te/device/Fp8.cuh"
#include "te/device/QuantizeCommon.cuh"
#include "te/device/Scales.cuh"

namespace te {
namespace dev {

constexpr int kGroupedQuantizeThreads = 256;

/// Where 128-row block `block` of the capacity lies: its expert's first row
/// of the block and the block's valid rows (0: past every expert).
struct GroupedBlock {
  i64 firstRow;
  int rows;
  int expert;
};

__device__ __forceinline__ GroupedBlock locateGroupedBlock(
    const long long *splits, int groups, i64 mTotal, i64 block) {
  i64 rows = 0, blocks = 0;
  for (int g = 0; g < groups; ++g) {
    long long m = splits[g];
    m = m < 0 ? 0 : m;
    m = m > mTotal - rows ? mTotal - rows : m;
    i64 nb = (m + 127) / 128;
    if (block < blocks + nb) {
      i64 first = rows + (block - blocks) * 128;
      i64 left = rows + m - first;
      return {first, int(left < 128 ? left : 128), g};
    }
    rows += m;
    blocks += nb;
  }
  return {0, 0, -1};
}

/// The block pass. `Fp8`: E4M3/E5M2 codes and scales, else bf16 copies.
/// `partial` (may be null): the block's fp32 column sums [capacity/128][C].
template <bool Fp8, Fp8Format F, bool Pow2>
__device__ __forceinline__ void
groupedColumnQuantize(const u16 *in, i64 mTotal, i64 cols,
                      const long long *splits, int groups, i64 capacity,
                      void *out, float *scaleInv, float eps, float *partial) {
  __shared__ u16 tile[128][128];
  __shared__ GroupedBlock where;
  const i64 block = blockIdx.x, c0 = i64(blockIdx.y) * 128;
  if (threadIdx.x == 0)
    where = locateGroupedBlock(splits, groups, mTotal, block);
  __syncthreads();
  const GroupedBlock b = where;
  if (b.rows == 0)
    return;
  // 16-byte loads of 8 values; rows past the block's and columns past C
  // are zero (C is a multiple of 8).
  for (int i = threadIdx.x; i < 128 * 16; i += kGroupedQuantizeThreads) {
    int r = i / 16, chunk = i % 16;
    i64 c = c0 + chunk * 8;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (r < b.rows && c < cols)
      v = *reinterpret_cast<const uint4 *>(in + (b.firstRow + r) * cols + c);
    *reinterpret_cast<uint4 *>(&tile[r][chunk * 8]) = v;
  }
  __syncthreads();
  const int c = threadIdx.x;
  if (c >= 128 || c0 + c >= cols)
    return;
  const i64 col = c0 + c;
  if (partial) {
    float sum = 0.0f;
    for (int r = 0; r < b.rows; ++r)
      sum = sum + bitsToFloat(u32(tile[r][c]) << 16);
    partial[block * cols + col] = sum;
  }
  if (Fp8) {
    float amax = 0.0f;
    for (int r = 0; r < b.rows; ++r)
      amax = amaxAccumulate(amax, bitsToFloat(u32(tile[r][c]) << 16));
    float sc = fp8BlockScale(amax, F, Pow2, eps, SourceType::BF16);
    u8 *dst = static_cast<u8 *>(out) + col * capacity + block * 128;
    TE_UNROLL
    for (int q = 0; q < 8; ++q) {
      u32 w[4];
      TE_UNROLL
      for (int p = 0; p < 4; ++p) {
        int r = q * 16 + p * 4;
        w[p] = encodeFp8x4<F>(bitsToFloat(u32(tile[r][c]) << 16),
                              bitsToFloat(u32(tile[r + 1][c]) << 16),
                              bitsToFloat(u32(tile[r + 2][c]) << 16),
                              bitsToFloat(u32(tile[r + 3][c]) << 16), sc, sc,
                              sc, sc);
      }
      *reinterpret_cast<uint4 *>(dst + q * 16) =
          make_uint4(w[0], w[1], w[2], w[3]);
    }
    scaleInv[block * ((cols + 3) / 4 * 4) + col] = fp8BlockScaleInv(sc);
  } else {
    u16 *dst = static_cast<u16 *>(out) + col * capacity + block * 128;
    TE_UNROLL
    for (int q = 0; q < 16; ++q) {
      u32 w[4];
      TE_UNROLL
      for (int p = 0; p < 4; ++p)
        w[p] = u32(tile[q * 8 + 2 * p][c]) |
               (u32(tile[q * 8 + 2 * p + 1][c]) << 16);
      *reinterpret_cast<uint4 *>(dst + q * 8) =
          make_uint4(w[0], w[1], w[2], w[3]);
    }
  }
}

/// The bias gradient of each expert, [G, C] f32: the sum of its blocks'
/// partial sums in order (+0 for an expert with no rows). One thread per
/// (expert, column).
__device__ __forceinline__ void
groupedBiasGrad(const float *partial, i64 mTotal, i64 cols,
                const long long *splits, int groups, float *db) {
  i64 i = i64(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= i64(groups) * cols)
    return;
  int g = int(i / cols);
  i64 col = i % cols;
  i64 rows = 0, blocks = 0, first = 0, count = 0;
  for (int h = 0; h <= g; ++h) {
    long long m = splits[h];
    m = m < 0 ? 0 : m;
    m = m > mTotal - rows ? mTotal - rows : m;
    first = blocks;
    count = (m + 127) / 128;
    rows += m;
    blocks += count;
  }
  float sum = 0.0f;
  for (i64 blk = first; blk < first + count; ++blk)
    sum = sum + partial[blk * cols + col];
  db[i] = sum;
}

} // namespace dev
} // namespace te

#endif // TE_DEVICE_GROUPEDQUANTIZEKERNEL_CUH
