//===- te/device/GatherKernel.cuh - shards into the whole tensor -*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// After an all-gather, `staging` holds every rank's shard buffer one after
// the other; this pass lays the pieces into the whole tensor's buffer as
// te::rt::GatherView describes (te/formats/Sharding.h): byte (i, j) of the
// whole buffer is byte (i, j mod valid) of rank j / valid's shard, zero
// past the last rank. The host twin is te::rt::ref::gatherShards; the two
// must agree byte for byte.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_GATHERKERNEL_CUH
#define TE_DEVICE_GATHERKERNEL_CUH

#include "te/device/Common.cuh"

namespace te {
namespace dev {

/// Moves `Unit`-byte words (16, 8, 4, 2 or 1: a divisor of every extent and
/// of the buffers' alignment, so each word comes from one rank), one per
/// thread per grid-stride step.
template <int Unit>
__device__ __forceinline__ void
gatherShards(const u8 *__restrict__ staging, u8 *__restrict__ whole, i64 rows,
             i64 shardRowBytes, i64 validBytes, i64 wholeRowBytes, i32 ranks) {
  struct alignas(Unit) Word {
    u8 b[Unit];
  };
  const i64 rowWords = wholeRowBytes / Unit, validWords = validBytes / Unit;
  const i64 shardRowWords = shardRowBytes / Unit;
  const i64 shardWords = rows * shardRowWords;
  const i64 total = rows * rowWords;
  const Word *src = reinterpret_cast<const Word *>(staging);
  Word *dst = reinterpret_cast<Word *>(whole);
  for (i64 w = i64(blockIdx.x) * blockDim.x + threadIdx.x; w < total;
       w += i64(gridDim.x) * blockDim.x) {
    i64 row = w / rowWords, col = w - row * rowWords;
    i64 rank = col / validWords;
    Word v = {};
    if (rank < ranks)
      v = src[rank * shardWords + row * shardRowWords +
              (col - rank * validWords)];
    dst[w] = v;
  }
}

/// dst (dstRows x dstCols, row-major) = the transpose of the srcRows x
/// srcCols block at the top left of src (row stride srcStride), zero past
/// it: a columnwise copy derived from a gathered rowwise one (te::rt::
/// columnwiseIsRowwiseTransposed). 32 x 32 tiles through shared memory, so
/// reads and writes both run along rows; a grid-stride loop over the tiles
/// of dst, blocks of 32 x 8 threads. Host twin: te::rt::ref::transposePadded.
template <typename T>
__device__ __forceinline__ void
transposePadded(const T *__restrict__ src, i64 srcRows, i64 srcCols,
                i64 srcStride, T *__restrict__ dst, i64 dstRows, i64 dstCols) {
  __shared__ T tile[32][33];
  const i64 tilesC = (dstCols + 31) / 32;
  const i64 tiles = (dstRows + 31) / 32 * tilesC;
  const int x = threadIdx.x, y0 = threadIdx.y;
  for (i64 t = blockIdx.x; t < tiles; t += gridDim.x) {
    const i64 r0 = t / tilesC * 32, c0 = t % tilesC * 32;
    // tile[y][x] = src(c0 + y, r0 + x): dst(r0 + x, c0 + y).
    for (int y = y0; y < 32; y += 8) {
      i64 i = c0 + y, j = r0 + x;
      tile[y][x] = i < srcRows && j < srcCols ? src[i * srcStride + j] : T(0);
    }
    __syncthreads();
    for (int y = y0; y < 32; y += 8) {
      i64 r = r0 + y, c = c0 + x;
      if (r < dstRows && c < dstCols)
        dst[r * dstCols + c] = tile[x][y];
    }
    __syncthreads();
  }
}

/// transposePadded for bytes (FP8 data), 128 x 128 tiles: 256 threads read
/// the tile's 128 source rows as 32-bit words (a warp reads 128 contiguous
/// bytes), keep them in shared memory grouped by four rows so that one
/// 16-byte read gives a thread the same byte column of four rows, and
/// write 32-bit words of four destination bytes (a warp writes 128
/// contiguous bytes). Blocks of 256 threads; a grid-stride loop over the
/// tiles of dst.
__device__ __forceinline__ void transposeBytes(const u8 *__restrict__ src,
                                               i64 srcRows, i64 srcCols,
                                               i64 srcStride,
                                               u8 *__restrict__ dst,
                                               i64 dstRows, i64 dstCols) {
  // [group of 4 source rows][source word, padded][row in the group]: the
  // pad makes the 16-byte reads of 8 lanes hit 8 different bank groups.
  __shared__ u32 tile[32][33][4];
  const bool words = ((srcStride | dstCols) & 3) == 0;
  const i64 tilesC = (dstCols + 127) / 128;
  const i64 tiles = (dstRows + 127) / 128 * tilesC;
  const int tid = threadIdx.x;
  for (i64 t = blockIdx.x; t < tiles; t += gridDim.x) {
    // dst rows r0.. are source columns, dst columns c0.. source rows.
    const i64 r0 = t / tilesC * 128, c0 = t % tilesC * 128;
    for (int i = tid; i < 128 * 32; i += 256) {
      int row = i >> 5, w = i & 31;
      i64 sr = c0 + row, sc = r0 + 4 * w;
      u32 v = 0;
      if (sr < srcRows) {
        const u8 *p = src + sr * srcStride + sc;
        if (words && sc + 3 < srcCols)
          v = *reinterpret_cast<const u32 *>(p);
        else
          for (int e = 0; e < 4; ++e)
            if (sc + e < srcCols)
              v |= u32(p[e]) << (8 * e);
      }
      tile[row >> 2][w][row & 3] = v;
    }
    __syncthreads();
    for (int i = tid; i < 128 * 32; i += 256) {
      int d = i >> 5, j = i & 31;
      const uint4 q = *reinterpret_cast<const uint4 *>(&tile[j][d >> 2][0]);
      const u32 sel = u32(d & 3) | (u32((d & 3) + 4) << 4);
      u32 out = __byte_perm(__byte_perm(q.x, q.y, sel),
                            __byte_perm(q.z, q.w, sel), 0x5410);
      i64 dr = r0 + d, dc = c0 + 4 * j;
      if (dr >= dstRows)
        continue;
      u8 *p = dst + dr * dstCols + dc;
      if (words && dc + 3 < dstCols)
        *reinterpret_cast<u32 *>(p) = out;
      else
        for (int e = 0; e < 4; ++e)
          if (dc + e < dstCols)
            p[e] = u8(out >> (8 * e));
    }
    __syncthreads();
  }
}

} // namespace dev
} // namespace te

#endif // TE_DEVICE_GATHERKERNEL_CUH
