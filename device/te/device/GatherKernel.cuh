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

} // namespace dev
} // namespace te

#endif // TE_DEVICE_GATHERKERNEL_CUH
