//===- te/runtime/reference/Gather.h - shards into the whole ----*- C++ -*-===//
//
// Part of tejit. Plain C++17.
//
//===----------------------------------------------------------------------===//
//
// The host twin of te/device/GatherKernel.cuh (docs/Numerics.md §16).
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_REFERENCE_GATHER_H
#define TE_RUNTIME_REFERENCE_GATHER_H

#include "te/formats/Sharding.h"

#include <cstdint>
#include <vector>

namespace te::rt::ref {

/// The whole tensor's buffer from `ranks` shard buffers laid one after the
/// other in `staging` (ranks * view.rows * view.shardRowBytes bytes), as
/// `view` describes; a Whole view copies rank 0's.
std::vector<uint8_t> gatherShards(const std::vector<uint8_t> &staging,
                                  int ranks, const GatherView &view);

/// The inverse: rank `rank`'s shard buffer cut out of the whole tensor's
/// (padding of the shard buffer zero), for tests that start from the
/// whole tensor.
std::vector<uint8_t> shardOf(const std::vector<uint8_t> &whole, int rank,
                             const GatherView &view);

/// dst (dstRows x dstCols bytes of `elementBytes`-byte elements) = the
/// transpose of the srcRows x srcCols block at the top left of `src` (row
/// stride srcStride elements), zero past it: the host twin of
/// te::dev::transposePadded.
std::vector<uint8_t> transposePadded(const std::vector<uint8_t> &src,
                                     int64_t srcRows, int64_t srcCols,
                                     int64_t srcStride, int64_t dstRows,
                                     int64_t dstCols, int64_t elementBytes);

} // namespace te::rt::ref

#endif // TE_RUNTIME_REFERENCE_GATHER_H
