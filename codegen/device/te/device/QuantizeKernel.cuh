//===- te/device/QuantizeKernel.cuh - Fused quantize tile kernel -*- C++
//-*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The body of every generated quantize kernel: one CTA of 256 threads owns a
// 128 x 128 tile of a row-major M x K bf16 / f16 / f32 tensor and produces,
// from a single read of it, every requested output (any number of stages, each
// one direction of one scheme, plus bias-gradient partial sums). The code
// generator instantiates quantizeTile<> with the stage types below; nothing
// about a scheme is decided at run time.
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
// Scale-buffer padding is not written here: the plan fills those buffers
// with zeros first when they have padding (NUMERICS.md 2; the reference
// writes 0 there).
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_QUANTIZEKERNEL_CUH
#define TE_DEVICE_QUANTIZEKERNEL_CUH

#include "te/device/Fp4.cuh"
#include "te/device/Hadamard.cuh"
#include "te/device/Philox.cuh"
#include "te/device/QuantizeCommon.cuh"

namespace te {
namespace dev {

constexpr int kTileRows = 128;
constexpr int kTileCols = 128;
constexpr int kSegment = 16;
constexpr int kTileThreads = 256;
constexpr int kRowSegments = kTileCols / kSegment; // per tile row
constexpr int kColSegments = kTileRows / kSegment; // per tile column

/// What a stage writes and reads, bound from kernel parameters. Fields a
/// stage kind does not use are null / 0.
struct StageArgs {
  void *data;      ///< quantized (or passthrough) elements
  void *scale;     ///< scale-inverse buffer (compact layout)
  float *amax;     ///< the direction's amax buffer
  const float *in; ///< global amax (current scaling, NVFP4) or delayed scale
  float eps;       ///< current / block scaling amax floor
  u64 seed;        ///< NVFP4 stochastic rounding
  u64 offset;
};

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

struct TileSmem {
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

/// A tile in flight: where it sits in the tensor and its valid extent.
struct Tile {
  TileSmem &s;
  i64 m, k, r0, c0;
  int rows, cols; ///< valid rows / columns (<= 128 at the edges)
  int tid;
  TilePlane *lo; ///< the low halves of an f32 tile, else null

  /// The tile at (r0, c0) of an M x K tensor, clipped at its edges.
  __device__ static Tile at(TileSmem &s, i64 m, i64 k, i64 r0, i64 c0, int tid,
                            TilePlane *lo) {
    i64 rowsLeft = m - r0, colsLeft = k - c0;
    return Tile{s,
                m,
                k,
                r0,
                c0,
                int(rowsLeft < kTileRows ? rowsLeft : kTileRows),
                int(colsLeft < kTileCols ? colsLeft : kTileCols),
                tid,
                lo};
  }
  __device__ bool leader() const { return tid == 0 && r0 == 0 && c0 == 0; }
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
  U32x4 p = *reinterpret_cast<const U32x4 *>(
      &x[r][swizzledColumn(r, kSegment * j + 8 * first)]);
  U32x4 q = *reinterpret_cast<const U32x4 *>(
      &x[r][swizzledColumn(r, kSegment * j + 8 * (first ^ 1))]);
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
/// values.
__device__ __forceinline__ void loadColumnWords(const TilePlane &x, int seg,
                                                int c, u32 *w) {
  TE_UNROLL
  for (int i = 0; i < kSegment; ++i) {
    int r = kSegment * seg + i;
    w[i] = *reinterpret_cast<const u32 *>(&x[r][swizzledColumn(r, c)]);
  }
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

/// max |x| of n packed words, both halves kept apart (see absMax2).
template <bool F16, int N>
__device__ __forceinline__ u32 absMaxWords(const u32 *w) {
  u32 acc = 0u;
  TE_UNROLL
  for (int i = 0; i < N; ++i)
    acc = absMax2<F16>(acc, w[i]);
  return acc;
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

__device__ __forceinline__ bool aligned(const void *p, int bytes) {
  return (reinterpret_cast<u64>(p) & u64(bytes - 1)) == 0;
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
  // Constant word indices: keeps w in registers (no local-memory copy).
  TE_UNROLL
  for (int q = 0; q < Bytes / 4; ++q)
    TE_UNROLL
  for (int b = 0; b < 4; ++b)
    if (4 * q + b < n)
      dst[4 * q + b] = u8(w[q] >> (8 * b));
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
  storeUpTo<16>(data + (t.c0 + c) * t.m + t.r0 + kSegment * s, w,
                segmentRows(t, s));
}

//===----------------------------------------------------------------------===//
// Stages. Each has kRowSegments / kColSegments / kTileAmax (what phase 2
// must compute for it) and emit(tile, args).
//===----------------------------------------------------------------------===//

/// Per-tensor FP8, current (scale from the global amax in `in`) or delayed
/// (scale read from `in`; the tile amaxes are max-accumulated into `amax`,
/// which is the amax-history slot).
template <Fp8Format F, bool Rowwise, bool Delayed, bool Pow2>
struct Fp8PerTensorStage {
  static constexpr bool kNeedsRowSegments = false;
  static constexpr bool kNeedsColSegments = false;
  static constexpr bool kNeedsTileAmax = Delayed;

  __device__ static float scale(const StageArgs &a) {
    if (Delayed)
      return *a.in;
    return computeScaleFromAmax(*a.in, fp8MaxNorm(F), Pow2, a.eps,
                                maxFiniteF32());
  }

  template <SourceType Src>
  __device__ static void emit(const Tile &t, const StageArgs &a) {
    float sc = scale(a);
    u8 *data = static_cast<u8 *>(a.data);
    if (t.leader()) {
      *static_cast<float *>(a.scale) = scaleInvFromScale(sc);
      if (!Delayed)
        *a.amax = *a.in;
    }
    if (Delayed && t.tid == 0)
      atomicMax(reinterpret_cast<unsigned *>(a.amax),
                floatToBits(t.tileAmax()));
    if (Rowwise) {
      forRowTasks(t, [&](int r, int j) {
        float v[16];
        loadRowSegment<Src>(t, r, j, v);
        u32 w[4];
        encodeFp8x16<F>(v, sc, w);
        int n = t.cols - kSegment * j;
        storeUpTo<16>(data + (t.r0 + r) * t.k + t.c0 + kSegment * j, w,
                      n < 16 ? n : 16);
      });
    } else {
      forColumnRunValues<Src>(t, [&](int s, int c, const float *v) {
        storeTransposedFp8<F>(t, data, s, c, v, sc);
      });
    }
  }
};

/// MXFP8: 1x32 (rowwise) / 32x1 (columnwise) blocks, E8M0 scales; both
/// data buffers are M x K.
template <Fp8Format F, bool Rowwise> struct Mxfp8Stage {
  static constexpr bool kNeedsRowSegments = Rowwise;
  static constexpr bool kNeedsColSegments = !Rowwise;
  static constexpr bool kNeedsTileAmax = false;

  /// Where column c's multiplier sits in a colMult row: the four 16-byte
  /// chunks of each 16-column segment j are XOR-swizzled with (j / 2) % 4,
  /// so the quarter warp reading segments 0-7 of one row, chunk q at a
  /// time, hits eight different bank groups.
  __device__ static int multColumn(int c) {
    int j = c / kSegment, q = (c / 4) % 4;
    return kSegment * j + 4 * (q ^ ((j >> 1) & 3)) + c % 4;
  }

  template <SourceType Src>
  __device__ static void emit(const Tile &t, const StageArgs &a) {
    u8 *data = static_cast<u8 *>(a.data);
    u8 *scale = static_cast<u8 *>(a.scale);
    if (Rowwise) {
      i64 scaleCols = (t.k / 32 + 3) / 4 * 4;
      forRowTasks(t, [&](int r, int j) {
        u8 e = mxfp8BlockExponent(rowBlockAmax<32>(t, r, j), F);
        float v[16];
        loadRowSegment<Src>(t, r, j, v);
        u32 w[4];
        encodeFp8x16<F>(v, e8m0ReciprocalScale(e), w);
        i64 c = t.c0 + kSegment * j;
        storeUpTo<16>(data + (t.r0 + r) * t.k + c, w, 16);
        if (j % 2 == 0)
          scale[(t.r0 + r) * scaleCols + c / 32] = e;
      });
    } else {
      // Columnwise blocks are 32 x 1 but the data is row-major, so the
      // tile is written by rows like the rowwise direction (16 bytes per
      // lane, whole 128-byte row pieces per quarter warp), each element
      // with its column block's multiplier: first the tile's 4 x 128 block
      // scales (stored, and their reciprocals staged in shared memory).
      __shared__ __align__(16) float colMult[kTileRows / 32][kTileCols];
      __syncthreads(); // an earlier stage of the same type may still read it
      i64 scaleCols = (t.k + 127) / 128 * 128;
      for (int id = t.tid; id < (kTileRows / 32) * kTileCols;
           id += kTileThreads) {
        int b = id / kTileCols, c = id % kTileCols;
        u8 e = mxfp8BlockExponent(colBlockAmax<32>(t, 2 * b, c), F);
        colMult[b][multColumn(c)] = e8m0ReciprocalScale(e);
        if (32 * b < t.rows && c < t.cols)
          scale[(t.r0 / 32 + b) * scaleCols + t.c0 + c] = e;
      }
      __syncthreads();
      forRowTasks(t, [&](int r, int j) {
        float v[kSegment];
        loadRowSegment<Src>(t, r, j, v);
        u32 w[4];
        TE_UNROLL
        for (int q = 0; q < 4; ++q) {
          U32x4 m = *reinterpret_cast<const U32x4 *>(
              &colMult[r / 32][multColumn(kSegment * j + 4 * q)]);
          w[q] =
              encodeFp8x4<F>(v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3],
                             bitsToFloat(m.x), bitsToFloat(m.y),
                             bitsToFloat(m.z), bitsToFloat(m.w));
        }
        int n = t.cols - kSegment * j;
        storeUpTo<16>(data + (t.r0 + r) * t.k + t.c0 + kSegment * j, w,
                      n < 16 ? n : 16);
      });
    }
  }
};

/// FP8 block scaling: 1x128 or 128x128 tiles (`Tile2d`), FP32 scale_inv in
/// the GEMM_READY layouts of NUMERICS.md 7.2; columnwise data transposed.
/// Edge blocks use only their valid elements (the tile is zero-padded and
/// zeros never raise an amax).
template <Fp8Format F, bool Rowwise, bool Tile2d, bool Pow2, SourceType Input>
struct Fp8BlockStage {
  static constexpr bool kNeedsRowSegments = Rowwise && !Tile2d;
  static constexpr bool kNeedsColSegments = !Rowwise && !Tile2d;
  static constexpr bool kNeedsTileAmax = Tile2d;

  __device__ static float scaleOf(float amax, const StageArgs &a) {
    return fp8BlockScale(amax, F, Pow2, a.eps, Input);
  }

  template <SourceType Src>
  __device__ static void emit(const Tile &t, const StageArgs &a) {
    u8 *data = static_cast<u8 *>(a.data);
    float *scaleInv = static_cast<float *>(a.scale);
    i64 rb = t.r0 / 128, cb = t.c0 / 128;
    i64 mb = (t.m + 127) / 128, kb = (t.k + 127) / 128;
    float tileScale = Tile2d ? scaleOf(t.tileAmax(), a) : 0.0f;
    if (Tile2d && t.tid == 0)
      scaleInv[Rowwise ? rb * ((kb + 3) / 4 * 4) + cb
                       : cb * ((mb + 3) / 4 * 4) + rb] =
          fp8BlockScaleInv(tileScale);
    if (Rowwise) {
      i64 stride = (t.m + 3) / 4 * 4;
      forRowTasks(t, [&](int r, int j) {
        float sc = Tile2d ? tileScale : scaleOf(rowBlockAmax<128>(t, r, j), a);
        float v[16];
        loadRowSegment<Src>(t, r, j, v);
        u32 w[4];
        encodeFp8x16<F>(v, sc, w);
        int n = t.cols - kSegment * j;
        storeUpTo<16>(data + (t.r0 + r) * t.k + t.c0 + kSegment * j, w,
                      n < 16 ? n : 16);
        if (!Tile2d && j == 0)
          scaleInv[cb * stride + t.r0 + r] = fp8BlockScaleInv(sc);
      });
    } else {
      i64 stride = (t.k + 3) / 4 * 4;
      forColumnRunValues<Src>(t, [&](int s, int c, const float *v) {
        float sc = Tile2d ? tileScale : scaleOf(colBlockAmax<128>(t, s, c), a);
        storeTransposedFp8<F>(t, data, s, c, v, sc);
        if (!Tile2d && s == 0)
          scaleInv[rb * stride + t.c0 + c] = fp8BlockScaleInv(sc);
      });
    }
  }
};

/// NVFP4: 1x16 / 16x1 (or 16x16 with Block2d) blocks, E4M3 block scales,
/// the tensor amax in `in` (from the amax pre-pass); columnwise data is the
/// K x M/2 transpose. Stochastic rounding draws the random byte of stored
/// element index i from Philox(seed, offset, i / 16): a 16-element run is
/// one Philox block.
template <bool Rowwise, bool Block2d, bool Stochastic> struct Nvfp4Stage {
  static constexpr bool kNeedsRowSegments = Rowwise;
  static constexpr bool kNeedsColSegments = !Rowwise;
  static constexpr bool kNeedsTileAmax = false;

  /// Packs fl(v[i] * enc) of 16 consecutive stored elements (stored index
  /// `first` of the first one) into two words.
  __device__ static void encode16(const float *v, float enc, u64 first,
                                  const StageArgs &a, u32 *w) {
    Philox4x32 rnd{};
    if (Stochastic)
      rnd = srRandomBlock(a.seed, a.offset, first / 16);
    TE_UNROLL
    for (int q = 0; q < 2; ++q) {
      u32 word = 0;
      TE_UNROLL
      for (int i = 0; i < 8; i += 2) {
        int e = 8 * q + i;
        u32 codes;
        if (Stochastic) {
          u32 bits = philoxWord(rnd, u32(e / 4)) >> (8 * (e % 4));
          codes =
              packE2M1(encodeE2M1Stochastic(mulRn(v[e], enc), bits),
                       encodeE2M1Stochastic(mulRn(v[e + 1], enc), bits >> 8));
        } else {
          codes = encodeE2M1x2(mulRn(v[e], enc), mulRn(v[e + 1], enc));
        }
        word |= codes << (4 * i);
      }
      w[q] = word;
    }
  }

  /// The tensor's encode / decode scales from its amax (`in`), which is
  /// also the direction's amax.
  __device__ static void globalScales(const Tile &t, const StageArgs &a,
                                      float &sEnc, float &sDec) {
    float globalAmax = *a.in;
    sEnc = nvfp4GlobalEncodeScale(globalAmax);
    sDec = nvfp4GlobalDecodeScale(sEnc);
    if (t.leader())
      *a.amax = globalAmax;
  }

  /// Quantizes `v`, the 16-row run of segment `s` of tile column `c`, as
  /// one block (amax `amax`) of the transposed K x M/2 data, and its scale.
  __device__ static void storeColumnRun(const Tile &t, const StageArgs &a,
                                        int s, int c, const float *v,
                                        float amax, float sEnc, float sDec) {
    u8 sB = nvfp4BlockScale(amax, sEnc);
    i64 col = t.c0 + c;
    i64 first = col * t.m + t.r0 + kSegment * s;
    u32 w[2];
    encode16(v, nvfp4BlockEncodeFactor(sB, sDec), u64(first), a, w);
    storeUpTo<8>(static_cast<u8 *>(a.data) + first / 2, w, 8);
    i64 scaleCols = (t.m / 16 + 3) / 4 * 4;
    static_cast<u8 *>(a.scale)[col * scaleCols + (t.r0 + kSegment * s) / 16] =
        sB;
  }

  template <SourceType Src>
  __device__ static void emit(const Tile &t, const StageArgs &a) {
    u8 *data = static_cast<u8 *>(a.data);
    u8 *scale = static_cast<u8 *>(a.scale);
    float sEnc, sDec;
    globalScales(t, a, sEnc, sDec);
    if (Rowwise) {
      i64 scaleCols = (t.k / 16 + 3) / 4 * 4;
      forRowTasks(t, [&](int r, int j) {
        float amax = Block2d ? block16x16AmaxOfRow(t, r, j) : t.s.rowAmax[r][j];
        u8 sB = nvfp4BlockScale(amax, sEnc);
        float v[16];
        loadRowSegment<Src>(t, r, j, v);
        i64 first = (t.r0 + r) * t.k + t.c0 + kSegment * j;
        u32 w[2];
        encode16(v, nvfp4BlockEncodeFactor(sB, sDec), u64(first), a, w);
        storeUpTo<8>(data + first / 2, w, 8);
        scale[(t.r0 + r) * scaleCols + (t.c0 + kSegment * j) / 16] = sB;
      });
    } else {
      forColumnRunValues<Src>(t, [&](int s, int c, const float *v) {
        storeColumnRun(t, a, s, c, v,
                       Block2d ? block16x16AmaxOfColumn(t, s, c)
                               : t.s.colAmax[s][c],
                       sEnc, sDec);
      });
    }
  }
};

/// NVFP4 columnwise with the random Hadamard transform (NUMERICS.md 6.4):
/// each 16-row run of a column is transformed, rounded to bf16 (Hadamard.cuh)
/// and quantized as one 16-element block of the transposed K x M data - the
/// run is exactly the block, so the stage needs no segment amaxes. The
/// tensor scale comes from the amax of the transformed tensor (`in`, from
/// the rhtColumnAmax pre-pass), which is also the direction's amax.
///
/// With `Block2d` a block is 16 transformed runs of 16 adjacent columns (the
/// 16x16 tile of the transposed data; NUMERICS.md 6.4): the column runs of
/// forColumnRuns give each warp eight columns of every segment, so a block
/// amax is a shuffle over the warp's lanes of one segment and an exchange
/// with the neighbouring warp through shared memory; the runs are then
/// transformed again for the store (registers stay as for the 1-D blocks).
template <bool Stochastic, bool Block2d> struct Nvfp4RhtColumnStage {
  static constexpr bool kNeedsRowSegments = false;
  static constexpr bool kNeedsColSegments = false;
  static constexpr bool kNeedsTileAmax = false;
  using Plain = Nvfp4Stage<false, false, Stochastic>;

  template <SourceType Src>
  __device__ static void emit(const Tile &t, const StageArgs &a) {
    float sEnc, sDec;
    Plain::globalScales(t, a, sEnc, sDec);
    if (!Block2d) {
      forColumnRunValues<Src>(t, [&](int s, int c, const float *v) {
        float y[kSegment];
        rht16Bf16(v, y);
        Plain::storeColumnRun(t, a, s, c, y, runAmax(y), sEnc, sDec);
      });
      return;
    }
    constexpr int kRounds = kColSegments * (kTileCols / 2) / kTileThreads;
    static_assert(kRounds == 2 && kTileThreads % 32 == 0,
                  "rhtWarpAmax holds two rounds of whole warps");
    int warp = t.tid / 32, lane = t.tid % 32;
    TE_UNROLL
    for (int i = 0; i < kRounds; ++i) {
      // The task of forColumnRuns: lanes s, s + 8, s + 16, s + 24 of a warp
      // hold segment s of the warp's columns 8w' .. 8w' + 7 of this round.
      int task = i * kTileThreads + t.tid;
      int s = task % kColSegments, c = 2 * (task / kColSegments);
      bool valid = kSegment * s < t.rows && c < t.cols;
      float amax = 0.0f;
      if (valid)
        columnPairValues<Src>(t, s, c, [&](int, const float *v) {
          float y[kSegment];
          rht16Bf16(v, y);
          amax = fmaxf(amax, runAmax(y));
        });
      amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, 8));
      amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, 16));
      if (lane < kColSegments)
        t.s.rhtWarpAmax[i][warp][lane] = amax;
      __syncthreads();
      // Warps 2b and 2b + 1 hold the 16 columns of one block.
      float block = fmaxf(amax, t.s.rhtWarpAmax[i][warp ^ 1][s]);
      if (valid)
        columnPairValues<Src>(t, s, c, [&](int cc, const float *v) {
          float y[kSegment];
          rht16Bf16(v, y);
          Plain::storeColumnRun(t, a, s, cc, y, block, sEnc, sDec);
        });
    }
  }

  __device__ static float runAmax(const float *y) {
    float amax = 0.0f;
    TE_UNROLL
    for (int i = 0; i < kSegment; ++i)
      amax = amaxAccumulate(amax, y[i]);
    return amax;
  }
};

/// Identity: the M x K elements in `Out` (0 bf16, 1 f16, 2 f32), bits kept
/// when the type does not change. The same for either direction (an
/// identity columnwise direction is an untransposed copy).
template <int Out> struct IdentityStage {
  static constexpr bool kNeedsRowSegments = false;
  static constexpr bool kNeedsColSegments = false;
  static constexpr bool kNeedsTileAmax = false;

  template <SourceType Src>
  __device__ static void emit(const Tile &t, const StageArgs &a) {
    forRowTasks(t, [&](int r, int j) {
      int n = t.cols - kSegment * j;
      n = n < 16 ? n : 16;
      i64 first = (t.r0 + r) * t.k + t.c0 + kSegment * j;
      if (Out == 2) {
        float *out = static_cast<float *>(a.data) + first;
        for (int i = 0; i < n; ++i)
          out[i] = valueAt<Src>(t, r, kSegment * j + i);
        return;
      }
      u16 *out = static_cast<u16 *>(a.data) + first;
      bool same = Src != SourceType::F32 && (Out == 1) == isF16(Src);
      for (int i = 0; i < n; ++i) {
        u16 bits = *t.s.at(r, kSegment * j + i);
        float f = valueAt<Src>(t, r, kSegment * j + i);
        out[i] = same ? bits : (Out == 1 ? floatToF16(f) : floatToBF16(f));
      }
    });
  }
};

//===----------------------------------------------------------------------===//
// The tile kernel
//===----------------------------------------------------------------------===//

/// Phase 1: the tile into shared memory, zero outside the tensor. Whole,
/// aligned 16-byte chunks are cp.async copies (all eight of a thread in
/// flight at once, no staging registers); edge chunks go through registers.
/// The caller waits (cpAsyncWaitAll) before the barrier.
__device__ __forceinline__ void loadTile16(TileSmem &s, const u16 *x, i64 m,
                                           i64 k, i64 r0, i64 c0, int tid) {
  constexpr int kChunksPerRow = kTileCols / 8;
  constexpr int kPerThread = kTileRows * kChunksPerRow / kTileThreads;
  bool vector = k % 8 == 0 && aligned(x, 16);
  TE_UNROLL
  for (int i = 0; i < kPerThread; ++i) {
    int id = i * kTileThreads + tid;
    int tr = id / kChunksPerRow, tc = 8 * (id % kChunksPerRow);
    i64 r = r0 + tr, c = c0 + tc;
    u16 *dst = s.at(tr, tc);
    if (vector && r < m && c + 8 <= k) {
      cpAsync16(dst, x + r * k + c);
    } else {
      u32 h[8];
      for (int e = 0; e < 8; ++e)
        h[e] = r < m && c + e < k ? loadGlobalU16(x + r * k + c + e) : 0u;
      *reinterpret_cast<U32x4 *>(dst) =
          U32x4{h[0] | h[1] << 16, h[2] | h[3] << 16, h[4] | h[5] << 16,
                h[6] | h[7] << 16};
    }
  }
}

/// Phase 1 for an f32 tensor: each 8-element chunk is read as two 16-byte
/// loads and split into its high halves (TileSmem::x) and low halves (`lo`).
/// (One 16-byte quad per thread and step, a warp per 512-byte row piece,
/// measured 15 % slower on the H100.)
__device__ __forceinline__ void loadTileF32(TileSmem &s, TilePlane &lo,
                                            const float *x, i64 m, i64 k,
                                            i64 r0, i64 c0, int tid) {
  constexpr int kChunksPerRow = kTileCols / 8;
  constexpr int kPerThread = kTileRows * kChunksPerRow / kTileThreads;
  bool vector = k % 4 == 0 && aligned(x, 16);
  TE_UNROLL
  for (int i = 0; i < kPerThread; ++i) {
    int id = i * kTileThreads + tid;
    int tr = id / kChunksPerRow, tc = 8 * (id % kChunksPerRow);
    i64 r = r0 + tr, c = c0 + tc;
    u32 b[8];
    if (vector && r < m && c + 8 <= k) {
      U32x4 p = loadGlobal16(x + r * k + c),
            q = loadGlobal16(x + r * k + c + 4);
      u32 w[8] = {p.x, p.y, p.z, p.w, q.x, q.y, q.z, q.w};
      TE_UNROLL
      for (int e = 0; e < 8; ++e)
        b[e] = w[e];
    } else {
      for (int e = 0; e < 8; ++e)
        b[e] = r < m && c + e < k ? floatToBits(x[r * k + c + e]) : 0u;
    }
    u32 hi[4], lw[4];
    TE_UNROLL
    for (int e = 0; e < 4; ++e) {
      hi[e] = (b[2 * e] >> 16) | (b[2 * e + 1] & 0xFFFF0000u);
      lw[e] = (b[2 * e] & 0xFFFFu) | (b[2 * e + 1] << 16);
    }
    int pc = swizzledColumn(tr, tc);
    *reinterpret_cast<U32x4 *>(&s.x[tr][pc]) =
        U32x4{hi[0], hi[1], hi[2], hi[3]};
    *reinterpret_cast<U32x4 *>(&lo[tr][pc]) = U32x4{lw[0], lw[1], lw[2], lw[3]};
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
          m = amaxAccumulate(m, v[i]);
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
          a0 = amaxAccumulate(a0, joinLo(w[i], l[i]));
          a1 = amaxAccumulate(a1, joinHi(w[i], l[i]));
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

/// The stages of one kernel, in parameter order: the union of what their
/// phase 2 needs, and emit() of each with its own StageArgs.
template <class... Stages> struct StageList {
  static constexpr bool kNeedsRowSegments = false;
  static constexpr bool kNeedsColSegments = false;
  static constexpr bool kNeedsTileAmax = false;
  template <SourceType Src>
  __device__ static void emit(const Tile &, const StageArgs *) {}
};
template <class Head, class... Tail> struct StageList<Head, Tail...> {
  using Rest = StageList<Tail...>;
  static constexpr bool kNeedsRowSegments =
      Head::kNeedsRowSegments || Rest::kNeedsRowSegments;
  static constexpr bool kNeedsColSegments =
      Head::kNeedsColSegments || Rest::kNeedsColSegments;
  static constexpr bool kNeedsTileAmax =
      Head::kNeedsTileAmax || Rest::kNeedsTileAmax;
  template <SourceType Src>
  __device__ static void emit(const Tile &t, const StageArgs *args) {
    Head::template emit<Src>(t, args[0]);
    Rest::template emit<Src>(t, args + 1);
  }
};

/// The whole kernel: launch kTileThreads threads and one CTA per 128 x 128
/// tile, column tiles fastest, with quantizeDynamicSmem(Src) bytes of
/// dynamic shared memory. `args[i]` belongs to the i-th stage.
template <SourceType Src, bool BiasGrad, class... Stages>
__device__ __forceinline__ void quantizeTile(const void *x, i64 m, i64 k,
                                             const StageArgs *args,
                                             float *biasPartial) {
  using List = StageList<Stages...>;
  __shared__ TileSmem smem;
  extern __shared__ __align__(16) u8 dynamicSmem[];
  TilePlane *lo = Src == SourceType::F32
                      ? reinterpret_cast<TilePlane *>(dynamicSmem)
                      : nullptr;
  i64 tilesAcross = (k + kTileCols - 1) / kTileCols;
  i64 r0 = i64(blockIdx.x) / tilesAcross * kTileRows;
  i64 c0 = i64(blockIdx.x) % tilesAcross * kTileCols;
  int tid = int(threadIdx.x);
  Tile t = Tile::at(smem, m, k, r0, c0, tid, lo);

  if (Src == SourceType::F32)
    loadTileF32(smem, *lo, static_cast<const float *>(x), m, k, r0, c0, tid);
  else
    loadTile16(smem, static_cast<const u16 *>(x), m, k, r0, c0, tid);
  if (tid == 0)
    smem.tileAmax = 0u;
  cpAsyncWaitAll();
  __syncthreads();
  reduceTile<Src, List::kNeedsRowSegments, List::kNeedsColSegments,
             List::kNeedsTileAmax, BiasGrad>(t, biasPartial);
  __syncthreads();
  List::template emit<Src>(t, args);
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
      a = amaxAccumulate(a, bitsToFloat(w[e]));
  }
  for (i64 e = 4 * chunks + tid; e < n; e += stride)
    a = amaxAccumulate(a, x[e]);
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

/// Amax pre-pass of an RHT columnwise direction: max |x| over the
/// bf16-rounded transform of every 16-row run of every column (M % 16 ==
/// 0), max-accumulated into *out (zeroed by the plan). Consecutive threads
/// take consecutive columns, so each of the 16 row reads is coalesced.
template <SourceType Src>
__device__ __forceinline__ void rhtColumnAmax(const void *x, i64 m, i64 k,
                                              float *out) {
  i64 tasks = (m / 16) * k;
  i64 stride = i64(gridDim.x) * blockDim.x;
  float a = 0.0f;
  for (i64 task = i64(blockIdx.x) * blockDim.x + threadIdx.x; task < tasks;
       task += stride) {
    i64 c = task % k, r0 = task / k * 16;
    float v[16], y[16];
    TE_UNROLL
    for (int i = 0; i < 16; ++i) {
      i64 at = (r0 + i) * k + c;
      v[i] = Src == SourceType::F32 ? static_cast<const float *>(x)[at]
                                    : widen<isF16(Src)>(loadGlobalU16(
                                          static_cast<const u16 *>(x) + at));
    }
    rht16Bf16(v, y);
    TE_UNROLL
    for (int i = 0; i < 16; ++i)
      a = amaxAccumulate(a, y[i]);
  }
  warpAmaxToGlobal(a, out);
}

/// Bias gradient: out[c] = sum over chunks of partial[chunk][c], in chunk
/// order from +0 (the reference's total).
__device__ __forceinline__ void
biasGradFinalize(const float *partial, i64 chunks, i64 k, float *out) {
  i64 c = i64(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= k)
    return;
  float sum = 0.0f;
  for (i64 i = 0; i < chunks; ++i)
    sum = sum + partial[i * k + c];
  out[c] = sum;
}

} // namespace dev
} // namespace te

#endif // TE_DEVICE_QUANTIZEKERNEL_CUH
