//===- te/device/DoubleQuantizeKernel.cuh - One-read double quantize -*- C++
//-*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Double quantization (docs/Numerics.md §11: a hybrid with
// columnwise_source = rowwise_dequantized) in one read of the input, where
// every scale the two directions need lies inside one 128 x 128 tile: the
// rowwise stage quantizes the tile and stores it; each element of the tile
// is then replaced by the value its stored rowwise code dequantizes to
// (the dequantize kernel's formula, DequantizeKernel.cuh), rounded to the
// input's type; the columnwise stage quantizes those values. The CTA reads
// back only what it stored itself, so no other CTA's work is awaited: the
// host uses this kernel for rowwise MXFP8, block FP8 and NVFP4 (its tensor
// amax comes from the pre-pass, not from a stored buffer) and columnwise
// MXFP8 and block FP8 (no tensor-wide amax of the dequantized values).
// Otherwise it quantizes, dequantizes and quantizes in three kernels.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_DOUBLEQUANTIZEKERNEL_CUH
#define TE_DEVICE_DOUBLEQUANTIZEKERNEL_CUH

#include "te/device/DequantizeKernel.cuh"
#include "te/device/QuantizeKernel.cuh"

namespace te {
namespace dev {

/// Puts fp32 value `v`, rounded to `Src`, at tile element (r, c).
template <SourceType Src>
__device__ __forceinline__ void setTileValue(Tile &t, int r, int c, float v) {
  if (Src == SourceType::F32) {
    u32 bits = floatToBits(v);
    *t.s.at(r, c) = u16(bits >> 16);
    (*t.lo)[r][swizzledColumn(r, c)] = u16(bits & 0xFFFFu);
  } else {
    *t.s.at(r, c) = Src == SourceType::F16 ? floatToF16(v) : floatToBF16(v);
  }
}

/// Puts 16 fp32 values, rounded to `Src`, at row segment (r, c..c+15) (c a
/// multiple of 16): two 16-byte chunks a plane (the swizzle keeps each
/// 8-element chunk contiguous).
template <SourceType Src>
__device__ __forceinline__ void setTileSegment(Tile &t, int r, int c,
                                               const float (&v)[kSegment]) {
  TE_UNROLL
  for (int h = 0; h < 2; ++h) {
    u32 hi[4], lw[4];
    TE_UNROLL
    for (int i = 0; i < 4; ++i) {
      float a = v[8 * h + 2 * i], b = v[8 * h + 2 * i + 1];
      if (Src == SourceType::F32) {
        u32 x = floatToBits(a), y = floatToBits(b);
        hi[i] = splitHi(x, y);
        lw[i] = splitLo(x, y);
      } else if (Src == SourceType::F16) {
        hi[i] = u32(floatToF16(a)) | (u32(floatToF16(b)) << 16);
      } else {
        hi[i] = u32(floatToBF16(a)) | (u32(floatToBF16(b)) << 16);
      }
    }
    int pc = swizzledColumn(r, c + 8 * h);
    *reinterpret_cast<U32x4 *>(&t.s.x[r][pc]) =
        U32x4{hi[0], hi[1], hi[2], hi[3]};
    if (Src == SourceType::F32)
      *reinterpret_cast<U32x4 *>(&(*t.lo)[r][pc]) =
          U32x4{lw[0], lw[1], lw[2], lw[3]};
  }
}

/// Replaces the tile's values by what the rowwise codes `Decode` reads back
/// dequantize to, rounded to `Src`: a row segment (16 elements) a task, its
/// codes in one vector load and its factor once per 8 columns (the rowwise
/// factor is uniform there); edge segments element by element. The same
/// per-element formula as detail::valueAt.
template <SourceType Src, class Decode>
__device__ __forceinline__ void dequantizeStoredRows(Tile &t,
                                                     const DequantArgs &a) {
  static_assert(
      !Decode::kTransposed && Decode::kUniformFactor,
      "a rowwise source stores [M, K] codes with row-uniform factors");
  const bool vector = a.k % kSegment == 0;
  for (int task = t.tid; task < kTileRows * kRowSegments;
       task += kTileThreads) {
    int r = task / kRowSegments, c = kSegment * (task % kRowSegments);
    if (r >= t.rows || c >= t.cols)
      continue;
    i64 gr = t.r0 + r, gc = t.c0 + c;
    if (!vector || c + kSegment > t.cols) {
      for (int e = 0; e < kSegment && c + e < t.cols; ++e)
        setTileValue<Src>(t, r, c + e, detail::valueAt<Decode>(a, gr, gc + e));
      continue;
    }
    u8 codes[kSegment];
    i64 at = gr * a.k + gc;
    if (Decode::kCodesPerByte == 1) {
      U32x4 w = *reinterpret_cast<const U32x4 *>(a.data + at);
      u32 words[4] = {w.x, w.y, w.z, w.w};
      TE_UNROLL
      for (int e = 0; e < kSegment; ++e)
        codes[e] = u8(words[e / 4] >> (8 * (e % 4)));
    } else {
      uint2 w = *reinterpret_cast<const uint2 *>(a.data + at / 2);
      u32 words[2] = {w.x, w.y};
      TE_UNROLL
      for (int e = 0; e < kSegment; ++e) {
        u8 byte = u8(words[e / 8] >> (8 * ((e / 2) % 4)));
        codes[e] = e % 2 ? unpackE2M1High(byte) : unpackE2M1Low(byte);
      }
    }
    float factor[2] = {Decode::factor(a, gr, gc),
                       Decode::factor(a, gr, gc + 8)};
    float v[kSegment];
    TE_UNROLL
    for (int e = 0; e < kSegment; ++e)
      v[e] = mulRn(Decode::decode(codes[e]), factor[e / 8]);
    setTileSegment<Src>(t, r, c, v);
  }
}

/// One CTA per 128 x 128 tile, as quantizeTile. `Decode` reads back what
/// `RowStage` stored (`stored`: its data and scales; for NVFP4 the tensor
/// amax the stage scaled by).
template <SourceType Src, class RowStage, class Decode, class ColStage>
__device__ __forceinline__ void
quantizeTileTwice(const void *x, i64 m, i64 k, const StageArgs &row,
                  const DequantArgs &storedArgs, const StageArgs &col) {
  const DequantArgs stored = withAmaxLoaded(storedArgs);
  __shared__ TileSmem smem;
  Tile t = loadCtaTile<Src>(smem, x, m, k);
  const int tid = t.tid;
  reduceTile<Src, RowStage::kNeedsRowSegments, RowStage::kNeedsColSegments,
             RowStage::kNeedsTileAmax, false>(t, nullptr);
  __syncthreads();
  RowStage::template emit<Src>(t, row);
  // The stores above are visible to the whole CTA after the barrier.
  __syncthreads();
  dequantizeStoredRows<Src, Decode>(t, stored);
  if (tid == 0)
    smem.tileAmax = 0u;
  __syncthreads();
  reduceTile<Src, ColStage::kNeedsRowSegments, ColStage::kNeedsColSegments,
             ColStage::kNeedsTileAmax, false>(t, nullptr);
  __syncthreads();
  ColStage::template emit<Src>(t, col);
}

} // namespace dev
} // namespace te

#endif // TE_DEVICE_DOUBLEQUANTIZEKERNEL_CUH
