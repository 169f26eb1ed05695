//===- Gather.cpp - shards into the whole tensor
//---------------------------===//
//
// Part of tejit. Plain C++17.
//
//===----------------------------------------------------------------------===//

#include "te/runtime/reference/Gather.h"

#include <algorithm>
#include <cstring>

namespace te::rt::ref {

std::vector<uint8_t> gatherShards(const std::vector<uint8_t> &staging,
                                  int ranks, const GatherView &v) {
  if (v.whole)
    return std::vector<uint8_t>(staging.begin(),
                                staging.begin() + v.shardRowBytes);
  std::vector<uint8_t> whole(size_t(v.rows * v.wholeRowBytes), 0);
  int64_t shardBytes = v.rows * v.shardRowBytes;
  for (int64_t i = 0; i < v.rows; ++i)
    for (int r = 0; r < ranks && r * v.validBytes < v.wholeRowBytes; ++r)
      std::memcpy(whole.data() + i * v.wholeRowBytes + r * v.validBytes,
                  staging.data() + r * shardBytes + i * v.shardRowBytes,
                  size_t(v.validBytes));
  return whole;
}

std::vector<uint8_t> shardOf(const std::vector<uint8_t> &whole, int rank,
                             const GatherView &v) {
  if (v.whole)
    return whole;
  std::vector<uint8_t> shard(size_t(v.rows * v.shardRowBytes), 0);
  for (int64_t i = 0; i < v.rows; ++i)
    std::memcpy(shard.data() + i * v.shardRowBytes,
                whole.data() + i * v.wholeRowBytes + rank * v.validBytes,
                size_t(v.validBytes));
  return shard;
}

std::vector<uint8_t> transposePadded(const std::vector<uint8_t> &src,
                                     int64_t srcRows, int64_t srcCols,
                                     int64_t srcStride, int64_t dstRows,
                                     int64_t dstCols, int64_t elementBytes) {
  std::vector<uint8_t> dst(size_t(dstRows * dstCols * elementBytes), 0);
  for (int64_t r = 0; r < std::min(dstRows, srcCols); ++r)
    for (int64_t c = 0; c < std::min(dstCols, srcRows); ++c)
      std::memcpy(dst.data() + (r * dstCols + c) * elementBytes,
                  src.data() + (c * srcStride + r) * elementBytes,
                  size_t(elementBytes));
  return dst;
}

} // namespace te::rt::ref
