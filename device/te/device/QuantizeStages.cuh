//===- te/device/QuantizeStages.cuh - Quantize kernel stages ----*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The stages of the quantize kernels (QuantizeKernel.cuh): each one
// direction of one scheme (per-tensor FP8, MXFP8, FP8 block scaling, NVFP4
// with and without the random Hadamard transform, identity), the kernel
// parameters it is bound to (StageArgs) and a kernel's list of them
// (StageList). A stage says which reductions phase 2 must compute for it
// (kNeedsRowSegments / kNeedsColSegments / kNeedsTileAmax), the blocks its
// segment amaxes combine into (kBlocks) and, in emit(),
// reads its block amaxes from the segment amaxes, computes the scale
// exactly as the reference does (Scales.cuh), encodes and stores.
//
// Scale-buffer padding is not written here: the plan fills those buffers
// with zeros first when they have padding (docs/Numerics.md §2; the reference
// writes 0 there).
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_QUANTIZESTAGES_CUH
#define TE_DEVICE_QUANTIZESTAGES_CUH

#include "te/device/Fp4.cuh"
#include "te/device/Hadamard.cuh"
#include "te/device/Philox.cuh"
#include "te/device/QuantizeTile.cuh"

namespace te {
namespace dev {

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

/// The blocks a stage's segment amaxes combine into, in segments: a row
/// segment's block is rowRows rows x rowSegs segments, a column segment's
/// colBands segments x colCols columns (MXFP8 rowwise {1, 2, 1, 1}: 1x32).
/// A stage gives only the kind of segments it reads (1s for the other).
/// Master shards (ShardedQuantizeKernel.cuh) exchange the amaxes of the
/// blocks that two ranks share, so they need the extents, not just whether
/// a segment is read. Blocks are aligned, and every extent a power of two.
struct SegmentBlocks {
  int rowRows = 1, rowSegs = 1, colBands = 1, colCols = 1;
};
TE_HD constexpr int maxInt(int a, int b) { return a < b ? b : a; }
/// The smallest aligned block holding a block of each.
TE_HD constexpr SegmentBlocks unionOf(SegmentBlocks a, SegmentBlocks b) {
  return {maxInt(a.rowRows, b.rowRows), maxInt(a.rowSegs, b.rowSegs),
          maxInt(a.colBands, b.colBands), maxInt(a.colCols, b.colCols)};
}

//===----------------------------------------------------------------------===//
// Stages. Each has kNeedsRowSegments / kNeedsColSegments / kNeedsTileAmax
// (what phase 2 must compute for it), kBlocks and emit(tile, args).
//===----------------------------------------------------------------------===//

/// Per-tensor FP8, current (scale from the global amax in `in`) or delayed
/// (scale read from `in`; the tile amaxes are max-accumulated into `amax`,
/// which is the amax-history slot).
template <Fp8Format F, bool Rowwise, bool Delayed, bool Pow2>
struct Fp8PerTensorStage {
  static constexpr bool kNeedsRowSegments = false;
  static constexpr bool kNeedsColSegments = false;
  static constexpr bool kNeedsTileAmax = Delayed;
  static constexpr SegmentBlocks kBlocks{};

  __device__ static float scale(const StageArgs &a) {
    if (Delayed)
      return *a.in;
    return fp8CurrentScale<F, Pow2>(*a.in, a.eps);
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
        storeSpan16(data + (t.r0 + r) * t.k + t.c0 + kSegment * j, w,
                    n < 16 ? n : 16, rowSpan(t, r, j));
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
  static constexpr SegmentBlocks kBlocks =
      Rowwise ? SegmentBlocks{1, 32 / kSegment, 1, 1}
              : SegmentBlocks{1, 1, 32 / kSegment, 1};

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
        storeSpan16(data + (t.r0 + r) * t.k + c, w, 16, rowSpan(t, r, j));
        if (j % 2 == 0 &&
            t.storesScaleOf(r, r + 1, kSegment * j, kSegment * j + 32))
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
        if (32 * b < t.rows && c < t.cols &&
            t.storesScaleOf(32 * b, 32 * b + 32, c, c + 1))
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
        storeSpan16(data + (t.r0 + r) * t.k + t.c0 + kSegment * j, w,
                    n < 16 ? n : 16, rowSpan(t, r, j));
      });
    }
  }
};

/// FP8 block scaling: 1x128 or 128x128 tiles (`Tile2d`), FP32 scale_inv in
/// the GEMM_READY layouts of docs/Numerics.md §7.2; columnwise data transposed.
/// Edge blocks use only their valid elements (the tile is zero-padded and
/// zeros never raise an amax).
template <Fp8Format F, bool Rowwise, bool Tile2d, bool Pow2, SourceType Input>
struct Fp8BlockStage {
  static constexpr bool kNeedsRowSegments = Rowwise && !Tile2d;
  static constexpr bool kNeedsColSegments = !Rowwise && !Tile2d;
  static constexpr bool kNeedsTileAmax = Tile2d;
  static constexpr SegmentBlocks kBlocks =
      Tile2d    ? SegmentBlocks{} // the tile amax, no segments
      : Rowwise ? SegmentBlocks{1, kRowSegments, 1, 1}
                : SegmentBlocks{1, 1, kColSegments, 1};

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
        storeSpan16(data + (t.r0 + r) * t.k + t.c0 + kSegment * j, w,
                    n < 16 ? n : 16, rowSpan(t, r, j));
        if (!Tile2d && j == 0 && t.storesScaleOf(r, r + 1, 0, kTileCols))
          scaleInv[cb * stride + t.r0 + r] = fp8BlockScaleInv(sc);
      });
    } else {
      i64 stride = (t.k + 3) / 4 * 4;
      forColumnRunValues<Src>(t, [&](int s, int c, const float *v) {
        float sc = Tile2d ? tileScale : scaleOf(colBlockAmax<128>(t, s, c), a);
        storeTransposedFp8<F>(t, data, s, c, v, sc);
        if (!Tile2d && s == 0 && t.storesScaleOf(0, kTileRows, c, c + 1))
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
  static constexpr SegmentBlocks kBlocks =
      Rowwise ? SegmentBlocks{Block2d ? kSegment : 1, 1, 1, 1}
              : SegmentBlocks{1, 1, 1, Block2d ? kSegment : 1};

  /// Packs fl(v[i] * enc) of 16 consecutive stored elements (stored index
  /// `first` of the first one) into two words.
  __device__ static void encode16(const float *v, float enc, u64 first,
                                  const StageArgs &a, u32 *w) {
    Philox4x32 rnd{};
    if (Stochastic)
      rnd = srRandomBlock(a.seed, a.offset, first / 16);
    // Element e draws byte e % 4 of Philox word e / 4.
    TE_UNROLL
    for (int q = 0; q < 2; ++q)
      w[q] = Stochastic ? encodeE2M1x8Stochastic(v + 8 * q, enc,
                                                 philoxWord(rnd, 2u * q),
                                                 philoxWord(rnd, 2u * q + 1))
                        : encodeE2M1x8(v + 8 * q, enc);
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
    storeSpanFp4(static_cast<u8 *>(a.data) + first / 2, w, runSpan(t, s, c));
    i64 scaleCols = (t.m / 16 + 3) / 4 * 4;
    if (t.storesScaleOf(kSegment * s, kSegment * s + kSegment, c, c + 1))
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
        storeSpanFp4(data + first / 2, w, rowSpan(t, r, j));
        if (t.storesScaleOf(r, r + 1, kSegment * j, kSegment * j + kSegment))
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

/// NVFP4 columnwise with the random Hadamard transform (docs/Numerics.md §6.4):
/// each 16-row run of a column is transformed, rounded to bf16 (Hadamard.cuh)
/// and quantized as one 16-element block of the transposed K x M data - the
/// run is exactly the block, so the stage needs no segment amaxes. The
/// tensor scale comes from the amax of the transformed tensor (`in`, from
/// the rhtColumnAmax pre-pass), which is also the direction's amax.
///
/// With `Block2d` a block is 16 transformed runs of 16 adjacent columns (the
/// 16x16 tile of the transposed data; docs/Numerics.md §6.4): the column runs
/// of forColumnRuns give each warp eight columns of every segment, so a block
/// amax is a shuffle over the warp's lanes of one segment and an exchange
/// with the neighbouring warp through shared memory; the runs are then
/// transformed again for the store (registers stay as for the 1-D blocks).
template <bool Stochastic, bool Block2d> struct Nvfp4RhtColumnStage {
  static constexpr bool kNeedsRowSegments = false;
  static constexpr bool kNeedsColSegments = false;
  static constexpr bool kNeedsTileAmax = false;
  static constexpr SegmentBlocks kBlocks{};
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
      amax = amaxAccumulateF32(amax, y[i]);
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
  static constexpr SegmentBlocks kBlocks{};

  template <SourceType Src>
  __device__ static void emit(const Tile &t, const StageArgs &a) {
    forRowTasks(t, [&](int r, int j) {
      int n = t.cols - kSegment * j;
      n = n < 16 ? n : 16;
      Span sp = rowSpan(t, r, j);
      n = n < sp.last ? n : sp.last;
      i64 first = (t.r0 + r) * t.k + t.c0 + kSegment * j;
      if (Out == 2) {
        float *out = static_cast<float *>(a.data) + first;
        for (int i = sp.first; i < n; ++i)
          out[i] = valueAt<Src>(t, r, kSegment * j + i);
        return;
      }
      u16 *out = static_cast<u16 *>(a.data) + first;
      bool same = Src != SourceType::F32 && (Out == 1) == isF16(Src);
      for (int i = sp.first; i < n; ++i) {
        u16 bits = *t.s.at(r, kSegment * j + i);
        float f = valueAt<Src>(t, r, kSegment * j + i);
        out[i] = same ? bits : (Out == 1 ? floatToF16(f) : floatToBF16(f));
      }
    });
  }
};

/// The stages of one kernel, in parameter order: the union of what their
/// phase 2 needs, and emit() of each with its own StageArgs.
template <class... Stages> struct StageList {
  static constexpr bool kNeedsRowSegments = false;
  static constexpr bool kNeedsColSegments = false;
  static constexpr bool kNeedsTileAmax = false;
  static constexpr SegmentBlocks kBlocks{};
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
  static constexpr SegmentBlocks kBlocks =
      unionOf(Head::kBlocks, Rest::kBlocks);
  template <SourceType Src>
  __device__ static void emit(const Tile &t, const StageArgs *args) {
    Head::template emit<Src>(t, args[0]);
    Rest::template emit<Src>(t, args + 1);
  }
};

} // namespace dev
} // namespace te

#endif // TE_DEVICE_QUANTIZESTAGES_CUH
