//===- PlanMasterShards.cpp - quantizing from master shards ---------------===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//
//
// The plan of a ShardedQuantizeKernel (docs/Numerics.md §17) with every
// rank in one process: the amax table zeroed, the tensor amax of each
// rank's shard and the amaxes of the tiles ranks share max-accumulated into
// it (the reduction over ranks), then one launch over every rank's tiles.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilderInternal.h"

namespace te::cg::detail {

using rt::ArgDesc;

rt::Expected<KernelPlan> planShardedQuantize(const Program &p, const Entry &e,
                                             const ShardedQuantizeKernel &q,
                                             BufferTable &table,
                                             EntryPlan &out) {
  const Value &whole = e.values[q.stages.front().value];
  int64_t m = whole.rows(), k = whole.cols();
  int ranks = int(q.shards.size());
  std::vector<int64_t> sizes;
  for (int s : q.shards)
    sizes.push_back(e.values[s].shape[0]);
  ShardGeometry g = shardGeometry(sizes, k);
  EmittedShardedQuantize src = emitShardedQuantize(q, e);
  KernelPlanWriter w(p, table, q.name, src.source);

  // te::dev::MasterShards<R>: the shard pointers, the R + 1 offsets, the
  // split tile rows (R words, the first `count` used) and their count.
  std::vector<ArgDesc> shards;
  for (int s : q.shards)
    shards.push_back(ArgDesc::ptr(out.values[s].tensor));
  for (int64_t lo : g.lo)
    shards.push_back(ArgDesc::i64(lo));
  for (int r = 0; r < ranks; ++r)
    shards.push_back(ArgDesc::i64(
        r < int(g.boundaryRows.size()) ? g.boundaryRows[r] : int64_t(-1)));
  shards.push_back(ArgDesc::i64(int64_t(g.boundaryRows.size())));
  ArgDesc sh = ArgDesc::table(shards);

  uint64_t elementBytes = uint64_t(rt::dtypeSize(whole.dtype));
  uint64_t masterBytes = uint64_t(m * k) * elementBytes;
  w.kp.bytesMoved += masterBytes;
  int amaxTable =
      table.add(q.name + ".amax_table", uint64_t(g.tableFloats()) * 4);
  w.fill(amaxTable);
  int tensorAmax = -1;
  if (!src.amaxEntry.empty()) {
    int64_t largest = *std::max_element(sizes.begin(), sizes.end());
    int64_t grid = std::min<int64_t>(rt::ceilDiv(rt::ceilDiv(largest, 8), 1024),
                                     132 * 16 / ranks + 1);
    w.launch(src.amaxEntry, rt::Dim3{unsigned(grid), unsigned(ranks), 1},
             {sh, ArgDesc::i64(m), ArgDesc::i64(k), ArgDesc::ptr(amaxTable)});
    w.kp.bytesMoved += masterBytes;
    tensorAmax = amaxTable; // word 0 of the table
  }
  if (!g.boundaryRows.empty()) {
    w.launch(src.shardAmaxEntry,
             rt::Dim3{unsigned(2 * g.tilesAcross), unsigned(ranks), 1},
             {sh, ArgDesc::i64(m), ArgDesc::i64(k), ArgDesc::ptr(amaxTable)})
        .sharedBytes = quantizeDynamicSmem(whole.dtype);
    // Each split tile row is read by the two (or more) ranks it holds
    // elements of, once in all, and its slots are written.
    w.kp.bytesMoved += uint64_t(g.boundaryRows.size()) * kQuantizeTileRows *
                       uint64_t(k) * elementBytes;
  }
  std::vector<ArgDesc> args = {sh, ArgDesc::i64(m), ArgDesc::i64(k)};
  for (const Stage &s : q.stages) {
    StageBuffers b = stageBuffers(p, e, s, s.value, tensorAmax, table, out, w);
    for (int buffer : {b.data, b.scale, b.amax, b.in})
      args.push_back(ArgDesc::ptr(buffer));
    args.push_back(ArgDesc::f32(static_cast<float>(s.scheme.eps)));
    args.push_back(ArgDesc::i64(int64_t(p.random.seed)));
    args.push_back(ArgDesc::i64(int64_t(p.random.offset)));
  }
  args.push_back(ArgDesc::ptr(amaxTable));
  w.kp.bytesMoved += 2 * table.bytes(amaxTable);
  w.launch(src.mainEntry, rt::Dim3{unsigned(g.rankTiles), unsigned(ranks), 1},
           std::move(args))
      .sharedBytes = quantizeDynamicSmem(whole.dtype);
  return std::move(w.kp);
}

} // namespace te::cg::detail
