//===- te/device/GroupedQuantizeKernel.cuh - per-expert columnwise -*- CUDA
//-*-===//
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
//   * FP8 per-tensor (current scaling), one amax per expert: each expert's
//     codes by the scale of its amax (amax[G], from groupedRowsAmax of
//     te/device/GroupedTensorQuantize.cuh), its scale_inv repeated over
//     the same 1x128 block layout, so the block-scaled wgrad GEMM reads
//     both alike.
//   * Identity: the bf16 values transposed (the BF16 wgrad's operands).
//   * MXFP8, dequantized: each expert's 32-row blocks quantized columnwise
//     (E8M0 scale of the block amax) and dequantized to bf16 in the same
//     pass - the values an MXFP8 wgrad's BF16 GEMM reads on Hopper, which
//     has no MXFP8 MMA (docs/Numerics.md §7.4).
//   * NVFP4, dequantized: each expert's rows, zero-padded to whole 16-row
//     blocks, quantized columnwise as its own tensor (1x16 blocks down the
//     tokens, the tensor scale from the expert's amax, which an amax pass
//     computed first: groupedRhtColumnAmax with the random Hadamard
//     transform, else groupedRowsAmax), optionally transformed and
//     stochastically rounded, and dequantized to bf16 - padding rows
//     included, since the transform spreads a block over them.
//   * Bias gradient: the fp32 column sums of each block, then each
//     expert's sum of its blocks in order: each expert's own fused bias
//     gradient (docs/Numerics.md §10, 128-row chunks).
// One CTA of 256 threads per (block of the capacity, 128 columns), with
// GroupedQuantizeSmem's dynamic shared memory; blocks past the experts'
// are left as they are (the wgrad reads none).
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_GROUPEDQUANTIZEKERNEL_CUH
#define TE_DEVICE_GROUPEDQUANTIZEKERNEL_CUH

#include "te/device/E8M0.cuh"
#include "te/device/Fp8.cuh"
#include "te/device/GroupedSplits.cuh"
#include "te/device/GroupedTensorQuantize.cuh"
#include "te/device/Hadamard.cuh"
#include "te/device/LaunchOrder.cuh"
#include "te/device/QuantizeCommon.cuh"
#include "te/device/Scales.cuh"

namespace te {
namespace dev {

constexpr int kGroupedQuantizeThreads = 256;

/// What the block pass writes for each expert's columns.
enum class GroupedColumns {
  Bf16,      ///< the bf16 values (identity)
  Fp8Block,  ///< FP8 codes of 1x128 blocks, and their scales
  Fp8Tensor, ///< FP8 codes by the expert's per-tensor scale, repeated
  /// bf16: the values Fp8Block's / Fp8Tensor's codes dequantize to (a BF16
  /// wgrad pairing them with another family's values)
  Fp8BlockValues,
  Fp8TensorValues,
  Mxfp8Values, ///< bf16: the values of the MXFP8 32 x 1 blocks, dequantized
  Nvfp4Values  ///< bf16: the values of the NVFP4 16 x 1 blocks, dequantized
};

/// Where 128-row block `block` of the capacity lies: its expert's first row
/// of the block and the block's valid rows (0: past every expert), and the
/// expert's first row and row count.
struct GroupedBlock {
  i64 firstRow;
  int rows;
  int expert;
  i64 expertFirst, expertRows;
};

__device__ __forceinline__ GroupedBlock
locateGroupedBlock(const long long *splits, int groups, i64 mTotal, i64 block) {
  i64 rows = 0, blocks = 0;
  for (int g = 0; g < groups; ++g) {
    long long m = clampedSplit(splits[g], rows, mTotal);
    i64 nb = (m + 127) / 128;
    if (block < blocks + nb) {
      i64 first = rows + (block - blocks) * 128;
      i64 left = rows + m - first;
      return {first, int(left < 128 ? left : 128), g, rows, m};
    }
    rows += m;
    blocks += nb;
  }
  return {0, 0, -1, 0, 0};
}

/// This CTA's block (blockIdx.x), located once by thread 0 for the CTA.
__device__ __forceinline__ GroupedBlock
thisGroupedBlock(const long long *splits, int groups, i64 mTotal) {
  __shared__ GroupedBlock where;
  if (threadIdx.x == 0)
    where = locateGroupedBlock(splits, groups, mTotal, blockIdx.x);
  __syncthreads();
  return where;
}

/// Dynamic shared memory of the block pass: the input tile, then the
/// transposed output rows (128 columns of 128 codes or bf16 values, padded
/// by 4 bytes so that each thread's row writes hit distinct banks).
template <bool Fp8> struct GroupedQuantizeSmem {
  static constexpr int kOutRow = 128 * (Fp8 ? 1 : 2) + 4;
  static constexpr int kBytes = 128 * 128 * 2 + 128 * kOutRow;
};

/// Rows r0 .. r0 + 31 of column pair `pair` (word `pair` of each row of
/// `words`) through FP8 and back (fp8RoundTrip2, each column by its own
/// multiplier and factor) into the two columns' output rows, each word two
/// rows of one column.
template <Fp8Format F>
__device__ __forceinline__ void
roundTripColumnPair(const u32 (*words)[64], int pair, int r0, float multLo,
                    float multHi, float factorLo, float factorHi, u32 *rowLo,
                    u32 *rowHi) {
  TE_UNROLL
  for (int r = r0; r < r0 + 32; r += 2) {
    u32 upper =
        fp8RoundTrip2<F>(words[r][pair], multLo, multHi, factorLo, factorHi);
    u32 lower = fp8RoundTrip2<F>(words[r + 1][pair], multLo, multHi, factorLo,
                                 factorHi);
    rowLo[r / 2] = __byte_perm(upper, lower, 0x5410);
    rowHi[r / 2] = __byte_perm(upper, lower, 0x7632);
  }
}

/// Sixteen rows of one column (elements 2·`pair` + `high` of the words
/// rows[0 .. 15]) as floats, random-Hadamard-transformed and rounded to
/// bf16 with `Rht` (docs/Numerics.md §6.4).
template <bool Rht, int W>
__device__ __forceinline__ void columnRun16(const u32 (*rows)[W], int pair,
                                            bool high, float (&v)[16]) {
  TE_UNROLL
  for (int i = 0; i < 16; ++i)
    v[i] = high ? bf16Hi(rows[i][pair]) : bf16Lo(rows[i][pair]);
  if (Rht) {
    float y[16];
    rht16Bf16(v, y);
    TE_UNROLL
    for (int i = 0; i < 16; ++i)
      v[i] = y[i];
  }
}

/// max |v| over a run, NaN ignored (the NVFP4 block amax).
__device__ __forceinline__ float runAmax16(const float (&v)[16]) {
  float a = 0.0f;
  TE_UNROLL
  for (int i = 0; i < 16; ++i)
    a = amaxAccumulate(a, v[i]);
  return a;
}

/// One column's 16-row NVFP4 block of an expert through quantize and
/// dequantize into its output row (`row`: pairs of rows as bf16 words):
/// the block scale from the run's amax, each value encoded (stochastically:
/// the random bytes of elements `index` .. + 15 of the expert's own
/// columnwise data) and decoded by the expert's tensor scale.
template <bool Stochastic>
__device__ __forceinline__ void
nvfp4ColumnBlock(const float (&v)[16], float sEnc, float sDec, float amax,
                 u64 seed, u64 offset, u64 index, u32 *row) {
  const u8 sB = nvfp4BlockScale(runAmax16(v), sEnc);
  const float enc = nvfp4BlockEncodeFactor(sB, sDec);
  const float dec = nvfp4DequantFactor(sB, amax);
  Philox4x32 r{};
  if (Stochastic)
    r = srRandomBlock(seed, offset, index / 16);
  TE_UNROLL
  for (int i = 0; i < 16; i += 2) {
    const u32 word = philoxWord(r, u32(i / 4)) >> (8 * (i % 4));
    row[i / 2] = nvfp4RoundTrip2<Stochastic>(v[i], v[i + 1], enc, enc, dec, dec,
                                             word, word >> 8);
  }
}

/// The block pass. `Out`: what it writes (GroupedColumns; FP8 formats E4M3
/// or E5M2). `partial` (may be null): the block's fp32 column sums
/// [capacity/128][C]. `expertAmax`: each expert's amax (Fp8Tensor and
/// Nvfp4Values). NVFP4 only: `Rht` transforms each 16-row run first,
/// `Stochastic` rounds by (seed, offset). Fp8Tensor with `Delayed`:
/// `expertAmax` holds each expert's scale (its delayed-scaling state's) and
/// each block's amax is recorded into amaxRecord[expert].
/// Each column's 128 outputs go to shared memory first; the warps then
/// store whole 128-byte output rows (coalesced).
template <GroupedColumns Out, Fp8Format F, bool Pow2, bool Rht = false,
          bool Stochastic = false, bool Delayed = false>
__device__ __forceinline__ void
groupedColumnQuantize(const u16 *in, i64 mTotal, i64 cols,
                      const long long *splits, int groups, i64 capacity,
                      void *out, float *scaleInv, float eps, float *partial,
                      const float *expertAmax, u64 seed = 0, u64 offset = 0,
                      float *amaxRecord = nullptr) {
  // Block or per-tensor FP8 scales; codes (Fp8, one byte each) or their
  // values.
  constexpr bool Block =
      Out == GroupedColumns::Fp8Block || Out == GroupedColumns::Fp8BlockValues;
  constexpr bool Tensor = Out == GroupedColumns::Fp8Tensor ||
                          Out == GroupedColumns::Fp8TensorValues;
  static_assert(!Delayed || Tensor, "delayed scaling is per-tensor FP8");
  constexpr bool Fp8 =
      Out == GroupedColumns::Fp8Block || Out == GroupedColumns::Fp8Tensor;
  constexpr bool BlockAmax =
      Block || Out == GroupedColumns::Mxfp8Values || Delayed;
  using Smem = GroupedQuantizeSmem<Fp8>;
  extern __shared__ __align__(16) unsigned char groupedSmem[];
  u16(*tile)[128] = reinterpret_cast<u16(*)[128]>(groupedSmem);
  unsigned char *rowsOut = groupedSmem + 128 * 128 * 2;
  const i64 block = blockIdx.x, c0 = i64(blockIdx.y) * 128;
  const GroupedBlock b = thisGroupedBlock(splits, groups, mTotal);
  if (b.rows == 0)
    return;
  // The block's rows by cp.async, 16 bytes of 8 values at a time (the
  // whole 32 KB tile in flight); rows past the block's and columns past C
  // are zero (C is a multiple of 8).
  for (int i = threadIdx.x; i < 128 * 16; i += kGroupedQuantizeThreads) {
    int r = i / 16, chunk = i % 16;
    i64 c = c0 + chunk * 8;
    if (r < b.rows && c < cols)
      cpAsync16(&tile[r][chunk * 8], in + (b.firstRow + r) * cols + c);
    else
      *reinterpret_cast<uint4 *>(&tile[r][chunk * 8]) = make_uint4(0, 0, 0, 0);
  }
  cpAsyncWaitAll();
  __syncthreads();
  const int validCols = int(cols - c0 < 128 ? cols - c0 : 128);
  // Each thread takes a column pair (2p, 2p + 1), one 32-bit word of every
  // tile row, and a quarter q of the rows, [32q, 32q + 32): a warp's reads
  // are 32 consecutive words. The amax of a pair is taken on the packed
  // bf16 words (absMax2: exact; the zeros past the block change nothing).
  const u32(*words)[64] = reinterpret_cast<const u32(*)[64]>(groupedSmem);
  __shared__ u32 quarterAmax[4][64];
  const int p = threadIdx.x % 64, q = threadIdx.x / 64, r0 = 32 * q;
  const bool valid = 2 * p < validCols; // validCols is even
  // MXFP8: a quarter of the rows is one 32 x 1 block of each column.
  u32 acc = 0u;
  if (BlockAmax) {
    TE_UNROLL
    for (int r = r0; r < r0 + 32; ++r)
      acc = absMax2<false>(acc, words[r][p]);
  }
  if (Block) {
    quarterAmax[q][p] = acc;
    __syncthreads();
  }
  if (Delayed) // the block's amax into the expert's state
    ctaAmaxToExpert(fmaxf(bf16Lo(acc), bf16Hi(acc)), amaxRecord, b.expert);
  if (valid) {
    u32 *rowLo = reinterpret_cast<u32 *>(rowsOut + 2 * p * Smem::kOutRow);
    u32 *rowHi = reinterpret_cast<u32 *>(rowsOut + (2 * p + 1) * Smem::kOutRow);
    if (Block || Tensor) {
      float sLo, sHi;
      if (Tensor) {
        // The expert's scale, as the dense per-tensor cast computes it (or
        // its state's).
        sLo = sHi = Delayed
                        ? expertAmax[b.expert]
                        : fp8CurrentScale<F, Pow2>(expertAmax[b.expert], eps);
      } else {
        u32 both = absMax2<false>(
            absMax2<false>(quarterAmax[0][p], quarterAmax[1][p]),
            absMax2<false>(quarterAmax[2][p], quarterAmax[3][p]));
        sLo = fp8BlockScale(bitsToFloat(both << 16), F, Pow2, eps,
                            SourceType::BF16);
        sHi = fp8BlockScale(bitsToFloat(both & 0xFFFF0000u), F, Pow2, eps,
                            SourceType::BF16);
      }
      if (!Fp8) {
        // The values: both columns of rows r and r + 1 through FP8 and
        // back, then each column's two rows into one word.
        roundTripColumnPair<F>(words, p, r0, sLo, sHi, fp8BlockScaleInv(sLo),
                               fp8BlockScaleInv(sHi), rowLo, rowHi);
      }
      TE_UNROLL
      for (int r = r0; r < r0 + 32 && Fp8; r += 4) {
        u32 w[4] = {words[r][p], words[r + 1][p], words[r + 2][p],
                    words[r + 3][p]};
        rowLo[r / 4] =
            encodeFp8x4<F>(bitsToFloat(w[0] << 16), bitsToFloat(w[1] << 16),
                           bitsToFloat(w[2] << 16), bitsToFloat(w[3] << 16),
                           sLo, sLo, sLo, sLo);
        rowHi[r / 4] = encodeFp8x4<F>(
            bitsToFloat(w[0] & 0xFFFF0000u), bitsToFloat(w[1] & 0xFFFF0000u),
            bitsToFloat(w[2] & 0xFFFF0000u), bitsToFloat(w[3] & 0xFFFF0000u),
            sHi, sHi, sHi, sHi);
      }
      if (Fp8 && q == 0) {
        float *sc = scaleInv + block * ((cols + 3) / 4 * 4) + c0 + 2 * p;
        sc[0] = fp8BlockScaleInv(sLo);
        sc[1] = fp8BlockScaleInv(sHi);
      }
    } else if (Out == GroupedColumns::Nvfp4Values) {
      // The expert alone: its rows padded to whole 16-row blocks, its
      // columnwise data [C][padded] (SR element index c · padded + row).
      const float a = expertAmax[b.expert];
      const float sEnc = nvfp4GlobalEncodeScale(a);
      const float sDec = nvfp4GlobalDecodeScale(sEnc);
      const i64 local = b.firstRow - b.expertFirst + r0;
      const i64 padded = (b.expertRows + 15) / 16 * 16;
      TE_UNROLL
      for (int j = 0; j < 2; ++j) {
        u32 *lo = rowLo + (r0 + 16 * j) / 2, *hi = rowHi + (r0 + 16 * j) / 2;
        if (local + 16 * j >= padded) { // past the expert's padded rows
          TE_UNROLL
          for (int i = 0; i < 8; ++i)
            lo[i] = hi[i] = 0u;
          continue;
        }
        const u64 first = u64(local + 16 * j);
        float v[16];
        columnRun16<Rht>(&words[r0 + 16 * j], p, false, v);
        nvfp4ColumnBlock<Stochastic>(v, sEnc, sDec, a, seed, offset,
                                     u64(c0 + 2 * p) * u64(padded) + first, lo);
        columnRun16<Rht>(&words[r0 + 16 * j], p, true, v);
        nvfp4ColumnBlock<Stochastic>(v, sEnc, sDec, a, seed, offset,
                                     u64(c0 + 2 * p + 1) * u64(padded) + first,
                                     hi);
      }
    } else if (Out == GroupedColumns::Mxfp8Values) {
      const u8 eLo = mxfp8BlockExponent(bf16Lo(acc), F);
      const u8 eHi = mxfp8BlockExponent(bf16Hi(acc), F);
      const float mLo = e8m0ReciprocalScale(eLo),
                  mHi = e8m0ReciprocalScale(eHi);
      roundTripColumnPair<F>(words, p, r0, mLo, mHi, decodeE8M0(eLo),
                             decodeE8M0(eHi), rowLo, rowHi);
    } else {
      // Rows r and r + 1 of each column into one word: a byte permutation.
      TE_UNROLL
      for (int r = r0; r < r0 + 32; r += 2) {
        u32 upper = words[r][p], lower = words[r + 1][p];
        rowLo[r / 2] = __byte_perm(upper, lower, 0x5410);
        rowHi[r / 2] = __byte_perm(upper, lower, 0x7632);
      }
    }
  }
  __syncthreads();
  // Whole output rows: 16 bytes a thread, a warp's stores contiguous.
  constexpr int kChunks = 128 * (Fp8 ? 1 : 2) / 16; // per output row
  const i64 width = Fp8 ? 1 : 2;
  unsigned char *dst = static_cast<unsigned char *>(out);
  for (int i = threadIdx.x; i < validCols * kChunks;
       i += kGroupedQuantizeThreads) {
    int cc = i / kChunks, chunk = i % kChunks;
    const u32 *src =
        reinterpret_cast<const u32 *>(rowsOut + cc * Smem::kOutRow) + chunk * 4;
    *reinterpret_cast<uint4 *>(
        dst + ((c0 + cc) * capacity + block * 128) * width + chunk * 16) =
        make_uint4(src[0], src[1], src[2], src[3]);
  }
  // The bias gradient: each column of the pair added in row order (the
  // reference's sum), by the last quarter's threads once their stores are
  // issued: the chain of adds is the CTA's longest, and no barrier waits
  // for it.
  if (partial && q == 3 && valid) {
    float lo = 0.0f, hi = 0.0f;
    for (int r = 0; r < b.rows; ++r) {
      u32 w = words[r][p];
      lo = lo + bitsToFloat(w << 16);
      hi = hi + bitsToFloat(w & 0xFFFF0000u);
    }
    float *out = partial + block * cols + c0 + 2 * p;
    out[0] = lo;
    out[1] = hi;
  }
}

/// The amax pass of an NVFP4 operand quantized columnwise with the random
/// Hadamard transform: max |RHT(run)| over every 16-row run of every column
/// of each expert's rows (runs restart at the expert's first row; its last
/// run padded with zeros; the bf16-rounded outputs, as the tensor scale of
/// the expert quantized alone takes them), max-accumulated into amax[G]
/// (zeroed first). The block pass's grid: one CTA of 256 threads per
/// (128-row block of the capacity, 128 columns), each thread a column pair
/// and 32 rows read straight from global memory (a warp's loads of one row
/// are 128 contiguous bytes).
__device__ __forceinline__ void groupedRhtColumnAmax(const u16 *in, i64 mTotal,
                                                     i64 cols,
                                                     const long long *splits,
                                                     int groups, float *amax) {
  const i64 c0 = i64(blockIdx.y) * 128;
  const GroupedBlock b = thisGroupedBlock(splits, groups, mTotal);
  if (b.rows == 0)
    return;
  const int p = threadIdx.x % 64, q = threadIdx.x / 64, r0 = 32 * q;
  float a = 0.0f;
  if (c0 + 2 * p < cols && r0 < b.rows) {
    u32 rows[32][1]; // this thread's word of each of its 32 rows
    const u32 *src =
        reinterpret_cast<const u32 *>(in + b.firstRow * cols + c0) + p;
    TE_UNROLL
    for (int i = 0; i < 32; ++i)
      rows[i][0] = r0 + i < b.rows ? src[(r0 + i) * (cols / 2)] : 0u;
    TE_UNROLL
    for (int j = 0; j < 2; ++j)
      for (int h = 0; h < 2; ++h) {
        float v[16];
        columnRun16<true>(&rows[16 * j], 0, h == 1, v);
        a = fmaxf(a, runAmax16(v));
      }
  }
  ctaAmaxToExpert(a, amax, b.expert);
}

/// The bias gradient of each expert, [G, C] f32: the sum of its blocks'
/// partial sums in order (+0 for an expert with no rows). One thread per
/// (expert, column). Launched to overlap the quantize kernel
/// (LaunchOrder.cuh): it finds its expert's blocks from the split sizes,
/// which that kernel only reads, then waits for the partials.
__device__ __forceinline__ void groupedBiasGrad(const float *partial,
                                                i64 mTotal, i64 cols,
                                                const long long *splits,
                                                int groups, float *db) {
  i64 i = i64(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= i64(groups) * cols)
    return;
  int g = int(i / cols);
  i64 col = i % cols;
  i64 rows = 0, blocks = 0, first = 0, count = 0;
  for (int h = 0; h <= g; ++h) {
    long long m = clampedSplit(splits[h], rows, mTotal);
    first = blocks;
    count = (m + 127) / 128;
    rows += m;
    blocks += count;
  }
  waitForPredecessor();
  db[i] = orderedStridedSum(partial + first * cols + col, count, cols);
}

} // namespace dev
} // namespace te

#endif // TE_DEVICE_GROUPEDQUANTIZEKERNEL_CUH
