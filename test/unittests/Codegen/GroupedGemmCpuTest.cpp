//===- GroupedGemmCpuTest.cpp - The grouped GEMM kernel, no GPU ----------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// cg::GroupedGemmKernel in a program built by hand (no MLIR): the CPU
// backend runs it with the reference numerics - bf16 operands, and block
// FP8 after the program's own quantize kernels - and each expert's rows
// equal that expert's GEMM run as its own program, bit for bit; padding
// rows are zeros; the stated bound is there for a later comparison with
// the GPU. The program's checks refuse malformed grouped GEMMs; the CUDA
// plan builder makes one persistent clustered launch whose TMA descriptors
// cover the operands' buffers, and says why where it has no kernel.
//
//===----------------------------------------------------------------------===//

#include "ProgramHelpers.h"

#include "te/codegen/GroupedGemmEmitter.h"
#include "te/codegen/PlanBuilder.h"
#include "te/exec/CpuBackend.h"
#include "te/runtime/Cutlass.h"
#include "te/runtime/reference/Codecs.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

using namespace te;
using rt::Direction;
using rt::DType;
using rt::Scheme;
namespace ref = rt::ref;
using te::test::bf16Bytes;
using te::test::tensor;

namespace {

std::vector<uint8_t> i64Bytes(const std::vector<int64_t> &v) {
  std::vector<uint8_t> out(8 * v.size());
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

/// y = grouped GEMM of x [m, k] and w [g, n, k] (bf16 arguments), the
/// operands quantized first when `fp8` (x 1x128, w 128x128, rowwise).
cg::Program groupedProgram(int64_t m, int64_t k, int64_t g, int64_t n,
                           bool fp8) {
  cg::Entry e;
  e.name = "moe";
  e.values = {tensor("x", {m, k}, DType::BF16),
              tensor("w", {g, n, k}, DType::BF16),
              tensor("splits", {g}, DType::I64)};
  e.args = {0, 1, 2};
  cg::GroupedGemmKernel gg;
  gg.name = "grouped";
  gg.x = 0;
  gg.w = 1;
  gg.splits = 2;
  if (fp8) {
    for (int i = 0; i < 2; ++i) {
      Scheme s = Scheme::fp8Block(DType::E4M3, i == 0 ? 1 : 128, 128);
      cg::Value q = e.values[i];
      q.kind = cg::Value::Kind::Quantized;
      q.name += "_q";
      q.rowwise = s;
      e.values.push_back(q);
      cg::QuantizeKernel qk;
      qk.name = "quantize_" + q.name;
      qk.input = i;
      qk.stages = {{s, Direction::Rowwise, int(e.values.size()) - 1}};
      e.kernels.push_back(qk);
      (i == 0 ? gg.x : gg.w) = int(e.values.size()) - 1;
    }
  }
  e.values.push_back(tensor("y", {m, n}, DType::BF16));
  gg.output = int(e.values.size()) - 1;
  e.results = {gg.output};
  e.kernels.push_back(gg);
  cg::Program p;
  p.entries.push_back(e);
  return p;
}

std::vector<float> normals(size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> v(count);
  for (float &x : v)
    x = ref::bf16ToFloat(ref::floatToBF16(d(rng)));
  return v;
}

} // namespace

TEST(GroupedGemmCpu, EachExpertsRowsAreItsOwnProgram) {
  const int64_t m = 300, k = 256, g = 3, n = 128;
  std::vector<float> x = normals(m * k, 1), w = normals(g * n * k, 2);
  for (bool fp8 : {false, true}) {
    SCOPED_TRACE(fp8 ? "block FP8" : "bf16");
    cg::Program p = groupedProgram(m, k, g, n, fp8);
    ASSERT_EQ(cg::validate(p.entries[0]), "");
    std::vector<int64_t> splits = {120, 0, 150}; // 30 padding rows
    auto out = exec::runCpu(p, p.entries[0],
                            {bf16Bytes(x), bf16Bytes(w), i64Bytes(splits)});
    ASSERT_TRUE(out) << out.status().toString();
    const exec::ValueData &y = (*out)[0];
    ASSERT_EQ(y.size(), 1u);
    const std::vector<uint8_t> &got = y[0].bytes;
    ASSERT_EQ(got.size(), size_t(m * n * 2));
    EXPECT_EQ(y[0].tolerance.size(), size_t(m * n)); // bounded

    int64_t row = 0;
    for (int64_t e = 0; e < g; ++e) {
      if (splits[e] == 0)
        continue;
      // Expert e alone: its rows and its weight, G = 1.
      cg::Program alone = groupedProgram(splits[e], k, 1, n, fp8);
      std::vector<float> xe(x.begin() + row * k,
                            x.begin() + (row + splits[e]) * k);
      std::vector<float> we(w.begin() + e * n * k, w.begin() + (e + 1) * n * k);
      auto one =
          exec::runCpu(alone, alone.entries[0],
                       {bf16Bytes(xe), bf16Bytes(we), i64Bytes({splits[e]})});
      ASSERT_TRUE(one) << one.status().toString();
      const std::vector<uint8_t> &want = (*one)[0][0].bytes;
      EXPECT_EQ(std::memcmp(got.data() + row * n * 2, want.data(), want.size()),
                0)
          << "expert " << e;
      row += splits[e];
    }
    for (size_t i = size_t(row * n * 2); i < got.size(); ++i)
      ASSERT_EQ(got[i], 0) << "padding byte " << i;
  }
}

TEST(GroupedGemmCpu, MalformedKernelsAreRefused) {
  cg::Program p = groupedProgram(64, 128, 2, 128, false);
  cg::Entry &e = p.entries[0];
  auto why = [&] { return cg::validate(e); };
  auto &gg = std::get<cg::GroupedGemmKernel>(e.kernels.back());
  e.values[gg.splits].shape = {3};
  EXPECT_NE(why().find("split sizes must be a tensor of G i64"),
            std::string::npos)
      << why();
  e.values[gg.splits].shape = {2};
  e.values[gg.w].shape = {2, 128, 64};
  EXPECT_NE(why().find("shapes do not chain"), std::string::npos) << why();
  e.values[gg.w].shape = {2, 128, 128};
  ASSERT_EQ(why(), "");

  cg::Program q = groupedProgram(64, 128, 2, 96, true); // N not 128k
  EXPECT_NE(cg::validate(q.entries[0]).find("N must be a multiple of 128"),
            std::string::npos)
      << cg::validate(q.entries[0]);
}

namespace {

TEST(GroupedGemmPlan, OnePersistentClusteredLaunchOverTheOperands) {
  if (!rt::cutlassIncludeDir())
    GTEST_SKIP() << "the CUTLASS headers are not installed "
                    "(scripts/install-deps.sh)";
  for (bool fp8 : {false, true}) {
    SCOPED_TRACE(fp8 ? "block FP8" : "bf16");
    cg::Program p = groupedProgram(300, 256, 3, 256, fp8);
    const cg::Entry &e = p.entries[0];
    rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(p, e);
    ASSERT_TRUE(plan) << plan.status().toString();
    const cg::KernelPlan &kp = plan->kernels.back();
    ASSERT_EQ(kp.plan.kernels.size(), 1u);
    ASSERT_EQ(kp.plan.validate(), "");
    const rt::KernelSpec &ks = kp.plan.kernels[0];
    EXPECT_TRUE(ks.persistent);
    cg::GroupedGemmSpec spec;
    spec.operands = fp8 ? cg::GroupedGemmSpec::Operands::Fp8Block
                        : cg::GroupedGemmSpec::Operands::BF16;
    spec.groups = 3;
    spec.n = 256;
    spec.k = 256;
    EXPECT_EQ(ks.entry, spec.kernelName());
    EXPECT_EQ(ks.cluster.x, unsigned(spec.resolved().cluster));
    EXPECT_EQ(ks.sharedBytes, cg::groupedGemmSharedBytes(spec));
    EXPECT_EQ(kp.flops, uint64_t(2 * 300 * 256 * 256));
    // Three descriptors with the emitter's geometry, over x's, w's and
    // (FP8) x's scale buffers; then w's scales, the splits, y, M_total.
    auto maps = cg::groupedGemmMaps(spec, 300);
    const auto &g = std::get<cg::GroupedGemmKernel>(e.kernels.back());
    const cg::ValueBuffers &xb = plan->values[size_t(g.x)];
    const cg::ValueBuffers &wb = plan->values[size_t(g.w)];
    int xData = fp8 ? xb.dir[0].data : xb.tensor;
    int wData = fp8 ? wb.dir[0].data : wb.tensor;
    ASSERT_EQ(ks.args.size(), 7u);
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(ks.args[i].kind, rt::ArgDesc::Kind::TensorMap);
      EXPECT_EQ(ks.args[i].map, maps[i]) << "map " << i;
    }
    EXPECT_EQ(ks.args[0].pointer.buffer, xData);
    EXPECT_EQ(ks.args[1].pointer.buffer, wData);
    EXPECT_EQ(ks.args[2].pointer.buffer, fp8 ? xb.dir[0].scale : xData);
    EXPECT_EQ(ks.args[3].pointer.buffer, fp8 ? wb.dir[0].scale : -1);
    EXPECT_EQ(ks.args[4].pointer.buffer, plan->values[size_t(g.splits)].tensor);
    EXPECT_EQ(ks.args[5].pointer.buffer, plan->values[size_t(g.output)].tensor);
    EXPECT_EQ(ks.args[6].i, 300);
    // The plan survives serialisation (descriptors are encoded on binding).
    rt::Expected<rt::Plan> back = rt::Plan::deserialize(kp.plan.serialize());
    ASSERT_TRUE(back) << back.status().toString();
    EXPECT_EQ(back->kernels[0].args, ks.args);
  }
}

TEST(GroupedGemmPlan, WithoutAKernelThePlanSaysWhy) {
  auto unsupported = [](const cg::Program &p) {
    rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(p, p.entries[0]);
    EXPECT_FALSE(plan);
    return plan ? std::string() : plan.status().message();
  };
  cg::Program p = groupedProgram(64, 128, 2, 128, false);
  p.entries[0].values.back().dtype = DType::F32; // y in f32
  EXPECT_NE(unsupported(p).find("writes a bf16 result"), std::string::npos);
  p = groupedProgram(64, 128, 2, 128, false);
  p.arch = "sm_100a";
  p.target = rt::Target::forArch(p.arch);
  EXPECT_NE(unsupported(p).find("sm_90a (Hopper) only"), std::string::npos);
  p = groupedProgram(64, 96, 2, 128, false); // K not a multiple of 64
  EXPECT_NE(unsupported(p).find("K must be a positive multiple of 64"),
            std::string::npos)
      << unsupported(p);
}

} // namespace
