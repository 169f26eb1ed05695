//===- AdamCodegenTest.cpp - Fused multi-tensor Adam kernels
//---------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Multi-tensor Adam / AdamW kernels with the requantization of every new
// parameter (each scheme, rowwise, columnwise and both), IEEE and fast-math
// arithmetic, bf16 and f32 gradients: every generated kernel compiles with
// NVRTC (no GPU needed), and on a GPU every output - new parameters,
// moments, quantized data, scales and amaxes - is bit-exact against the
// CPU backend (ref::adamStep + ref::quantize).
//
//===----------------------------------------------------------------------===//

#include "BackendComparison.h"
#include "SchemeCases.h"

#include "Support/TestSupport.h"
#include "te/codegen/PlanBuilder.h"
#include "te/runtime/reference/Codecs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace te;
using rt::Direction;
using rt::DType;
using rt::Scheme;
namespace ref = rt::ref;

namespace {

struct AdamCase {
  std::string name;
  std::optional<Scheme> row, col;
  DType grad = DType::BF16;
  cg::AdamHyper hyper;
};

void PrintTo(const AdamCase &c, std::ostream *os) { *os << c.name; }

std::vector<AdamCase> adamCases() {
  std::vector<AdamCase> cases;
  cg::AdamHyper adamw, l2, fast;
  adamw.weightDecay = 0.01f;
  l2.adamW = false;
  l2.weightDecay = 0.05f;
  fast.fastMath = true;
  fast.weightDecay = 0.01f;
  cases.push_back({"no_requantize_adamw_bf16", {}, {}, DType::BF16, adamw});
  cases.push_back({"no_requantize_l2_f32grad", {}, {}, DType::F32, l2});
  cases.push_back({"no_requantize_fastmath", {}, {}, DType::BF16, fast});
  for (const Scheme &s : test::allSchemes()) {
    // Delayed scaling's state is not the optimizer kernel's to update
    // (AdamPlan.RefusesDelayedScaling).
    if (s.kind == rt::SchemeKind::Fp8Delayed)
      continue;
    std::string l = test::schemeLabel(s);
    cases.push_back({l + "_row", s, {}, DType::BF16, adamw});
    cases.push_back({l + "_col", {}, s, DType::BF16, adamw});
    cases.push_back({l + "_both_fastmath_f32grad", s, s, DType::F32, fast});
  }
  // The MXFP8 direction is quantized in the update, the NVFP4 one after it
  // (with the amaxes the update produced).
  cases.push_back({"hybrid_mxfp8_nvfp4_l2", Scheme::mxfp8(DType::E4M3),
                   Scheme::nvfp4(), DType::BF16, l2});
  cases.push_back({"hybrid_mxfp8_nvfp4_rht_sr", Scheme::mxfp8(DType::E4M3),
                   Scheme::nvfp4(/*rht=*/true, /*stochastic=*/true),
                   DType::BF16, adamw});
  return cases;
}

/// Shapes of the three parameters one launch updates: whole and partial
/// tiles, one smaller than a tile.
const int64_t kShapes[3][2] = {{256, 384}, {96, 160}, {64, 32}};

/// One Adam kernel over three parameters; the entry's arguments are, in
/// order, lr, step, then (p, g, m, v) of each parameter; its results the
/// new (p, m, v) and the requantized parameter of each.
cg::Program adamProgram(const AdamCase &c) {
  cg::Program p;
  cg::Entry e;
  e.name = "step";
  auto add = [&](std::string name, std::vector<int64_t> shape, DType t,
                 bool arg) {
    cg::Value v;
    v.name = std::move(name);
    v.shape = std::move(shape);
    v.dtype = t;
    e.values.push_back(v);
    int i = int(e.values.size()) - 1;
    if (arg)
      e.args.push_back(i);
    return i;
  };
  cg::AdamKernel k;
  k.name = "adam_group";
  k.hyper = c.hyper;
  k.lr = add("lr", {}, DType::F32, true);
  k.step = add("step", {}, DType::I64, true);
  for (int t = 0; t < 3; ++t) {
    std::vector<int64_t> shape = {kShapes[t][0], kShapes[t][1]};
    std::string n = "w" + std::to_string(t);
    cg::AdamTensor at;
    at.param = add(n, shape, DType::F32, true);
    at.grad = add(n + ".grad", shape, c.grad, true);
    at.expAvg = add(n + ".m", shape, DType::F32, true);
    at.expAvgSq = add(n + ".v", shape, DType::F32, true);
    at.newParam = add(n + ".new", shape, DType::F32, false);
    at.newExpAvg = add(n + ".m.new", shape, DType::F32, false);
    at.newExpAvgSq = add(n + ".v.new", shape, DType::F32, false);
    for (int r : {at.newParam, at.newExpAvg, at.newExpAvgSq})
      e.results.push_back(r);
    if (c.row || c.col) {
      int qi = add(n + ".q", shape, DType::F32, false);
      cg::Value &q = e.values[size_t(qi)];
      q.kind = cg::Value::Kind::Quantized;
      q.rowwise = c.row;
      q.columnwise = c.col;
      at.quantized.push_back(qi);
      e.results.push_back(qi);
    }
    k.tensors.push_back(at);
  }
  if (c.row)
    k.stages.push_back({*c.row, Direction::Rowwise, 0});
  if (c.col)
    k.stages.push_back({*c.col, Direction::Columnwise, 0});
  e.kernels.push_back(k);
  p.entries.push_back(e);
  return p;
}

std::vector<uint8_t> f32Bytes(const std::vector<float> &v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

/// The arguments: lr 1e-3, step `step`; parameters ~ U(-2, 2) with a few
/// zeros and f32 subnormals, gradients over many binades (bf16 or f32),
/// moments as after some steps (v >= 0), a few exact zeros.
std::vector<std::vector<uint8_t>> adamArgs(const AdamCase &c, int64_t step,
                                           uint64_t seed) {
  test::SplitMix64 rng(seed);
  std::vector<std::vector<uint8_t>> args;
  args.push_back(f32Bytes({1e-3f}));
  std::vector<uint8_t> s(8);
  std::memcpy(s.data(), &step, 8);
  args.push_back(s);
  for (const auto &shape : kShapes) {
    size_t n = size_t(shape[0] * shape[1]);
    std::vector<float> p(n), g(n), m(n), v(n);
    for (size_t i = 0; i < n; ++i) {
      p[i] = rng.uniform(-2.0f, 2.0f);
      g[i] = std::ldexp(rng.uniform(-1.0f, 1.0f), int(rng.next32() % 30) - 20);
      m[i] = 0.1f * g[i];
      v[i] = g[i] * g[i] * rng.uniform(0.0f, 1.0f);
      if (i % 101 == 0)
        p[i] = 0.0f;
      if (i % 103 == 0)
        p[i] = 1e-40f; // subnormal: flushed in fast-math
      if (i % 107 == 0)
        g[i] = 0.0f, m[i] = 0.0f, v[i] = 0.0f;
    }
    args.push_back(f32Bytes(p));
    if (c.grad == DType::F32) {
      args.push_back(f32Bytes(g));
    } else {
      std::vector<uint8_t> gb(n * 2);
      for (size_t i = 0; i < n; ++i) {
        uint16_t h = ref::floatToBF16(g[i]);
        gb[2 * i] = uint8_t(h);
        gb[2 * i + 1] = uint8_t(h >> 8);
      }
      args.push_back(gb);
    }
    args.push_back(f32Bytes(m));
    args.push_back(f32Bytes(v));
  }
  return args;
}

class AdamCodegen : public ::testing::TestWithParam<AdamCase> {};

} // namespace

TEST_P(AdamCodegen, CompilesWithNvrtc) {
  cg::Program p = adamProgram(GetParam());
  rt::KernelCache cache("");
  rt::Expected<size_t> n = exec::compileEntry(p, p.entries[0], cache);
  if (!n && n.status().code() == rt::StatusCode::LibraryMissing)
    GTEST_SKIP() << n.status().toString();
  ASSERT_TRUE(n) << n.status().toString();
  EXPECT_EQ(*n, 1u);
}

TEST_P(AdamCodegen, BitExactAgainstReferenceOnGpu) {
  rt::Expected<rt::Device> dev = rt::Device::open();
  if (!dev)
    GTEST_SKIP() << dev.status().toString();
  rt::Expected<rt::Stream> stream = rt::Stream::create(*dev);
  ASSERT_TRUE(stream);
  static rt::KernelCache cache("");
  const AdamCase &c = GetParam();
  cg::Program p = adamProgram(c);
  for (int64_t step : {1, 7, 1000}) {
    exec::Comparison r = test::gpuVersusCpu(
        p, adamArgs(c, step, uint64_t(step)), *dev, *stream, cache);
    EXPECT_EQ(r.difference, "") << "step " << step;
    EXPECT_EQ(r.boundedBuffers + r.uncheckedBuffers, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(AllSchemes, AdamCodegen,
                         ::testing::ValuesIn(adamCases()),
                         [](const ::testing::TestParamInfo<AdamCase> &i) {
                           return i.param.name;
                         });

TEST(AdamPlan, RefusesDelayedScaling) {
  // te-fuse-optimizer leaves a delayed-scaling quantization on its own: the
  // state it records into is updated at the end of the entry.
  AdamCase c{
      "delayed", Scheme::fp8Delayed(DType::E4M3, 16), {}, DType::BF16, {}};
  cg::Program p = adamProgram(c);
  std::string why = cg::validate(p.entries[0]);
  EXPECT_NE(why.find("requantizes with fp8_delayed"), std::string::npos) << why;
  EXPECT_FALSE(cg::buildEntryPlan(p, p.entries[0]));
}

/// The launches of the plan of `c`'s only kernel.
static std::vector<rt::KernelSpec> adamLaunches(const AdamCase &c) {
  cg::Program p = adamProgram(c);
  rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(p, p.entries[0]);
  EXPECT_TRUE(plan) << plan.status().toString();
  if (!plan || plan->kernels.size() != 1)
    return {};
  return plan->kernels[0].plan.kernels;
}

TEST(AdamPlan, TensorAmaxSchemesRequantizeAfterTheUpdateThatProducesTheAmax) {
  AdamCase c{"current", Scheme::fp8Current(DType::E4M3), {}, DType::BF16, {}};
  std::vector<rt::KernelSpec> k = adamLaunches(c);
  // Three tensors in one table: the update (which keeps no tile and
  // max-accumulates |p'| into the stage's `in` word, table word 10 + 3),
  // then the requantize launch over the same tiles.
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[0].entry, "adam_group");
  EXPECT_EQ(k[1].entry, "adam_group_requantize");
  int64_t tiles = 2 * 3 + 1 * 2 + 1;
  for (const rt::KernelSpec &s : k) {
    EXPECT_EQ(s.grid.x, unsigned(tiles));
    EXPECT_EQ(s.args[0].kind, rt::ArgDesc::Kind::Table);
    EXPECT_EQ(s.args[1], rt::ArgDesc::i32(3));
  }
  EXPECT_NE(k[0].source.find("adamQuantizeTiles<Hyper, te::dev::SourceType::"
                             "BF16, 3, 14, 13, -1>"),
            std::string::npos)
      << k[0].source;
  EXPECT_EQ(k[0].sharedBytes, 0u);
  EXPECT_EQ(k[1].sharedBytes, 128u * 128u * 2u);
}

TEST(AdamPlan, StagesThatNeedNoTensorAmaxStayInTheUpdate) {
  AdamCase c{
      "hybrid", Scheme::mxfp8(DType::E4M3), Scheme::nvfp4(), DType::BF16, {}};
  std::vector<rt::KernelSpec> k = adamLaunches(c);
  ASSERT_EQ(k.size(), 2u);
  // The update quantizes MXFP8 from the tile it keeps; the NVFP4 stage
  // moves after it (second in the table, its `in` at word 10 + 4 + 3).
  EXPECT_NE(k[0].source.find("3, 18, 17, -1,\n      te::dev::Mxfp8Stage"),
            std::string::npos)
      << k[0].source;
  EXPECT_NE(k[1].source.find("adamRequantizeTiles<3, 18, 1,\n      "
                             "te::dev::Nvfp4Stage"),
            std::string::npos)
      << k[1].source;
  EXPECT_EQ(k[0].sharedBytes, 128u * 128u * 2u);
  // eps, seed and offset: one stage each.
  EXPECT_EQ(k[0].args.size(), 4u + 3u);
  EXPECT_EQ(k[1].args.size(), 2u + 3u);
}

TEST(AdamPlan, RhtWith16x16BlocksTakesTheTransformedAmaxFromTheUpdate) {
  AdamCase c{"rht2d",
             {},
             Scheme::nvfp4(/*rht=*/true, false, /*block2d=*/true),
             DType::BF16,
             {}};
  std::vector<rt::KernelSpec> k = adamLaunches(c);
  ASSERT_EQ(k.size(), 2u); // the update, the requantize launch
  // The update keeps the tile to transform its columns for the amax.
  EXPECT_NE(k[0].source.find("3, 14, -1, 13>"), std::string::npos)
      << k[0].source;
  EXPECT_EQ(k[0].sharedBytes, 128u * 128u * 2u);
  EXPECT_NE(k[1].source.find("Nvfp4RhtColumnStage<false, true>"),
            std::string::npos);
}

TEST(AdamGpu, CapturedStepReplaysWithNewLrAndStep) {
  rt::Expected<rt::Device> dev = rt::Device::open();
  if (!dev)
    GTEST_SKIP() << dev.status().toString();
  rt::Expected<rt::Stream> s = rt::Stream::create(*dev);
  ASSERT_TRUE(s);
  rt::KernelCache cache("");
  cg::AdamHyper hyper;
  hyper.weightDecay = 0.01f;
  AdamCase c{"mxfp8", Scheme::mxfp8(DType::E4M3), Scheme::mxfp8(DType::E4M3),
             DType::BF16, hyper};
  cg::Program p = adamProgram(c);
  auto runner = exec::CudaRunner::create(p, p.entries[0], *dev, cache);
  ASSERT_TRUE(runner) << runner.status().toString();
  std::vector<std::vector<uint8_t>> args = adamArgs(c, 3, 11);
  for (size_t i = 0; i < args.size(); ++i)
    ASSERT_TRUE(runner->setArgument(i, args[i], *s));
  ASSERT_TRUE(runner->poison(0xA5, *s));
  // Capturing records the step without running it.
  rt::Status st = runner->capture(*s);
  ASSERT_TRUE(st) << st.toString();
  for (auto [lr, step] :
       {std::pair<float, int64_t>{1e-3f, 3}, {5e-4f, 4}, {2e-2f, 1000}}) {
    std::memcpy(args[0].data(), &lr, 4);
    std::memcpy(args[1].data(), &step, 8);
    ASSERT_TRUE(runner->setArgument(0, args[0], *s));
    ASSERT_TRUE(runner->setArgument(1, args[1], *s));
    ASSERT_TRUE(runner->replay(*s));
    auto gpu = runner->results(*s);
    ASSERT_TRUE(gpu) << gpu.status().toString();
    auto cpu = exec::runCpu(p, p.entries[0], args);
    ASSERT_TRUE(cpu) << cpu.status().toString();
    EXPECT_EQ(exec::firstDifference(*cpu, *gpu, "cpu", "cuda"), "")
        << "lr " << lr << " step " << step;
  }
}
