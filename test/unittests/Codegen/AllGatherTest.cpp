//===- AllGatherTest.cpp - row shards gathered into the whole tensor ------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// docs/Numerics.md §16: R ranks each quantize their row shard (the tensor
// amax reduced over the ranks) and all-gather it; the result must be the
// quantization of the whole tensor, bit for bit, in every gathered buffer.
// The ranks are threads of this process: on the CPU backend they meet in a
// directory (rt::FileCollective); on GPUs (two or more) through NCCL.
//
//===----------------------------------------------------------------------===//

#include "ProgramHelpers.h"
#include "RankRuns.h"
#include "SchemeCases.h"

#include "te/exec/CpuBackend.h"
#include "te/exec/CudaRunner.h"
#include "te/formats/Sharding.h"
#include "te/runtime/Collective.h"
#include "te/runtime/reference/Gather.h"

#include <gtest/gtest.h>

#include <functional>

namespace te {
namespace {

using test::Args;
using test::expectSameResults;
using test::expectWhole;
using test::gpuRanksMissing;
using test::onCpu;
using test::onGpu;
using test::onGpuCalls;
using test::onRanks;
using test::Results;

using rt::Direction;
using rt::Scheme;

/// One direction pair of a (possibly hybrid) recipe and what is gathered.
struct Case {
  std::string label;
  std::optional<Scheme> rowwise, columnwise; ///< what the shard holds
  bool gatherRowwise = true, gatherColumnwise = true;
  int64_t rows = 128, cols = 192; ///< of one shard
  int ranks = 2;
  /// Send a derivable columnwise copy instead of deriving it.
  bool sendColumnwise = false;
};

cg::Value quantized(std::string name, std::vector<int64_t> shape,
                    const std::optional<Scheme> &row,
                    const std::optional<Scheme> &col) {
  cg::Value v =
      test::tensor(std::move(name), std::move(shape), rt::DType::BF16);
  v.kind = cg::Value::Kind::Quantized;
  v.rowwise = row;
  v.columnwise = col;
  return v;
}

std::vector<cg::Stage> stagesOf(const cg::Value &v, int value) {
  std::vector<cg::Stage> out;
  if (v.rowwise)
    out.push_back(test::stageOf(v, value, Direction::Rowwise));
  if (v.columnwise)
    out.push_back(test::stageOf(v, value, Direction::Columnwise));
  return out;
}

/// The whole tensor in the directions gathered.
cg::Value wholeValue(const Case &c) {
  return quantized("whole", {c.rows * c.ranks, c.cols},
                   c.gatherRowwise ? c.rowwise : std::nullopt,
                   c.gatherColumnwise ? c.columnwise : std::nullopt);
}

/// x shard [rows, cols] -> quantize (amax over the ranks) -> all-gather;
/// the shard holds the directions the gather reads (a derivable columnwise
/// copy is not quantized).
cg::Program shardProgram(const Case &c) {
  cg::Entry e;
  e.name = "gather";
  e.values.push_back(test::tensor("x", {c.rows, c.cols}, rt::DType::BF16));
  unsigned whole = (c.gatherRowwise && c.rowwise ? 1u : 0u) |
                   (c.gatherColumnwise && c.columnwise ? 2u : 0u);
  unsigned read = rt::shardDirectionsRead(
      c.rowwise ? &*c.rowwise : nullptr,
      c.columnwise ? &*c.columnwise : nullptr, whole, c.sendColumnwise);
  e.values.push_back(quantized("shard", {c.rows, c.cols},
                               read & 1u ? c.rowwise : std::nullopt,
                               read & 2u ? c.columnwise : std::nullopt));
  e.values.push_back(wholeValue(c));
  e.args = {0};
  e.results = {2};
  e.kernels.push_back(cg::QuantizeKernel{
      "te_quantize_0", 0, stagesOf(e.values[1], 1), -1, c.ranks});
  e.kernels.push_back(
      cg::AllGatherKernel{"te_all_gather_1", 1, 2, c.ranks, c.sendColumnwise});
  cg::Program p;
  p.entries.push_back(std::move(e));
  return p;
}

/// The whole tensor quantized at once, in the gathered directions.
cg::Program wholeProgram(const Case &c) {
  cg::Entry e;
  e.name = "whole";
  e.values.push_back(
      test::tensor("x", {c.rows * c.ranks, c.cols}, rt::DType::BF16));
  e.values.push_back(wholeValue(c));
  e.args = {0};
  e.results = {1};
  e.kernels.push_back(
      cg::QuantizeKernel{"te_quantize_0", 0, stagesOf(e.values[1], 1)});
  cg::Program p;
  p.entries.push_back(std::move(e));
  return p;
}

/// Every case the sharding rules accept: each scheme in both directions,
/// forward-only and backward-only gathers, hybrids, and shards whose scale
/// buffers are padded (32 rows of MXFP8 / NVFP4, 3 ranks).
std::vector<Case> cases() {
  std::vector<Case> out;
  for (const Scheme &s : test::allSchemes()) {
    if (!rt::validateRowShard(s, Direction::Rowwise, 128).empty() ||
        !rt::validateRowShard(s, Direction::Columnwise, 128).empty())
      continue;
    std::string name = test::schemeLabel(s);
    out.push_back({name + "_both", s, s});
    out.push_back({name + "_forward", s, s, true, false});
    out.push_back({name + "_backward", s, s, false, true, 128, 192, 3});
    if (rt::validateRowShard(s, Direction::Columnwise, 32).empty())
      out.push_back({name + "_32_rows_3_ranks", s, s, true, true, 32, 192, 3});
    if (rt::columnwiseDerivesFromRowwise(s)) {
      out.push_back({name + "_both_sent", s, s, true, true, 128, 192, 2, true});
      // Rows of bytes that are no multiple of 4: the transpose's edges.
      out.push_back({name + "_odd_cols", s, s, true, true, 128, 130, 3});
    }
  }
  Scheme mx = Scheme::mxfp8(rt::DType::E4M3);
  Scheme fp4 = Scheme::nvfp4(/*rht=*/true);
  Scheme block = Scheme::fp8Block(rt::DType::E4M3, 1, 128);
  out.push_back({"hybrid_mxfp8_nvfp4", mx, fp4});
  out.push_back({"hybrid_block_mxfp8", block, mx, true, true, 128, 256, 3});
  out.push_back({"hybrid_current_block2d", Scheme::fp8Current(rt::DType::E4M3),
                 Scheme::fp8Block(rt::DType::E4M3, 128, 128)});
  return out;
}

std::vector<float> wholeInput(const Case &c) {
  std::vector<float> x = test::normals(size_t(c.rows * c.ranks * c.cols), 1234);
  // Each rank's rows at their own scale, so the tensor amax lies in one
  // shard and the others must learn it from the reduction.
  for (int64_t r = 0; r < c.rows * c.ranks; ++r)
    for (int64_t j = 0; j < c.cols; ++j)
      x[size_t(r * c.cols + j)] *= float(1 + r / c.rows * 3);
  return x;
}

std::vector<uint8_t> shardBytes(const Case &c, const std::vector<float> &x,
                                int rank) {
  auto first = x.begin() + rank * c.rows * c.cols;
  return test::bf16Bytes(std::vector<float>(first, first + c.rows * c.cols));
}

class AllGather : public ::testing::TestWithParam<Case> {};

TEST_P(AllGather, CpuShardsGatherIntoTheWholeQuantization) {
  const Case &c = GetParam();
  cg::Program shard = shardProgram(c), whole = wholeProgram(c);
  ASSERT_EQ(cg::validate(shard.entries[0]), "");
  std::vector<float> x = wholeInput(c);
  auto expected = onCpu(whole, {test::bf16Bytes(x)}, nullptr);
  ASSERT_TRUE(expected) << expected.status().toString();
  auto got = onRanks(c.ranks, [&](int r, rt::HostCollective &host) {
    return onCpu(shard, {shardBytes(c, x, r)}, &host);
  });
  for (int r = 0; r < c.ranks; ++r)
    expectSameResults(*expected, got[size_t(r)], "rank " + std::to_string(r));
}

TEST_P(AllGather, GpuShardsGatherIntoTheWholeQuantization) {
  const Case &c = GetParam();
  if (std::string why = gpuRanksMissing(c.ranks); !why.empty())
    GTEST_SKIP() << why;
  cg::Program shard = shardProgram(c), whole = wholeProgram(c);
  std::vector<float> x = wholeInput(c);
  auto expected = onCpu(whole, {test::bf16Bytes(x)}, nullptr);
  ASSERT_TRUE(expected) << expected.status().toString();
  auto got = onRanks(c.ranks, [&](int r, rt::HostCollective &host) {
    return onGpu(shard, {shardBytes(c, x, r)}, r, &host);
  });
  for (int r = 0; r < c.ranks; ++r)
    expectSameResults(*expected, got[size_t(r)], "rank " + std::to_string(r));
}

INSTANTIATE_TEST_SUITE_P(Schemes, AllGather, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           return info.param.label;
                         });

/// A block-FP8 linear step whose weight is sharded over `ranks` ranks
/// (gathered: 128x128 rowwise, the columnwise copy derived) or whole
/// (ranks == 1): y = x w^T and dx = dy w, x and dy quantized 1x128.
cg::Program linearStep(int64_t b, int64_t n, int64_t k, int ranks) {
  Scheme act = Scheme::fp8Block(rt::DType::E4M3, 1, 128);
  Scheme tiles = Scheme::fp8Block(rt::DType::E4M3, 128, 128);
  cg::Entry e;
  e.name = "step";
  e.values = {test::tensor("x", {b, k}, rt::DType::BF16),
              test::tensor("dy", {b, n}, rt::DType::BF16),
              test::tensor("w", {n / ranks, k}, rt::DType::BF16),
              quantized("xq", {b, k}, act, std::nullopt),
              quantized("dyq", {b, n}, act, std::nullopt),
              quantized("wq", {n / ranks, k}, tiles,
                        ranks > 1 ? std::nullopt : std::optional(tiles))};
  e.args = {0, 1, 2};
  e.kernels.push_back(cg::QuantizeKernel{
      "te_quantize_0", 0, {{act, Direction::Rowwise, 3}}, -1, 1});
  e.kernels.push_back(cg::QuantizeKernel{
      "te_quantize_1", 1, {{act, Direction::Rowwise, 4}}, -1, 1});
  e.kernels.push_back(cg::QuantizeKernel{
      "te_quantize_2", 2, {{tiles, Direction::Rowwise, 5}}, -1, ranks});
  if (ranks == 1)
    std::get<cg::QuantizeKernel>(e.kernels.back())
        .stages.push_back({tiles, Direction::Columnwise, 5});
  int w = 5;
  if (ranks > 1) {
    e.values.push_back(quantized("w_all", {n, k}, tiles, tiles));
    w = 6;
    e.kernels.push_back(cg::AllGatherKernel{"te_all_gather_3", 5, w, ranks});
  }
  e.values.push_back(test::tensor("y", {b, n}, rt::DType::BF16));
  e.values.push_back(test::tensor("dx", {b, k}, rt::DType::BF16));
  int y = int(e.values.size()) - 2, dx = y + 1;
  cg::GemmKernel fprop;
  fprop.name = "te_gemm_4";
  fprop.a = 3;
  fprop.b = w;
  fprop.transposeB = true; // w [N, K] read rowwise
  fprop.output = y;
  cg::GemmKernel dgrad;
  dgrad.name = "te_gemm_5";
  dgrad.a = 4;
  dgrad.b = w; // w [N, K] read columnwise: contracts over N
  dgrad.output = dx;
  e.kernels.push_back(fprop);
  e.kernels.push_back(dgrad);
  e.results = {y, dx};
  cg::Program p;
  p.entries.push_back(std::move(e));
  return p;
}

struct StepData {
  int64_t b = 256, n = 512, k = 384;
  std::vector<float> x = test::normals(size_t(b * k), 11),
                     dy = test::normals(size_t(b * n), 12),
                     w = test::normals(size_t(n * k), 13);
  std::vector<std::vector<uint8_t>> args(int rank, int ranks) const {
    int64_t rows = n / ranks;
    std::vector<float> mine(w.begin() + rank * rows * k,
                            w.begin() + (rank + 1) * rows * k);
    return {test::bf16Bytes(x), test::bf16Bytes(dy), test::bf16Bytes(mine)};
  }
};

TEST(ShardedLinearStep, CpuMatchesTheWholeWeightStepBitForBit) {
  StepData d;
  cg::Program whole = linearStep(d.b, d.n, d.k, 1),
              sharded = linearStep(d.b, d.n, d.k, 2);
  ASSERT_EQ(cg::validate(sharded.entries[0]), "");
  auto want = onCpu(whole, d.args(0, 1), nullptr);
  ASSERT_TRUE(want) << want.status().toString();
  auto got = onRanks(2, [&](int r, rt::HostCollective &host) {
    return onCpu(sharded, d.args(r, 2), &host);
  });
  for (int r = 0; r < 2; ++r)
    expectSameResults(*want, got[size_t(r)], "rank " + std::to_string(r));
}

TEST(ShardedLinearStep, GpuMatchesTheWholeWeightStepBitForBit) {
  if (std::string why = gpuRanksMissing(2); !why.empty())
    GTEST_SKIP() << why;
  StepData d;
  cg::Program whole = linearStep(d.b, d.n, d.k, 1),
              sharded = linearStep(d.b, d.n, d.k, 2);
  // The single-GPU step on GPU 0, then the 2-rank step on GPUs 0 and 1.
  auto want = onGpu(whole, d.args(0, 1), 0, nullptr);
  ASSERT_TRUE(want) << want.status().toString();
  auto got = onRanks(2, [&](int r, rt::HostCollective &host) {
    return onGpu(sharded, d.args(r, 2), r, &host);
  });
  for (int r = 0; r < 2; ++r)
    expectSameResults(*want, got[size_t(r)], "rank " + std::to_string(r));
}

TEST(AllGatherGraph, ReplaysWithNewShardsOn2Gpus) {
  if (std::string why = gpuRanksMissing(2); !why.empty())
    GTEST_SKIP() << why;
  // NVFP4 rowwise (its amax all-reduce is captured too), MXFP8 columnwise.
  Case c{"hybrid", Scheme::nvfp4(), Scheme::mxfp8(rt::DType::E4M3)};
  cg::Program shard = shardProgram(c), whole = wholeProgram(c);
  std::vector<std::vector<float>> inputs = {wholeInput(c),
                                            test::normals(2 * 128 * 192, 99)};
  std::vector<Results> want;
  for (const std::vector<float> &x : inputs) {
    auto w = onCpu(whole, {test::bf16Bytes(x)}, nullptr);
    ASSERT_TRUE(w) << w.status().toString();
    want.push_back(std::move(*w));
  }
  std::vector<std::vector<Results>> got(2);
  onRanks(2, [&](int r, rt::HostCollective &host) -> rt::Expected<Results> {
    std::vector<Args> calls;
    for (const std::vector<float> &x : inputs)
      calls.push_back({shardBytes(c, x, r)});
    auto out = onGpuCalls(shard, calls, r, &host, /*captured=*/true);
    if (!out)
      return out.status();
    got[size_t(r)] = std::move(*out);
    return Results{};
  });
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(got[size_t(r)].size(), inputs.size());
    for (size_t call = 0; call < inputs.size(); ++call)
      expectSameResults(want[call], got[size_t(r)][call],
                        "rank " + std::to_string(r) + " replay " +
                            std::to_string(call));
  }
}

TEST(AllGatherTensor, BF16ShardsOnTheCpu) {
  cg::Entry e;
  e.name = "gather";
  e.values.push_back(test::tensor("x", {3, 5}, rt::DType::BF16));
  e.values.push_back(test::tensor("all", {9, 5}, rt::DType::BF16));
  e.args = {0};
  e.results = {1};
  e.kernels.push_back(cg::AllGatherKernel{"te_all_gather_0", 0, 1, 3});
  cg::Program p;
  p.entries.push_back(e);
  std::vector<float> x = test::normals(45, 7);
  auto got = onRanks(3, [&](int r, rt::HostCollective &host) {
    std::vector<float> mine(x.begin() + r * 15, x.begin() + (r + 1) * 15);
    return onCpu(p, {test::bf16Bytes(mine)}, &host);
  });
  for (const Results &v : got) {
    ASSERT_EQ(v.size(), 1u);
    ASSERT_EQ(v[0].size(), 1u);
    EXPECT_EQ(v[0][0].bytes, test::bf16Bytes(x));
  }
}

TEST(AllGatherTensor, WithoutRanksTheCpuBackendSaysHowToRun) {
  Case c{"mxfp8", Scheme::mxfp8(rt::DType::E4M3), std::nullopt};
  cg::Program p = shardProgram(c);
  auto out = exec::runCpu(p, p.entries[0], {shardBytes(c, wholeInput(c), 0)});
  ASSERT_FALSE(out);
  EXPECT_NE(out.status().message().find("te-run --ranks 2"), std::string::npos)
      << out.status().message();
}

TEST(AllGatherRules, ShardsMustHoldWholeScalingBlocks) {
  Scheme tiles = Scheme::fp8Block(rt::DType::E4M3, 128, 128);
  Case c{"block_2d", tiles, tiles};
  c.rows = 64; // a 128x128 tile would straddle two ranks
  std::string why = cg::validate(shardProgram(c).entries[0]);
  EXPECT_NE(why.find("span 128 rows: a shard of 64 rows"), std::string::npos)
      << why;
  EXPECT_NE(rt::validateRowShard(Scheme::nvfp4(false, /*sr=*/true),
                                 Direction::Rowwise, 128)
                .find("stochastic rounding"),
            std::string::npos);
}

TEST(AllGatherRules, ShardOfInvertsGatherShards) {
  Scheme s = Scheme::fp8Block(rt::DType::E4M3, 1, 128);
  int64_t m = 8, k = 256, ranks = 3;
  rt::DirectionStorage shard = rt::storageFor(s, Direction::Rowwise, m, k);
  rt::DirectionStorage all = rt::storageFor(s, Direction::Rowwise, m * 3, k);
  rt::GatherView v =
      rt::gatherView(rt::shardPiece(s, Direction::Rowwise, 1, m, k),
                     shard.scaleInv, all.scaleInv);
  EXPECT_FALSE(v.whole);
  EXPECT_EQ(v.validBytes, m * 4); // 1x128 scales run along M (transposed)
  std::vector<uint8_t> whole(size_t(all.scaleInv.bytes()));
  for (size_t i = 0; i < whole.size(); ++i)
    whole[i] = uint8_t(i * 7 + 1);
  // Padding columns of the whole buffer are zero after a gather.
  std::vector<uint8_t> staging;
  for (int r = 0; r < ranks; ++r) {
    std::vector<uint8_t> piece = rt::ref::shardOf(whole, r, v);
    staging.insert(staging.end(), piece.begin(), piece.end());
  }
  std::vector<uint8_t> back = rt::ref::gatherShards(staging, int(ranks), v);
  for (int64_t i = 0; i < v.rows; ++i)
    for (int64_t j = 0; j < v.wholeRowBytes; ++j) {
      uint8_t want =
          j < ranks * v.validBytes ? whole[size_t(i * v.wholeRowBytes + j)] : 0;
      ASSERT_EQ(back[size_t(i * v.wholeRowBytes + j)], want) << i << "," << j;
    }
}

} // namespace
} // namespace te
