//===- te/device/GroupedTensorQuantize.cuh - per-expert tensor scale -*- CUDA
//-*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Rowwise per-tensor FP8 (current scaling) of an MoE layer's operands with
// one amax per expert (docs/Numerics.md §7.4): expert g's rows are scaled
// as if they were their own tensor. The rows are the tokens [M_total, C]
// sorted by expert (the split sizes read on the device, clamped as every
// grouped kernel clamps them) or the stacked weight [G·N, C] (N rows per
// expert). Two launches:
//   1. groupedRowsAmax: max |x| of each expert's rows into amax[G] (zeroed
//      by the plan first);
//   2. groupedRowsQuantizeFp8: each row's codes by its expert's scale
//      (compute_scale_from_amax, as the dense per-tensor cast), each
//      expert's scale_inv into scaleInv[G], and the expert's scale_inv
//      repeated over the block-scale layout the block-scaled grouped GEMM
//      reads (te/device/gemm/GroupedGemmSm90.cuh): 1x128 blocks of the
//      tokens ([ceil(C/128)][roundup(M_total, 4)]) or 128x128 tiles of the
//      stack ([G][ceil(N/128)][roundup(ceil(C/128), 4)]). So that GEMM
//      computes each expert's per-tensor product, promoting every 128-K
//      block in fp32 as it does for block scales.
// NVFP4's tensor scale is each expert's too: groupedRowsNvfp4Values writes
// each expert's rows quantized and dequantized to bf16 for the BF16 GEMM
// (Hopper has no FP4 MMA), stochastically rounded where the scheme says.
// Padding rows past the experts' get zero codes and zero scales. Each warp
// takes a contiguous run of rows (16-byte loads, C a multiple of 8), so
// most runs lie within one expert and the amax needs one atomic per run
// and expert; the tokens' scale columns are written a row per lane
// (coalesced: a row's 1x128 scales are C/128 floats a block row apart).
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_GROUPEDTENSORQUANTIZE_CUH
#define TE_DEVICE_GROUPEDTENSORQUANTIZE_CUH

#include "te/device/Fp4.cuh"
#include "te/device/Fp8.cuh"
#include "te/device/GroupedSplits.cuh"
#include "te/device/Philox.cuh"
#include "te/device/QuantizeCommon.cuh"
#include "te/device/Scales.cuh"

namespace te {
namespace dev {

/// Where the block-scaled GEMM reads an operand's scales.
enum class GroupedScaleLayout {
  TokenBlocks, ///< 1x128 blocks of the tokens: [ceil(C/128)][roundup(M, 4)]
  WeightTiles  ///< 128x128 tiles of the stack: [G][ceil(N/128)][roundup(..)]
};

/// The end row of each expert (exclusive), in shared memory: the clamped
/// split sizes summed, or `rowsPerExpert` each when `splits` is null.
template <int Groups>
__device__ __forceinline__ void expertEnds(long long (&end)[Groups],
                                           const long long *splits, i64 rows,
                                           i64 rowsPerExpert) {
  if (threadIdx.x == 0) {
    long long before = 0;
    for (int g = 0; g < Groups; ++g) {
      before += splits ? clampedSplit(splits[g], before, rows) : rowsPerExpert;
      end[g] = before;
    }
  }
  __syncthreads();
}

/// The expert of row r (the first whose end lies past r), or -1 past the
/// experts' rows.
template <int Groups>
__device__ __forceinline__ int expertOfRow(const long long (&end)[Groups],
                                           i64 r) {
  int lo = 0, hi = Groups;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (r < end[mid])
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo < Groups ? lo : -1;
}

/// This warp's contiguous run of `rows` rows: [first, last).
__device__ __forceinline__ void warpRows(i64 rows, i64 &first, i64 &last) {
  const i64 warps = i64(gridDim.x) * (blockDim.x / 32);
  const i64 warp = i64(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const i64 per = (rows + warps - 1) / warps;
  first = warp * per < rows ? warp * per : rows;
  last = first + per < rows ? first + per : rows;
}

/// max-accumulates the CTA's largest `a` (every thread calls it; a
/// non-negative amax, NaN never) into amax[expert], one atomic per CTA.
__device__ __forceinline__ void ctaAmaxToExpert(float a, float *amax,
                                                int expert) {
  __shared__ float warpAmax[32];
  TE_UNROLL
  for (int d = 16; d > 0; d /= 2)
    a = fmaxf(a, __shfl_xor_sync(0xFFFFFFFFu, a, d));
  if (threadIdx.x % 32 == 0)
    warpAmax[threadIdx.x / 32] = a;
  __syncthreads();
  if (threadIdx.x == 0) {
    float m = 0.0f;
    for (int w = 0; w < int(blockDim.x / 32); ++w)
      m = fmaxf(m, warpAmax[w]);
    atomicMax(reinterpret_cast<unsigned *>(amax + expert), floatToBits(m));
  }
}

/// absMax2 over the four words of a 16-byte load.
__device__ __forceinline__ u32 absMax4(u32 acc, const U32x4 &v) {
  acc = absMax2<false>(acc, v.x);
  acc = absMax2<false>(acc, v.y);
  acc = absMax2<false>(acc, v.z);
  return absMax2<false>(acc, v.w);
}

/// Launch 1: amax[g] = max |x| over expert g's rows (max-accumulated: the
/// plan zeroes amax first; NaN and packing as the dense amax pre-pass).
template <int Groups>
__device__ __forceinline__ void
groupedRowsAmax(const u16 *in, i64 rows, i64 cols, const long long *splits,
                i64 rowsPerExpert, float *amax) {
  __shared__ long long end[Groups];
  expertEnds(end, splits, rows, rowsPerExpert);
  i64 first, last;
  warpRows(end[Groups - 1], first, last);
  const int lane = threadIdx.x % 32;
  const i64 chunks = cols / 8;
  int expert = first < last ? expertOfRow(end, first) : -1;
  u32 acc = 0u;
  // Flushes the run's amax into its expert's (every lane takes part).
  auto flush = [&]() {
    float a = fmaxf(bf16Lo(acc), bf16Hi(acc));
    TE_UNROLL
    for (int d = 16; d > 0; d /= 2)
      a = fmaxf(a, __shfl_xor_sync(0xFFFFFFFFu, a, d));
    if (lane == 0)
      atomicMax(reinterpret_cast<unsigned *>(amax + expert), floatToBits(a));
    acc = 0u;
  };
  for (i64 r = first; r < last; ++r) {
    if (r >= end[expert]) { // the next expert with rows
      flush();
      expert = expertOfRow(end, r);
    }
    const u16 *row = in + r * cols;
    i64 c = lane;
    for (; c + 96 < chunks; c += 128) {
      U32x4 v[4];
      TE_UNROLL
      for (int u = 0; u < 4; ++u)
        v[u] = loadGlobal16(row + 8 * (c + 32 * u));
      TE_UNROLL
      for (int u = 0; u < 4; ++u)
        acc = absMax4(acc, v[u]);
    }
    for (; c < chunks; c += 32) {
      U32x4 v = loadGlobal16(row + 8 * c);
      acc = absMax4(acc, v);
    }
  }
  if (first < last)
    flush();
}

/// The eight bf16 values of a 16-byte load, each encoded as fl(v · scale).
template <Fp8Format F>
__device__ __forceinline__ U32x2 encodeFp8x8(const U32x4 &v, float scale) {
  U32x2 o;
  o.x = encodeFp8x4<F>(bf16Lo(v.x), bf16Hi(v.x), bf16Lo(v.y), bf16Hi(v.y),
                       scale, scale, scale, scale);
  o.y = encodeFp8x4<F>(bf16Lo(v.z), bf16Hi(v.z), bf16Lo(v.w), bf16Hi(v.w),
                       scale, scale, scale, scale);
  return o;
}

/// The two columns of a bf16 pair word through FP8 and back: each encoded
/// as fl(v · mult) by its column's multiplier, decoded as fl(code · factor)
/// and rounded to bf16 (the formulas of the tile quantize and the
/// dequantize kernels). MXFP8: mult 2^(127-E), factor 2^(E-127) of the
/// block exponent; block or per-tensor FP8: the scale and its scale_inv.
template <Fp8Format F>
__device__ __forceinline__ u32 fp8RoundTrip2(u32 pair, float multLo,
                                             float multHi, float factorLo,
                                             float factorHi) {
  u32 codes =
      encodeFp8x2<F>(mulRn(bf16Lo(pair), multLo), mulRn(bf16Hi(pair), multHi));
  float lo, hi;
  decodeFp8x2<F>(u16(codes), lo, hi);
  return floatToBF16x2(mulRn(lo, factorLo), mulRn(hi, factorHi));
}

/// The eight bf16 values of a 16-byte load through FP8 and back by one
/// scale (fp8RoundTrip2): the values the codes encodeFp8x8 gives dequantize
/// to, as eight bf16 values.
template <Fp8Format F>
__device__ __forceinline__ U32x4 roundTripFp8x8(const U32x4 &v, float scale,
                                                float scaleInv) {
  return U32x4{fp8RoundTrip2<F>(v.x, scale, scale, scaleInv, scaleInv),
               fp8RoundTrip2<F>(v.y, scale, scale, scaleInv, scaleInv),
               fp8RoundTrip2<F>(v.z, scale, scale, scaleInv, scaleInv),
               fp8RoundTrip2<F>(v.w, scale, scale, scaleInv, scaleInv)};
}

/// Launch 2: codes [rows, C] (row-major, as the input), scaleInv[G], and
/// each expert's scale_inv over `blockScales` in `Layout` (stride: the
/// layout's row length; for the tokens roundup(rows, 4), whose columns
/// past `rows` get zeros too). With `Values`, instead of all three, the
/// bf16 values [rows, C] the codes dequantize to (roundTripFp8x8), into
/// `codes` - what the BF16 GEMM reads beside another family's operand.
template <Fp8Format F, bool Pow2, GroupedScaleLayout Layout, int Groups,
          bool Delayed = false, bool Values = false>
__device__ __forceinline__ void groupedRowsQuantizeFp8(
    const u16 *in, i64 rows, i64 cols, const long long *splits,
    i64 rowsPerExpert, const float *amax, float eps, u8 *codes, float *scaleInv,
    float *blockScales, i64 stride, float *amaxRecord = nullptr) {
  __shared__ long long end[Groups];
  expertEnds(end, splits, rows, rowsPerExpert);
  // Expert g's scale: from its amax (current scaling), or with `Delayed`
  // its state's scale as given (amax then holds the scales).
  auto expertScale = [&](int g) {
    return Delayed ? amax[g] : fp8CurrentScale<F, Pow2>(amax[g], eps);
  };
  if (blockIdx.x == 0 && !Values)
    for (int g = threadIdx.x; g < Groups; g += blockDim.x)
      scaleInv[g] = scaleInvFromScale(expertScale(g));
  const bool tokens = Layout == GroupedScaleLayout::TokenBlocks;
  // The tokens' scale columns run to roundup(rows, 4).
  i64 first, last;
  warpRows(tokens && !Values ? stride : rows, first, last);
  const int lane = threadIdx.x % 32;
  const i64 chunks = cols / 8, kBlocks = (cols + 127) / 128;
  if (tokens && !Values) {
    // The run's scale columns, a row per lane: each block row's stores are
    // 32 consecutive floats.
    for (i64 r = first + lane; r < last; r += 32) {
      const int e = expertOfRow(end, r);
      const float s = e >= 0 ? scaleInvFromScale(expertScale(e)) : 0.0f;
      for (i64 kb = 0; kb < kBlocks; ++kb)
        blockScales[kb * stride + r] = s;
    }
  }
  int expert = -2; // not looked up yet
  float scale = 0.0f, sInv = 0.0f;
  // Delayed: the amax of the run's rows of `expert`, recorded into its
  // state's amax (max-accumulated; every lane takes part).
  u32 seen = 0u;
  auto record = [&]() {
    if (!Delayed || expert < 0)
      return;
    float a = fmaxf(bf16Lo(seen), bf16Hi(seen));
    TE_UNROLL
    for (int d = 16; d > 0; d /= 2)
      a = fmaxf(a, __shfl_xor_sync(0xFFFFFFFFu, a, d));
    if (lane == 0)
      atomicMax(reinterpret_cast<unsigned *>(amaxRecord + expert),
                floatToBits(a));
    seen = 0u;
  };
  for (i64 r = first; r < last; ++r) {
    if (expert == -2 || (expert >= 0 && r >= end[expert]) ||
        (expert == -1 && r < end[Groups - 1])) {
      record();
      expert = expertOfRow(end, r);
      scale = expert >= 0 ? expertScale(expert) : 0.0f;
      sInv = expert >= 0 ? scaleInvFromScale(scale) : 0.0f;
    }
    if (!tokens && !Values && expert >= 0 &&
        (r - expert * rowsPerExpert) % 128 == 0) {
      // The first row of one of the expert's 128-row tiles writes the
      // tile's scale row (its padding columns zero).
      float *tile = blockScales + (i64(expert) * ((rowsPerExpert + 127) / 128) +
                                   (r - expert * rowsPerExpert) / 128) *
                                      stride;
      for (i64 kb = lane; kb < stride; kb += 32)
        tile[kb] = kb < kBlocks ? sInv : 0.0f;
    }
    if (r >= rows)
      continue;
    const u16 *row = in + r * cols;
    U32x2 *out = reinterpret_cast<U32x2 *>(codes + r * cols);
    U32x4 *values = reinterpret_cast<U32x4 *>(codes + 2 * r * cols);
    auto load = [&](i64 c) {
      return expert >= 0 ? loadGlobal16(row + 8 * c) : U32x4{0, 0, 0, 0};
    };
    auto store = [&](i64 c, const U32x4 &v) {
      if (Values)
        values[c] = roundTripFp8x8<F>(v, scale, sInv);
      else
        out[c] = encodeFp8x8<F>(v, scale);
    };
    // Four loads in flight before their stores (the stores may alias the
    // input as the compiler sees it, so it would not hoist the loads).
    i64 c = lane;
    for (; c + 96 < chunks; c += 128) {
      U32x4 v[4];
      TE_UNROLL
      for (int u = 0; u < 4; ++u)
        v[u] = load(c + 32 * u);
      TE_UNROLL
      for (int u = 0; u < 4; ++u) {
        if (Delayed)
          seen = absMax4(seen, v[u]);
        store(c + 32 * u, v[u]);
      }
    }
    for (; c < chunks; c += 32) {
      const U32x4 v = load(c);
      if (Delayed)
        seen = absMax4(seen, v);
      store(c, v);
    }
  }
  record();
}

/// Sixteen values, each encoded as fl(v · scale), as 16 bytes.
template <Fp8Format F>
__device__ __forceinline__ U32x4 encodeRun16(const float (&v)[16],
                                             float scale) {
  u32 w[4];
  TE_UNROLL
  for (int q = 0; q < 4; ++q)
    w[q] = encodeFp8x4<F>(v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3],
                          scale, scale, scale, scale);
  return U32x4{w[0], w[1], w[2], w[3]};
}

/// The stack's columnwise copy, which the dgrad reads (dx_g = dy_g W_g
/// contracts each expert's N rows): codes [K, G·N], the transpose of the
/// [G·N, K] stack (expert g's rows become its columns), each by its
/// expert's scale; scaleInv[G]; and the scales over the 128x128 tiles the
/// block-scaled dgrad reads, [ceil(K/128)][stride = roundup(G·N/128, 4)]
/// (padding columns zero). One CTA of 256 threads per 128x128 tile of the
/// stack (N is a multiple of 128, so a tile is one expert's). The tile goes
/// through shared memory as 64 words a row, word w of row n stored at
/// w ^ 4·((n/16) mod 8): the eight lanes that read one word column down
/// eight 16-row groups then hit eight different banks.
/// With `Delayed`, `amax` holds each expert's scale (its delayed-scaling
/// state's) and each tile's amax is recorded into amaxRecord[expert].
template <Fp8Format F, bool Pow2, bool Delayed = false>
__device__ __forceinline__ void
groupedStackQuantizeTransposed(const u16 *in, i64 rows, i64 cols,
                               i64 rowsPerExpert, const float *amax, float eps,
                               u8 *codes, float *scaleInv, float *blockScales,
                               i64 stride, float *amaxRecord = nullptr) {
  __shared__ __align__(16) u32 tile[128][64];
  const i64 r0 = i64(blockIdx.x) * 128, k0 = i64(blockIdx.y) * 128;
  const i64 ld = rows; // G·N, the codes' row length
  const int groups = int(rows / rowsPerExpert);
  const int expert = int(r0 / rowsPerExpert);
  auto expertScale = [&](int g) {
    return Delayed ? amax[g] : fp8CurrentScale<F, Pow2>(amax[g], eps);
  };
  const float scale = expertScale(expert);
  if (blockIdx.x == 0 && blockIdx.y == 0)
    for (int g = threadIdx.x; g < groups; g += blockDim.x)
      scaleInv[g] = scaleInvFromScale(expertScale(g));
  if (threadIdx.x == 0)
    blockScales[blockIdx.y * stride + blockIdx.x] = scaleInvFromScale(scale);
  if (blockIdx.x == 0) // the padding columns of this tile row
    for (i64 c = ld / 128 + threadIdx.x; c < stride; c += blockDim.x)
      blockScales[blockIdx.y * stride + c] = 0.0f;
  // 16 bytes (4 words) a thread and step; columns past K are zero.
  u32 seen = 0u;
  for (int i = threadIdx.x; i < 128 * 16; i += blockDim.x) {
    int n = i / 16, w = 4 * (i % 16);
    i64 k = k0 + 2 * w;
    U32x4 v =
        k < cols ? loadGlobal16(in + (r0 + n) * cols + k) : U32x4{0, 0, 0, 0};
    if (Delayed)
      seen = absMax4(seen, v);
    *reinterpret_cast<U32x4 *>(&tile[n][w ^ (4 * ((n / 16) % 8))]) = v;
  }
  if (Delayed) // (its barrier also orders the tile's stores)
    ctaAmaxToExpert(fmaxf(bf16Lo(seen), bf16Hi(seen)), amaxRecord, expert);
  __syncthreads();
  // A task: word column kp (output rows k0 + 2kp and + 1) of 16-row group
  // j: 16 codes a row, stored as 16 bytes. Lanes: j = lane % 8, so eight
  // lanes write one 128-byte output row.
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int j = lane % 8;
  for (int t = 0; t < 2; ++t) {
    const int kp = 4 * (warp + 8 * t) + lane / 8;
    const i64 k = k0 + 2 * kp;
    if (k >= cols)
      continue;
    float lo[16], hi[16];
    TE_UNROLL
    for (int i = 0; i < 16; ++i) {
      u32 word = tile[16 * j + i][kp ^ (4 * j)];
      lo[i] = bf16Lo(word);
      hi[i] = bf16Hi(word);
    }
    *reinterpret_cast<U32x4 *>(codes + k * ld + r0 + 16 * j) =
        encodeRun16<F>(lo, scale);
    *reinterpret_cast<U32x4 *>(codes + (k + 1) * ld + r0 + 16 * j) =
        encodeRun16<F>(hi, scale);
  }
}

/// Two elements' E2M1 codes as one packed byte (the lower index in the low
/// nibble): each e2m1(fl(v · enc)), rounded to nearest, or with `Stochastic`
/// by its random byte (bits 0-7 of `rLo`, `rHi`).
template <bool Stochastic>
__device__ __forceinline__ u32 nvfp4Encode2(float lo, float hi, float encLo,
                                            float encHi, u32 rLo, u32 rHi) {
  const float a = mulRn(lo, encLo), b = mulRn(hi, encHi);
  return Stochastic ? packE2M1(encodeE2M1Stochastic(a, rLo),
                               encodeE2M1Stochastic(b, rHi))
                    : encodeE2M1x2(a, b);
}

/// Two elements through NVFP4 and back as one bf16 pair word: each encoded
/// (nvfp4Encode2), decoded as fl(e2m1 · dec) and rounded to bf16: the
/// dequantize kernel's values of the quantized pair.
template <bool Stochastic>
__device__ __forceinline__ u32 nvfp4RoundTrip2(float lo, float hi, float encLo,
                                               float encHi, float decLo,
                                               float decHi, u32 rLo, u32 rHi) {
  const u32 codes = nvfp4Encode2<Stochastic>(lo, hi, encLo, encHi, rLo, rHi);
  // The two codes as decodeE2M1x2 takes them (bits 0-3 and 8-11).
  float dl, dh;
  decodeE2M1x2((codes & 0xFu) | ((codes & 0xF0u) << 4), dl, dh);
  return floatToBF16x2(mulRn(dl, decLo), mulRn(dh, decHi));
}

/// The 8 words of 16 consecutive bf16 values of a row (two 16-byte loads).
__device__ __forceinline__ void wordsOf16(const U32x4 (&v)[2], u32 (&w)[8]) {
  const u32 t[8] = {v[0].x, v[0].y, v[0].z, v[0].w,
                    v[1].x, v[1].y, v[1].z, v[1].w};
  TE_UNROLL
  for (int i = 0; i < 8; ++i)
    w[i] = t[i];
}

/// How an NVFP4 operand of a grouped GEMM is blocked (docs/Numerics.md
/// §6.3): 1x16 along each row, 16x16 tiles (the same values in both
/// directions), or 16x1 down each column (the stack's columnwise blocks,
/// which the dgrad reads).
enum class Nvfp4Blocks { Rows, Tiles, Columns };

/// NVFP4 with one tensor scale per expert, as the BF16 grouped GEMM reads
/// it on Hopper (no FP4 MMA): out [rows, C] bf16 holds each expert's rows
/// quantized as their own tensor (1x16 blocks, or for the stack, whose
/// experts' rows are multiples of 16, 16x16 or 16x1 blocks; the tensor
/// scale from amax[g], groupedRowsAmax's) and dequantized - the values the
/// dequantize kernel gives for the expert quantized alone, in the stack's
/// row-major layout whichever direction the blocks follow. With
/// `Stochastic` (1x16 and 16x16 blocks), element (r, c) of expert e is
/// rounded by the random byte of its index in the expert's own rowwise
/// data, (r - first row of e) · C + c, under (seed, offset): the expert
/// quantized alone (docs/Numerics.md §6.5, §7.4).
/// Padding rows are zeros. Each warp takes a contiguous run of rows (of
/// 16-row bands for 16x16 and 16x1 blocks), each lane 16 columns at a time
/// (C a multiple of 16).
/// With `Codes` (1x16 and 16x16 blocks) the quantized data itself, as the
/// GEMM engine's NVFP4 kernel reads it: `out` the packed E2M1 codes [rows,
/// C/2] (the even column in the low nibble) and `scales` the E4M3 block
/// scales [rows, C/16] (a 16x16 tile's on each of its rows); padding rows
/// get zero codes and scales.
template <int Groups, Nvfp4Blocks Blocks, bool Stochastic, bool Codes = false>
__device__ __forceinline__ void
groupedRowsNvfp4Values(const u16 *in, i64 rows, i64 cols,
                       const long long *splits, i64 rowsPerExpert,
                       const float *amax, void *out, u64 seed, u64 offset,
                       u8 *scales = nullptr) {
  static_assert(!(Stochastic && Blocks == Nvfp4Blocks::Columns),
                "column blocks round to nearest");
  static_assert(!(Codes && Blocks == Nvfp4Blocks::Columns),
                "codes are written rowwise (1x16 or 16x16 blocks)");
  __shared__ long long end[Groups];
  expertEnds(end, splits, rows, rowsPerExpert);
  constexpr int kBand = Blocks == Nvfp4Blocks::Rows ? 1 : 16;
  i64 first, last;
  warpRows(rows / kBand, first, last);
  const int lane = threadIdx.x % 32;
  const i64 blocks = cols / 16;
  auto load = [&](i64 r, i64 b, bool live, U32x4(&v)[2]) {
    const u16 *p = in + r * cols + 16 * b;
    v[0] = live ? loadGlobal16(p) : U32x4{0, 0, 0, 0};
    v[1] = live ? loadGlobal16(p + 8) : U32x4{0, 0, 0, 0};
  };
  auto store = [&](i64 r, i64 b, const u32(&w)[8]) {
    U32x4 *dst =
        reinterpret_cast<U32x4 *>(static_cast<u16 *>(out) + r * cols + 16 * b);
    dst[0] = U32x4{w[0], w[1], w[2], w[3]};
    dst[1] = U32x4{w[4], w[5], w[6], w[7]};
  };
  for (i64 band = first; band < last; ++band) {
    const i64 r0 = band * kBand;
    const int e = expertOfRow(end, r0);
    const float a = e >= 0 ? amax[e] : 0.0f;
    const float sEnc = nvfp4GlobalEncodeScale(a);
    const float sDec = nvfp4GlobalDecodeScale(sEnc);
    const i64 expertFirst = e > 0 ? end[e - 1] : 0;
    if constexpr (Blocks == Nvfp4Blocks::Columns) {
      for (i64 b = lane; b < blocks; b += 32) {
        U32x4 v[2];
        u32 w[8], o[8];
        // Each of the 16 columns its own block down the band's rows.
        float colAmax[16] = {};
        for (int i = 0; i < 16; ++i) {
          load(r0 + i, b, e >= 0, v);
          wordsOf16(v, w);
          TE_UNROLL
          for (int j = 0; j < 8; ++j) {
            colAmax[2 * j] = amaxAccumulate(colAmax[2 * j], bf16Lo(w[j]));
            colAmax[2 * j + 1] =
                amaxAccumulate(colAmax[2 * j + 1], bf16Hi(w[j]));
          }
        }
        float enc[16], dec[16];
        TE_UNROLL
        for (int j = 0; j < 16; ++j) {
          const u8 sB = nvfp4BlockScale(colAmax[j], sEnc);
          enc[j] = nvfp4BlockEncodeFactor(sB, sDec);
          dec[j] = nvfp4DequantFactor(sB, a);
        }
        for (int i = 0; i < 16; ++i) {
          load(r0 + i, b, e >= 0, v);
          wordsOf16(v, w);
          TE_UNROLL
          for (int j = 0; j < 8; ++j)
            o[j] = nvfp4RoundTrip2<false>(bf16Lo(w[j]), bf16Hi(w[j]),
                                          enc[2 * j], enc[2 * j + 1],
                                          dec[2 * j], dec[2 * j + 1], 0u, 0u);
          store(r0 + i, b, o);
        }
      }
      continue;
    }
    // A block's rows stay in registers from its amax to its encode. 16x16
    // tiles: the two lanes of a pair share a block, rows 0-7 and 8-15 each
    // (64 words a lane), their amaxes combined by a shuffle; loading the
    // rows again instead missed L2 (the warps in flight touch more than it
    // holds). 1x16 rows: a lane a block. The trip count is the warp's, so
    // every lane reaches the shuffle.
    constexpr int kPair = kBand == 16 ? 2 : 1, kHeld = kBand / kPair;
    const i64 rh = r0 + (lane % kPair) * kHeld;
    for (i64 b0 = 0; b0 < blocks; b0 += 32 / kPair) {
      const i64 b = b0 + lane / kPair;
      const bool live = b < blocks; // both lanes of a pair alike
      U32x4 held[kHeld][2];
      u32 acc = 0u;
      TE_UNROLL
      for (int i = 0; i < kHeld; ++i) {
        load(rh + i, b, live && e >= 0, held[i]);
        acc = absMax4(absMax4(acc, held[i][0]), held[i][1]);
      }
      if (kPair == 2)
        acc = absMax2<false>(acc, __shfl_xor_sync(0xFFFFFFFFu, acc, 1));
      if (!live)
        continue;
      const u8 sB = nvfp4BlockScale(fmaxf(bf16Lo(acc), bf16Hi(acc)), sEnc);
      const float enc = nvfp4BlockEncodeFactor(sB, sDec);
      const float dec = nvfp4DequantFactor(sB, a);
      TE_UNROLL
      for (int i = 0; i < kHeld; ++i) {
        const i64 r = rh + i;
        u32 w[8], o[8];
        wordsOf16(held[i], w);
        Philox4x32 rnd{};
        if (Stochastic)
          rnd = srRandomBlock(seed, offset,
                              u64(((r - expertFirst) * cols + 16 * b) / 16));
        if constexpr (Codes) {
          u32 packed[2] = {0u, 0u};
          TE_UNROLL
          for (int j = 0; j < 8; ++j) {
            const u32 word = philoxWord(rnd, u32(j / 2)) >> (16 * (j % 2));
            packed[j / 4] |=
                nvfp4Encode2<Stochastic>(bf16Lo(w[j]), bf16Hi(w[j]), enc, enc,
                                         word, word >> 8)
                << (8 * (j % 4));
          }
          *reinterpret_cast<uint2 *>(static_cast<u8 *>(out) + r * (cols / 2) +
                                     8 * b) = make_uint2(packed[0], packed[1]);
          scales[r * (cols / 16) + b] = sB;
          continue;
        }
        TE_UNROLL
        for (int j = 0; j < 8; ++j) {
          // Elements 2j and 2j + 1: word j / 2, bytes 2 (j % 2) and + 1.
          const u32 word = philoxWord(rnd, u32(j / 2)) >> (16 * (j % 2));
          o[j] = nvfp4RoundTrip2<Stochastic>(bf16Lo(w[j]), bf16Hi(w[j]), enc,
                                             enc, dec, dec, word, word >> 8);
        }
        store(r, b, o);
      }
    }
  }
}

} // namespace dev
} // namespace te

#endif // TE_DEVICE_GROUPEDTENSORQUANTIZE_CUH
