//===- TeShardOps.cpp - row shards: te.all_gather, amax_ranks -------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The verifiers of a tensor sharded over ranks by rows: te.all_gather (and
// tek.all_gather, which checks the same types) and te.quantize's
// amax_ranks. The rules themselves live in te/formats/Sharding.h.
//
//===----------------------------------------------------------------------===//

#include "dialect/te/TeOps.h"
#include "dialect/te/TeOpsSupport.h"

#include "te/formats/Sharding.h"

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::detail;

std::string mlir::te::detail::rowShardProblem(QTensorType q, Direction d,
                                              int64_t rows) {
  return ::te::rt::validateRowShard(q.getScheme().getRuntimeScheme(d),
                                    toRuntime(d), rows);
}

//===----------------------------------------------------------------------===//
// AllGatherOp
//===----------------------------------------------------------------------===//

Directions AllGatherOp::shardDirections(Type result, bool sendColumnwise) {
  auto q = dyn_cast<QTensorType>(result);
  if (!q)
    return Directions::none;
  std::optional<::te::rt::Scheme> schemes[2];
  unsigned whole = 0;
  const Direction dirs[] = {Direction::rowwise, Direction::columnwise};
  for (unsigned i = 0; i < 2; ++i)
    if (q.hasDirection(dirs[i])) {
      schemes[i] = q.getScheme().getRuntimeScheme(dirs[i]);
      whole |= 1u << i;
    }
  unsigned read = ::te::rt::shardDirectionsRead(
      schemes[0] ? &*schemes[0] : nullptr, schemes[1] ? &*schemes[1] : nullptr,
      whole, sendColumnwise);
  Directions out = Directions::none;
  if (read & 1u)
    out = out | Directions::rowwise;
  if (read & 2u)
    out = out | Directions::columnwise;
  return out;
}

LogicalResult
AllGatherOp::verifyTypes(function_ref<InFlightDiagnostic()> emitError,
                         Type input, Type result, int64_t ranks,
                         bool sendColumnwise) {
  auto qin = dyn_cast<QTensorType>(input), qout = dyn_cast<QTensorType>(result);
  if (bool(qin) != bool(qout))
    return emitError() << "gathers " << input << " into " << result
                       << ": both or neither must be quantized";
  ArrayRef<int64_t> inShape = shapeOf(input), outShape = shapeOf(result);
  SmallVector<int64_t> expected(inShape);
  if (!expected.empty())
    expected[0] *= ranks;
  if (inShape.empty() || outShape != ArrayRef<int64_t>(expected))
    return emitError() << "result shape " << shapeStr(outShape)
                       << " must be the shard's " << shapeStr(inShape)
                       << " with its first dimension times " << ranks
                       << " ranks";
  if (!qin) {
    if (cast<RankedTensorType>(input).getElementType() !=
        cast<RankedTensorType>(result).getElementType())
      return emitError() << "result element type differs from the shard's";
    return success();
  }
  if (qin.getElementType() != qout.getElementType() ||
      qin.getScheme() != qout.getScheme())
    return emitError() << "result " << qout
                       << " must have the shard's element type and scheme "
                       << qin.getScheme();
  Directions read = shardDirections(result, sendColumnwise);
  for (Direction d : {Direction::rowwise, Direction::columnwise}) {
    if (!qout.hasDirection(d))
      continue;
    bool derived = (read & (d == Direction::rowwise
                                ? Directions::rowwise
                                : Directions::columnwise)) == Directions::none;
    if (!derived && !qin.hasDirection(d))
      return emitError() << "gathers the " << stringifyDirection(d)
                         << " direction, which the shard does not hold";
    std::string why = rowShardProblem(qout, d, qin.getRows());
    if (!why.empty())
      return emitError() << "cannot gather the " << stringifyDirection(d)
                         << " direction: " << why;
  }
  return success();
}

LogicalResult AllGatherOp::verify() {
  if (failed(verifyTypes([&] { return emitOpError(); }, getInput().getType(),
                         getResult().getType(), getRanks(),
                         getSendColumnwise())))
    return failure();
  auto q = dyn_cast<QTensorType>(getInput().getType());
  if (!q)
    return success();
  // Shards scaled by the tensor amax share one scale only if they were
  // quantized with the amax reduced over the ranks.
  for (Direction d : {Direction::rowwise, Direction::columnwise}) {
    auto out = cast<QTensorType>(getResult().getType());
    if (!out.hasDirection(d) ||
        !::te::rt::needsRankAmax(q.getScheme().getRuntimeScheme(d)))
      continue;
    auto producer = getInput().getDefiningOp<QuantizeOp>();
    if (!producer || producer.getAmaxRanks() != uint64_t(getRanks()))
      return emitOpError()
             << "gathers " << stringifyDirection(d)
             << " shards scaled by the tensor amax: they must come from "
                "te.quantize with amax_ranks = "
             << getRanks() << " so that every rank shares one scale";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// QuantizeShardsOp
//===----------------------------------------------------------------------===//

LogicalResult
QuantizeShardsOp::verifyTypes(function_ref<InFlightDiagnostic()> emitError,
                              TypeRange shards, Type result,
                              std::optional<ArrayRef<int64_t>> rankOffsets) {
  auto q = cast<QTensorType>(result);
  if (rankOffsets && shards.size() != 1)
    return emitError() << "takes one shard per process with rank_offsets, got "
                       << shards.size();
  std::vector<int64_t> sizes;
  for (auto [i, t] : llvm::enumerate(shards)) {
    auto shard = cast<RankedTensorType>(t);
    if (shard.getRank() != 1)
      return emitError() << "shard " << i << " is " << shard
                         << ": master shards are 1-D pieces of the flattened "
                            "tensor";
    if (shard.getElementType() != q.getElementType())
      return emitError() << "shard " << i << " holds " << shard.getElementType()
                         << ", but the quantized tensor's source type is "
                         << q.getElementType();
    sizes.push_back(shard.getDimSize(0));
  }
  std::string why;
  if (rankOffsets) {
    std::vector<int64_t> offsets(rankOffsets->begin(), rankOffsets->end());
    why = ::te::rt::validateRankOffsets(offsets, q.getRows() * q.getCols(),
                                        sizes.front());
    if (!why.empty()) {
      std::string list;
      for (int64_t o : offsets)
        list += (list.empty() ? "" : ", ") + std::to_string(o);
      return emitError() << "cannot split " << shapeStr(q.getShape())
                         << " at rank offsets [" << list << "]: " << why;
    }
  } else {
    why = ::te::rt::validateShardSizes(sizes, q.getRows() * q.getCols());
    if (!why.empty())
      return emitError() << "cannot split " << shapeStr(q.getShape())
                         << " into shards of " << shapeStr(sizes) << ": "
                         << why;
  }
  auto hybrid = dyn_cast<HybridAttr>(q.getScheme());
  if (hybrid && hybrid.getColumnwiseSource() &&
      q.hasDirection(Direction::columnwise))
    return emitError() << "cannot double-quantize a sharded master: the "
                          "columnwise copy would need the rowwise one of "
                          "other ranks' elements";
  for (Direction d : {Direction::rowwise, Direction::columnwise}) {
    if (!q.hasDirection(d))
      continue;
    why = ::te::rt::validateMasterShards(q.getScheme().getRuntimeScheme(d),
                                         toRuntime(d));
    if (!why.empty())
      return emitError() << "cannot quantize the " << stringifyDirection(d)
                         << " direction from master shards: " << why;
  }
  return success();
}

LogicalResult QuantizeShardsOp::verify() {
  if (getShards().empty())
    return emitOpError() << "needs at least one shard";
  if (failed(verifyTypes([&] { return emitOpError(); }, getShards().getTypes(),
                         getResult().getType(), getRankOffsets())))
    return failure();
  return verifyScalingState(
      [&] { return emitOpError(); }, getResult().getType(),
      getScalingState().value_or(""), getScalingState().has_value());
}
