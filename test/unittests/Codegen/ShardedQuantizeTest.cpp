//===- ShardedQuantizeTest.cpp - quantizing from master shards ------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// docs/Numerics.md §17: a master split into R contiguous 1-D shards at any
// offsets is quantized rank by rank straight into the whole tensor's
// layout; every buffer must equal the quantization of the whole master,
// bit for bit. The CPU backend computes that definition; the GPU runs the
// ranks (amax pass over the tiles ranks share, the max over ranks, each
// rank's tiles with stores masked to its elements) on outputs poisoned
// first, so a byte no rank writes, or one a rank writes that is not its
// own, shows. With one process per rank (`rank_offsets`) the ranks are
// threads of this test, meeting through files on the CPU backend and
// through NCCL on GPUs; every rank must hold the whole quantization.
//
//===----------------------------------------------------------------------===//

#include "BackendComparison.h"
#include "ProgramHelpers.h"
#include "RankRuns.h"
#include "SassHazards.h"
#include "SchemeCases.h"

#include "te/codegen/PlanBuilder.h"
#include "te/codegen/QuantizeEmitter.h"
#include "te/codegen/ScalingState.h"
#include "te/exec/CpuBackend.h"
#include "te/formats/Sharding.h"
#include "te/runtime/Plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

namespace te {
namespace {

using rt::Direction;
using rt::DType;
using rt::Scheme;

struct Case {
  std::string label;
  std::optional<Scheme> rowwise, columnwise;
  int64_t m = 256, k = 384;
  std::vector<int64_t> sizes; ///< shard sizes, rank order
  DType dtype = DType::F32;
};

/// R - 1 distinct cut points drawn from [1, n - 1]: shard sizes at
/// arbitrary offsets (odd ones, mid-row, mid-block).
std::vector<int64_t> randomSizes(int64_t n, int ranks, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> d(1, n - 1);
  std::vector<int64_t> cuts;
  while (int(cuts.size()) < ranks - 1) {
    int64_t c = d(rng);
    if (std::find(cuts.begin(), cuts.end(), c) == cuts.end())
      cuts.push_back(c);
  }
  std::sort(cuts.begin(), cuts.end());
  std::vector<int64_t> sizes;
  int64_t last = 0;
  for (int64_t c : cuts) {
    sizes.push_back(c - last);
    last = c;
  }
  sizes.push_back(n - last);
  return sizes;
}

cg::Program shardedProgram(const Case &c) {
  cg::Entry e;
  e.name = "sharded";
  cg::ShardedQuantizeKernel q;
  q.name = "te_quantize_shards_0";
  for (size_t r = 0; r < c.sizes.size(); ++r) {
    e.values.push_back(
        test::tensor("s" + std::to_string(r), {c.sizes[r]}, c.dtype));
    e.args.push_back(int(r));
    q.shards.push_back(int(r));
  }
  cg::Value w = test::tensor("w", {c.m, c.k}, c.dtype);
  w.kind = cg::Value::Kind::Quantized;
  w.rowwise = c.rowwise;
  w.columnwise = c.columnwise;
  int out = int(e.values.size());
  e.values.push_back(w);
  for (Direction d : {Direction::Rowwise, Direction::Columnwise})
    if (w.scheme(d))
      q.stages.push_back(test::stageOf(w, out, d));
  e.kernels.push_back(q);
  e.results.push_back(out);
  cg::Program p;
  p.entries.push_back(e);
  return p;
}

/// The master: normals in full f32 precision, with the largest magnitudes
/// right next to every shard boundary (the block holding one then scales
/// by an element another rank holds) and Inf / NaN where `specials`.
std::vector<float> master(const Case &c, unsigned seed, bool specials) {
  int64_t n = c.m * c.k;
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float &v : x)
    v = d(rng);
  int64_t at = 0;
  for (size_t r = 0; r + 1 < c.sizes.size(); ++r) {
    at += c.sizes[r];
    x[size_t(at - 1)] = 37.5f + float(r);
    x[size_t(at)] = -1e-3f;
  }
  if (specials) {
    x[size_t(n / 3)] = std::numeric_limits<float>::quiet_NaN();
    x[size_t(n / 2 + 5)] = -std::numeric_limits<float>::infinity();
  }
  return x;
}

/// Shard r's argument bytes in the case's element type.
std::vector<std::vector<uint8_t>> shardArgs(const Case &c,
                                            const std::vector<float> &x) {
  std::vector<std::vector<uint8_t>> out;
  int64_t at = 0;
  for (int64_t s : c.sizes) {
    std::vector<float> piece(x.begin() + at, x.begin() + at + s);
    at += s;
    if (c.dtype == DType::BF16) {
      out.push_back(test::bf16Bytes(piece));
      continue;
    }
    std::vector<uint8_t> bytes(4 * piece.size());
    std::memcpy(bytes.data(), piece.data(), bytes.size());
    out.push_back(std::move(bytes));
  }
  return out;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  auto add = [&](std::string label, std::optional<Scheme> row,
                 std::optional<Scheme> col, int64_t m, int64_t k, int ranks,
                 unsigned seed, DType dtype = DType::F32) {
    Case c{std::move(label), row, col, m, k, {}, dtype};
    c.sizes = randomSizes(m * k, ranks, seed);
    c.label += "_r" + std::to_string(ranks);
    out.push_back(c);
  };
  unsigned seed = 1;
  for (const Scheme &s : test::allSchemes()) {
    if (!rt::validateMasterShards(s, Direction::Rowwise).empty() ||
        !rt::validateMasterShards(s, Direction::Columnwise).empty())
      continue;
    for (int ranks : {1, 2, 3, 8})
      add(test::schemeLabel(s), s, s, 256, 384, ranks, seed++);
    // Edge tiles (rows and columns not multiples of 128).
    add(test::schemeLabel(s) + "_ragged", s, s, 288, 224, 3, seed++);
  }
  Scheme mx = Scheme::mxfp8(DType::E4M3), fp4 = Scheme::nvfp4();
  Scheme tile = Scheme::fp8Block(DType::E4M3, 128, 128);
  Scheme row128 = Scheme::fp8Block(DType::E4M3, 1, 128, /*pow2=*/true);
  Scheme current = Scheme::fp8Current(DType::E4M3);
  Scheme sr = Scheme::nvfp4(false, /*sr=*/true);
  for (int ranks : {2, 8}) {
    add("hybrid_mxfp8_nvfp4", mx, fp4, 256, 384, ranks, seed++);
    add("hybrid_block128x128_mxfp8", tile, mx, 256, 384, ranks, seed++);
    add("hybrid_nvfp4_block1x128", fp4, row128, 256, 384, ranks, seed++);
    add("hybrid_current_nvfp4_sr", current, sr, 256, 384, ranks, seed++);
    // Two delayed quantizers: each direction records into its own state.
    add("hybrid_delayed_two_states", Scheme::fp8Delayed(DType::E4M3, 16),
        Scheme::fp8Delayed(DType::E5M2, 4), 256, 384, ranks, seed++);
  }
  add("mxfp8_rowwise_only", mx, std::nullopt, 256, 384, 3, seed++);
  add("nvfp4_columnwise_only", std::nullopt, fp4, 256, 384, 3, seed++);
  add("mxfp8_bf16", mx, mx, 256, 384, 8, seed++, DType::BF16);
  add("nvfp4_2d_bf16", Scheme::nvfp4(false, false, true),
      Scheme::nvfp4(false, false, true), 256, 384, 3, seed++, DType::BF16);
  add("nvfp4_sr_bf16", sr, sr, 256, 384, 8, seed++, DType::BF16);
  // Tiny shards: several boundaries in one tile row, one element alone,
  // shards shorter than a block.
  Case tiny{"tiny_shards_mxfp8_nvfp4", mx, fp4, 256, 384, {}};
  tiny.sizes = {5, 1, 130, 17, 384 * 3 + 7};
  tiny.sizes.push_back(256 * 384 - (5 + 1 + 130 + 17 + 384 * 3 + 7));
  out.push_back(tiny);
  Case tinyBlock = tiny;
  tinyBlock.label = "tiny_shards_block128x128_current";
  tinyBlock.rowwise = tile;
  tinyBlock.columnwise = current;
  out.push_back(tinyBlock);
  // Offsets that are whole tile rows: no tile is shared.
  Case aligned{"tile_row_aligned_nvfp4", fp4, fp4, 256, 384,
               {128 * 384, 128 * 384}};
  out.push_back(aligned);
  return out;
}

/// The same value quantized from one tensor: the definition, on the CPU.
rt::Expected<test::Results> wholeQuantized(const Case &c,
                                           const std::vector<float> &x) {
  Case whole = c;
  whole.sizes = {c.m * c.k};
  cg::Program one;
  cg::Entry e = shardedProgram(whole).entries[0];
  e.values[0].shape = {c.m, c.k};
  cg::QuantizeKernel q;
  q.name = "te_quantize_0";
  q.input = 0;
  q.stages = std::get<cg::ShardedQuantizeKernel>(e.kernels[0]).stages;
  e.kernels = {q};
  one.entries.push_back(e);
  return exec::runCpu(one, one.entries[0], shardArgs(whole, x));
}

class ShardedQuantize : public ::testing::TestWithParam<Case> {};

TEST_P(ShardedQuantize, CpuIsTheWholeMasterQuantized) {
  const Case &c = GetParam();
  cg::Program sharded = shardedProgram(c);
  ASSERT_EQ(cg::validate(sharded.entries[0]), "");
  std::vector<float> x = master(c, 11, false);
  auto got = exec::runCpu(sharded, sharded.entries[0], shardArgs(c, x));
  ASSERT_TRUE(got) << got.status().toString();
  auto want = wholeQuantized(c, x);
  ASSERT_TRUE(want) << want.status().toString();
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < (*want)[0].size(); ++i)
    EXPECT_TRUE((*got)[0][i].bytes == (*want)[0][i].bytes)
        << (*want)[0][i].name;
}

/// `p`'s kernels compile with NVRTC (skipped where NVRTC is missing): one
/// source, and the delayed-scaling update where a state records.
void expectCompiles(const cg::Program &p) {
  rt::KernelCache cache("");
  rt::Expected<size_t> n = exec::compileEntry(p, p.entries[0], cache);
  if (!n && n.status().code() == rt::StatusCode::LibraryMissing)
    GTEST_SKIP() << n.status().toString();
  ASSERT_TRUE(n) << n.status().toString();
  bool delayed = !cg::scalingStates(p.entries[0]).empty();
  EXPECT_EQ(*n, delayed ? 2u : 1u);
}

TEST_P(ShardedQuantize, CompilesWithNvrtc) {
  expectCompiles(shardedProgram(GetParam()));
}

/// What ptxas made of the sharded kernels: no BSYNC that releases lanes
/// waiting on its barrier early (SassHazards.h; the cause of wrong codes
/// and illegal addresses here once). Runs where nvdisasm is found.
TEST_P(ShardedQuantize, KernelsHaveNoReconvergenceHazard) {
  test::expectNoReconvergenceHazards(shardedProgram(GetParam()));
}

TEST_P(ShardedQuantize, GpuMatchesTheCpuBitForBit) {
  const Case &c = GetParam();
  auto gpu = test::GpuStream::open();
  if (!gpu.stream)
    GTEST_SKIP() << gpu.why;
  rt::KernelCache cache;
  for (bool specials : {false, true}) {
    std::vector<float> x = master(c, 12, specials);
    exec::Comparison cmp = test::gpuVersusCpu(
        shardedProgram(c), shardArgs(c, x), *gpu.device, *gpu.stream, cache);
    EXPECT_EQ(cmp.difference, "") << (specials ? "with Inf and NaN" : "");
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, ShardedQuantize, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           return info.param.label;
                         });

//===----------------------------------------------------------------------===//
// One process per rank (rank_offsets)
//===----------------------------------------------------------------------===//

/// The per-process form of `c`: one argument, this rank's shard in a
/// buffer of the largest shard's size, every rank's offsets.
cg::Program rankProgram(const Case &c) {
  Case one = c;
  one.sizes = {*std::max_element(c.sizes.begin(), c.sizes.end())};
  cg::Program p = shardedProgram(one); // value 0: the rank's shard
  auto &q = std::get<cg::ShardedQuantizeKernel>(p.entries[0].kernels[0]);
  q.rankOffsets = {0};
  for (int64_t s : c.sizes)
    q.rankOffsets.push_back(q.rankOffsets.back() + s);
  return p;
}

/// Rank r's argument: its shard, then up to the capacity values that must
/// not be read (huge, so a scale taking them in would show).
std::vector<uint8_t> rankArg(const Case &c, const std::vector<float> &x,
                             int r) {
  std::vector<uint8_t> shard = shardArgs(c, x)[size_t(r)];
  int64_t capacity = *std::max_element(c.sizes.begin(), c.sizes.end());
  size_t element = rt::dtypeSize(c.dtype);
  std::vector<float> junk(size_t(capacity - c.sizes[size_t(r)]), 3.0e38f);
  std::vector<uint8_t> tail = c.dtype == DType::BF16
                                  ? test::bf16Bytes(junk)
                                  : std::vector<uint8_t>(junk.size() * element);
  if (c.dtype != DType::BF16)
    std::memcpy(tail.data(), junk.data(), tail.size());
  shard.insert(shard.end(), tail.begin(), tail.end());
  return shard;
}

std::vector<Case> rankCases() {
  std::vector<Case> out;
  Scheme mx = Scheme::mxfp8(DType::E4M3), fp4 = Scheme::nvfp4();
  Scheme tile = Scheme::fp8Block(DType::E4M3, 128, 128);
  Scheme row128 = Scheme::fp8Block(DType::E4M3, 1, 128, /*pow2=*/true);
  Scheme current = Scheme::fp8Current(DType::E4M3);
  Scheme sr = Scheme::nvfp4(false, /*sr=*/true);
  auto add = [&](std::string label, std::optional<Scheme> row,
                 std::optional<Scheme> col, std::vector<int64_t> sizes,
                 DType dtype = DType::F32) {
    out.push_back(Case{std::move(label), row, col, 256, 384, sizes, dtype});
  };
  // Offsets mid-row and mid-block (odd: FP4 bytes split between ranks).
  std::vector<int64_t> two = {40001, 256 * 384 - 40001};
  std::vector<int64_t> three = {128 * 384 + 77, 1001,
                                256 * 384 - 128 * 384 - 77 - 1001};
  add("mxfp8_both", mx, mx, two);
  add("nvfp4_both", fp4, fp4, two);
  add("block128x128_block1x128", tile, row128, two);
  add("current_nvfp4_sr", current, sr, two);
  add("hybrid_mxfp8_nvfp4_bf16", mx, fp4, two, DType::BF16);
  add("delayed_two_states", Scheme::fp8Delayed(DType::E4M3, 16),
      Scheme::fp8Delayed(DType::E5M2, 4), two);
  add("nvfp4_2d_3ranks", Scheme::nvfp4(false, false, true),
      Scheme::nvfp4(false, false, true), three);
  add("block128x128_current_3ranks", tile, current, three);
  return out;
}

class ShardedQuantizePerProcess : public ::testing::TestWithParam<Case> {};

TEST_P(ShardedQuantizePerProcess, CpuRanksHoldTheWholeQuantization) {
  const Case &c = GetParam();
  cg::Program p = rankProgram(c);
  ASSERT_EQ(cg::validate(p.entries[0]), "");
  std::vector<float> x = master(c, 21, false);
  auto want = wholeQuantized(c, x);
  ASSERT_TRUE(want) << want.status().toString();
  int ranks = int(c.sizes.size());
  auto got = test::onRanks(ranks, [&](int r, rt::HostCollective &host) {
    return test::onCpu(p, {rankArg(c, x, r)}, &host);
  });
  for (int r = 0; r < ranks; ++r)
    test::expectSameResults(*want, got[size_t(r)], "rank " + std::to_string(r));
}

TEST_P(ShardedQuantizePerProcess, CompilesWithNvrtc) {
  expectCompiles(rankProgram(GetParam()));
}

TEST_P(ShardedQuantizePerProcess, GpuRanksHoldTheWholeQuantization) {
  const Case &c = GetParam();
  int ranks = int(c.sizes.size());
  if (std::string why = test::gpuRanksMissing(ranks); !why.empty())
    GTEST_SKIP() << why;
  cg::Program p = rankProgram(c);
  for (bool specials : {false, true}) {
    std::vector<float> x = master(c, 22, specials);
    auto want = wholeQuantized(c, x);
    ASSERT_TRUE(want) << want.status().toString();
    auto got = test::onRanks(ranks, [&](int r, rt::HostCollective &host) {
      return test::onGpu(p, {rankArg(c, x, r)}, r, &host);
    });
    // Bit for bit, any NaN code standing for any other (the H100's E5M2
    // NaN is not the reference's, docs/Numerics.md §1.6).
    for (int r = 0; r < ranks; ++r)
      EXPECT_EQ(exec::firstDifference(*want, got[size_t(r)], "cpu", "cuda"), "")
          << "rank " << r << (specials ? " with Inf and NaN" : "");
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, ShardedQuantizePerProcess,
                         ::testing::ValuesIn(rankCases()),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           return info.param.label;
                         });

TEST(ShardedQuantizePerProcessPlan, ReducesTheTableThenMergesTheOutputs) {
  Case c = rankCases()[3]; // current scaling rowwise, NVFP4 columnwise
  cg::Program p = rankProgram(c);
  rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(p, p.entries[0]);
  ASSERT_TRUE(plan) << plan.status().toString();
  const rt::Plan &kp = plan->kernels.front().plan;
  ASSERT_EQ(kp.validate(), "");
  using Kind = rt::CollectiveCall::Kind;
  // Launches and collectives in step order.
  std::vector<std::string> order;
  for (const rt::Step &s : kp.steps)
    if (s.kind == rt::Step::Kind::Launch)
      order.push_back(kp.kernels[s.index].entry);
    else if (s.kind == rt::Step::Kind::Collective)
      order.push_back(kp.collectives[s.index].kind == Kind::AllReduceMax ? "max"
                      : kp.collectives[s.index].kind == Kind::AllReduceBytesSum
                          ? "sum8"
                          : "max8");
  ASSERT_GE(order.size(), 6u);
  EXPECT_EQ(std::vector<std::string>(order.begin(), order.begin() + 4),
            (std::vector<std::string>{"te_quantize_shards_0_amax",
                                      "te_quantize_shards_0_tile_amax", "max",
                                      "te_quantize_shards_0"}));
  // Then the merge: each direction's codes summed, its scales' bytes and
  // its amax maximised.
  EXPECT_EQ(std::count(order.begin() + 4, order.end(), "sum8"), 2);
  EXPECT_EQ(std::count(order.begin() + 4, order.end(), "max8"), 2);
  EXPECT_EQ(size_t(std::count(order.begin() + 4, order.end(), "max")),
            order.size() - 8);
  // No launch overlaps a collective.
  for (const rt::KernelSpec &ks : kp.kernels)
    EXPECT_FALSE(ks.overlapsPredecessor) << ks.entry;
  for (const rt::CollectiveCall &call : kp.collectives)
    EXPECT_EQ(call.ranks, 2);
  // One grid row per launch, run as the communicator's rank.
  for (const rt::KernelSpec &ks : kp.kernels) {
    EXPECT_EQ(ks.grid.y, 1u) << ks.entry;
    EXPECT_EQ(ks.args[1].kind, rt::ArgDesc::Kind::Rank) << ks.entry;
  }
  // The plan survives serialisation with its new kinds.
  auto back = rt::Plan::deserialize(kp.serialize());
  ASSERT_TRUE(back) << back.status().toString();
  EXPECT_EQ(back->kernels[0].args, kp.kernels[0].args);
  EXPECT_TRUE(back->collectives == kp.collectives);
}

TEST(ShardedQuantizePerProcess, CpuWithoutRanksSaysHowToRun) {
  Case c = rankCases()[0];
  std::vector<float> x = master(c, 23, false);
  auto got = test::onCpu(rankProgram(c), {rankArg(c, x, 0)}, nullptr);
  ASSERT_FALSE(got);
  EXPECT_NE(got.status().message().find(
                "works on master shards of 2 ranks, but this run has no "
                "ranks (te-run --ranks 2)"),
            std::string::npos)
      << got.status().toString();
}

TEST(ShardedQuantizePerProcessRules, OffsetsMustPlaceEveryRank) {
  Case c = rankCases()[0];
  auto why = [&](std::vector<int64_t> offsets, int64_t capacity) {
    cg::Program p = rankProgram(c);
    p.entries[0].values[0].shape = {capacity};
    std::get<cg::ShardedQuantizeKernel>(p.entries[0].kernels[0]).rankOffsets =
        std::move(offsets);
    return cg::validate(p.entries[0]);
  };
  int64_t n = 256 * 384;
  EXPECT_EQ(why({0, 40001, n}, n - 40001), "");
  EXPECT_NE(why({0, n}, n).find("at least two ranks"), std::string::npos);
  EXPECT_NE(why({1, 40001, n}, n).find("first offset must be 0"),
            std::string::npos);
  EXPECT_NE(why({0, 40001, n - 1}, n).find("last offset"), std::string::npos);
  EXPECT_NE(why({0, 40001, 40001, n}, n).find("rank 1's shard is empty"),
            std::string::npos);
  EXPECT_NE(why({0, 40001, n}, 40001)
                .find("rank 1 holds 58303 elements, "
                      "more than the shard's 40001"),
            std::string::npos);
}

TEST(ShardedQuantizePlan, TheTilesOverlapOnlyTheTileAmaxes) {
  // The whole tiles do not wait for a predecessor, so the tile kernel may
  // overlap the tile amaxes (whose table only its partial tiles read, after
  // a wait) but never the tensor amax.
  auto launches = [](const Case &c) {
    cg::Program p = shardedProgram(c);
    rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(p, p.entries[0]);
    EXPECT_TRUE(plan) << plan.status().toString();
    std::vector<std::pair<std::string, bool>> out;
    const rt::Plan &kp = plan->kernels.front().plan;
    for (const rt::Step &s : kp.steps)
      if (s.kind == rt::Step::Kind::Launch)
        out.emplace_back(kp.kernels[s.index].entry,
                         kp.kernels[s.index].overlapsPredecessor);
    return out;
  };
  using L = std::vector<std::pair<std::string, bool>>;
  Scheme current = Scheme::fp8Current(DType::E4M3);
  Case split{"current", current, std::nullopt, 256, 384, {50001, 48303}};
  EXPECT_EQ(launches(split), (L{{"te_quantize_shards_0_amax", false},
                                {"te_quantize_shards_0_tile_amax", false},
                                {"te_quantize_shards_0", true}}));
  Case aligned = split;
  aligned.sizes = {128 * 384, 128 * 384}; // no tile is shared
  EXPECT_EQ(launches(aligned), (L{{"te_quantize_shards_0_amax", false},
                                  {"te_quantize_shards_0", false}}));
}

TEST(ShardedQuantizePlan, CountsTheRowsTheTileAmaxesRead) {
  // Against one shard, two add what the tile amaxes read round the one
  // offset inside a tile row - the rows of the tallest block whose amaxes
  // are exchanged (MXFP8 columnwise: 32; per-tensor: none but the offset's
  // own) - and the table's fill (a slot per tile of the split tile row).
  auto bytes = [](const Case &c) {
    cg::Program p = shardedProgram(c);
    rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(p, p.entries[0]);
    EXPECT_TRUE(plan) << plan.status().toString();
    return plan ? plan->kernels.front().bytesMoved : 0;
  };
  const uint64_t k = 384, slots = 3 * (4 + 2 * 128 * 128 / 16);
  auto added = [&](std::optional<Scheme> row, std::optional<Scheme> col) {
    Case two{"two", row, col, 256, 384, {50001, 48303}};
    Case one{"one", row, col, 256, 384, {256 * 384}};
    return bytes(two) - bytes(one);
  };
  Scheme mx = Scheme::mxfp8(DType::E4M3);
  EXPECT_EQ(added(mx, mx), 32 * k * 4 + slots * 4);
  EXPECT_EQ(added(Scheme::fp8Current(DType::E4M3), std::nullopt),
            1 * k * 4 + slots * 4);
  Scheme row128 = Scheme::fp8Block(DType::E4M3, 1, 128);
  EXPECT_EQ(added(row128, row128), 128 * k * 4 + slots * 4);
}

TEST(ShardedQuantizeGeometry, SplitTileRowsAndTheLaunches) {
  // 300 x 256: tile rows of 128 * 256 elements. Offsets: mid tile row 0,
  // again mid tile row 0, exactly tile row 1's start, mid tile row 2.
  cg::ShardGeometry g =
      cg::shardGeometry({1000, 2000, 128 * 256 - 3000, 128 * 256 + 5,
                         300 * 256 - 2 * 128 * 256 - 5},
                        256);
  EXPECT_EQ(g.lo, (std::vector<int64_t>{0, 1000, 3000, 128 * 256,
                                        2 * 128 * 256 + 5, 300 * 256}));
  EXPECT_EQ(g.boundaryRows, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(g.tilesAcross, 2);
  // The fourth rank's elements run from tile row 1 into tile row 2.
  EXPECT_EQ(g.rankTiles, 4);
  // Phase B's grid: the ranks' tile rows one after another (the second
  // and third ranks' both in tile row 0).
  EXPECT_EQ(g.tileRowStart, (std::vector<int64_t>{0, 1, 2, 3, 5, 6}));
  EXPECT_EQ(g.tableFloats(), 4 + 2 * 2 * (4 + 2 * 1024));
}

TEST(ShardedQuantizeRules, RefusedSchemesAndSizes) {
  Case c{"refused", Scheme::fp8Delayed(DType::E4M3, 16), std::nullopt};
  c.sizes = {1000, 256 * 384 - 1000};
  cg::Program stateless = shardedProgram(c);
  std::get<cg::ShardedQuantizeKernel>(stateless.entries[0].kernels[0])
      .stages[0]
      .state.clear();
  EXPECT_NE(cg::validate(stateless.entries[0])
                .find("an fp8_delayed stage needs a delayed-scaling state"),
            std::string::npos);
  c.rowwise.reset();
  c.columnwise = Scheme::nvfp4(/*rht=*/true);
  EXPECT_NE(cg::validate(shardedProgram(c).entries[0]).find("Hadamard"),
            std::string::npos);
  c.columnwise = Scheme::mxfp8(DType::E4M3);
  cg::Program p = shardedProgram(c);
  p.entries[0].values.back().columnwiseSource = Scheme::mxfp8(DType::E4M3);
  EXPECT_NE(cg::validate(p.entries[0]).find("double-quantized"),
            std::string::npos);
  c.sizes = {1000, 256 * 384 - 999};
  EXPECT_NE(cg::validate(shardedProgram(c).entries[0]).find("more than"),
            std::string::npos);
  c.sizes = {1000, 0, 256 * 384 - 1000};
  EXPECT_NE(cg::validate(shardedProgram(c).entries[0]).find("shard 1 is empty"),
            std::string::npos);
  c.sizes = {1000, 256 * 384 - 1001};
  EXPECT_NE(cg::validate(shardedProgram(c).entries[0]).find("hold 98303 of"),
            std::string::npos);
  // More shards than one kernel's parameter space holds.
  c.sizes.assign(cg::ShardedQuantizeKernel::kMaxShards + 1, 1);
  c.sizes.back() = 256 * 384 - int64_t(cg::ShardedQuantizeKernel::kMaxShards);
  EXPECT_NE(cg::validate(shardedProgram(c).entries[0])
                .find("1000 shards; one kernel takes at most 999"),
            std::string::npos);
  // The most it takes fit the parameter space.
  static_assert(4 * cg::ShardedQuantizeKernel::kMaxShards + 3 <=
                    rt::kMaxTableWords,
                "MasterShards<kMaxShards> must fit one Table argument");
}

} // namespace
} // namespace te
