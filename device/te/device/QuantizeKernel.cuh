//===- te/device/QuantizeKernel.cuh - Fused quantize kernel -----*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The body of every generated quantize kernel: one CTA of 256 threads owns a
// 128 x 128 tile of a row-major M x K bf16 / f16 / f32 tensor and produces,
// from a single read of it, every requested output (any number of stages, each
// one direction of one scheme, plus bias-gradient partial sums). The code
// generator instantiates quantizeTile<> with the stage types of
// QuantizeStages.cuh; nothing about a scheme is decided at run time.
//
// A tile goes through three phases:
//  1. load: 16-byte read-only global loads (all eight of a thread in flight
//     before the first shared-memory store) into a 32 KB shared tile;
//  2. reduce: amaxes of the 16-element segments the stages need, rowwise
//     (1x16, [128][8]) and/or columnwise (16x1, [8][128]), the tile amax, and
//     the bias-gradient column sums. Every block shape of every scheme (1x16,
//     1x32, 1x128, 16x1, 32x1, 128x1, 16x16, 128x128) is a union of those
//     segments, so one reduction serves every stage;
//  3. emit: each stage reads its block amax from the segment amaxes,
//     computes the scale exactly as the reference does (Scales.cuh), encodes
//     and stores.
//
// The tile, its layout and access helpers are in QuantizeTile.cuh, the
// stages in QuantizeStages.cuh; this file holds the phases (load, reduce),
// quantizeTile itself and the companion kernels (amax pre-passes, the bias
// gradient's finalization).
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_QUANTIZEKERNEL_CUH
#define TE_DEVICE_QUANTIZEKERNEL_CUH

#include "te/device/Hadamard.cuh"
#include "te/device/LaunchOrder.cuh"
#include "te/device/QuantizeStages.cuh"

namespace te {
namespace dev {

//===----------------------------------------------------------------------===//
// The tile kernel
//===----------------------------------------------------------------------===//

/// The elements a tile loads: those of the tensor, and with `Ranged` only
/// those at row-major offsets [lo, hi) (a master shard's,
/// ShardedQuantizeKernel.cuh); the rest load as zero. The source pointer is
/// element `base` (0 for a whole tensor, a master shard's first element;
/// lo unless given, as phase A of master shards loads fewer rows than the
/// shard holds): element f is at index f - base. (The pointer is never
/// moved before the shard: that pointer would point outside its
/// allocation, undefined behaviour the optimizer may exploit.) A tile wholly
/// inside a shard loads unranged with the shard's lo: the whole-tensor load,
/// bounds checks and all.
template <bool Ranged> struct LoadRange {
  i64 lo = 0, hi = 0, base = lo;
  __device__ bool holds(i64 first, int n) const {
    return !Ranged || (first >= lo && first + n <= hi);
  }
  /// The source index of row-major element f.
  __device__ i64 index(i64 f) const { return f - base; }
  /// Whether element f of a source `x` of `Bytes`-byte elements is 16-byte
  /// aligned for every f that is a multiple of 16 / Bytes: where element 0
  /// would be (computed as an integer) is.
  template <int Bytes> __device__ bool vectors(const void *x) const {
    return ((reinterpret_cast<u64>(x) + u64(index(0)) * Bytes) & 15u) == 0;
  }
};

/// Phase 1: the tile into shared memory, zero outside the tensor. Whole,
/// aligned 16-byte chunks are cp.async copies (all eight of a thread in
/// flight at once, no staging registers); edge chunks go through registers.
/// The caller waits (cpAsyncWaitAll) before the barrier.
template <bool Ranged = false>
__device__ __forceinline__ void loadTile16(TileSmem &s, const u16 *x, i64 m,
                                           i64 k, i64 r0, i64 c0, int tid,
                                           LoadRange<Ranged> range = {}) {
  constexpr int kChunksPerRow = kTileCols / 8;
  constexpr int kRowStep = kTileThreads / kChunksPerRow;
  constexpr int kPerThread = kTileRows / kRowStep;
  // A thread's chunks lie in one column, kRowStep rows apart: the offsets
  // and bounds advance by constants (computing each from its row and
  // column was 3 of the NVFP4 quantize's 55 instructions an element).
  const int tr0 = tid / kChunksPerRow, tc = 8 * (tid % kChunksPerRow);
  const i64 c = c0 + tc, rowStride = kRowStep * k;
  const int rowsLeft = tileExtent(m - r0, kTileRows) - tr0;
  const bool vector = k % 8 == 0 && c + 8 <= k && range.template vectors<2>(x);
  i64 f = (r0 + tr0) * k + c;
  const u32 tile = sharedAddress(&s.x[0][0]);
  // Ranged (a master shard's partial tile): rolled, as in loadTileF32.
  constexpr int kUnroll = Ranged ? 1 : kPerThread;
#pragma unroll kUnroll
  for (int i = 0; i < kPerThread; ++i, f += rowStride) {
    int tr = tr0 + i * kRowStep;
    i64 r = r0 + tr;
    if (vector && i * kRowStep < rowsLeft && range.holds(f, 8)) {
      cpAsync16(tile + u32(tr) * u32(sizeof(s.x[0])) +
                    2u * u32(swizzledColumn(tr, tc)),
                x + range.index(f));
    } else {
      u16 *dst = s.at(tr, tc);
      u32 h[8];
      for (int e = 0; e < 8; ++e)
        h[e] = r < m && c + e < k && range.holds(r * k + c + e, 1)
                   ? loadGlobalU16(x + range.index(r * k + c + e))
                   : 0u;
      *reinterpret_cast<U32x4 *>(dst) =
          U32x4{h[0] | h[1] << 16, h[2] | h[3] << 16, h[4] | h[5] << 16,
                h[6] | h[7] << 16};
    }
  }
}

/// Phase 1 for an f32 tensor: the high halves into TileSmem::x, the low
/// halves into `lo`. Warp w owns tile rows w, w + 8, ..., and lane l the
/// l-th 16-byte piece (four columns) of each: every piece of the tile is
/// first copied raw by cp.async (64 KB in flight per CTA, no staging
/// registers) into the row's 512 bytes of the two planes (pieces 0-15 in
/// the high plane's row, 16-31 in the low plane's), one commit group per
/// row; then, row by row as its group lands, each lane reads its own piece
/// back and, after a __syncwarp (the halves overwrite other lanes' pieces),
/// writes its four high and four low halves in place, swizzled. Only the
/// warp reads its rows, so no block barrier is needed before the split;
/// the caller's barrier publishes the tile. Edge and unaligned pieces are
/// read through registers (zero outside the tensor), and with `Ranged`
/// only a master shard's elements load (the rest as zero). Measured against
/// two 16-byte loads per 8 elements, four chunks in flight, on the H100:
/// +3 to +16 points of the copy ceiling, +5 to +16 for master shards
/// (docs/Performance.md).
template <bool Ranged = false>
__device__ __forceinline__ void
loadTileF32(TileSmem &s, TilePlane &lo, const float *x, i64 m, i64 k, i64 r0,
            i64 c0, int tid, LoadRange<Ranged> range = {}) {
  constexpr int kWarps = kTileThreads / 32;
  constexpr int kRowsPerWarp = kTileRows / kWarps;
  static_assert(kTileCols == 4 * 32, "one 16-byte piece of a row per lane");
  int warp = tid / 32, lane = tid % 32, tc = 4 * lane;
  TilePlane &half = lane < 16 ? s.x : lo;
  bool vector = k % 4 == 0 && range.template vectors<4>(x);
  // A ranged load (master shards' split tiles) is rolled: its copies in
  // line made the split tile's code twice as long, and it runs once an SM,
  // cold.
  constexpr int kUnroll = Ranged ? 1 : kRowsPerWarp;
#pragma unroll kUnroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    int tr = i * kWarps + warp;
    i64 r = r0 + tr, c = c0 + tc;
    u32 *piece = reinterpret_cast<u32 *>(&half[tr][0]) + 4 * (lane % 16);
    if (vector && r < m && c + 4 <= k && range.holds(r * k + c, 4)) {
      cpAsync16(piece, x + range.index(r * k + c));
    } else {
      u32 b[4];
      for (int e = 0; e < 4; ++e)
        b[e] = r < m && c + e < k && range.holds(r * k + c + e, 1)
                   ? floatToBits(x[range.index(r * k + c + e)])
                   : 0u;
      *reinterpret_cast<U32x4 *>(piece) = U32x4{b[0], b[1], b[2], b[3]};
    }
    cpAsyncCommit();
  }
  TE_UNROLL
  for (int i = 0; i < kRowsPerWarp; ++i) {
    int tr = i * kWarps + warp;
    cpAsyncWaitPending(kRowsPerWarp - 1 - i);
    U32x4 w = *reinterpret_cast<const U32x4 *>(
        reinterpret_cast<const u32 *>(&half[tr][0]) + 4 * (lane % 16));
    __syncwarp();
    int pc = swizzledColumn(tr, tc);
    *reinterpret_cast<U32x2 *>(&s.x[tr][pc]) =
        U32x2{splitHi(w.x, w.y), splitHi(w.z, w.w)};
    *reinterpret_cast<U32x2 *>(&lo[tr][pc]) =
        U32x2{splitLo(w.x, w.y), splitLo(w.z, w.w)};
  }
}

/// Phase 2: segment amaxes, the tile amax and bias-gradient partial sums
/// (column sums over the tile's 128 rows, in row order: the reference's
/// chunked sum with chunkRows = 128). Amaxes are taken on the packed 16-bit
/// words (absMax2): exact, since widening to FP32 preserves order.
template <SourceType Src, bool RowSegments, bool ColSegments, bool TileAmax,
          bool BiasGrad>
__device__ __forceinline__ void reduceTile(Tile &t, float *biasPartial) {
  constexpr bool F16 = isF16(Src), F32 = Src == SourceType::F32;
  float mine = 0.0f;
  if (RowSegments) {
    forRowTasks<true>(t, [&](int r, int j) {
      float m = 0.0f;
      if (F32) {
        float v[kSegment];
        loadRowSegment<Src>(t, r, j, v);
        TE_UNROLL
        for (int i = 0; i < kSegment; ++i)
          m = amaxAccumulateF32(m, v[i]);
      } else {
        U32x4 a, b;
        loadRowWords(t.s, r, j, a, b);
        u32 w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
        u32 both = absMaxWords<F16, 8>(w);
        m = fmaxf(widenLo<F16>(both), widenHi<F16>(both));
      }
      t.s.rowAmax[r][j] = m;
      mine = fmaxf(mine, m);
    });
  }
  if (ColSegments || (TileAmax && !RowSegments)) {
    forColumnTasks<true>(t, [&](int s, int c) {
      u32 w[kSegment];
      loadColumnWords(t.s, s, c, w);
      float a0 = 0.0f, a1 = 0.0f;
      if (F32) {
        u32 l[kSegment];
        loadColumnWords(*t.lo, s, c, l);
        TE_UNROLL
        for (int i = 0; i < kSegment; ++i) {
          a0 = amaxAccumulateF32(a0, joinLo(w[i], l[i]));
          a1 = amaxAccumulateF32(a1, joinHi(w[i], l[i]));
        }
      } else {
        u32 both = absMaxWords<F16, kSegment>(w);
        a0 = widenLo<F16>(both);
        a1 = widenHi<F16>(both);
      }
      if (ColSegments) {
        t.s.colAmax[s][c] = a0;
        t.s.colAmax[s][c + 1] = a1;
      }
      mine = fmaxf(mine, fmaxf(a0, a1));
    });
  }
  if (TileAmax) {
    TE_UNROLL
    for (int d = 16; d > 0; d /= 2)
      mine = fmaxf(mine, __shfl_xor_sync(0xFFFFFFFFu, mine, d));
    if (t.tid % 32 == 0)
      atomicMax(&t.s.tileAmax, floatToBits(mine));
  }
  if (BiasGrad && t.tid < kTileCols && t.tid < t.cols) {
    float sum = 0.0f;
    for (int r = 0; r < kTileRows; ++r)
      sum = sum + valueAt<Src>(t, r, t.tid);
    biasPartial[(t.r0 / kTileRows) * t.k + t.c0 + t.tid] = sum;
  }
}

/// The top-left corner of tile `tile` of an M x K tensor, column tiles
/// fastest.
__device__ __forceinline__ void tileCorner(i64 tile, i64 k, i64 &r0, i64 &c0) {
  i64 tilesAcross = (k + kTileCols - 1) / kTileCols;
  r0 = tile / tilesAcross * kTileRows;
  c0 = tile % tilesAcross * kTileCols;
}

/// The tile at (r0, c0) loaded into `smem` (and, for f32, the dynamic
/// low-half plane), the tile amax reset, all threads past the barrier:
/// phase 1 of every tile kernel. `range` as in loadTileF32.
template <SourceType Src, bool Ranged = false>
__device__ __forceinline__ Tile loadTileAt(TileSmem &smem, const void *x, i64 m,
                                           i64 k, i64 r0, i64 c0,
                                           LoadRange<Ranged> range = {}) {
  extern __shared__ __align__(16) u8 dynamicSmem[];
  TilePlane *lo = Src == SourceType::F32
                      ? reinterpret_cast<TilePlane *>(dynamicSmem)
                      : nullptr;
  int tid = int(threadIdx.x);
  if (Src == SourceType::F32)
    loadTileF32<Ranged>(smem, *lo, static_cast<const float *>(x), m, k, r0, c0,
                        tid, range);
  else
    loadTile16<Ranged>(smem, static_cast<const u16 *>(x), m, k, r0, c0, tid,
                       range);
  if (tid == 0)
    smem.tileAmax = 0u;
  cpAsyncWaitAll();
  __syncthreads();
  return Tile::at(smem, m, k, r0, c0, tid, lo);
}

/// loadTileAt for the CTA's tile (blockIdx.x).
template <SourceType Src>
__device__ __forceinline__ Tile loadCtaTile(TileSmem &smem, const void *x,
                                            i64 m, i64 k) {
  i64 r0, c0;
  tileCorner(i64(blockIdx.x), k, r0, c0);
  return loadTileAt<Src>(smem, x, m, k, r0, c0);
}

/// Quantizes the tile at (r0, c0) in `smem`: load, reduce, every stage's
/// emit. `args[i]` belongs to the i-th stage; `x` is element `source.base`
/// (LoadRange). `waitForPrepass`: wait for the predecessor launch before
/// the stages emit (below); false where the caller knows that launch
/// writes nothing the stages read (master shards' tile amaxes).
template <SourceType Src, bool BiasGrad, class... Stages>
__device__ __forceinline__ void
quantizeTileIn(TileSmem &smem, const void *x, i64 m, i64 k, i64 r0, i64 c0,
               const StageArgs *args, float *biasPartial,
               LoadRange<false> source = {}, bool waitForPrepass = true) {
  using List = StageList<Stages...>;
  Tile t = loadTileAt<Src>(smem, x, m, k, r0, c0, source);
  reduceTile<Src, List::kNeedsRowSegments, List::kNeedsColSegments,
             List::kNeedsTileAmax, BiasGrad>(t, biasPartial);
  __syncthreads();
  // Launched to overlap an amax pre-pass, the tile is loaded and reduced
  // while that pass ends; the stages read its amax (LaunchOrder.cuh). So a
  // kernel whose predecessor writes x (an optimizer's requantize after its
  // update) must not be launched to overlap it.
  if (waitForPrepass)
    waitForPredecessor();
  List::template emit<Src>(t, args);
}

/// quantizeTileIn with the kernel's own tile memory.
template <SourceType Src, bool BiasGrad, class... Stages>
__device__ __forceinline__ void
quantizeTileAt(const void *x, i64 m, i64 k, i64 r0, i64 c0,
               const StageArgs *args, float *biasPartial) {
  __shared__ TileSmem smem;
  quantizeTileIn<Src, BiasGrad, Stages...>(smem, x, m, k, r0, c0, args,
                                           biasPartial);
}

/// The whole kernel: launch kTileThreads threads and one CTA per 128 x 128
/// tile (blockIdx.x, column tiles fastest), with quantizeDynamicSmem(Src)
/// bytes of dynamic shared memory.
template <SourceType Src, bool BiasGrad, class... Stages>
__device__ __forceinline__ void quantizeTile(const void *x, i64 m, i64 k,
                                             const StageArgs *args,
                                             float *biasPartial) {
  i64 r0, c0;
  tileCorner(i64(blockIdx.x), k, r0, c0);
  quantizeTileAt<Src, BiasGrad, Stages...>(x, m, k, r0, c0, args, biasPartial);
}

//===----------------------------------------------------------------------===//
// Companion kernels
//===----------------------------------------------------------------------===//

/// Amax pre-pass: max |x| over n elements, max-accumulated into *out (which
/// the plan zeroes first). Grid-stride over 16-byte chunks, four in flight.
__device__ __forceinline__ void warpAmaxToGlobal(float a, float *out) {
  TE_UNROLL
  for (int d = 16; d > 0; d /= 2)
    a = fmaxf(a, __shfl_xor_sync(0xFFFFFFFFu, a, d));
  if (threadIdx.x % 32 == 0)
    atomicMax(reinterpret_cast<unsigned *>(out), floatToBits(a));
}

/// The f32 amax pre-pass: 16-byte chunks of four, grid-stride.
__device__ __forceinline__ void tensorAmaxF32(const float *x, i64 n,
                                              float *out) {
  i64 stride = i64(gridDim.x) * blockDim.x;
  i64 tid = i64(blockIdx.x) * blockDim.x + threadIdx.x;
  float a = 0.0f;
  i64 chunks = aligned(x, 16) ? n / 4 : 0;
  for (i64 c = tid; c < chunks; c += stride) {
    U32x4 v = loadGlobal16(x + 4 * c);
    u32 w[4] = {v.x, v.y, v.z, v.w};
    TE_UNROLL
    for (int e = 0; e < 4; ++e)
      a = amaxAccumulateF32(a, bitsToFloat(w[e]));
  }
  for (i64 e = 4 * chunks + tid; e < n; e += stride)
    a = amaxAccumulateF32(a, x[e]);
  warpAmaxToGlobal(a, out);
}

template <SourceType Src>
__device__ __forceinline__ void tensorAmax(const void *input, i64 n,
                                           float *out) {
  if (Src == SourceType::F32) {
    tensorAmaxF32(static_cast<const float *>(input), n, out);
    return;
  }
  constexpr bool F16 = isF16(Src);
  const u16 *x = static_cast<const u16 *>(input);
  i64 stride = i64(gridDim.x) * blockDim.x;
  i64 tid = i64(blockIdx.x) * blockDim.x + threadIdx.x;
  u32 acc = 0u; // packed running max of both halves (absMax2)
  i64 chunks = aligned(x, 16) ? n / 8 : 0;
  i64 c = tid;
  for (; c + 3 * stride < chunks; c += 4 * stride) {
    U32x4 v[4];
    TE_UNROLL
    for (int u = 0; u < 4; ++u)
      v[u] = loadGlobal16(x + 8 * (c + u * stride));
    TE_UNROLL
    for (int u = 0; u < 4; ++u) {
      u32 w[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
      acc = absMax2<F16>(acc, absMaxWords<F16, 4>(w));
    }
  }
  for (; c < chunks; c += stride) {
    U32x4 v = loadGlobal16(x + 8 * c);
    u32 w[4] = {v.x, v.y, v.z, v.w};
    acc = absMax2<F16>(acc, absMaxWords<F16, 4>(w));
  }
  for (i64 e = 8 * chunks + tid; e < n; e += stride)
    acc = absMax2<F16>(acc, u32(loadGlobalU16(x + e)));
  warpAmaxToGlobal(fmaxf(widenLo<F16>(acc), widenHi<F16>(acc)), out);
}

/// max(a, max |y|) over y, the bf16-rounded Hadamard transform of one
/// 16-row column run `v`: what an RHT columnwise stage's tensor scale is
/// taken from.
__device__ __forceinline__ float accumulateRhtAmax(float a, const float *v) {
  float y[16];
  rht16Bf16(v, y);
  TE_UNROLL
  for (int i = 0; i < 16; ++i)
    a = amaxAccumulateF32(a, y[i]);
  return a;
}

/// Amax pre-pass of an RHT columnwise direction: max |x| over the
/// bf16-rounded transform of every 16-row run of every column (M % 16 ==
/// 0), max-accumulated into *out (zeroed by the plan). Consecutive threads
/// take consecutive columns, so each of the 16 row reads is coalesced.
/// With `TensorAmax`, the same read also max-accumulates max |x| of the
/// input itself into *tensorOut (the runs cover every element), the amax
/// another stage of the kernel scales by: one pre-pass instead of two.
template <SourceType Src, bool TensorAmax = false>
__device__ __forceinline__ void rhtColumnAmax(const void *x, i64 m, i64 k,
                                              float *out,
                                              float *tensorOut = nullptr) {
  i64 tasks = (m / 16) * k;
  i64 stride = i64(gridDim.x) * blockDim.x;
  float a = 0.0f, t = 0.0f;
  for (i64 task = i64(blockIdx.x) * blockDim.x + threadIdx.x; task < tasks;
       task += stride) {
    i64 c = task % k, r0 = task / k * 16;
    float v[16];
    TE_UNROLL
    for (int i = 0; i < 16; ++i) {
      i64 at = (r0 + i) * k + c;
      v[i] = Src == SourceType::F32 ? static_cast<const float *>(x)[at]
                                    : widen<isF16(Src)>(loadGlobalU16(
                                          static_cast<const u16 *>(x) + at));
    }
    if (TensorAmax) {
      TE_UNROLL
      for (int i = 0; i < 16; ++i)
        t = amaxAccumulateF32(t, v[i]);
    }
    a = accumulateRhtAmax(a, v);
  }
  warpAmaxToGlobal(a, out);
  if (TensorAmax)
    warpAmaxToGlobal(t, tensorOut);
}

/// Bias gradient: out[c] = sum over chunks of partial[chunk][c], in chunk
/// order from +0 (the reference's total; orderedStridedSum). One thread per
/// column: the order leaves no other parallelism. (Finishing in the tile
/// kernel instead - the last tile of each column strip, found by an atomic
/// ticket after a __threadfence, adds the strip's partials - measured
/// slower: 64.1 against 56.8 us for the whole bias gradient.) Launched to
/// overlap the tile kernel (LaunchOrder.cuh): it waits for the partials.
__device__ __forceinline__ void
biasGradFinalize(const float *partial, i64 chunks, i64 k, float *out) {
  waitForPredecessor();
  i64 c = i64(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c < k)
    out[c] = orderedStridedSum(partial + c, chunks, k);
}

/// The bias gradient alone (no quantize stage), in one launch and one read:
/// CTA b sums a strip of S::kVectors 16-byte column groups, starting at
/// column b x S::kWidth, over all rows. Its S::kThreads threads are
/// S::kLanes lanes of kVectors: in each round a lane sums one 128-row chunk
/// of its group's columns in row order (32 loads in flight), then one
/// thread a column adds the round's chunk sums to the column's total in
/// chunk order - the reference's order (rt::ref::biasGrad), as the tile
/// kernel's partials and biasGradFinalize add. No partial sums go through
/// global memory and nothing waits for a second launch. Needs rows of whole
/// 16-byte groups (k a multiple of 16 / element bytes); the plan decides
/// the strip's shape and where it runs (cg::biasGradStrips, one wave).
/// `Vector`: x is 16-byte aligned, else (a view at an odd element offset)
/// every group is read a byte at a time.
template <SourceType Src, int Vectors, int Threads> struct BiasStrip {
  static constexpr SourceType kSrc = Src;
  static constexpr int kVectors = Vectors, kThreads = Threads;
  static constexpr int kPer = Src == SourceType::F32 ? 4 : 8; // a group's
  static constexpr int kWidth = Vectors * kPer;
  static constexpr int kLanes = Threads / Vectors;
  using ChunkSums = float[kLanes][kWidth];
};
template <bool Vector>
__device__ __forceinline__ U32x4 loadStripGroup(const u8 *p) {
  if (Vector)
    return loadGlobal16(p);
  u32 w[4];
  littleEndianWords16(p, w);
  return U32x4{w[0], w[1], w[2], w[3]};
}
template <class S, bool Vector>
__device__ __forceinline__ void
biasGradStripsOf(const void *x, i64 m, i64 k, float *out,
                 typename S::ChunkSums &chunkSums) {
  constexpr SourceType Src = S::kSrc;
  constexpr bool F32 = Src == SourceType::F32, F16 = isF16(Src);
  constexpr int kPer = S::kPer, kWidth = S::kWidth, kLanes = S::kLanes;
  // Groups in flight a thread; read a byte at a time, fewer (registers).
  constexpr int kBatch = Vector ? 32 : 4;
  const int tid = int(threadIdx.x), lane = tid / S::kVectors,
            group = tid % S::kVectors;
  const i64 c0 = i64(blockIdx.x) * kWidth + group * kPer;
  const i64 chunks = (m + kTileRows - 1) / kTileRows;
  const u8 *base = static_cast<const u8 *>(x);
  const i64 rowBytes = k * (F32 ? 4 : 2);
  float total = 0.0f; // column blockIdx.x * kWidth + tid, for tid < kWidth
  for (i64 round = 0; round * kLanes < chunks; ++round) {
    float acc[kPer];
    TE_UNROLL
    for (int e = 0; e < kPer; ++e)
      acc[e] = 0.0f;
    const i64 q = round * kLanes + lane;
    if (q < chunks && c0 < k) {
      const i64 r0 = q * kTileRows;
      const int rows = tileExtent(m - r0, kTileRows);
      const u8 *p = base + r0 * rowBytes + c0 * (F32 ? 4 : 2);
      for (int r = 0; r < rows; r += kBatch) {
        // Whole batches load unpredicated: with a test per load the
        // compiler interleaved the f32 loads with the adds, two in flight.
        const int n = rows - r < kBatch ? rows - r : kBatch;
        U32x4 v[kBatch];
        if (n == kBatch) {
          TE_UNROLL
          for (int u = 0; u < kBatch; ++u)
            v[u] = loadStripGroup<Vector>(p + (r + u) * rowBytes);
        } else {
          TE_UNROLL
          for (int u = 0; u < kBatch; ++u)
            v[u] = u < n ? loadStripGroup<Vector>(p + (r + u) * rowBytes)
                         : U32x4{0u, 0u, 0u, 0u};
        }
        TE_UNROLL
        for (int u = 0; u < kBatch; ++u) {
          if (u >= n)
            continue;
          float f[kPer];
          if constexpr (F32) {
            u32 w[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
            TE_UNROLL
            for (int e = 0; e < 4; ++e)
              f[e] = bitsToFloat(w[e]);
          } else {
            unpack8<F16>(v[u], f);
          }
          TE_UNROLL
          for (int e = 0; e < kPer; ++e)
            acc[e] = acc[e] + f[e];
        }
      }
    }
    __syncthreads(); // the previous round's sums are read
    TE_UNROLL
    for (int e = 0; e < kPer; ++e)
      chunkSums[lane][group * kPer + e] = acc[e];
    __syncthreads();
    if (tid < kWidth)
      for (int l = 0; l < kLanes && round * kLanes + l < chunks; ++l)
        total = total + chunkSums[l][tid];
  }
  const i64 c = i64(blockIdx.x) * kWidth + tid;
  if (tid < kWidth && c < k)
    out[c] = total;
}
/// Launched with S::kThreads threads, ceil(k / S::kWidth) CTAs.
template <class S>
__device__ __forceinline__ void biasGradStrips(const void *x, i64 m, i64 k,
                                               float *out) {
  __shared__ typename S::ChunkSums chunkSums;
  if (aligned(x, 16))
    biasGradStripsOf<S, true>(x, m, k, out, chunkSums);
  else
    biasGradStripsOf<S, false>(x, m, k, out, chunkSums);
}

} // namespace dev
} // namespace te

#endif // TE_DEVICE_QUANTIZEKERNEL_CUH
