//===- PlanMasterShards.cpp - quantizing from master shards ---------------===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//
//
// The plan of a ShardedQuantizeKernel (docs/Numerics.md §17). With every
// rank in one process: the amax table zeroed, the tensor amax of each
// rank's shard and the amaxes of the blocks ranks share max-accumulated
// into it (the reduction over ranks), then one launch over every rank's
// tiles.
// With one process per rank the same launches run the process's own rank
// (a Rank argument) and two collectives make the reduction: the amax
// table's all-reduce (max) before the tiles, and the merge of the ranks'
// outputs, written into zeroed buffers, after them.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilderInternal.h"

#include "te/formats/Sharding.h"

namespace te::cg::detail {

using rt::ArgDesc;

/// The rows round a shard boundary that phase A reads: the tallest block
/// whose amaxes it exchanges (on the device, the stages' kBlocks decide it:
/// SharedBlocks::rowsOfSharedBlocks). Per-tensor scales need none, but
/// delayed scaling records the 128x128 tile amax.
static int64_t sharedBlockRows(const std::vector<Stage> &stages) {
  int64_t rows = 1;
  for (const Stage &s : stages) {
    int64_t r = s.scheme.kind == rt::SchemeKind::Fp8Delayed ? kQuantizeTileRows
                : s.scheme.isPerTensor()                    ? 1
                                         : rt::blockShape(s.scheme, s.dir).rows;
    rows = std::max(rows, r);
  }
  return rows;
}

rt::Expected<KernelPlan> planShardedQuantize(const Program &p, const Entry &e,
                                             const ShardedQuantizeKernel &q,
                                             BufferTable &table,
                                             EntryPlan &out) {
  const Value &whole = e.values[q.stages.front().value];
  int64_t m = whole.rows(), k = whole.cols();
  int ranks = int(q.ranks());
  std::vector<int64_t> sizes;
  for (int s : q.shards)
    sizes.push_back(e.values[s].shape[0]);
  if (q.perProcess())
    sizes = rt::shardSizes(q.rankOffsets);
  ShardGeometry g = shardGeometry(sizes, k);
  // The launches run grid rows from rank `first`; each runs one rank's part.
  unsigned rows = q.perProcess() ? 1u : unsigned(ranks);
  ArgDesc first = q.perProcess() ? ArgDesc::rank() : ArgDesc::i32(0);
  EmittedShardedQuantize src = emitShardedQuantize(q, e);
  KernelPlanWriter w(p, table, q.name, src.source);

  // te::dev::MasterShards<R>: the shard pointers, the R + 1 offsets, the
  // split tile rows (R words, the first `count` used), their count, and
  // where phase B's grid starts each rank's tile rows.
  std::vector<ArgDesc> shards;
  for (int r = 0; r < ranks; ++r)
    shards.push_back(ArgDesc::ptr(
        out.values[q.shards[q.perProcess() ? 0 : size_t(r)]].tensor));
  for (int64_t lo : g.lo)
    shards.push_back(ArgDesc::i64(lo));
  for (int r = 0; r < ranks; ++r)
    shards.push_back(ArgDesc::i64(
        r < int(g.boundaryRows.size()) ? g.boundaryRows[r] : int64_t(-1)));
  shards.push_back(ArgDesc::i64(int64_t(g.boundaryRows.size())));
  // Every rank in one launch: its tile rows one after another. One rank a
  // process: the same plan runs any rank, so its grid is the most tile rows
  // a rank spans.
  for (int r = 0; r <= ranks; ++r)
    shards.push_back(
        ArgDesc::i64(q.perProcess() ? (r == 0 ? 0 : g.rankTiles / g.tilesAcross)
                                    : g.tileRowStart[size_t(r)]));
  ArgDesc sh = ArgDesc::table(shards);

  uint64_t elementBytes = uint64_t(rt::dtypeSize(whole.dtype));
  uint64_t masterBytes = uint64_t(m * k) * elementBytes;
  w.kp.bytesMoved += masterBytes;
  int amaxTable =
      table.add(q.name + ".amax_table", uint64_t(g.tableFloats()) * 4);
  w.fill(amaxTable);
  int tensorAmax = src.amaxEntry.empty() ? -1 : amaxTable; // word 0

  // The stages' buffers (and their fills) first, so that nothing stands
  // between the launches below.
  std::vector<ArgDesc> args = {sh, first, ArgDesc::i64(m), ArgDesc::i64(k)};
  std::vector<StageBuffers> written;
  for (const Stage &s : q.stages) {
    StageBuffers b = stageBuffers(p, e, s, s.value, tensorAmax, table, out, w);
    // Each rank writes its part into zeroed buffers, for the merge below
    // (a delayed stage's amax is zeroed already).
    if (q.perProcess())
      for (int buffer :
           {b.data, b.scale,
            s.scheme.kind == rt::SchemeKind::Fp8Delayed ? -1 : b.amax})
        if (buffer >= 0)
          w.fill(buffer);
    written.push_back(b);
    for (int buffer : {b.data, b.scale, b.amax, b.in})
      args.push_back(ArgDesc::ptr(buffer));
    args.push_back(ArgDesc::f32(static_cast<float>(s.scheme.eps)));
    args.push_back(ArgDesc::i64(int64_t(p.random.seed)));
    args.push_back(ArgDesc::i64(int64_t(p.random.offset)));
  }

  if (tensorAmax >= 0) {
    int64_t largest = *std::max_element(sizes.begin(), sizes.end());
    int64_t grid = std::min<int64_t>(rt::ceilDiv(rt::ceilDiv(largest, 8), 1024),
                                     132 * 16 / int(rows) + 1);
    w.launch(
        src.amaxEntry, rt::Dim3{unsigned(grid), rows, 1},
        {sh, first, ArgDesc::i64(m), ArgDesc::i64(k), ArgDesc::ptr(amaxTable)});
    w.kp.bytesMoved += masterBytes;
  }
  bool partial = !g.boundaryRows.empty();
  if (partial) {
    // (No shared memory: phase A reads the rows from global memory.)
    w.launch(
        src.shardAmaxEntry, rt::Dim3{unsigned(2 * g.tilesAcross), rows, 1},
        {sh, first, ArgDesc::i64(m), ArgDesc::i64(k), ArgDesc::ptr(amaxTable)});
    // The rows round each offset inside a tile row that shared blocks lie
    // in, read once in all by the ranks that hold them.
    uint64_t inside = 0;
    for (size_t r = 1; r + 1 < g.lo.size(); ++r)
      inside += g.lo[r] % (int64_t(kQuantizeTileRows) * k) != 0;
    w.kp.bytesMoved += inside * uint64_t(sharedBlockRows(q.stages)) *
                       uint64_t(k) * elementBytes;
  }
  auto collective = [&](rt::CollectiveCall::Kind kind, int buffer) {
    rt::CollectiveCall c;
    c.kind = kind;
    c.ranks = ranks;
    c.send = {buffer, 0};
    c.bytes = table.bytes(buffer);
    w.kp.addCollective(c);
  };
  if (q.perProcess() && (tensorAmax >= 0 || partial))
    collective(rt::CollectiveCall::Kind::AllReduceMax, amaxTable);

  // Phase B, every rank's tiles. Right after the tile amaxes' launch (no
  // collective between) it overlaps it: the whole tiles run on, the
  // partial ones wait before they read the table (shardedQuantizeTile).
  // Never right after the tensor amax, which its whole tiles do not wait
  // for.
  // (The table counts as its fill; the entries of shared blocks the kernels
  // exchange, a few KB a split tile, are not counted.)
  args.push_back(ArgDesc::ptr(amaxTable));
  bool overlaps = partial && w.kp.lastStepLaunches();
  int64_t tileCtas =
      q.perProcess() ? g.rankTiles : g.tileRowStart.back() * g.tilesAcross;
  rt::KernelSpec &tiles = w.launch(
      src.mainEntry, rt::Dim3{unsigned(tileCtas), 1, 1}, std::move(args));
  tiles.sharedBytes = quantizeDynamicSmem(whole.dtype);
  tiles.overlapsPredecessor = overlaps;
  // The merge, one NCCL group: a code byte has one writer (an FP4 byte's
  // nibbles one each), a scale byte the same value from every writer, an
  // amax each rank's (delayed scaling records that of the tiles the rank
  // quantizes) as floats.
  if (q.perProcess())
    for (const StageBuffers &b : written) {
      if (b.data >= 0)
        collective(rt::CollectiveCall::Kind::AllReduceBytesSum, b.data);
      if (b.scale >= 0)
        collective(rt::CollectiveCall::Kind::AllReduceBytesMax, b.scale);
      if (b.amax >= 0)
        collective(rt::CollectiveCall::Kind::AllReduceMax, b.amax);
    }
  return std::move(w.kp);
}

} // namespace te::cg::detail
