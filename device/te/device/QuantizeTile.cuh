//===- te/device/QuantizeTile.cuh - Quantize tile and access ----*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The 128 x 128 tile of the quantize kernels (QuantizeKernel.cuh) and how
// it is read and written: the tile's shared memory (TileSmem) and place in
// the tensor (Tile), its swizzled layout, the loads of row and column
// segments, the task iteration of the 256 threads, block amaxes from
// segment amaxes, and the edge-safe FP8 stores. The stages
// (QuantizeStages.cuh) and the optimizer kernel (AdamKernel.cuh) are
// written in these terms.
//
// Shared-memory access patterns are conflict-free: a rowwise segment is two
// 16-byte reads whose order alternates per quarter warp, a columnwise read
// is one 32-bit word (two adjacent columns) per lane, across a row or, for
// transposed outputs, down the eight swizzled segments of a column.
// Transposed outputs (per-tensor FP8 columnwise on sm_90, block FP8 and
// NVFP4 columnwise) are written as 16-row runs of a column, 16 bytes of FP8
// or 8 bytes of FP4 per lane, eight lanes per column: each warp store
// covers whole 128-byte (FP8) or 64-byte (FP4) pieces of output rows.
//
// An f32 tile is held as two 16-bit planes with the same swizzled layout:
// the high halves in TileSmem::x (each is the value truncated to bf16, so
// the 16-bit access patterns carry over unchanged) and the low halves in a
// second, dynamically allocated 32 KB plane; values are joined bit-exactly
// when read.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_QUANTIZETILE_CUH
#define TE_DEVICE_QUANTIZETILE_CUH

#include "te/device/QuantizeCommon.cuh"

namespace te {
namespace dev {

constexpr int kTileRows = 128;
constexpr int kTileCols = 128;
constexpr int kSegment = 16;
constexpr int kTileThreads = 256;
constexpr int kRowSegments = kTileCols / kSegment; // per tile row
constexpr int kColSegments = kTileRows / kSegment; // per tile column

/// Physical column of tile element (r, c). The 16-byte chunks of row r are
/// XOR-swizzled with (r / 16) % 8: the eight 16-row segments of one column
/// then lie in eight different bank groups (column runs, below), while the
/// chunks of a row stay a permutation of themselves within each half row,
/// so row accesses remain conflict-free.
__device__ __forceinline__ int swizzledColumn(int r, int c) {
  return (((c >> 3) ^ ((r >> 4) & 7)) << 3) | (c & 7);
}

/// One 16-bit plane of a tile, swizzled (swizzledColumn).
using TilePlane = u16[kTileRows][kTileCols];

/// Bytes of dynamic shared memory a kernel over `Src` needs: the low-half
/// plane of an f32 tile.
TE_HD constexpr unsigned quantizeDynamicSmem(SourceType src) {
  return src == SourceType::F32 ? unsigned(sizeof(TilePlane)) : 0u;
}

TE_HD constexpr bool isF16(SourceType s) { return s == SourceType::F16; }

/// 16-byte aligned: the loads write whole 16-byte chunks, and the kernel may
/// hold other shared variables that would otherwise come first.
struct alignas(16) TileSmem {
  TilePlane x; ///< swizzled: use at(); the high halves of an f32 tile
  float rowAmax[kTileRows][kRowSegments];
  float colAmax[kColSegments][kTileCols];
  /// NVFP4 RHT with 16x16 blocks: the amax of each warp's eight transformed
  /// columns per segment, for each of the two column-run rounds.
  float rhtWarpAmax[2][kTileThreads / 32][kColSegments];
  u32 tileAmax; ///< bits of a non-negative float: integer max == float max

  __device__ u16 *at(int r, int c) { return &x[r][swizzledColumn(r, c)]; }
  __device__ const u16 *at(int r, int c) const {
    return &x[r][swizzledColumn(r, c)];
  }
};

/// The rows (or columns) of a tile that lie in the tensor: `left` of them
/// remain from the tile's first, at most `full`.
__device__ __forceinline__ int tileExtent(i64 left, int full) {
  return int(left < full ? left : full);
}

/// How much of rows [a, b) x columns [ac, bc) of a row-major tensor of k
/// columns (a non-empty block) lies in the element range [lo, hi): any of
/// it, all of it. (loRow, loCol) is lo's position, found once by the
/// caller: no division per block.
struct RangeCover {
  bool any, all;
};
__device__ __forceinline__ RangeCover coverOf(i64 k, i64 lo, i64 hi, i64 loRow,
                                              i64 loCol, i64 a, i64 b, i64 ac,
                                              i64 bc) {
  i64 first = a * k + ac, last = (b - 1) * k + bc - 1;
  if (last < lo || first >= hi)
    return {false, false};
  if (lo <= first && last < hi)
    return {true, true};
  if (first >= lo)
    return {true, false}; // the first element, not the last
  // lo lies in (first, last]: the range's first element in the block, if
  // any, is lo itself or the start of the block's next row piece.
  i64 r = loRow, c = loCol;
  if (c < ac) {
    c = ac;
  } else if (c >= bc) {
    ++r;
    c = ac;
    if (r >= b)
      return {false, false};
  }
  return {r * k + c < hi, false};
}

/// coverOf(...).any, out of line: a master shard's partial tile asks it of
/// every block scale it stores, and a copy at each would double its code.
__device__ __noinline__ bool holdsSomeOf(i64 k, i64 lo, i64 hi, i64 loRow,
                                         i64 loCol, i64 a, i64 b, i64 ac,
                                         i64 bc) {
  return coverOf(k, lo, hi, loRow, loCol, a, b, ac, bc).any;
}

/// A tile in flight: where it sits in the tensor and its valid extent.
struct Tile {
  TileSmem &s;
  i64 m, k, r0, c0;
  int rows, cols; ///< valid rows / columns (<= 128 at the edges)
  int tid;
  TilePlane *lo; ///< the low halves of an f32 tile, else null
  /// A master shard's partial tile (ShardedQuantizeKernel.cuh): only the
  /// elements at row-major offsets [ownLo, ownHi) are this rank's, and
  /// only their codes (Span) and the scales of blocks holding some of them
  /// (storesScaleOf) are stored. Constant false elsewhere, so the
  /// other kernels compile as before.
  bool partial = false;
  i64 ownLo = 0, ownHi = 0;
  i64 ownLoRow = 0, ownLoCol = 0; ///< ownLo's position
  i64 ownHiRow = 0, ownHiCol = 0; ///< ownHi's position

  /// The tile at (r0, c0) of an M x K tensor, clipped at its edges.
  __device__ static Tile at(TileSmem &s, i64 m, i64 k, i64 r0, i64 c0, int tid,
                            TilePlane *lo) {
    return Tile{s,
                m,
                k,
                r0,
                c0,
                tileExtent(m - r0, kTileRows),
                tileExtent(k - c0, kTileCols),
                tid,
                lo};
  }
  __device__ bool leader() const { return tid == 0 && r0 == 0 && c0 == 0; }
  /// Whether the tile stores the scale of the block at tile rows [ra, rb) x
  /// columns [ca, cb) (clipped to the tensor): always, but a partial tile
  /// only where the rank holds some of the block - the amaxes of a block
  /// wholly another rank's are not the rank's to know
  /// (ShardedQuantizeKernel.cuh).
  __device__ bool storesScaleOf(int ra, int rb, int ca, int cb) const {
    if (!partial)
      return true;
    rb = rb < rows ? rb : rows;
    cb = cb < cols ? cb : cols;
    return ra < rb && ca < cb &&
           holdsSomeOf(k, ownLo, ownHi, ownLoRow, ownLoCol, r0 + ra, r0 + rb,
                       c0 + ca, c0 + cb);
  }
  __device__ float tileAmax() const { return bitsToFloat(s.tileAmax); }
};

template <bool F16> __device__ __forceinline__ float widen(u32 bits16) {
  return F16 ? f16ToFloat(u16(bits16)) : bitsToFloat(bits16 << 16);
}

/// The low / high 16-bit element of a packed word, widened exactly.
template <bool F16> __device__ __forceinline__ float widenLo(u32 w) {
  return F16 ? f16ToFloat(u16(w & 0xFFFFu)) : bitsToFloat(w << 16);
}
template <bool F16> __device__ __forceinline__ float widenHi(u32 w) {
  return F16 ? f16ToFloat(u16(w >> 16)) : bitsToFloat(w & 0xFFFF0000u);
}

template <bool F16>
__device__ __forceinline__ void unpack8(const U32x4 &w, float *v) {
  u32 words[4] = {w.x, w.y, w.z, w.w};
  TE_UNROLL
  for (int i = 0; i < 4; ++i) {
    v[2 * i] = widenLo<F16>(words[i]);
    v[2 * i + 1] = widenHi<F16>(words[i]);
  }
}

/// The raw words of row segment (r, j): elements 0-7 in `a`, 8-15 in `b`.
/// The two 16-byte halves are read in an order that alternates every four
/// segments, so the eight threads of a quarter warp (one tile row) cover
/// all 32 banks once.
__device__ __forceinline__ void loadRowWords(const TilePlane &x, int r, int j,
                                             U32x4 &a, U32x4 &b) {
  int first = (j >> 2) & 1;
  u32 row = sharedAddress(&x[0][0]) + u32(r) * u32(sizeof(x[0]));
  U32x4 p =
      loadShared16(row + 2u * u32(swizzledColumn(r, kSegment * j + 8 * first)));
  U32x4 q = loadShared16(
      row + 2u * u32(swizzledColumn(r, kSegment * j + 8 * (first ^ 1))));
  a = first ? q : p;
  b = first ? p : q;
}
__device__ __forceinline__ void loadRowWords(const TileSmem &s, int r, int j,
                                             U32x4 &a, U32x4 &b) {
  loadRowWords(s.x, r, j, a, b);
}

/// The f32 values of a packed pair of high halves and the matching pair of
/// low halves: element 0 sits in the low 16 bits of both words.
__device__ __forceinline__ float joinLo(u32 hi, u32 lo) {
  return bitsToFloat((hi << 16) | (lo & 0xFFFFu));
}
__device__ __forceinline__ float joinHi(u32 hi, u32 lo) {
  return bitsToFloat((hi & 0xFFFF0000u) | (lo >> 16));
}

/// The inverse of joinLo / joinHi: the bits of two consecutive f32 values
/// (`first` at the lower index) split into the packed pair of their high
/// halves and the packed pair of their low halves, the two planes' words.
__device__ __forceinline__ u32 splitHi(u32 first, u32 second) {
  return (first >> 16) | (second & 0xFFFF0000u);
}
__device__ __forceinline__ u32 splitLo(u32 first, u32 second) {
  return (first & 0xFFFFu) | (second << 16);
}

__device__ __forceinline__ void join8(const U32x4 &hi, const U32x4 &lo,
                                      float *v) {
  u32 h[4] = {hi.x, hi.y, hi.z, hi.w}, l[4] = {lo.x, lo.y, lo.z, lo.w};
  TE_UNROLL
  for (int i = 0; i < 4; ++i) {
    v[2 * i] = joinLo(h[i], l[i]);
    v[2 * i + 1] = joinHi(h[i], l[i]);
  }
}

/// The 16 values of row segment (r, j).
template <SourceType Src>
__device__ __forceinline__ void loadRowSegment(const Tile &t, int r, int j,
                                               float *v) {
  U32x4 a, b;
  loadRowWords(t.s, r, j, a, b);
  if (Src == SourceType::F32) {
    U32x4 la, lb;
    loadRowWords(*t.lo, r, j, la, lb);
    join8(a, la, v);
    join8(b, lb, v + 8);
    return;
  }
  unpack8<isF16(Src)>(a, v);
  unpack8<isF16(Src)>(b, v + 8);
}

/// Element (r, c) of the tile as f32.
template <SourceType Src>
__device__ __forceinline__ float valueAt(const Tile &t, int r, int c) {
  u32 hi = *t.s.at(r, c);
  if (Src == SourceType::F32)
    return bitsToFloat(hi << 16 | (*t.lo)[r][swizzledColumn(r, c)]);
  return widen<isF16(Src)>(hi);
}

/// Rows [16s, 16s+16) of columns c, c+1 (c even) of a plane, one packed
/// word per row (column c in the low half): half the registers of widened
/// values. The swizzle depends on the row only through row / 16, so the
/// segment's rows share one physical column: one address, the rows at
/// constant offsets. (NVRTC keeps shared-memory pointers 64-bit, unlike
/// nvcc; computed row by row, each address cost a 64-bit multiply-add and
/// the swizzle again: 6 of the NVFP4 quantize's 48 instructions an element.)
__device__ __forceinline__ void loadColumnWords(const TilePlane &x, int seg,
                                                int c, u32 *w) {
  const u16 *column = &x[kSegment * seg][swizzledColumn(kSegment * seg, c)];
  TE_UNROLL
  for (int i = 0; i < kSegment; ++i)
    w[i] = *reinterpret_cast<const u32 *>(column + i * kTileCols);
}
__device__ __forceinline__ void loadColumnWords(const TileSmem &s, int seg,
                                                int c, u32 *w) {
  loadColumnWords(s.x, seg, c, w);
}

/// Column `q` (0: c, 1: c+1) of loadColumnWords' words, widened.
template <bool F16>
__device__ __forceinline__ void unpackColumn(const u32 *w, int q, float *v) {
  TE_UNROLL
  for (int i = 0; i < kSegment; ++i)
    v[i] = q ? widenHi<F16>(w[i]) : widenLo<F16>(w[i]);
}

/// max |x| of n packed words, both halves kept apart (see absMax2), at one
/// instruction a word: max.xorsign.abs takes the larger magnitude (with
/// absMax2's NaN rule) and a sign the final mask drops.
template <bool F16, int N>
__device__ __forceinline__ u32 absMaxWords(const u32 *w) {
  u32 acc = 0u;
  TE_UNROLL
  for (int i = 0; i < N; ++i) {
    if (F16)
      asm("max.xorsign.abs.f16x2 %0, %1, %2;"
          : "=r"(acc)
          : "r"(acc), "r"(w[i]));
    else
      asm("max.xorsign.abs.bf16x2 %0, %1, %2;"
          : "=r"(acc)
          : "r"(acc), "r"(w[i]));
  }
  return acc & 0x7FFF7FFFu;
}

//===----------------------------------------------------------------------===//
// Task iteration: rowwise tasks are (row, 16-column segment), columnwise
// tasks (16-row segment, column pair). Lanes of a warp take consecutive
// segments of a row / consecutive column pairs of a row.
//===----------------------------------------------------------------------===//

/// `All`: every task, also those wholly outside the tensor (the reductions
/// read zeros there, so every segment amax is defined); else only tasks
/// holding valid elements.
template <bool All = false, class Fn>
__device__ __forceinline__ void forRowTasks(const Tile &t, Fn fn) {
  TE_UNROLL
  for (int i = 0; i < kTileRows * kRowSegments / kTileThreads; ++i) {
    int task = i * kTileThreads + t.tid;
    int r = task / kRowSegments, j = task % kRowSegments;
    if (All || (r < t.rows && kSegment * j < t.cols))
      fn(r, j);
  }
}

template <bool All = false, class Fn>
__device__ __forceinline__ void forColumnTasks(const Tile &t, Fn fn) {
  TE_UNROLL
  for (int i = 0; i < kColSegments * (kTileCols / 2) / kTileThreads; ++i) {
    int task = i * kTileThreads + t.tid;
    int s = task / (kTileCols / 2), c = 2 * (task % (kTileCols / 2));
    if (All || (kSegment * s < t.rows && c < t.cols))
      fn(s, c);
  }
}

/// Column runs, for transposed outputs: the same tasks as forColumnTasks,
/// but the eight lanes of one column pair take its eight segments, so one
/// store instruction of a warp writes four whole 128-row runs (128 bytes of
/// FP8 each) of the transposed output instead of 32 scattered pieces. The
/// tile swizzle keeps the shared-memory reads conflict-free.
template <class Fn>
__device__ __forceinline__ void forColumnRuns(const Tile &t, Fn fn) {
  TE_UNROLL
  for (int i = 0; i < kColSegments * (kTileCols / 2) / kTileThreads; ++i) {
    int task = i * kTileThreads + t.tid;
    int s = task % kColSegments, c = 2 * (task / kColSegments);
    if (kSegment * s < t.rows && c < t.cols)
      fn(s, c);
  }
}

/// fn(c', v) with the 16 values v of segment s of each valid column c' of
/// the pair (c, c + 1).
template <SourceType Src, class Fn>
__device__ __forceinline__ void columnPairValues(const Tile &t, int s, int c,
                                                 Fn fn) {
  u32 w[kSegment], l[kSegment];
  loadColumnWords(t.s, s, c, w);
  if (Src == SourceType::F32)
    loadColumnWords(*t.lo, s, c, l);
  TE_UNROLL
  for (int q = 0; q < 2; ++q) {
    if (c + q >= t.cols)
      break;
    float v[kSegment];
    if (Src == SourceType::F32) {
      TE_UNROLL
      for (int i = 0; i < kSegment; ++i)
        v[i] = q ? joinHi(w[i], l[i]) : joinLo(w[i], l[i]);
    } else {
      unpackColumn<isF16(Src)>(w, q, v);
    }
    fn(c + q, v);
  }
}

/// forColumnRuns, handing fn(s, c, v) the 16 values v of each valid column
/// c of the run (c and c + 1).
template <SourceType Src, class Fn>
__device__ __forceinline__ void forColumnRunValues(const Tile &t, Fn fn) {
  forColumnRuns(t, [&](int s, int c) {
    columnPairValues<Src>(t, s, c,
                          [&](int cc, const float *v) { fn(s, cc, v); });
  });
}

//===----------------------------------------------------------------------===//
// Block amax from segment amaxes
//===----------------------------------------------------------------------===//

/// Amax of the 1 x Cols block holding row segment (r, j).
template <int Cols>
__device__ __forceinline__ float rowBlockAmax(const Tile &t, int r, int j) {
  constexpr int n = Cols / kSegment;
  int j0 = j / n * n;
  float a = 0.0f;
  TE_UNROLL
  for (int q = 0; q < n; ++q)
    a = fmaxf(a, t.s.rowAmax[r][j0 + q]);
  return a;
}

/// Amax of the Rows x 1 block holding column segment (s, c).
template <int Rows>
__device__ __forceinline__ float colBlockAmax(const Tile &t, int s, int c) {
  constexpr int n = Rows / kSegment;
  int s0 = s / n * n;
  float a = 0.0f;
  TE_UNROLL
  for (int q = 0; q < n; ++q)
    a = fmaxf(a, t.s.colAmax[s0 + q][c]);
  return a;
}

/// Amax of the 16 x 16 block holding row segment (r, j), from row segments.
__device__ __forceinline__ float block16x16AmaxOfRow(const Tile &t, int r,
                                                     int j) {
  int r0 = r / kSegment * kSegment;
  float a = 0.0f;
  TE_UNROLL
  for (int q = 0; q < kSegment; ++q)
    a = fmaxf(a, t.s.rowAmax[r0 + q][j]);
  return a;
}

/// Amax of the 16 x 16 block holding column c of segment s.
__device__ __forceinline__ float block16x16AmaxOfColumn(const Tile &t, int s,
                                                        int c) {
  int c0 = c / kSegment * kSegment;
  float a = 0.0f;
  TE_UNROLL
  for (int q = 0; q < kSegment; ++q)
    a = fmaxf(a, t.s.colAmax[s][c0 + q]);
  return a;
}

//===----------------------------------------------------------------------===//
// Stores
//===----------------------------------------------------------------------===//

/// Elements [first, last) of a 16-element row segment or column run: the
/// ones a tile stores (all but in a master shard's partial tile).
struct Span {
  int first, last;
  /// Whether the tile is a partial one (constant false elsewhere, so the
  /// stores below fold to the whole-tile code).
  bool partial;
  __device__ bool all() const { return first == 0 && last == kSegment; }
};

__device__ __forceinline__ int clampToSegment(i64 v) {
  return v < 0 ? 0 : v > kSegment ? kSegment : int(v);
}

/// The stored elements of row segment (r, j).
__device__ __forceinline__ Span rowSpan(const Tile &t, int r, int j) {
  if (!t.partial)
    return {0, kSegment, false};
  i64 first = (t.r0 + r) * t.k + t.c0 + kSegment * j;
  return {clampToSegment(t.ownLo - first), clampToSegment(t.ownHi - first),
          true};
}

/// The stored rows of the 16-row run of segment s of tile column c (a
/// column inside the tensor: c0 + c < k).
__device__ __forceinline__ Span runSpan(const Tile &t, int s, int c) {
  if (!t.partial)
    return {0, kSegment, false};
  // Row i of the run holds element (row0 + i) * k + col, at or past
  // ownLo = ownLoRow * k + ownLoCol exactly when row0 + i is past ownLoRow,
  // or is ownLoRow and col >= ownLoCol (likewise below ownHi): no division.
  i64 row0 = t.r0 + kSegment * s, col = t.c0 + c;
  return {clampToSegment(t.ownLoRow + (col < t.ownLoCol) - row0),
          clampToSegment(t.ownHiRow + (col < t.ownHiCol) - row0), true};
}

__device__ __forceinline__ bool aligned(const void *p, int bytes) {
  return (reinterpret_cast<u64>(p) & u64(bytes - 1)) == 0;
}

/// Bytes [first, last) of the Bytes held little-endian in w[Bytes / 4], one
/// at a time.
template <int Bytes>
__device__ __forceinline__ void storeBytes(u8 *dst, const u32 *w, int first,
                                           int last) {
  // Constant word indices: keeps w in registers (no local-memory copy).
  TE_UNROLL
  for (int q = 0; q < Bytes / 4; ++q)
    TE_UNROLL
  for (int b = 0; b < 4; ++b) {
    int i = 4 * q + b;
    if (i >= first && i < last)
      dst[i] = u8(w[q] >> (8 * b));
  }
}

/// Stores the first `n` of the Bytes (16 or 8) bytes held little-endian in
/// w[Bytes / 4]: one vector store when whole and aligned, else bytewise.
template <int Bytes>
__device__ __forceinline__ void storeUpTo(u8 *dst, const u32 *w, int n) {
  if (n == Bytes && aligned(dst, Bytes)) {
    if (Bytes == 16)
      storeGlobal16(dst, U32x4{w[0], w[1], w[2], w[3]});
    else
      storeGlobal8(dst, w[0], w[1]);
    return;
  }
  storeBytes<Bytes>(dst, w, 0, n);
}

/// Bytes [first, last) of the 16 held little-endian in w0..w3. Out of line:
/// only a master shard's partial tile stores part of a segment, and a copy
/// at every store of its code would double that code's size.
__device__ __noinline__ void storeBytesOf16(u8 *dst, u32 w0, u32 w1, u32 w2,
                                            u32 w3, int first, int last) {
  u32 w[4] = {w0, w1, w2, w3};
  storeBytes<16>(dst, w, first, last);
}

/// storeUpTo of one-byte codes, only elements [sp.first, sp.last): other
/// ranks store the rest of a partial tile's segment (bytes never tear).
__device__ __forceinline__ void storeSpan16(u8 *dst, const u32 *w, int n,
                                            Span sp) {
  if (!sp.partial) {
    storeUpTo<16>(dst, w, n);
    return;
  }
  if (sp.all() && n == 16 && aligned(dst, 16)) {
    storeGlobal16(dst, U32x4{w[0], w[1], w[2], w[3]});
    return;
  }
  int last = sp.last < n ? sp.last : n;
  if (sp.first < last) // none where the segment is wholly another rank's
    storeBytesOf16(dst, w[0], w[1], w[2], w[3], sp.first, last);
}

/// storeUpTo<8> of 16 FP4 codes (two a byte), only elements [sp.first,
/// sp.last). Another rank's CTA may write the other nibbles of the same
/// bytes at the same time, so a partial run's nibbles are merged with
/// atomics on its two (8-byte aligned) words.
__device__ __forceinline__ void storeSpanFp4(u8 *dst, const u32 *w, Span sp) {
  if (sp.all()) {
    storeUpTo<8>(dst, w, 8);
    return;
  }
  TE_UNROLL
  for (int q = 0; q < 2; ++q) {
    u32 mask = 0u;
    TE_UNROLL
    for (int i = 0; i < 8; ++i) {
      int e = 8 * q + i;
      if (e >= sp.first && e < sp.last)
        mask |= 0xFu << (4 * i);
    }
    if (mask == 0u)
      continue;
    unsigned *word = reinterpret_cast<unsigned *>(dst) + q;
    atomicAnd(word, ~mask);
    atomicOr(word, w[q] & mask);
  }
}

/// 16 FP8 codes fl(v[i] * mult[i]) as four little-endian words.
template <Fp8Format F>
__device__ __forceinline__ void encodeFp8x16(const float *v, const float *mult,
                                             u32 *w) {
  TE_UNROLL
  for (int q = 0; q < 4; ++q)
    w[q] = encodeFp8x4<F>(v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3],
                          mult[4 * q], mult[4 * q + 1], mult[4 * q + 2],
                          mult[4 * q + 3]);
}

template <Fp8Format F>
__device__ __forceinline__ void encodeFp8x16(const float *v, float mult,
                                             u32 *w) {
  float m[16];
  TE_UNROLL
  for (int i = 0; i < 16; ++i)
    m[i] = mult;
  encodeFp8x16<F>(v, m, w);
}

/// Valid rows of column segment s (16 except at the bottom edge).
__device__ __forceinline__ int segmentRows(const Tile &t, int s) {
  int n = t.rows - kSegment * s;
  return n < kSegment ? n : kSegment;
}

/// Stores a 16-row run of column `c` (tile coordinates) into a transposed
/// K x M FP8 buffer.
template <Fp8Format F>
__device__ __forceinline__ void storeTransposedFp8(const Tile &t, u8 *data,
                                                   int s, int c, const float *v,
                                                   float mult) {
  u32 w[4];
  encodeFp8x16<F>(v, mult, w);
  storeSpan16(data + (t.c0 + c) * t.m + t.r0 + kSegment * s, w,
              segmentRows(t, s), runSpan(t, s, c));
}

} // namespace dev
} // namespace te

#endif // TE_DEVICE_QUANTIZETILE_CUH
