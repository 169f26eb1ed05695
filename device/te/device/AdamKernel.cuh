//===- te/device/AdamKernel.cuh - Fused multi-tensor Adam kernel -*- C++
//-*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The body of every generated optimizer kernel: one launch updates many
// parameters (Adam or AdamW, the hyper-parameters compile-time constants of
// a generated `Hyper` struct, lr and step read from device memory so that
// a captured CUDA graph replays with new values) and, in the same pass,
// quantizes each new FP32 parameter with the stages of the quantize tile
// kernel (QuantizeKernel.cuh): one CTA per 128 x 128 tile of one tensor,
// the tile loader computing the update - it reads p, g, m, v once, writes
// p, m, v, and leaves the new p in shared memory as an f32 tile for the
// stages. Without stages the loader alone runs and no tile is kept.
// Stages that scale by an amax of the whole new parameter (per-tensor
// current scaling, NVFP4's tensor scale, an RHT columnwise direction's
// transformed amax) cannot cast before every tile is updated: the update
// produces those amaxes as it writes p, and a second kernel
// (adamRequantizeTiles) quantizes them from the new p - 4 bytes an element
// read again, where recomputing the update for the amax read 14-16.
//
// Tensors come in one by-value table (rt::ArgDesc::Table) of kAdamWords +
// 4 x stages 8-byte words per tensor: the buffers, the shape, the index of
// its first tile, and per stage (data, scale_inv, amax, in).
//
// The arithmetic is ref::adamElement's, operation for operation: IEEE fp32
// with no contraction, or TE's fast-math form (flush-to-zero, its fmas),
// with correctly rounded division and square root in both; the bias
// corrections are (float)(1 - beta^step), beta^step by binary
// exponentiation in double (ref::powBySquaring). Host and device therefore
// agree bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_ADAMKERNEL_CUH
#define TE_DEVICE_ADAMKERNEL_CUH

#include "te/device/QuantizeKernel.cuh"

namespace te {
namespace dev {

/// Words of one tensor's table entry before its stages.
enum AdamWord {
  kAdamParam,
  kAdamGrad,
  kAdamExpAvg,
  kAdamExpAvgSq,
  kAdamNewParam,
  kAdamNewExpAvg,
  kAdamNewExpAvgSq,
  kAdamRows,
  kAdamCols,
  kAdamFirstTile,
  kAdamWords
};

/// The table of one launch: N tensors of W words.
template <int N, int W> struct AdamTable { u64 w[N * W]; };

TE_HD double powBySquaring(double base, i64 e) {
  double r = 1.0;
  while (e > 0) {
    if (e & 1)
      r = r * base;
    base = base * base;
    e >>= 1;
  }
  return r;
}

//===----------------------------------------------------------------------===//
// fp32 operations with flush-to-zero (the .ftz of fast-math PTX)
//===----------------------------------------------------------------------===//

#define TE_FTZ_BINARY(name, ptx)                                               \
  __device__ __forceinline__ float name(float a, float b) {                    \
    float r;                                                                   \
    asm(ptx " %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));                        \
    return r;                                                                  \
  }
TE_FTZ_BINARY(addFtz, "add.rn.ftz.f32")
TE_FTZ_BINARY(subFtz, "sub.rn.ftz.f32")
TE_FTZ_BINARY(mulFtz, "mul.rn.ftz.f32")
TE_FTZ_BINARY(divFtz, "div.rn.ftz.f32")
#undef TE_FTZ_BINARY

__device__ __forceinline__ float sqrtFtz(float a) {
  float r;
  asm("sqrt.rn.ftz.f32 %0, %1;" : "=f"(r) : "f"(a));
  return r;
}
__device__ __forceinline__ float fmaFtz(float a, float b, float c) {
  float r;
  asm("fma.rn.ftz.f32 %0, %1, %2, %3;" : "=f"(r) : "f"(a), "f"(b), "f"(c));
  return r;
}
__device__ __forceinline__ float sqrtRn(float a) {
  float r;
  asm("sqrt.rn.f32 %0, %1;" : "=f"(r) : "f"(a));
  return r;
}

/// Run-time scalars of one launch.
struct AdamScalars {
  float lr, bc1, bc2;
};

template <class H>
__device__ __forceinline__ AdamScalars adamScalars(const float *lr,
                                                   const i64 *step) {
  i64 s = *step;
  AdamScalars a;
  a.lr = *lr;
  a.bc1 = float(1.0 - powBySquaring(double(H::beta1), s));
  a.bc2 = float(1.0 - powBySquaring(double(H::beta2), s));
  return a;
}

/// One element, as ref::adamElement.
template <class H>
__device__ __forceinline__ void adamElement(float g, float &p, float &m,
                                            float &v, const AdamScalars &s) {
  if (H::fastMath) {
    if (!H::adamW)
      g = fmaFtz(H::weightDecay, p, g);
    m = fmaFtz(subFtz(1.0f, H::beta1), g, mulFtz(H::beta1, m));
    v = fmaFtz(g, mulFtz(subFtz(1.0f, H::beta2), g), mulFtz(H::beta2, v));
    float mHat = divFtz(m, s.bc1), vHat = divFtz(v, s.bc2);
    float denom = addFtz(sqrtFtz(vHat), H::eps);
    float update = divFtz(mHat, denom);
    if (H::adamW)
      update = fmaFtz(p, H::weightDecay, update);
    p = subFtz(p, mulFtz(s.lr, update));
    return;
  }
  if (!H::adamW)
    g = addRn(g, mulRn(H::weightDecay, p));
  m = addRn(mulRn(H::beta1, m), mulRn(H::oneMinusBeta1, g));
  v = addRn(mulRn(H::beta2, v), mulRn(mulRn(H::oneMinusBeta2, g), g));
  float mHat = divRn(m, s.bc1), vHat = divRn(v, s.bc2);
  float denom = addRn(sqrtRn(vHat), H::eps);
  float update = divRn(mHat, denom);
  if (H::adamW)
    update = addRn(update, mulRn(H::weightDecay, p));
  p = addRn(p, -mulRn(s.lr, update));
}

/// The pointers of one tensor.
struct AdamBuffers {
  const float *p, *m, *v;
  const void *g;
  float *p1, *m1, *v1;
};

/// 8 bytes from global memory, read-only, not kept in L1.
__device__ __forceinline__ void loadGlobal8(const void *p, u32 &x, u32 &y) {
  asm("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];"
      : "=r"(x), "=r"(y)
      : "l"(p));
}

/// 16 bytes from global memory, not kept in L1, through the coherent path:
/// in a session the optimizer updates p, m and v in place, and `.nc` loads
/// are defined only for memory no thread writes during the kernel.
__device__ __forceinline__ U32x4 loadGlobal16Coherent(const void *p) {
  U32x4 v;
  asm("ld.global.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

/// Four consecutive f32 elements, `n` of them valid (the rest zero).
__device__ __forceinline__ void load4(const float *x, bool vector, int n,
                                      float *out) {
  if (vector) {
    U32x4 a = loadGlobal16Coherent(x);
    out[0] = bitsToFloat(a.x), out[1] = bitsToFloat(a.y);
    out[2] = bitsToFloat(a.z), out[3] = bitsToFloat(a.w);
  } else {
    // Unrolled: constant indices keep `out` in registers.
    TE_UNROLL
    for (int e = 0; e < 4; ++e)
      out[e] = e < n ? x[e] : 0.0f;
  }
}

/// Four consecutive gradient elements (bf16 / f16 / f32) widened; `n` of
/// them valid (the rest read as zero).
template <SourceType G>
__device__ __forceinline__ void loadGrad4(const void *g, i64 at, bool vector,
                                          int n, float *out) {
  if (G == SourceType::F32) {
    load4(static_cast<const float *>(g) + at, vector, n, out);
    return;
  }
  const u16 *gp = static_cast<const u16 *>(g) + at;
  if (vector) {
    u32 w0, w1;
    loadGlobal8(gp, w0, w1);
    out[0] = widenLo<isF16(G)>(w0), out[1] = widenHi<isF16(G)>(w0);
    out[2] = widenLo<isF16(G)>(w1), out[3] = widenHi<isF16(G)>(w1);
  } else {
    TE_UNROLL
    for (int e = 0; e < 4; ++e)
      out[e] = e < n ? widen<isF16(G)>(loadGlobalU16(gp + e)) : 0.0f;
  }
}

__device__ __forceinline__ void store4(float *x, bool vector, int n,
                                       const float *in) {
  if (vector) {
    *reinterpret_cast<U32x4 *>(x) =
        U32x4{floatToBits(in[0]), floatToBits(in[1]), floatToBits(in[2]),
              floatToBits(in[3])};
  } else {
    TE_UNROLL
    for (int e = 0; e < 4; ++e)
      if (e < n)
        x[e] = in[e];
  }
}

/// The inputs of four consecutive elements.
struct AdamQuadIn {
  float p[4], m[4], v[4], g[4];
};

/// Loads the `n` (<= 4) consecutive elements at `at` (zeros past `n`).
template <SourceType G>
__device__ __forceinline__ void
adamLoadQuad(const AdamBuffers &b, i64 at, bool vector, int n, AdamQuadIn &q) {
  load4(b.p + at, vector, n, q.p);
  load4(b.m + at, vector, n, q.m);
  load4(b.v + at, vector, n, q.v);
  loadGrad4<G>(b.g, at, vector, n, q.g);
}

/// Updates a loaded quad: q.p receives the new parameter; with `Store`,
/// the new parameter and moments are written back.
template <class H, bool Store>
__device__ __forceinline__ void
adamUpdateQuad(const AdamBuffers &b, i64 at, bool vector, int n,
               const AdamScalars &sc, AdamQuadIn &q) {
  TE_UNROLL
  for (int e = 0; e < 4; ++e)
    adamElement<H>(q.g[e], q.p[e], q.m[e], q.v[e], sc);
  if (!Store)
    return;
  store4(b.p1 + at, vector, n, q.p);
  store4(b.m1 + at, vector, n, q.m);
  store4(b.v1 + at, vector, n, q.v);
}

/// Quads a thread loads before updating the first, so that several quads'
/// loads are in flight. Every per-element loop over a quad is unrolled:
/// a quad indexed at run time would live in local memory (the stack frame
/// of an earlier version cost the update without requantization a third
/// of its bandwidth).
#ifndef TE_ADAM_BATCH
#define TE_ADAM_BATCH 2
#endif
constexpr int kAdamBatch = TE_ADAM_BATCH;

/// One quad of a tile: tile row / column, element index, valid count,
/// whether the 16-byte path applies.
struct TileQuad {
  int tr, tc;
  i64 at;
  int n;
  bool vector;
};

/// Visits the tile in quads of four consecutive elements, one warp per
/// 128-element row segment: every warp load and store instruction then
/// covers 512 contiguous bytes of each f32 array (two 16-byte halves of a
/// thread's own 32 bytes would touch every sector twice). In batches of
/// `B` quads: load(j, quad) for each quad of the batch, then
/// finish(j, quad) for each.
template <int B, class Load, class Finish>
__device__ __forceinline__ void forTileQuads(i64 m, i64 k, i64 r0, i64 c0,
                                             int tid, bool aligned16, Load load,
                                             Finish finish) {
  constexpr int kQuadsPerRow = kTileCols / 4;
  constexpr int kPerThread = kTileRows * kQuadsPerRow / kTileThreads;
  static_assert(kPerThread % B == 0, "batches must tile the quads");
#pragma unroll 1
  for (int i0 = 0; i0 < kPerThread; i0 += B) {
    TileQuad quad[B];
    TE_UNROLL
    for (int j = 0; j < B; ++j) {
      int id = (i0 + j) * kTileThreads + tid;
      int tr = id / kQuadsPerRow, tc = 4 * (id % kQuadsPerRow);
      i64 r = r0 + tr, c = c0 + tc;
      int n = r < m ? int(k - c < 4 ? (k - c > 0 ? k - c : 0) : 4) : 0;
      quad[j] = TileQuad{tr, tc, r * k + c, n, aligned16 && n == 4};
      load(j, quad[j]);
    }
    TE_UNROLL
    for (int j = 0; j < B; ++j)
      finish(j, quad[j]);
  }
}

/// max |p'| of a quad's `n` new parameters into `a` (with `Amax`).
template <bool Amax>
__device__ __forceinline__ void quadAmax(float &a, const float *p, int n) {
  if (!Amax)
    return;
  TE_UNROLL
  for (int e = 0; e < 4; ++e)
    if (e < n)
      a = amaxAccumulate(a, p[e]);
}

/// The update of one 128 x 128 tile: every element of the tile read,
/// updated and written back; with `Keep`, the new parameter also split into
/// the tile's two planes (zero outside the tensor), as loadTileF32 does;
/// with `Amax`, max |p'| accumulated into `amax`.
template <class H, SourceType G, bool Keep, bool Amax>
__device__ __forceinline__ void
adamTile(TileSmem *s, TilePlane *lo, const AdamBuffers &b, i64 m, i64 k, i64 r0,
         i64 c0, int tid, const AdamScalars &sc, float &amax) {
  bool aligned16 = k % 4 == 0 && aligned(b.p, 16) && aligned(b.m, 16) &&
                   aligned(b.v, 16) && aligned(b.g, 8) && aligned(b.p1, 16) &&
                   aligned(b.m1, 16) && aligned(b.v1, 16) &&
                   (G != SourceType::F32 || aligned(b.g, 16));
  AdamQuadIn in[kAdamBatch];
  forTileQuads<kAdamBatch>(
      m, k, r0, c0, tid, aligned16,
      [&](int j, const TileQuad &q) {
        adamLoadQuad<G>(b, q.at, q.vector, q.n, in[j]);
      },
      [&](int j, const TileQuad &q) {
        int n = q.n, tr = q.tr, tc = q.tc;
        float *p = in[j].p;
        if (n > 0)
          adamUpdateQuad<H, true>(b, q.at, q.vector, n, sc, in[j]);
        quadAmax<Amax>(amax, p, n);
        if (!Keep)
          return;
        u32 hi[2], lw[2];
        TE_UNROLL
        for (int e = 0; e < 2; ++e) {
          u32 b0 = 2 * e < n ? floatToBits(p[2 * e]) : 0u;
          u32 b1 = 2 * e + 1 < n ? floatToBits(p[2 * e + 1]) : 0u;
          hi[e] = splitHi(b0, b1);
          lw[e] = splitLo(b0, b1);
        }
        int pc = swizzledColumn(tr, tc);
        *reinterpret_cast<U32x2 *>(&s->x[tr][pc]) = U32x2{hi[0], hi[1]};
        *reinterpret_cast<U32x2 *>(&(*lo)[tr][pc]) = U32x2{lw[0], lw[1]};
      });
}

/// The update without requantization in the same kernel: no tile is kept,
/// so CTA `chunk` of a tensor streams elements [chunk * 16384, (chunk + 1) *
/// 16384) of its flattened M x K elements, each warp instruction 512
/// contiguous bytes; with `Amax`, max |p'| accumulated into `amax`.
template <class H, SourceType G, bool Amax>
__device__ __forceinline__ void adamFlat(const AdamBuffers &b, i64 n, i64 chunk,
                                         int tid, const AdamScalars &sc,
                                         float &amax) {
  constexpr int kQuads = kTileRows * kTileCols / 4;
  bool aligned16 = aligned(b.p, 16) && aligned(b.m, 16) && aligned(b.v, 16) &&
                   aligned(b.g, 8) && aligned(b.p1, 16) && aligned(b.m1, 16) &&
                   aligned(b.v1, 16) &&
                   (G != SourceType::F32 || aligned(b.g, 16));
  i64 base = chunk * kTileRows * kTileCols;
  static_assert(kQuads % (kAdamBatch * kTileThreads) == 0, "whole batches");
#pragma unroll 1
  for (int q0 = tid; q0 < kQuads; q0 += kAdamBatch * kTileThreads) {
    AdamQuadIn in[kAdamBatch];
    i64 at[kAdamBatch];
    int valid[kAdamBatch];
    TE_UNROLL
    for (int j = 0; j < kAdamBatch; ++j) {
      at[j] = base + 4 * i64(q0 + j * kTileThreads);
      valid[j] = n - at[j] >= 4 ? 4 : int(n - at[j] > 0 ? n - at[j] : 0);
      adamLoadQuad<G>(b, at[j], aligned16 && valid[j] == 4, valid[j], in[j]);
    }
    TE_UNROLL
    for (int j = 0; j < kAdamBatch; ++j) {
      if (valid[j] > 0)
        adamUpdateQuad<H, true>(b, at[j], aligned16 && valid[j] == 4, valid[j],
                                sc, in[j]);
      quadAmax<Amax>(amax, in[j].p, valid[j]);
    }
  }
}

/// The tensor CTA `block` works on: the last whose first tile is <= block.
template <int W, class Table>
__device__ __forceinline__ int adamTensorOf(const Table &t, int count,
                                            i64 block) {
  int lo = 0, hi = count - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (i64(t.w[mid * W + kAdamFirstTile]) <= block)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

template <int W, class Table>
__device__ __forceinline__ AdamBuffers adamBuffers(const Table &t, int i) {
  const u64 *w = &t.w[i * W];
  return AdamBuffers{reinterpret_cast<const float *>(w[kAdamParam]),
                     reinterpret_cast<const float *>(w[kAdamExpAvg]),
                     reinterpret_cast<const float *>(w[kAdamExpAvgSq]),
                     reinterpret_cast<const void *>(w[kAdamGrad]),
                     reinterpret_cast<float *>(w[kAdamNewParam]),
                     reinterpret_cast<float *>(w[kAdamNewExpAvg]),
                     reinterpret_cast<float *>(w[kAdamNewExpAvgSq])};
}

/// What a CTA of a multi-tensor launch works on: its tensor (table words,
/// shape) and its tile there (index, top-left corner), column tiles fastest.
template <int W> struct AdamCta {
  int tensor;
  const u64 *w;
  i64 m, k, tile, r0, c0;
  template <class Table>
  __device__ AdamCta(const Table &t, int count)
      : tensor(adamTensorOf<W>(t, count, i64(blockIdx.x))), w(&t.w[tensor * W]),
        m(i64(w[kAdamRows])), k(i64(w[kAdamCols])),
        tile(i64(blockIdx.x) - i64(w[kAdamFirstTile])) {
    tileCorner(tile, k, r0, c0);
  }
};

/// The stage arguments of stages [First, First + S) of a tensor's table
/// words `w`, with the launch's scalars (`scalars[s]`: stage First + s's
/// eps, seed and offset).
template <int First, int S>
__device__ __forceinline__ void
adamStageArgs(const u64 *w, const StageArgs *scalars, StageArgs *args) {
  TE_UNROLL
  for (int s = 0; s < S; ++s) {
    const u64 *sw = w + kAdamWords + 4 * (First + s);
    args[s] = StageArgs{reinterpret_cast<void *>(sw[0]),
                        reinterpret_cast<void *>(sw[1]),
                        reinterpret_cast<float *>(sw[2]),
                        reinterpret_cast<const float *>(sw[3]),
                        scalars[s].eps,
                        scalars[s].seed,
                        scalars[s].offset};
  }
}

/// Max |y| over the bf16-rounded Hadamard transform of every 16-row run of
/// every column of the tile in shared memory (an NVFP4 RHT columnwise
/// stage's tensor scale; rows and columns past the tensor hold zeros).
__device__ __forceinline__ float rhtColumnAmaxOfTile(const Tile &t) {
  float a = 0.0f;
  forColumnRunValues<SourceType::F32>(
      t, [&](int, int, const float *v) { a = accumulateRhtAmax(a, v); });
  return a;
}

/// The update kernel: one CTA of kTileThreads per tile of every tensor
/// (grid = the tables' total tile count), quantizeDynamicSmem(F32) bytes of
/// dynamic shared memory when it keeps the tile. Each tensor's table has W
/// words; `Stages` are its first stages, quantized from the new parameter
/// in shared memory (`scalars[s]`: stage s's eps, seed and offset, the same
/// for every tensor). For the stages adamRequantizeTiles runs afterwards
/// (those that scale by an amax of the whole new parameter), the update
/// produces that amax: max |p'| into the float at table word AmaxWord and
/// the RHT columns' amax into word RhtAmaxWord (-1: none; zeroed by the
/// plan), so no pass recomputes the update.
template <class H, SourceType G, int N, int W, int AmaxWord, int RhtAmaxWord,
          class... Stages>
__device__ __forceinline__ void
adamQuantizeTiles(const AdamTable<N, W> &t, int count, const float *lr,
                  const i64 *step, const StageArgs *scalars) {
  constexpr int S = int(sizeof...(Stages));
  constexpr bool Amax = AmaxWord >= 0;
  using List = StageList<Stages...>;
  AdamCta<W> cta(t, count);
  const u64 *w = cta.w;
  i64 m = cta.m, k = cta.k, r0 = cta.r0, c0 = cta.c0;
  int tid = int(threadIdx.x);
  AdamScalars sc = adamScalars<H>(lr, step);
  AdamBuffers b = adamBuffers<W>(t, cta.tensor);
  float amax = 0.0f;
  if constexpr (S == 0 && RhtAmaxWord < 0) {
    adamFlat<H, G, Amax>(b, m * k, cta.tile, tid, sc, amax);
  } else {
    __shared__ TileSmem smem;
    extern __shared__ __align__(16) u8 dynamicSmem[];
    TilePlane *lo = reinterpret_cast<TilePlane *>(dynamicSmem);
    Tile tt = Tile::at(smem, m, k, r0, c0, tid, lo);
    if (tid == 0)
      smem.tileAmax = 0u;
    adamTile<H, G, true, Amax>(&smem, lo, b, m, k, r0, c0, tid, sc, amax);
    __syncthreads();
    if constexpr (RhtAmaxWord >= 0)
      warpAmaxToGlobal(rhtColumnAmaxOfTile(tt),
                       reinterpret_cast<float *>(w[RhtAmaxWord]));
    if constexpr (S > 0) {
      reduceTile<SourceType::F32, List::kNeedsRowSegments,
                 List::kNeedsColSegments, List::kNeedsTileAmax, false>(tt,
                                                                       nullptr);
      __syncthreads();
      StageArgs args[S];
      adamStageArgs<0, S>(w, scalars, args);
      List::template emit<SourceType::F32>(tt, args);
    }
  }
  if constexpr (Amax)
    warpAmaxToGlobal(amax, reinterpret_cast<float *>(w[AmaxWord]));
}

/// The requantize kernel after adamQuantizeTiles: stages [First, First +
/// sizeof...(Stages)) of every tensor's table, quantized from the new
/// parameter in memory (one read of 4 bytes an element) with the amaxes
/// the update produced. Same grid and shared memory as the update kernel.
template <int N, int W, int First, class... Stages>
__device__ __forceinline__ void adamRequantizeTiles(const AdamTable<N, W> &t,
                                                    int count,
                                                    const StageArgs *scalars) {
  constexpr int S = int(sizeof...(Stages));
  AdamCta<W> cta(t, count);
  StageArgs args[S];
  adamStageArgs<First, S>(cta.w, scalars, args);
  quantizeTileAt<SourceType::F32, false, Stages...>(
      reinterpret_cast<const float *>(cta.w[kAdamNewParam]), cta.m, cta.k,
      cta.r0, cta.c0, args, nullptr);
}

} // namespace dev
} // namespace te

#endif // TE_DEVICE_ADAMKERNEL_CUH
