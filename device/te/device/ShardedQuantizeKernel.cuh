//===- te/device/ShardedQuantizeKernel.cuh - Master shards -----*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Quantizing a tensor whose high-precision master is split into R
// contiguous 1-D shards at any element offsets (distributed optimizers):
// rank r holds the row-major elements [lo_r, lo_{r+1}) of the M x K tensor
// and writes exactly their codes into the whole tensor's quantized layout
// (docs/Numerics.md §17). The tile kernel of QuantizeKernel.cuh does the
// work; what changes is where a tile's amaxes come from:
//  - a tile wholly inside one rank's range is quantized as usual;
//  - a tile split between ranks (a partial tile; all lie in the 128-row
//    tile rows that hold a shard boundary) has blocks (the stages' kBlocks)
//    that hold elements of two ranks: shared blocks, whose amaxes need
//    elements other ranks hold. Phase A: each rank loads its part of the
//    rows such blocks lie in (zeros elsewhere) and max-accumulates the
//    segment amaxes of the shared blocks it takes part in, and the tile
//    amax where a stage needs it, into the amax table (zeroed by the
//    plan). Where one process
//    plays every rank they share one table, so the atomics are the
//    reduction over ranks; with one process per GPU each has its own and
//    the plan all-reduces it (max) before phase B. Phase B: each rank
//    reduces its part of the tile as a whole tile is reduced, takes the
//    shared blocks' segment amaxes from the table, so every stage's emit
//    runs unchanged and computes the whole tensor's scales, and stores only
//    its own elements (Span in QuantizeTile.cuh) and the scales of blocks
//    it holds some of (Tile::storesScaleOf).
// Which blocks are shared is decided on the union of the stages' blocks
// (per direction, the tallest and widest), the same for every rank. A
// union block no two ranks share is wholly one rank's, and only that rank
// stores the codes and scales in it, from its own reduction; so the table
// traffic is that of the blocks across the boundaries (MXFP8: the 32-row
// band of the boundary row, not the whole tile).
// The tensor amax (per-tensor FP8, NVFP4) is one more entry of the table,
// reduced by the same step.
//
// Table layout (floats): [0] the tensor amax, [1..3] padding, then one slot
// of kSlotFloats per tile of every boundary tile row, in order: the tile
// amax, padding, the row segment amaxes ([128][8]) and the column segment
// amaxes ([8][128]).
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_SHARDEDQUANTIZEKERNEL_CUH
#define TE_DEVICE_SHARDEDQUANTIZEKERNEL_CUH

#include "te/device/QuantizeKernel.cuh"

namespace te {
namespace dev {

constexpr int kShardTableHeader = 4;
constexpr int kSlotRow = 4;
constexpr int kSlotCol = kSlotRow + kTileRows * kRowSegments;
constexpr int kSlotFloats = kSlotCol + kColSegments * kTileCols;

/// The master shards of one tensor: one by-value kernel parameter of
/// 8-byte words (the plan's Table argument). The amax kernels below run
/// rank `firstRank + blockIdx.y`: one process playing every rank launches R
/// grid rows from rank 0; one process per rank launches one row from its
/// own rank (its pointer then fills every entry of `x`). Phase B's grid is
/// one row of the launch's ranks' tile rows (tileRowStart).
template <int R> struct MasterShards {
  const void *x[R];
  i64 lo[R + 1]; ///< rank r holds [lo[r], lo[r + 1]); lo[R] = M * K
  /// The tile rows an offset splits (at most R - 1), ascending.
  i64 boundaryRows[R];
  i64 boundaryCount;
  /// Phase B's CTAs of rank firstRank + i start at tile row tileRowStart[i]
  /// of its grid (tiles across each); R + 1 entries, ascending. With one
  /// process per rank: 0, then the most tile rows any rank spans.
  i64 tileRowStart[R + 1];
};

/// How much of the tile at (r0, c0) of an M x K tensor lies in the
/// row-major range [lo, hi): any of it, all of it (coverOf on its valid
/// extent).
__device__ __forceinline__ RangeCover tileCover(i64 m, i64 k, i64 r0, i64 c0,
                                                i64 lo, i64 hi) {
  int rows = tileExtent(m - r0, kTileRows),
      cols = tileExtent(k - c0, kTileCols);
  return coverOf(k, lo, hi, lo / k, lo % k, r0, r0 + rows, c0, c0 + cols);
}

/// The table slot of tile (r0, c0), or -1 when its tile row holds no
/// boundary.
__device__ __forceinline__ i64 tableSlot(const i64 *boundaryRows, i64 count,
                                         i64 k, i64 r0, i64 c0) {
  i64 tilesAcross = (k + kTileCols - 1) / kTileCols;
  for (i64 i = 0; i < count; ++i)
    if (boundaryRows[i] == r0 / kTileRows)
      return i * tilesAcross + c0 / kTileCols;
  return -1;
}

/// Phase B's CTA `cta`: the rank (from firstRank) whose tile rows hold it
/// (sh.tileRowStart, by bisection) and its tile at (r0, c0): the rank's
/// tile rows from the one holding its first element, column tiles fastest.
/// One grid row for every rank, with no CTA for tile rows a rank does not
/// reach (a grid row a rank, sized to the rank with the most, left a fifth
/// of the CTAs empty at eight shards).
template <int R>
__device__ __forceinline__ int rankTile(const MasterShards<R> &sh,
                                        int firstRank, i64 cta, i64 k, i64 &r0,
                                        i64 &c0) {
  i64 tilesAcross = (k + kTileCols - 1) / kTileCols;
  i64 row = cta / tilesAcross;
  int a = 0, b = R; // tileRowStart[a] <= row < tileRowStart[b]
  while (b - a > 1) {
    int mid = (a + b) / 2;
    if (sh.tileRowStart[mid] <= row)
      a = mid;
    else
      b = mid;
  }
  int rank = firstRank + a;
  r0 = (sh.lo[rank] / k / kTileRows + row - sh.tileRowStart[a]) * kTileRows;
  c0 = cta % tilesAcross * kTileCols;
  return rank;
}

__device__ __forceinline__ void maxInto(float *p, float v) {
  atomicMax(reinterpret_cast<unsigned *>(p), floatToBits(v));
}

/// The blocks of a partial tile (the stage list's kBlocks) that the rank
/// holding elements [lo, hi) shares with another rank: it holds some but
/// not all of their elements. Tested on element offsets, with lo's row and
/// column found once (no division per block).
template <class List> struct SharedBlocks {
  i64 m, k, r0, c0, lo, hi;
  i64 loRow, loCol;

  __device__ static SharedBlocks of(i64 m, i64 k, i64 r0, i64 c0, i64 lo,
                                    i64 hi) {
    return {m, k, r0, c0, lo, hi, lo / k, lo % k};
  }
  /// Whether the rank shares rows [ra, rb) x columns [ca, cb) of the tile
  /// (clipped to the tensor).
  __device__ bool rect(int ra, int rb, int ca, int cb) const {
    i64 a = r0 + ra, b = r0 + rb < m ? r0 + rb : m;
    i64 ac = c0 + ca, bc = c0 + cb < k ? c0 + cb : k;
    if (a >= b || ac >= bc)
      return false;
    RangeCover cover = coverOf(k, lo, hi, loRow, loCol, a, b, ac, bc);
    return cover.any && !cover.all;
  }
  __device__ bool rowSegment(int r, int j) const {
    constexpr SegmentBlocks b = List::kBlocks;
    int ra = r / b.rowRows * b.rowRows, ja = j / b.rowSegs * b.rowSegs;
    return rect(ra, ra + b.rowRows, kSegment * ja, kSegment * (ja + b.rowSegs));
  }
  __device__ bool colSegment(int s, int c) const {
    constexpr SegmentBlocks b = List::kBlocks;
    int sa = s / b.colBands * b.colBands, ca = c / b.colCols * b.colCols;
    return rect(kSegment * sa, kSegment * (sa + b.colBands), ca,
                ca + b.colCols);
  }
  /// The rows every shared block of the tile lies in: a shared block's
  /// first and last element straddle lo or hi, so its rows hold that
  /// boundary's row; its aligned span of the tallest block round it.
  __device__ LoadRange<true> rowsOfSharedBlocks() const {
    constexpr SegmentBlocks b = List::kBlocks;
    constexpr int span =
        List::kNeedsTileAmax
            ? kTileRows
            : maxInt(List::kNeedsRowSegments ? b.rowRows : 1,
                     List::kNeedsColSegments ? kSegment * b.colBands : 1);
    i64 first = r0 + kTileRows, last = r0, bounds[2] = {lo, hi};
    TE_UNROLL
    for (int i = 0; i < 2; ++i) {
      i64 row = bounds[i] / k - r0;
      if (row < 0 || row >= kTileRows || bounds[i] == m * k)
        continue; // not in the tile, or the tensor's end
      i64 a = r0 + row / span * span;
      first = a < first ? a : first;
      last = a + span > last ? a + span : last;
    }
    return {first * k > lo ? first * k : lo, last * k < hi ? last * k : hi, lo};
  }
};

/// Candidate `i` (of 2 x tiles across) of the rank [lo, hi)'s partial
/// tiles: tile i of its first tile row, or for i >= tiles across tile
/// i - tiles across of its last (a rank's partial tiles all lie in those
/// rows), at (r0, c0). False when that tile is not partial for the rank.
__device__ __forceinline__ bool boundaryTile(i64 m, i64 k, i64 lo, i64 hi,
                                             i64 i, i64 &r0, i64 &c0) {
  i64 tilesAcross = (k + kTileCols - 1) / kTileCols;
  bool last = i >= tilesAcross;
  i64 tileRow = (last ? (hi - 1) : lo) / k / kTileRows;
  if (last && tileRow == lo / k / kTileRows)
    return false; // one tile row: the first half covers it
  r0 = tileRow * kTileRows;
  c0 = i % tilesAcross * kTileCols;
  RangeCover o = tileCover(m, k, r0, c0, lo, hi);
  return o.any && !o.all;
}

/// The running max |x| of a tile column's elements as the tile kernel
/// takes it (reduceTile): fmaxf of |x| in f32, absMax2 on the low half of a
/// word for 16-bit sources, so the amaxes are the tile kernel's bit for bit
/// (a NaN never wins, and any order gives the same max).
template <SourceType Src, bool F32 = Src == SourceType::F32> struct ColumnAmax {
  using Acc = float;
  __device__ static Acc load(const void *x, i64 at) {
    return static_cast<const float *>(x)[at];
  }
  __device__ static Acc add(Acc a, Acc v) { return amaxAccumulateF32(a, v); }
  __device__ static float value(Acc a) { return a; }
};
template <SourceType Src> struct ColumnAmax<Src, false> {
  using Acc = u32;
  __device__ static Acc load(const void *x, i64 at) {
    return u32(loadGlobalU16(static_cast<const u16 *>(x) + at));
  }
  __device__ static Acc add(Acc a, Acc v) { return absMax2<isF16(Src)>(a, v); }
  __device__ static float value(Acc a) { return widenLo<isF16(Src)>(a); }
};

/// Phase A: CTA (blockIdx.x, rank blockIdx.y) takes candidate blockIdx.x
/// of boundaryTile; the segment amaxes of a partial tile's shared blocks
/// (and its tile amax) are max-accumulated into its slot of `table`. The
/// tensor amax is tensorAmaxRanks' work.
///
/// Straight from global memory, with no tile in shared memory: thread t
/// takes tile column t % 128 and every other 16-row column segment (t / 128
/// picks which) of the rows the shared blocks lie in; a warp's loads of a
/// row are consecutive, and a row segment's amax is the max over 16 lanes.
/// Its code is short on purpose: each SM runs it about once, cold, and the
/// first version (the tile kernel's load and reduction, 2373 SASS
/// instructions) took 22-26 us for a few hundred KB (docs/Performance.md).
template <SourceType Src, int R, class... Stages>
__device__ __forceinline__ void shardAmaxes(const MasterShards<R> &sh,
                                            int firstRank, i64 m, i64 k,
                                            float *table) {
  using List = StageList<Stages...>;
  using A = ColumnAmax<Src>;
  // The tile kernel after this one may start now: only its partial tiles
  // read what this grid writes, and they wait for it (quantizePartialTile).
  // (Its stages also read the table's word 0, the tensor amax: the launch
  // before this one wrote it, and this grid never does.)
  releaseDependents();
  if (!(List::kNeedsRowSegments || List::kNeedsColSegments ||
        List::kNeedsTileAmax))
    return; // per-tensor scales: nothing shared but the tensor amax
  int rank = firstRank + int(blockIdx.y), tid = int(threadIdx.x);
  i64 lo = sh.lo[rank], hi = sh.lo[rank + 1];
  i64 r0, c0;
  if (!boundaryTile(m, k, lo, hi, i64(blockIdx.x), r0, c0))
    return;
  auto shared = SharedBlocks<List>::of(m, k, r0, c0, lo, hi);
  LoadRange<true> band = shared.rowsOfSharedBlocks();
  float *slot =
      table + kShardTableHeader +
      tableSlot(sh.boundaryRows, sh.boundaryCount, k, r0, c0) * kSlotFloats;
  const void *x = sh.x[rank];
  int c = tid % kTileCols, lane = tid % 32;
  i64 col = c0 + c;
  // The band's tile rows, in whole 16-row segments (a shared column block
  // is whole segments; a row block's rows outside the band load as zero).
  int rowsIn = tileExtent(m - r0, kTileRows);
  int first = int(band.lo / k - r0), last = int((band.hi - 1) / k - r0) + 1;
  last = last < rowsIn ? last : rowsIn;
  constexpr int kRowRows = List::kBlocks.rowRows;
  const i64 loGroup = shared.loRow / kRowRows, hiGroup = hi / k / kRowRows;
  typename A::Acc tile = 0;
  for (int s = first / kSegment + tid / kTileCols; s * kSegment < last;
       s += kTileThreads / kTileCols) {
    typename A::Acc v[kSegment], run = 0;
    TE_UNROLL
    for (int i = 0; i < kSegment; ++i) {
      i64 f = (r0 + kSegment * s + i) * k + col;
      v[i] = col < k && f >= band.lo && f < band.hi ? A::load(x, band.index(f))
                                                    : 0;
      run = A::add(run, v[i]);
    }
    if (List::kNeedsColSegments && shared.colSegment(s, c))
      maxInto(slot + kSlotCol + s * kTileCols + c, A::value(run));
    tile = A::add(tile, run);
    if (List::kNeedsRowSegments) {
      TE_UNROLL
      for (int i = 0; i < kSegment; ++i) {
        // Only rows in a row block round lo or hi can share one.
        i64 group = (r0 + kSegment * s + i) / kRowRows;
        if (group != loGroup && group != hiGroup)
          continue;
        typename A::Acc a = A::add(0, v[i]); // |v[i]|
        TE_UNROLL
        for (int d = kSegment / 2; d > 0; d /= 2)
          a = A::add(a, __shfl_xor_sync(0xFFFFFFFFu, a, d));
        int r = kSegment * s + i;
        if (lane % kSegment == 0 && shared.rowSegment(r, c / kSegment))
          maxInto(slot + kSlotRow + r * kRowSegments + c / kSegment,
                  A::value(a));
      }
    }
  }
  if (List::kNeedsTileAmax) {
    float a = A::value(tile);
    TE_UNROLL
    for (int d = 16; d > 0; d /= 2)
      a = fmaxf(a, __shfl_xor_sync(0xFFFFFFFFu, a, d));
    if (lane == 0)
      maxInto(slot, a);
  }
}

/// The tensor amax of every rank's elements, max-accumulated into word 0
/// of the table: blockIdx.y is the rank, a grid-stride pass over its shard.
/// (Amaxes are non-negative or +Inf, never NaN: the integer max of their
/// bits is the float max.)
template <SourceType Src, int R>
__device__ __forceinline__ void tensorAmaxRanks(const MasterShards<R> &sh,
                                                int firstRank, float *table) {
  int rank = firstRank + int(blockIdx.y);
  tensorAmax<Src>(sh.x[rank], sh.lo[rank + 1] - sh.lo[rank], table);
}

/// Phase B's tile memory. At namespace scope, not in the kernel, so that
/// quantizePartialTile, which is not inlined, still addresses it as shared
/// memory (through a reference it would be generic loads and stores).
__shared__ TileSmem shardTileSmem;

/// The stages' arguments, passed by value.
template <int N> struct StagePack { StageArgs a[N]; };

/// Phase B of a partial tile (the rank's elements [lo, hi) of the tile at
/// (r0, c0)): reduced as a whole tile is, its shared blocks' amaxes then
/// come from the reduced table, and it stores only the rank's elements
/// (and the scales of the blocks it holds some of: Tile::storesScaleOf).
///
/// Out of line on purpose. Inlined beside the whole-tile path, the kernel
/// was large enough that ptxas (CUDA 13.0) juggled its convergence
/// barriers through registers (BMOV.32.CLEAR Bn, then a BSYNC on Bn with
/// an inner region's mask) while lanes that had skipped a task - an edge
/// tile's invalid segments - were waiting on Bn: they were released early,
/// the warp reached the next __syncthreads split (compute-sanitizer
/// synccheck: "Divergent thread(s) in warp") and wrong codes or illegal
/// addresses followed (docs/Performance.md, "Master shards: a
/// reconvergence hazard"). Compiled as its own function, neither this nor
/// the whole-tile path has such a pattern (the KernelsHaveNoReconvergence-
/// Hazard tests scan every sharded kernel's SASS: test/unittests/Codegen/
/// SassHazards.h). Its own launch was tried as well: the hazard came back
/// in it, and it ran no faster.
///
/// Everything comes by value (the stages' arguments in a StagePack): an
/// address the kernel passed would put the kernel's own copy in local
/// memory, and the whole-tile path would read it from there.
template <SourceType Src, class... Stages>
__device__ __noinline__ void
quantizePartialTile(const void *x, i64 lo, i64 hi, i64 m, i64 k, i64 r0, i64 c0,
                    StagePack<int(sizeof...(Stages))> args, const float *slot) {
  using List = StageList<Stages...>;
  TileSmem &smem = shardTileSmem;
  int tid = int(threadIdx.x);
  Tile t = loadTileAt<Src>(smem, x, m, k, r0, c0, LoadRange<true>{lo, hi});
  reduceTile<Src, List::kNeedsRowSegments, List::kNeedsColSegments, false,
             false>(t, nullptr);
  // The table is phase A's: a grid launched to overlap it waits here.
  waitForPredecessor();
  __syncthreads();
  if (tid == 0)
    smem.tileAmax = floatToBits(slot[0]);
  auto shared = SharedBlocks<List>::of(m, k, r0, c0, lo, hi);
  // Whole rounds of the CTA: no thread-dependent trip count, so no
  // divergent loop. Rolled: a copy of the shared-block test a round made
  // the function longer, and its instruction fetches are what a partial
  // tile waits on (docs/Performance.md).
  static_assert(kTileRows * kRowSegments % kTileThreads == 0 &&
                    kColSegments * kTileCols % kTileThreads == 0,
                "the amax copies take whole rounds");
  if (List::kNeedsRowSegments) {
#pragma unroll 1
    for (int i = 0; i < kTileRows * kRowSegments / kTileThreads; ++i) {
      int e = i * kTileThreads + tid;
      int r = e / kRowSegments, j = e % kRowSegments;
      if (shared.rowSegment(r, j))
        smem.rowAmax[r][j] = slot[kSlotRow + e];
    }
  }
  if (List::kNeedsColSegments) {
#pragma unroll 1
    for (int i = 0; i < kColSegments * kTileCols / kTileThreads; ++i) {
      int e = i * kTileThreads + tid;
      int s = e / kTileCols, c = e % kTileCols;
      if (shared.colSegment(s, c))
        smem.colAmax[s][c] = slot[kSlotCol + e];
    }
  }
  t.partial = true;
  t.ownLo = lo;
  t.ownHi = hi;
  t.ownLoRow = shared.loRow;
  t.ownLoCol = shared.loCol;
  t.ownHiRow = hi / k;
  t.ownHiCol = hi % k;
  __syncthreads();
  List::template emit<Src>(t, args.a);
}

/// Phase B: CTA blockIdx.x quantizes a tile of a rank (rankTile) into the
/// whole tensor's buffers: a tile
/// wholly the rank's as a whole tensor's is, a partial one by
/// quantizePartialTile. Launched to overlap phase A (the plan does so only
/// right after it), the whole tiles run on, since they read no table (a
/// tensor amax comes from the launch before phase A, finished when phase A
/// began); the partial ones wait for phase A before they read it.
template <SourceType Src, int R, class... Stages>
__device__ __forceinline__ void
shardedQuantizeTile(const MasterShards<R> &sh, int firstRank, i64 m, i64 k,
                    const StageArgs *args, const float *table) {
  TileSmem &smem = shardTileSmem;
  i64 r0, c0;
  int rank = rankTile(sh, firstRank, i64(blockIdx.x), k, r0, c0);
  i64 lo = sh.lo[rank], hi = sh.lo[rank + 1];
  if (r0 >= m)
    return;
  RangeCover o = tileCover(m, k, r0, c0, lo, hi);
  if (!o.any)
    return;
  if (o.all) {
    // Wholly the rank's: the whole-tensor tile kernel's code, with no
    // per-element range test and no partial-store paths (measured: with
    // them, the tiles of one shard ran at 70 % of copy, not 89 %).
    quantizeTileIn<Src, false, Stages...>(smem, sh.x[rank], m, k, r0, c0, args,
                                          nullptr, LoadRange<false>{lo, hi},
                                          /*waitForPrepass=*/false);
    return;
  }
  constexpr int N = int(sizeof...(Stages));
  StagePack<N> pack;
  TE_UNROLL
  for (int i = 0; i < N; ++i)
    pack.a[i] = args[i];
  quantizePartialTile<Src, Stages...>(
      sh.x[rank], lo, hi, m, k, r0, c0, pack,
      table + kShardTableHeader +
          tableSlot(sh.boundaryRows, sh.boundaryCount, k, r0, c0) *
              kSlotFloats);
}

} // namespace dev
} // namespace te

#endif // TE_DEVICE_SHARDEDQUANTIZEKERNEL_CUH
