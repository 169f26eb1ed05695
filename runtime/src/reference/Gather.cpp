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

} // namespace te::rt::ref
