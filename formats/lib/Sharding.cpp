//===- Sharding.cpp - row shards of a quantized tensor --------------------===//
//
// Part of tejit. Plain C++17, no MLIR and no CUDA.
//
//===----------------------------------------------------------------------===//

#include "te/formats/Sharding.h"

namespace te::rt {

std::string validateRowShard(const Scheme &s, Direction d, int64_t shardRows) {
  if (shardRows < 1)
    return "a shard must hold at least one row";
  if (s.kind == SchemeKind::Nvfp4 && s.stochasticRounding)
    return "nvfp4 stochastic rounding draws its random bits by element "
           "index, so a shard quantized alone would round differently from "
           "the whole tensor";
  int64_t rows = blockShape(s, d).rows;
  if (s.kind == SchemeKind::Nvfp4 && s.rht && d == Direction::Columnwise)
    rows = 16; // the Hadamard transform mixes 16 rows
  if (rows > 1 && shardRows % rows != 0)
    return std::string(schemeKindName(s.kind)) + " " + directionName(d) +
           " scaling blocks span " + std::to_string(rows) +
           " rows: a shard of " + std::to_string(shardRows) +
           " rows would split one between ranks";
  return "";
}

bool columnwiseDerivesFromRowwise(const Scheme &s) {
  if (s.kind == SchemeKind::Fp8Block)
    return s.tileRows == 128;
  return s.isPerTensor();
}

unsigned shardDirectionsRead(const Scheme *rowwise, const Scheme *columnwise,
                             unsigned whole, bool sendColumnwise) {
  const unsigned row = unsigned(Direction::Rowwise),
                 col = unsigned(Direction::Columnwise);
  if ((whole & row) && (whole & col) && !sendColumnwise && rowwise &&
      columnwise && *rowwise == *columnwise &&
      columnwiseDerivesFromRowwise(*rowwise))
    return row;
  return whole;
}

ShardPiece shardPiece(const Scheme &s, Direction d, int buffer,
                      int64_t shardRows, int64_t k, const Target &target) {
  using Axis = ShardPiece::Axis;
  DirectionStorage st = storageFor(s, d, shardRows, k, target);
  const BufferDesc &b = buffer == 0   ? st.data
                        : buffer == 1 ? st.scaleInv
                                      : st.amax;
  if (buffer == 2 || (buffer == 1 && s.isPerTensor()))
    return {Axis::Whole, 1};
  int64_t m = shardRows;
  bool row = d == Direction::Rowwise;
  if (buffer == 0) // data: [m, k'] or the transpose [k, m'] (m' = m/2 fp4)
    return st.dataTransposed ? ShardPiece{Axis::Cols, b.cols}
                             : ShardPiece{Axis::Rows, m};
  switch (s.kind) {
  case SchemeKind::Mxfp8:
    return row ? ShardPiece{Axis::Rows, m} : ShardPiece{Axis::Rows, m / 32};
  case SchemeKind::Nvfp4:
    return row ? ShardPiece{Axis::Rows, m} : ShardPiece{Axis::Cols, m / 16};
  case SchemeKind::Fp8Block:
    if (s.tileRows == 128)
      return row ? ShardPiece{Axis::Rows, ceilDiv(m, 128)}
                 : ShardPiece{Axis::Cols, ceilDiv(m, 128)};
    return row ? ShardPiece{Axis::Cols, m} : ShardPiece{Axis::Rows, m / 128};
  default:
    return {Axis::Whole, 1};
  }
}

GatherView gatherView(const ShardPiece &piece, const BufferDesc &shard,
                      const BufferDesc &whole) {
  int64_t size = dtypeSize(shard.dtype);
  GatherView v;
  switch (piece.axis) {
  case ShardPiece::Axis::Whole:
    v.rows = 1;
    v.shardRowBytes = v.validBytes = v.wholeRowBytes = shard.bytes();
    v.whole = true;
    break;
  case ShardPiece::Axis::Rows:
    v.rows = 1;
    v.shardRowBytes = shard.bytes();
    v.validBytes = piece.valid * shard.cols * size;
    v.wholeRowBytes = whole.bytes();
    break;
  case ShardPiece::Axis::Cols:
    v.rows = shard.rows;
    v.shardRowBytes = shard.cols * size;
    v.validBytes = piece.valid * size;
    v.wholeRowBytes = whole.cols * size;
    break;
  }
  return v;
}

std::string validateMasterShards(const Scheme &s, Direction d) {
  if (s.kind == SchemeKind::Nvfp4 && s.rht && d == Direction::Columnwise)
    return "nvfp4's Hadamard transform mixes 16 rows of a column, which "
           "different ranks may hold";
  return "";
}

std::string validateShardSizes(const std::vector<int64_t> &sizes,
                               int64_t elements) {
  if (sizes.empty())
    return "needs at least one shard";
  int64_t total = 0;
  for (size_t r = 0; r < sizes.size(); ++r) {
    if (sizes[r] < 1)
      return "shard " + std::to_string(r) + " is empty";
    if (sizes[r] > elements - total)
      return "the shards hold more than the tensor's " +
             std::to_string(elements) + " elements";
    total += sizes[r];
  }
  if (total != elements)
    return "the shards hold " + std::to_string(total) + " of the tensor's " +
           std::to_string(elements) + " elements";
  return "";
}

std::vector<int64_t> shardSizes(const std::vector<int64_t> &offsets) {
  std::vector<int64_t> sizes;
  for (size_t r = 0; r + 1 < offsets.size(); ++r)
    sizes.push_back(offsets[r + 1] - offsets[r]);
  return sizes;
}

std::string validateRankOffsets(const std::vector<int64_t> &offsets,
                                int64_t elements, int64_t capacity) {
  if (offsets.size() < 3)
    return "needs the offsets of at least two ranks (R + 1 values)";
  if (offsets.front() != 0)
    return "the first offset must be 0";
  if (offsets.back() != elements)
    return "the last offset must be the tensor's " + std::to_string(elements) +
           " elements";
  std::vector<int64_t> sizes = shardSizes(offsets);
  for (size_t r = 0; r < sizes.size(); ++r) {
    if (sizes[r] < 1)
      return "rank " + std::to_string(r) + "'s shard is empty";
    if (sizes[r] > capacity)
      return "rank " + std::to_string(r) + " holds " +
             std::to_string(sizes[r]) + " elements, more than the shard's " +
             std::to_string(capacity);
  }
  return "";
}

} // namespace te::rt
