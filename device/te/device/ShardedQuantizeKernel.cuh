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
//    tile rows that hold a shard boundary) needs amaxes of elements other
//    ranks hold. Phase A: each rank loads its part of the tile (zeros
//    elsewhere) and max-accumulates the tile's segment amaxes and tile
//    amax into the amax table (zeroed by the plan). Where one process
//    plays every rank they share one table, so the atomics are the
//    reduction over ranks; with one process per GPU each has its own and
//    the plan all-reduces it (max) before phase B. Phase B: each rank
//    fills the tile's shared-memory amaxes from the table, so every
//    stage's emit runs unchanged and computes the whole tensor's scales,
//    and stores only its own elements (Span in QuantizeTile.cuh).
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
/// 8-byte words (the plan's Table argument). Every kernel below runs rank
/// `firstRank + blockIdx.y`: one process playing every rank launches R
/// grid rows from rank 0; one process per rank launches one row from its
/// own rank (its pointer then fills every entry of `x`).
template <int R> struct MasterShards {
  const void *x[R];
  i64 lo[R + 1]; ///< rank r holds [lo[r], lo[r + 1]); lo[R] = M * K
  /// The tile rows an offset splits (at most R - 1), ascending.
  i64 boundaryRows[R];
  i64 boundaryCount;
};

/// Whether the tile (r0, c0) of `rows` x `cols` holds any element of the
/// row-major range [lo, hi), and whether it holds only such elements.
struct TileOverlap {
  bool any, all;
};
__device__ __forceinline__ TileOverlap overlap(i64 k, i64 r0, i64 c0, int rows,
                                               int cols, i64 lo, i64 hi) {
  i64 first = r0 * k + c0, last = (r0 + rows - 1) * k + c0 + cols - 1;
  if (lo <= first && last < hi)
    return {true, true};
  // The first tile row whose piece ends past lo, and where its piece of
  // [lo, hi) starts.
  i64 row = ceilDivSigned(lo - c0 - cols + 1, k);
  row = row < r0 ? r0 : row;
  i64 start = row * k + c0;
  start = start < lo ? lo : start;
  return {row < r0 + rows && start < hi, false};
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

/// Phase 1 for a rank: its elements of the tile (row-major offsets [lo,
/// hi), element f at x[f - lo]: LoadRange::index), zeros elsewhere, then the
/// barrier. Chunks wholly the rank's load as 16-byte vectors where the shard's
/// offset keeps them aligned.
template <SourceType Src>
__device__ __forceinline__ void
loadRankTile(TileSmem &s, TilePlane *low, const void *x, i64 m, i64 k, i64 r0,
             i64 c0, i64 lo, i64 hi, int tid) {
  LoadRange<true> range{lo, hi};
  if (Src == SourceType::F32)
    loadTileF32<true>(s, *low, static_cast<const float *>(x), m, k, r0, c0, tid,
                      range);
  else
    loadTile16<true>(s, static_cast<const u16 *>(x), m, k, r0, c0, tid, range);
  if (tid == 0)
    s.tileAmax = 0u;
  cpAsyncWaitAll();
  __syncthreads();
}

/// The tile of CTA `cta` of a rank's launch: tile rows from the one holding
/// lo onwards, column tiles fastest.
__device__ __forceinline__ void rankTile(i64 cta, i64 k, i64 lo, i64 &r0,
                                         i64 &c0) {
  i64 tilesAcross = (k + kTileCols - 1) / kTileCols;
  i64 firstRow = lo / k / kTileRows;
  r0 = (firstRow + cta / tilesAcross) * kTileRows;
  c0 = cta % tilesAcross * kTileCols;
}

__device__ __forceinline__ void maxInto(float *p, float v) {
  atomicMax(reinterpret_cast<unsigned *>(p), floatToBits(v));
}

/// Phase A: CTA (blockIdx.x, rank blockIdx.y) takes tile blockIdx.x of the
/// rank's first or last tile row (the first half of the grid the first,
/// the second half the last); a partial tile's amaxes are max-accumulated
/// into its slot of `table`. The tensor amax is tensorAmaxRanks' work.
template <SourceType Src, int R>
__device__ __forceinline__ void shardAmaxes(const MasterShards<R> &sh,
                                            int firstRank, i64 m, i64 k,
                                            float *table) {
  extern __shared__ __align__(16) u8 dynamicSmem[];
  __shared__ TileSmem smem;
  int rank = firstRank + int(blockIdx.y), tid = int(threadIdx.x);
  i64 lo = sh.lo[rank], hi = sh.lo[rank + 1];
  i64 tilesAcross = (k + kTileCols - 1) / kTileCols;
  bool last = i64(blockIdx.x) >= tilesAcross;
  i64 tileRow = (last ? (hi - 1) : lo) / k / kTileRows;
  if (last && tileRow == lo / k / kTileRows)
    return; // one tile row: the first half of the grid covers it
  i64 r0 = tileRow * kTileRows, c0 = i64(blockIdx.x) % tilesAcross * kTileCols;
  Tile t = Tile::at(smem, m, k, r0, c0, tid, nullptr);
  TileOverlap o = overlap(k, r0, c0, t.rows, t.cols, lo, hi);
  if (!o.any || o.all)
    return;
  TilePlane *low = Src == SourceType::F32
                       ? reinterpret_cast<TilePlane *>(dynamicSmem)
                       : nullptr;
  t.lo = low;
  loadRankTile<Src>(smem, low, sh.x[rank], m, k, r0, c0, lo, hi, tid);
  reduceTile<Src, true, true, true, false>(t, nullptr);
  __syncthreads();
  float *slot =
      table + kShardTableHeader +
      tableSlot(sh.boundaryRows, sh.boundaryCount, k, r0, c0) * kSlotFloats;
  if (tid == 0)
    maxInto(slot, t.tileAmax());
  for (int i = tid; i < kTileRows * kRowSegments; i += kTileThreads)
    maxInto(slot + kSlotRow + i,
            smem.rowAmax[i / kRowSegments][i % kRowSegments]);
  for (int i = tid; i < kColSegments * kTileCols; i += kTileThreads)
    maxInto(slot + kSlotCol + i, smem.colAmax[i / kTileCols][i % kTileCols]);
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

/// Phase B: CTA (blockIdx.x, rank blockIdx.y) quantizes tile blockIdx.x of
/// the rank's tiles (rankTile) into the whole tensor's buffers; a partial
/// tile takes its amaxes from the reduced table and stores only the rank's
/// elements.
template <SourceType Src, int R, class... Stages>
__device__ __forceinline__ void
shardedQuantizeTile(const MasterShards<R> &sh, int firstRank, i64 m, i64 k,
                    const StageArgs *args, const float *table) {
  using List = StageList<Stages...>;
  extern __shared__ __align__(16) u8 dynamicSmem[];
  __shared__ TileSmem smem;
  int rank = firstRank + int(blockIdx.y), tid = int(threadIdx.x);
  i64 lo = sh.lo[rank], hi = sh.lo[rank + 1];
  i64 r0, c0;
  rankTile(blockIdx.x, k, lo, r0, c0);
  if (r0 >= m)
    return;
  TilePlane *low = Src == SourceType::F32
                       ? reinterpret_cast<TilePlane *>(dynamicSmem)
                       : nullptr;
  Tile t = Tile::at(smem, m, k, r0, c0, tid, low);
  TileOverlap o = overlap(k, r0, c0, t.rows, t.cols, lo, hi);
  if (!o.any)
    return;
  loadRankTile<Src>(smem, low, sh.x[rank], m, k, r0, c0, lo, hi, tid);
  if (o.all) {
    reduceTile<Src, List::kNeedsRowSegments, List::kNeedsColSegments,
               List::kNeedsTileAmax, false>(t, nullptr);
  } else {
    const float *slot =
        table + kShardTableHeader +
        tableSlot(sh.boundaryRows, sh.boundaryCount, k, r0, c0) * kSlotFloats;
    if (tid == 0)
      smem.tileAmax = floatToBits(slot[0]);
    for (int i = tid; i < kTileRows * kRowSegments && List::kNeedsRowSegments;
         i += kTileThreads)
      smem.rowAmax[i / kRowSegments][i % kRowSegments] = slot[kSlotRow + i];
    for (int i = tid; i < kColSegments * kTileCols && List::kNeedsColSegments;
         i += kTileThreads)
      smem.colAmax[i / kTileCols][i % kTileCols] = slot[kSlotCol + i];
    t.partial = true;
    t.ownLo = lo;
    t.ownHi = hi;
  }
  __syncthreads();
  List::template emit<Src>(t, args);
}

} // namespace dev
} // namespace te

#endif // TE_DEVICE_SHARDEDQUANTIZEKERNEL_CUH
