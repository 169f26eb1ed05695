//===- te/device/DequantizeKernel.cuh - Dequantize kernel ----*- CUDA -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The body of every generated dequantize kernel: the logical M x K values
// of one direction of a quantized tensor, from its storage as docs/Numerics.md
// §2 lays it out (compact scales; transposed data where the target stores it
// so), by each format's dequantization formula - the same expressions as
// te::rt::ref::dequantize - rounded once to the output type.
//
// On Hopper the MXFP8 / NVFP4 GEMMs run on dequantized operands, so this is
// a hot path and is written to run at the copy ceiling:
//  * Rows: data stored [M, K] (K a multiple of 8): a thread decodes runs of
//    8 consecutive elements (one vector load, one 16-byte store), four runs
//    in flight; consecutive threads take consecutive runs, so every warp
//    access is contiguous.
//  * Tiles: data stored transposed, [K, M]: a CTA stages a 64 (K) x 128 (M)
//    tile of codes in shared memory with coalesced row loads, then writes
//    whole output lines, so both the reads and the writes are contiguous.
//  * Elements: any other shape (K not a multiple of 8), one element per
//    thread.
// The host picks the path (te::cg::dequantizePath); every path evaluates
// the same per-element formula, value = fl(decode(code) · factor(r, c)).
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_DEQUANTIZEKERNEL_CUH
#define TE_DEVICE_DEQUANTIZEKERNEL_CUH

#include "te/device/Fp4.cuh"
#include "te/device/QuantizeCommon.cuh"

namespace te {
namespace dev {

/// The buffers of the direction being read.
struct DequantArgs {
  const u8 *data;
  const void *scale; ///< scale_inv (FP32 or E8M0 / E4M3 bytes), compact
  const float *amax; ///< NVFP4: the tensor amax of the direction
  i64 m, k;
  i64 scaleCols; ///< columns of the scale_inv buffer
  /// *amax, loaded once (withAmaxLoaded) before any decoder runs - a load
  /// the decoders would otherwise repeat, since the output stores may alias
  /// it as far as the compiler knows.
  float amaxValue = 0.0f;
};

/// `a` with amaxValue read from amax, where there is one: what every kernel
/// decoding through `a` does first.
__device__ __forceinline__ DequantArgs withAmaxLoaded(DequantArgs a) {
  if (a.amax)
    a.amaxValue = __ldg(a.amax);
  return a;
}

/// How a generated kernel walks the tensor (chosen by the host).
enum class DequantPath { Rows = 0, Tiles = 1, Elements = 2 };

// Each quantized format's decoder states:
//   kTransposed    - its data is stored [K, M] (else [M, K]);
//   kCodesPerByte  - 2 for packed E2M1, else 1;
//   kUniformFactor - factor() is one value over 8 consecutive, 8-aligned
//                    columns of a row;
//   kFactorRows    - (transposed data) aligned rows of one column that
//                    share a factor, a divisor of 128;
//   decode(code)   - the code's value;
//   decode2(pair)  - (one code a byte) two codes' values (bits 0-7, 8-15),
//                    as decode gives them except that a NaN may differ in
//                    sign and payload: every use multiplies, which
//                    canonicalises NaN (E2M1 codes are held as E4M3 codes:
//                    HeldCodes);
//   factor(a,r,c)  - what element (r, c)'s decoded code is multiplied by.

/// Per-tensor FP8: q * scale_inv; `Transposed`: data is K x M.
template <Fp8Format F, bool Transposed> struct Fp8PerTensorDecode {
  static constexpr bool kTransposed = Transposed, kUniformFactor = true;
  static constexpr int kCodesPerByte = 1, kFactorRows = 128;
  __device__ static float decode(u8 q) { return decodeFp8<F>(q); }
  __device__ static void decode2(u32 pair, float &first, float &second) {
    decodeFp8x2<F>(u16(pair), first, second);
  }
  __device__ static float factor(const DequantArgs &a, i64, i64) {
    return *static_cast<const float *>(a.scale);
  }
};

/// MXFP8: q * 2^(E - 127), one E8M0 per 1x32 (rowwise) / 32x1 block; both
/// directions' data are stored [M, K].
template <Fp8Format F, bool Rowwise> struct Mxfp8Decode {
  static constexpr bool kTransposed = false, kUniformFactor = Rowwise;
  static constexpr int kCodesPerByte = 1;
  __device__ static float decode(u8 q) { return decodeFp8<F>(q); }
  __device__ static void decode2(u32 pair, float &first, float &second) {
    decodeFp8x2<F>(u16(pair), first, second);
  }
  __device__ static float factor(const DequantArgs &a, i64 r, i64 c) {
    const u8 *s = static_cast<const u8 *>(a.scale);
    return decodeE8M0(Rowwise ? s[r * a.scaleCols + c / 32]
                              : s[(r / 32) * a.scaleCols + c]);
  }
  /// Columnwise: the factors of 8 consecutive columns from c0 (8-aligned;
  /// the scale rows are padded to a multiple of 128) in one load.
  __device__ static void factors8(const DequantArgs &a, i64 r, i64 c0,
                                  float (&f)[8]) {
    const u8 *s = static_cast<const u8 *>(a.scale);
    uint2 v = *reinterpret_cast<const uint2 *>(s + (r / 32) * a.scaleCols + c0);
    TE_UNROLL
    for (int j = 0; j < 8; ++j)
      f[j] = decodeE8M0(u8((j < 4 ? v.x : v.y) >> (8 * (j % 4))));
  }
};

/// NVFP4: e2m1 * fl(fl(e4m3(sB) * amax) * fl(1/2688)); the columnwise data
/// and scales are those of the K x M transpose. With RHT the columnwise
/// data, scales and amax are those of the transformed matrix, so this
/// yields the transformed values, as the reference's dequantize does.
template <bool Rowwise> struct Nvfp4Decode {
  static constexpr bool kTransposed = !Rowwise, kUniformFactor = Rowwise;
  static constexpr int kCodesPerByte = 2, kFactorRows = 16;
  __device__ static float decode(u8 code) { return decodeE2M1(code); }
  __device__ static float factor(const DequantArgs &a, i64 r, i64 c) {
    const u8 *s = static_cast<const u8 *>(a.scale);
    u8 sB = Rowwise ? s[r * a.scaleCols + c / 16] : s[c * a.scaleCols + r / 16];
    return nvfp4DequantFactor<true>(sB, a.amaxValue);
  }
  /// Columnwise: the scale bytes of column c's 8 blocks of 16 rows from r0
  /// (16-aligned, all inside the tensor), 8 consecutive bytes of the
  /// transpose's row c (byte j in bits 8j of the pair), one 8-byte load
  /// where aligned. Loads only: columnFactors8 turns them into factors once
  /// they have arrived.
  __device__ static uint2 columnScales8(const DequantArgs &a, i64 r0, i64 c) {
    static_assert(!Rowwise, "the tile path reads the columnwise direction");
    const u8 *s = static_cast<const u8 *>(a.scale) + c * a.scaleCols + r0 / 16;
    if ((reinterpret_cast<u64>(s) & 7) == 0)
      return *reinterpret_cast<const uint2 *>(s);
    uint2 v{0u, 0u};
    TE_UNROLL
    for (int j = 0; j < 8; ++j)
      (j < 4 ? v.x : v.y) |= u32(s[j]) << (8 * (j % 4));
    return v;
  }
  /// The factors of columnScales8's 8 scale bytes.
  __device__ static void columnFactors8(uint2 s, float amax, float (&f)[8]) {
    TE_UNROLL
    for (int j = 0; j < 8; ++j)
      f[j] = nvfp4DequantFactor<true>(u8((j < 4 ? s.x : s.y) >> (8 * (j % 4))),
                                      amax);
  }
};

/// FP8 block scaling (1x128 or 128x128 `Tile2d`): q * scale_inv of the
/// element's block; columnwise data is K x M.
template <Fp8Format F, bool Rowwise, bool Tile2d> struct Fp8BlockDecode {
  static constexpr bool kTransposed = !Rowwise;
  static constexpr bool kUniformFactor = Rowwise || Tile2d;
  static constexpr int kCodesPerByte = 1, kFactorRows = 128;
  __device__ static float decode(u8 q) { return decodeFp8<F>(q); }
  __device__ static void decode2(u32 pair, float &first, float &second) {
    decodeFp8x2<F>(u16(pair), first, second);
  }
  __device__ static float factor(const DequantArgs &a, i64 r, i64 c) {
    const float *s = static_cast<const float *>(a.scale);
    i64 rb = r / 128, cb = c / 128;
    if (Tile2d)
      return s[Rowwise ? rb * a.scaleCols + cb : cb * a.scaleCols + rb];
    return s[Rowwise ? cb * a.scaleCols + r : rb * a.scaleCols + c];
  }
  /// The factors of 8 consecutive columns from c0 (8-aligned): columnwise
  /// 1x128, 8 consecutive floats of a scale row, two 16-byte loads where
  /// they are aligned.
  __device__ static void factors8(const DequantArgs &a, i64 r, i64 c0,
                                  float (&f)[8]) {
    if constexpr (!Rowwise && !Tile2d) {
      const float *s =
          static_cast<const float *>(a.scale) + (r / 128) * a.scaleCols + c0;
      if ((reinterpret_cast<u64>(s) & 15) == 0) {
        const float4 lo = reinterpret_cast<const float4 *>(s)[0],
                     hi = reinterpret_cast<const float4 *>(s)[1];
        f[0] = lo.x, f[1] = lo.y, f[2] = lo.z, f[3] = lo.w;
        f[4] = hi.x, f[5] = hi.y, f[6] = hi.z, f[7] = hi.w;
        return;
      }
    }
    TE_UNROLL
    for (int j = 0; j < 8; ++j)
      f[j] = factor(a, r, c0 + j);
  }
};

/// Identity: the stored element (0 bf16, 1 f16, 2 f32), widened.
template <int In> struct IdentityDecode {
  static constexpr bool kTransposed = false;
  static constexpr int kBytes = In == 2 ? 4 : 2;
  __device__ static float widen16(u16 h) {
    return In == 1 ? f16ToFloat(h) : bitsToFloat(u32(h) << 16);
  }
  __device__ static float widen(const void *data, i64 i) {
    if (In == 2)
      return static_cast<const float *>(data)[i];
    return widen16(static_cast<const u16 *>(data)[i]);
  }
};

template <class T> struct IsIdentity { static constexpr bool value = false; };
template <int In> struct IsIdentity<IdentityDecode<In>> {
  static constexpr bool value = true;
};

namespace detail {

/// The code of element (r, c), read from global memory.
template <class D> __device__ u8 codeAt(const DequantArgs &a, i64 r, i64 c) {
  i64 i = D::kTransposed ? c * a.m + r : r * a.k + c;
  if (D::kCodesPerByte == 1)
    return a.data[i];
  u8 byte = a.data[i / 2];
  return i % 2 ? unpackE2M1High(byte) : unpackE2M1Low(byte);
}

/// Element (r, c)'s value: the one formula every path evaluates.
template <class D>
__device__ float valueAt(const DequantArgs &a, i64 r, i64 c) {
  if constexpr (IsIdentity<D>::value)
    return D::widen(a.data, r * a.k + c);
  else
    return mulRn(D::decode(codeAt<D>(a, r, c)), D::factor(a, r, c));
}

template <int Out>
__device__ __forceinline__ void storeOne(void *out, i64 i, float v) {
  if (Out == 2)
    static_cast<float *>(out)[i] = v;
  else
    static_cast<u16 *>(out)[i] = Out == 1 ? floatToF16(v) : floatToBF16(v);
}

/// The codes as the kernels hold them, one a byte: E2M1 codes as their E4M3
/// codes (e2m1x8ToE4M3, on loading), so that two decode in one hardware
/// pair conversion.
template <class D> struct HeldCodes {
  __device__ static void decode2(u32 pair, float &first, float &second) {
    if constexpr (D::kCodesPerByte == 2)
      decodeFp8x2<Fp8Format::E4M3>(u16(pair), first, second);
    else
      D::decode2(pair, first, second);
  }
};

/// Writes 8 values as `Out` (0 bf16, 1 f16, 2 f32, round to nearest even)
/// at element `i` of the row-major output (8-element aligned): one 16-byte
/// store (two for f32). The stores are explicit vector instructions: where
/// the compiler cannot see that `i` is a multiple of 8 (the tile path) it
/// split a uint4 store into four 4-byte ones.
template <int Out>
__device__ __forceinline__ void store8(void *out, i64 i, const float (&v)[8]) {
  if (Out == 2) {
    float *p = static_cast<float *>(out) + i;
    storeGlobal16(p, U32x4{floatToBits(v[0]), floatToBits(v[1]),
                           floatToBits(v[2]), floatToBits(v[3])});
    storeGlobal16(p + 4, U32x4{floatToBits(v[4]), floatToBits(v[5]),
                               floatToBits(v[6]), floatToBits(v[7])});
    return;
  }
  u32 w[4];
  TE_UNROLL
  for (int j = 0; j < 4; ++j)
    w[j] = Out == 1 ? u32(floatToF16(v[2 * j])) |
                          (u32(floatToF16(v[2 * j + 1])) << 16)
                    : floatToBF16x2(v[2 * j], v[2 * j + 1]);
  storeGlobal16(static_cast<u16 *>(out) + i, U32x4{w[0], w[1], w[2], w[3]});
}

/// Whether the decoder loads 8 columns' factors at once.
template <class D, class = void> struct HasFactors8 {
  static constexpr bool value = false;
};
template <class D>
struct HasFactors8<D, decltype(void(
                          D::factors8(DequantArgs{}, i64(), i64(),
                                      *static_cast<float (*)[8]>(nullptr))))> {
  static constexpr bool value = true;
};

/// The factors of elements (r, c0 .. c0 + 7), c0 8-aligned: one load where
/// they are one value, a vector load where the decoder has one, else each.
template <class D>
__device__ __forceinline__ void factorsOf8(const DequantArgs &a, i64 r, i64 c0,
                                           float (&f)[8]) {
  if constexpr (D::kUniformFactor) {
    const float one = D::factor(a, r, c0);
    TE_UNROLL
    for (int j = 0; j < 8; ++j)
      f[j] = one;
  } else if constexpr (HasFactors8<D>::value) {
    D::factors8(a, r, c0, f);
  } else {
    TE_UNROLL
    for (int j = 0; j < 8; ++j)
      f[j] = D::factor(a, r, c0 + j);
  }
}

/// v[j] = fl(decode(code j) · v[j]) for the 8 held codes of `codes`, one a
/// byte (HeldCodes).
template <class D>
__device__ __forceinline__ void decodeTimes8(const u32 (&codes)[2],
                                             float (&v)[8]) {
  TE_UNROLL
  for (int p = 0; p < 4; ++p) {
    float first, second;
    HeldCodes<D>::decode2(codes[p / 2] >> (16 * (p % 2)), first, second);
    v[2 * p] = mulRn(first, v[2 * p]);
    v[2 * p + 1] = mulRn(second, v[2 * p + 1]);
  }
}

/// Row path: a run is 8 consecutive elements of a row stored [M, K]
/// (K % 8 == 0). Consecutive threads take consecutive runs, so every load
/// and store instruction of a warp is contiguous.
template <class D> struct RunWords {
  static constexpr int value = 2; ///< 8 codes, one a byte
};
template <int In> struct RunWords<IdentityDecode<In>> {
  static constexpr int value = In == 2 ? 8 : 4; ///< 8 elements
};

template <class D> struct Run8 {
  static constexpr bool kIdentity = IsIdentity<D>::value;
  u32 raw[RunWords<D>::value];

  __device__ void load(const DequantArgs &a, i64 i) {
    if constexpr (kIdentity) {
      const uint4 *p = reinterpret_cast<const uint4 *>(a.data + i * D::kBytes);
      TE_UNROLL
      for (int q = 0; q < D::kBytes / 2; ++q) {
        uint4 v = p[q];
        raw[4 * q] = v.x, raw[4 * q + 1] = v.y, raw[4 * q + 2] = v.z,
                raw[4 * q + 3] = v.w;
      }
    } else if constexpr (D::kCodesPerByte == 1) {
      uint2 v = *reinterpret_cast<const uint2 *>(a.data + i);
      raw[0] = v.x, raw[1] = v.y;
    } else {
      e2m1x8ToE4M3(*reinterpret_cast<const u32 *>(a.data + i / 2), raw[0],
                   raw[1]);
    }
  }

  /// Run `t` (elements 8t .. 8t + 7), row `r` from column `c0`.
  template <int Out>
  __device__ void store(const DequantArgs &a, u32 t, u32 r, u32 c0,
                        void *out) const {
    float v[8];
    if constexpr (kIdentity) {
      TE_UNROLL
      for (int j = 0; j < 8; ++j)
        v[j] = D::kBytes == 4 ? bitsToFloat(raw[j])
                              : D::widen16(u16(raw[j / 2] >> (16 * (j % 2))));
    } else {
      factorsOf8<D>(a, r, c0, v);
      decodeTimes8<D>(raw, v);
    }
    store8<Out>(out, i64(t) * 8, v);
  }
};

/// Where a thread's runs lie: run t is row t / runsPerRow, run t %
/// runsPerRow of it. A thread's runs are a grid stride apart, so it divides
/// once and then steps by the stride's quotient and remainder - an integer
/// division by a runtime divisor is some twenty instructions, which every
/// 8-element run paid. 32-bit arithmetic: the host keeps runs <= 2^30, so
/// t plus four grid strides stays below 2^32 (cg::kMaxRowPathRuns).
struct RunPosition {
  u32 row, run;
  u32 rowStep, runStep, runsPerRow;
  __device__ RunPosition(u32 t, u32 stride, u32 perRow)
      : row(t / perRow), run(t % perRow), rowStep(stride / perRow),
        runStep(stride % perRow), runsPerRow(perRow) {}
  __device__ void next() {
    row += rowStep;
    run += runStep;
    if (run >= runsPerRow) {
      run -= runsPerRow;
      ++row;
    }
  }
};

template <class D, int Out>
__device__ __forceinline__ void dequantizeRows(const DequantArgs &a,
                                               void *out) {
  static_assert(!D::kTransposed, "the row path reads [M, K] data");
  const u32 runs = u32(a.m * a.k / 8), runsPerRow = u32(a.k / 8);
  const u32 stride = gridDim.x * blockDim.x;
  // Several runs in flight per thread (the loads first).
  constexpr u32 kInFlight = IsIdentity<D>::value ? 2 : 4;
  const u32 first = blockIdx.x * blockDim.x + threadIdx.x;
  RunPosition at(first, stride, runsPerRow);
  for (u32 t = first; t < runs; t += kInFlight * stride) {
    Run8<D> x[kInFlight];
    TE_UNROLL
    for (u32 q = 0; q < kInFlight; ++q)
      if (t + q * stride < runs)
        x[q].load(a, i64(t + q * stride) * 8);
    TE_UNROLL
    for (u32 q = 0; q < kInFlight; ++q) {
      if (t + q * stride < runs)
        x[q].template store<Out>(a, t + q * stride, at.row, at.run * 8, out);
      at.next();
    }
  }
}

/// Tile path: data stored [K, M]. A tile is kTileC rows of the storage
/// (logical columns c) by kTileR codes (logical rows r). It is staged in
/// shared memory transposed, `codes[r][c]` one code a byte, so that a
/// thread reads its 8 output columns with two 4-byte loads: each thread
/// loads 4 storage rows x 4 bytes and transposes the 4 x 4 block in
/// registers. The stores are free of bank conflicts through the 17-word
/// pitch with, for FP8, the staged words XOR-swizzled by row / 32, and for
/// E2M1 the halves alternated between lanes (below).
constexpr int kTileR = 128, kTileC = 64, kTilePitch = kTileC + 4;

/// rows[k] holds 4 codes (bytes) of storage row k; afterwards rows[j]
/// holds the 4 rows' codes of position j.
__device__ __forceinline__ void transpose4x4(u32 (&rows)[4]) {
  u32 t0 = __byte_perm(rows[0], rows[1], 0x5140);
  u32 t1 = __byte_perm(rows[0], rows[1], 0x7362);
  u32 t2 = __byte_perm(rows[2], rows[3], 0x5140);
  u32 t3 = __byte_perm(rows[2], rows[3], 0x7362);
  rows[0] = __byte_perm(t0, t2, 0x5410);
  rows[1] = __byte_perm(t0, t2, 0x7632);
  rows[2] = __byte_perm(t1, t3, 0x5410);
  rows[3] = __byte_perm(t1, t3, 0x7632);
}

template <class D, int Out>
__device__ __forceinline__ void dequantizeTiles(const DequantArgs &a,
                                                void *out) {
  static_assert(D::kTransposed, "the tile path reads [K, M] data");
  static_assert(kTileR % D::kFactorRows == 0, "factor rows must tile 128");
  constexpr int kFactorBlocks = kTileR / D::kFactorRows;
  // Where a tile's rows share one factor per column (FP8 block and
  // per-tensor: 128-row blocks), a thread's 8 output columns are the same
  // in all its tasks (blockDim, kDequantizeThreads, is a multiple of 8), so
  // it reads their factors once per tile into registers; else (NVFP4's
  // 16-row blocks) the tile's factors are computed once into shared memory,
  // a thread a column (its 8 scale bytes in one load: one load a factor,
  // each of a different scale row, had been most of the kernel's L1
  // requests). Rows of 68 floats: a warp's 16-byte reads of two
  // consecutive blocks' rows fall in different banks.
  constexpr bool kColumnFactors = D::kFactorRows == kTileR;
  static_assert(kColumnFactors || kFactorBlocks == 8,
                "16-row blocks: columnFactors8 gives a column's 8 factors");
  __shared__ __align__(16) u8 codes[kTileR][kTilePitch];
  __shared__ __align__(
      16) float factors[kColumnFactors ? 1 : kFactorBlocks][kTileC + 4];
  const u32 tilesC = u32((a.k + kTileC - 1) / kTileC);
  const u32 tiles = tilesC * u32((a.m + kTileR - 1) / kTileR);
  // A block: 4 storage rows by one 4-byte word of each (4 or 8 codes).
  constexpr int kCodesPerWord = 4 * D::kCodesPerByte;
  constexpr int kWordBlocksR = kTileR / kCodesPerWord; // 32 or 16
  constexpr int kBlocks = (kTileC / 4) * kWordBlocksR;
  // FP8 rows r of the staged tile hold their words XOR-ed by r / 32.
  constexpr bool kSwizzled = D::kCodesPerByte == 1;
  static_assert(!kSwizzled || kWordBlocksR == 32,
                "a warp reads one 32-word storage line");
  // Whole 16-byte pieces per storage row keep every word aligned.
  const bool aligned =
      (a.m / D::kCodesPerByte) % 16 == 0 && a.m % D::kCodesPerByte == 0;
  for (u32 t = blockIdx.x; t < tiles; t += gridDim.x) {
    // Consecutive CTAs take consecutive column tiles of the same rows.
    const i64 r0 = i64(t / tilesC) * kTileR, c0 = i64(t % tilesC) * kTileC;
    const bool full =
        aligned && r0 + kTileR <= a.m && c0 + kTileC <= a.k && a.k % 8 == 0;
    if (!full) {
      // Edge tile: element by element.
      for (int e = threadIdx.x; e < kTileR * kTileC; e += blockDim.x) {
        i64 r = r0 + e / kTileC, c = c0 + e % kTileC;
        if (r < a.m && c < a.k)
          storeOne<Out>(out, r * a.k + c, valueAt<D>(a, r, c));
      }
      continue;
    }
    // The factors' loads go first, so that they are in flight with the
    // codes' (after the codes' shared stores, which a load through a
    // generic pointer may not pass, each tile waited for memory twice);
    // NVFP4's arithmetic waits until the codes are staged.
    float columnFactors[8];
    uint2 scaleBytes{0u, 0u};
    float amax = 0.0f;
    if constexpr (kColumnFactors) {
      factorsOf8<D>(a, r0, c0 + (threadIdx.x % 8) * 8, columnFactors);
    } else if (threadIdx.x < kTileC) { // blockDim >= 64 (DequantizeEmitter)
      scaleBytes = D::columnScales8(a, r0, c0 + threadIdx.x);
      amax = a.amaxValue;
    }
    __syncthreads(); // the previous tile's readers are done
    for (int b = threadIdx.x; b < kBlocks; b += blockDim.x) {
      // FP8: a warp reads the 32 words of a storage row's 128-byte line per
      // load (one L2 request of four sectors); its shared stores land in 32
      // banks because word cr of rows 4rr .. 4rr + 3 goes to word cr ^
      // (rr / 8) (kSwizzled). E2M1: 8 consecutive words of 4 storage rows
      // each (32-byte segments), 32 banks without a swizzle.
      const int lane = b % 32, w = b / 32;
      const int rr = kSwizzled ? lane : (w % (kWordBlocksR / 8)) * 8 + lane % 8;
      const int cr = kSwizzled ? w : (w / (kWordBlocksR / 8)) * 4 + lane / 8;
      // Unsigned offsets (a full tile's M is a multiple of the codes a
      // byte): the divisions are shifts, with no sign fix-ups.
      const u8 *src = a.data + (u64(c0 + 4 * cr) * u64(a.m) +
                                u64(r0 + rr * kCodesPerWord)) /
                                   D::kCodesPerByte;
      const u64 rowBytes = u64(a.m) / D::kCodesPerByte;
      u32 rows[4];
      TE_UNROLL
      for (int k = 0; k < 4; ++k)
        rows[k] = *reinterpret_cast<const u32 *>(src + k * rowBytes);
      if (D::kCodesPerByte == 1) {
        transpose4x4(rows);
        TE_UNROLL
        for (int j = 0; j < 4; ++j)
          *reinterpret_cast<u32 *>(&codes[4 * rr + j][4 * (cr ^ (rr / 8))]) =
              rows[j];
      } else {
        u32 lo[4], hi[4]; // codes of positions 0-3 and 4-7 of each row
        TE_UNROLL
        for (int k = 0; k < 4; ++k)
          e2m1x8ToE4M3(rows[k], lo[k], hi[k]);
        transpose4x4(lo);
        transpose4x4(hi);
        // Rows 8rr and 8(rr + 4) share banks at the 17-word pitch, so the
        // lanes of rr % 8 >= 4 write their positions 4-7 while the others
        // write 0-3, and then the other way round: no bank conflict.
        const bool swap = (rr % 8) >= 4;
        TE_UNROLL
        for (int j = 0; j < 4; ++j) {
          *reinterpret_cast<u32 *>(&codes[8 * rr + (swap ? 4 : 0) + j][4 * cr]) =
              swap ? hi[j] : lo[j];
          *reinterpret_cast<u32 *>(&codes[8 * rr + (swap ? 0 : 4) + j][4 * cr]) =
              swap ? lo[j] : hi[j];
        }
      }
    }
    if constexpr (!kColumnFactors) {
      if (threadIdx.x < kTileC) {
        float f[8];
        D::columnFactors8(scaleBytes, amax, f);
        TE_UNROLL
        for (int b = 0; b < 8; ++b)
          factors[b][threadIdx.x] = f[b];
      }
    }
    __syncthreads();
    // Task: 8 consecutive columns of one row. A warp covers 4 rows by 64
    // columns, so each of its stores writes whole 128-byte lines: rows R,
    // R + 16 (lanes 0-15) and R + 1, R + 17 (lanes 16-31), whose 16 code
    // words fill the 32 banks once per half-warp at the 17-word pitch (the
    // 8-byte reads of rows R..R + 3 met in bank 0: 1.5x the wavefronts).
    // Task t + i * blockDim.x (blockDim.x a multiple of 256: DequantizeEmitter)
    // is task t's row plus i * blockDim.x / 8, in the same columns: the
    // output offset steps by whole rows (its index arithmetic had been a
    // third of the loop's instructions).
    static_assert(kTilePitch == 68 && kTileC / 8 == 8 && kTileR % 32 == 0,
                  "the bank mapping assumes 17-word rows of 8 tasks");
    const int group = threadIdx.x / 32, q = (threadIdx.x % 32) / 8;
    const int cl = (threadIdx.x % 8) * 8, rowStep = blockDim.x / 8;
    const int rl0 =
        (group / 8) * 32 + (group % 8) * 2 + (q & 1) * 16 + (q >> 1);
    const u64 outStep = u64(rowStep) * u64(a.k);
    u64 o = u64(r0 + rl0) * u64(a.k) + u64(c0 + cl);
    for (int rl = rl0; rl < kTileR; rl += rowStep, o += outStep) {
      const u32 *row = reinterpret_cast<const u32 *>(&codes[rl][0]);
      const int swz = kSwizzled ? rl / 32 : 0;
      const u32 c8[2] = {row[(cl / 4) ^ swz], row[(cl / 4 + 1) ^ swz]};
      float v[8];
      if constexpr (kColumnFactors) {
        TE_UNROLL
        for (int j = 0; j < 8; ++j)
          v[j] = columnFactors[j];
      } else {
        const float4 *f =
            reinterpret_cast<const float4 *>(&factors[rl / D::kFactorRows][cl]);
        const float4 f0 = f[0], f1 = f[1];
        v[0] = f0.x, v[1] = f0.y, v[2] = f0.z, v[3] = f0.w;
        v[4] = f1.x, v[5] = f1.y, v[6] = f1.z, v[7] = f1.w;
      }
      decodeTimes8<D>(c8, v);
      store8<Out>(out, i64(o), v);
    }
  }
}

template <class D, int Out>
__device__ __forceinline__ void dequantizeElements(const DequantArgs &a,
                                                   void *out) {
  i64 n = a.m * a.k;
  i64 stride = i64(gridDim.x) * blockDim.x;
  for (i64 i = i64(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    storeOne<Out>(out, i, valueAt<D>(a, i / a.k, i % a.k));
}

} // namespace detail

/// Writes every element's value as `Out` (0 bf16, 1 f16, 2 f32, rounded to
/// nearest even) into the row-major M x K `out`, along `Path`.
template <class Decode, int Out, DequantPath Path>
__device__ __forceinline__ void dequantizeTensor(const DequantArgs &a,
                                                 void *out) {
  const DequantArgs args = withAmaxLoaded(a);
  if constexpr (Path == DequantPath::Rows)
    detail::dequantizeRows<Decode, Out>(args, out);
  else if constexpr (Path == DequantPath::Tiles)
    detail::dequantizeTiles<Decode, Out>(args, out);
  else
    detail::dequantizeElements<Decode, Out>(args, out);
}

} // namespace dev
} // namespace te

#endif // TE_DEVICE_DEQUANTIZEKERNEL_CUH
