//===- CpuCollective.cpp - the CPU backend's gathers and amax reductions --===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Row shards on the CPU backend (docs/Numerics.md §16): every rank's CPU
// backend exchanges host bytes through an rt::HostCollective, in the same
// order as the GPU plan's NCCL steps.
//
//===----------------------------------------------------------------------===//

#include "CpuBackendInternal.h"

#include "te/formats/Sharding.h"
#include "te/runtime/reference/Gather.h"
#include "te/runtime/reference/Scales.h"

namespace te::exec::detail {

using namespace cg;
using rt::Direction;

static rt::Status needRanks(const std::string &kernel, int ranks,
                            const rt::HostCollective *c,
                            const char *what = "row shards") {
  if (c && c->ranks() == ranks)
    return rt::Status::ok();
  return fail(kernel + " works on " + what + " of " + std::to_string(ranks) +
              " ranks, but " +
              (c ? "the job has " + std::to_string(c->ranks())
                 : std::string("this run has no ranks (te-run --ranks ") +
                       std::to_string(ranks) + ")"));
}

rt::Status rankAmaxes(const QuantizeKernel &q, const Value &in,
                      const std::vector<float> &x,
                      rt::HostCollective *collective, RankAmax &out) {
  bool plain = false, rht = false;
  for (const Stage &s : q.stages) {
    if (!rt::needsRankAmax(s.scheme))
      continue;
    bool transformed = s.scheme.kind == rt::SchemeKind::Nvfp4 && s.scheme.rht &&
                       s.dir == Direction::Columnwise;
    (transformed ? rht : plain) = true;
  }
  if (q.amaxRanks <= 1 || (!plain && !rht))
    return rt::Status::ok();
  TE_RETURN_IF_ERROR(needRanks(q.name, q.amaxRanks, collective));
  float amax[2] = {rt::ref::amaxOf(x.data(), x.size()), 0.0f};
  if (rht) {
    std::vector<float> t =
        rt::ref::rhtColumnwise(x.data(), in.rows(), in.cols());
    amax[1] = rt::ref::amaxOf(t.data(), t.size());
  }
  TE_RETURN_IF_ERROR(collective->allReduceMax(amax, 2));
  out.tensor = amax[0];
  out.rht = amax[1];
  out.shared = true;
  return rt::Status::ok();
}

/// The columnwise direction of `q` from its (gathered) rowwise one, where
/// rt::columnwiseDerivesFromRowwise holds: the data transposed (or the same
/// bytes where the target stores it untransposed), the scales transposed
/// into their padded layout, the amax copied.
static void deriveColumnwise(const cg::Program &p, const Value &v,
                             rt::ref::QuantizedTensor &q) {
  const rt::ref::QuantizedDirection &row = *q.rowwise;
  rt::DirectionStorage st = rt::storageFor(*v.columnwise, Direction::Columnwise,
                                           v.rows(), v.cols(), p.target);
  rt::ref::QuantizedDirection col;
  col.dataTransposed = st.dataTransposed;
  col.sharesRowwiseData = st.sharesRowwiseData;
  col.sharesRowwiseScale = st.sharesRowwiseScale;
  auto derive = [](const rt::ref::HostBuffer &from, const rt::BufferDesc &to,
                   bool transpose) {
    rt::ref::HostBuffer out;
    out.desc = to;
    if (!to.present())
      return out;
    out.bytes = transpose
                    ? rt::ref::transposePadded(
                          from.bytes, std::min(from.desc.rows, to.cols),
                          std::min(from.desc.cols, to.rows), from.desc.cols,
                          to.rows, to.cols, rt::dtypeSize(to.dtype))
                    : from.bytes;
    return out;
  };
  col.data = derive(row.data, st.data, st.dataTransposed);
  col.scaleInv = derive(row.scaleInv, st.scaleInv, true);
  col.amax = derive(row.amax, st.amax, false);
  q.columnwise = std::move(col);
}

rt::Status gatherMasterShards(const ShardedQuantizeKernel &q,
                              const cg::Entry &e,
                              const std::vector<HostValue> &values,
                              rt::HostCollective *collective,
                              std::vector<uint8_t> &whole) {
  TE_RETURN_IF_ERROR(
      needRanks(q.name, int(q.ranks()), collective, "master shards"));
  const std::vector<uint8_t> &mine = values[q.shards.front()].tensor;
  std::vector<uint8_t> all;
  TE_RETURN_IF_ERROR(collective->allGather(mine.data(), mine.size(), all));
  size_t element = rt::dtypeSize(e.values[q.shards.front()].dtype);
  whole.clear();
  for (size_t r = 0; r < q.ranks(); ++r) {
    const uint8_t *first = all.data() + r * mine.size();
    whole.insert(whole.end(), first,
                 first +
                     size_t(q.rankOffsets[r + 1] - q.rankOffsets[r]) * element);
  }
  return rt::Status::ok();
}

rt::Status runAllGather(const cg::Program &p, const cg::Entry &e,
                        const cg::AllGatherKernel &g,
                        std::vector<HostValue> &values,
                        rt::HostCollective *collective) {
  TE_RETURN_IF_ERROR(needRanks(g.name, g.ranks, collective));
  const Value &in = e.values[g.input], &whole = e.values[g.output];
  const HostValue &src = values[g.input];
  HostValue &dst = values[g.output];
  dst.unbounded = src.inexact();
  auto gather = [&](const std::vector<uint8_t> &shard,
                    const rt::GatherView &view,
                    std::vector<uint8_t> &out) -> rt::Status {
    std::vector<uint8_t> staging;
    TE_RETURN_IF_ERROR(
        collective->allGather(shard.data(), shard.size(), staging));
    out = rt::ref::gatherShards(staging, g.ranks, view);
    return rt::Status::ok();
  };
  if (!in.isQuantized()) {
    rt::BufferDesc shard{in.dtype, in.rows(), in.cols()};
    rt::BufferDesc all{in.dtype, whole.rows(), whole.cols()};
    return gather(
        src.tensor,
        rt::gatherView({rt::ShardPiece::Axis::Rows, in.rows()}, shard, all),
        dst.tensor);
  }
  unsigned read = g.shardDirections(e);
  for (Direction d : {Direction::Rowwise, Direction::Columnwise}) {
    if (!whole.scheme(d))
      continue;
    if (!(read & unsigned(d))) {
      deriveColumnwise(p, whole, dst.quantized);
      continue;
    }
    const rt::ref::QuantizedDirection *s = src.quantized.get(d);
    if (!s)
      return fail(g.name + ": '" + in.name + "' holds no " +
                  rt::directionName(d) + " data");
    rt::ref::QuantizedDirection q = *s;
    rt::ref::HostBuffer rt::ref::QuantizedDirection::*parts[] = {
        &rt::ref::QuantizedDirection::data,
        &rt::ref::QuantizedDirection::scaleInv,
        &rt::ref::QuantizedDirection::amax};
    rt::DirectionStorage st = rt::storageFor(*whole.scheme(d), d, whole.rows(),
                                             whole.cols(), p.target);
    const rt::BufferDesc rt::DirectionStorage::*descs[] = {
        &rt::DirectionStorage::data, &rt::DirectionStorage::scaleInv,
        &rt::DirectionStorage::amax};
    for (int b = 0; b < 3; ++b) {
      const rt::ref::HostBuffer &shard = s->*parts[b];
      if (!shard.present())
        continue;
      rt::ShardPiece piece =
          rt::shardPiece(*in.scheme(d), d, b, in.rows(), in.cols(), p.target);
      rt::ref::HostBuffer &out = q.*parts[b];
      out.desc = st.*descs[b];
      TE_RETURN_IF_ERROR(gather(
          shard.bytes, rt::gatherView(piece, shard.desc, out.desc), out.bytes));
    }
    (d == Direction::Rowwise ? dst.quantized.rowwise
                             : dst.quantized.columnwise) = std::move(q);
  }
  return rt::Status::ok();
}

} // namespace te::exec::detail
