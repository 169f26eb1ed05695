//===- GroupedGemmPlanTest.cpp - The grouped GEMM's CUDA plan step
//---------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Without a GPU: the CUDA plan builder makes a grouped GEMM one persistent
// clustered launch whose TMA descriptors cover the operands' buffers (the
// emitter's geometry), survives serialisation, and says why where there is
// no kernel. On a Hopper GPU: the planned launch, run and replayed from a
// CUDA graph after new split sizes are written, agrees with the CPU backend
// within the stated GEMM bound, padding rows included.
//
//===----------------------------------------------------------------------===//

#include "BackendComparison.h"
#include "HopperGpuTest.h"
#include "ProgramHelpers.h"

#include "te/codegen/GroupedGemmEmitter.h"
#include "te/codegen/PlanBuilder.h"
#include "te/codegen/ScalingState.h"
#include "te/exec/Compare.h"
#include "te/exec/CpuBackend.h"
#include "te/exec/CudaRunner.h"
#include "te/exec/Persistent.h"
#include "te/runtime/Cutlass.h"

#include <gtest/gtest.h>

using namespace te;
using rt::DType;
using te::test::bf16Bytes;
using te::test::groupedProgram;
using te::test::i64Bytes;
using te::test::normals;

namespace {

TEST(GroupedGemmPlan, OnePersistentLaunchOverTheOperands) {
  if (!rt::cutlassIncludeDir())
    GTEST_SKIP() << "the CUTLASS headers are not installed "
                    "(scripts/install-deps.sh)";
  // bf16, block FP8 and its dgrad at 300 rows, block FP8 at 1600 rows; no
  // cluster (the default).
  for (int variant = 0; variant < 4; ++variant) {
    bool fp8 = variant > 0, dgrad = variant == 2;
    const int64_t m = variant == 3 ? 1600 : 300;
    const unsigned cluster = 1;
    SCOPED_TRACE(dgrad ? "block FP8 dgrad" : fp8 ? "block FP8" : "bf16");
    SCOPED_TRACE(m);
    // fprop with a bias (the argument after the splits).
    cg::Program p = groupedProgram(m, 256, 3, 256, fp8, dgrad, !dgrad);
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
    spec.weightColumnwise = dgrad;
    EXPECT_EQ(ks.entry, spec.kernelName());
    EXPECT_EQ(ks.cluster.x, cluster);
    EXPECT_EQ(ks.sharedBytes, cg::groupedGemmSharedBytes(spec));
    EXPECT_EQ(kp.flops, uint64_t(2 * m * 256 * 256));
    // Four descriptors with the emitter's geometry, over x's, w's, (FP8)
    // x's scale and (TMA stores) y's buffers; then w's scales, the
    // splits, the bias, y, M_total.
    auto maps = cg::groupedGemmMaps(spec, m);
    const auto &g = std::get<cg::GroupedGemmKernel>(e.kernels.back());
    const cg::ValueBuffers &xb = plan->values[size_t(g.x)];
    const cg::ValueBuffers &wb = plan->values[size_t(g.w)];
    int xData = fp8 ? xb.dir[0].data : xb.tensor;
    int wData = fp8 ? wb.dir[dgrad ? 1 : 0].data : wb.tensor;
    ASSERT_EQ(ks.args.size(), 18u);
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(ks.args[i].kind, rt::ArgDesc::Kind::TensorMap);
      EXPECT_EQ(ks.args[i].map, maps[i]) << "map " << i;
    }
    EXPECT_EQ(ks.args[0].pointer.buffer, xData);
    EXPECT_EQ(ks.args[1].pointer.buffer, wData);
    EXPECT_EQ(ks.args[2].pointer.buffer, fp8 ? xb.dir[0].scale : xData);
    EXPECT_EQ(ks.args[3].pointer.buffer, plan->values[size_t(g.output)].tensor);
    EXPECT_EQ(ks.args[4].pointer.buffer,
              fp8 ? wb.dir[dgrad ? 1 : 0].scale : -1);
    EXPECT_EQ(ks.args[5].pointer.buffer, -1); // MXFP8's x scales only
    // NVFP4's global amaxes only (null pointers); no later kernel takes
    // y's amax (null).
    EXPECT_EQ(ks.args[10].pointer.buffer, -1);
    EXPECT_EQ(ks.args[11].pointer.buffer, -1);
    EXPECT_EQ(ks.args[12].pointer.buffer, -1);
    EXPECT_EQ(ks.args[17].pointer.buffer, -1); // no per-expert cast of y
    EXPECT_EQ(ks.args[6].pointer.buffer, plan->values[size_t(g.splits)].tensor);
    EXPECT_EQ(ks.args[7].pointer.buffer,
              dgrad ? -1 : plan->values[size_t(g.bias)].tensor);
    EXPECT_EQ(ks.args[8].pointer.buffer, plan->values[size_t(g.output)].tensor);
    EXPECT_EQ(ks.args[9].i, m);
    // The plan survives serialisation (descriptors are encoded on binding).
    rt::Expected<rt::Plan> back = rt::Plan::deserialize(kp.plan.serialize());
    ASSERT_TRUE(back) << back.status().toString();
    EXPECT_EQ(back->kernels[0].args, ks.args);
  }
}

// Operands quantized per expert: for x and then w, a zeroed amax, the amax
// pass and the cast into the plan's workspaces; the GEMM reads those as
// block-scaled operands.
// MXFP8 x MXFP8 (the engine's MXFP8 kernel): no scale map (the third map
// repeats x's), the x scales through the kernel's pointer, the weight's
// beside them; the launch survives serialisation.
TEST(GroupedGemmPlan, Mxfp8ReadsBothScaleBuffersThroughPointers) {
  if (!rt::cutlassIncludeDir())
    GTEST_SKIP() << "the CUTLASS headers are not installed "
                    "(scripts/install-deps.sh)";
  cg::Program p = groupedProgram(300, 256, 3, 256, true, false, true,
                                 rt::DType::E4M3, true);
  const cg::Entry &e = p.entries[0];
  rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(p, e);
  ASSERT_TRUE(plan) << plan.status().toString();
  const cg::KernelPlan &kp = plan->kernels.back();
  ASSERT_EQ(kp.plan.kernels.size(), 1u);
  const rt::KernelSpec &ks = kp.plan.kernels[0];
  EXPECT_EQ(ks.entry.rfind("te_grouped_gemm_mxfp8_g3_n256_k256_", 0), 0u)
      << ks.entry;
  const auto &g = std::get<cg::GroupedGemmKernel>(e.kernels.back());
  const cg::ValueBuffers &xb = plan->values[size_t(g.x)];
  const cg::ValueBuffers &wb = plan->values[size_t(g.w)];
  ASSERT_EQ(ks.args.size(), 18u);
  EXPECT_EQ(ks.args[0].pointer.buffer, xb.dir[0].data);
  EXPECT_EQ(ks.args[1].pointer.buffer, wb.dir[0].data);
  EXPECT_EQ(ks.args[2].pointer.buffer, xb.dir[0].data);
  EXPECT_EQ(ks.args[2].map, ks.args[0].map);
  EXPECT_EQ(ks.args[4].pointer.buffer, wb.dir[0].scale);
  EXPECT_EQ(ks.args[5].pointer.buffer, xb.dir[0].scale);
  EXPECT_EQ(ks.args[7].pointer.buffer, plan->values[size_t(g.bias)].tensor);
  EXPECT_EQ(kp.engine, "generated, MXFP8 operands"); // te-run --bench's

  rt::Expected<rt::Plan> back = rt::Plan::deserialize(kp.plan.serialize());
  ASSERT_TRUE(back) << back.status().toString();
  EXPECT_EQ(back->kernels[0].args, ks.args);
  // The dgrad (weight read columnwise) has no MXFP8 kernel: the program
  // check says which operands the kernel reads.
  cg::Program dgrad = groupedProgram(300, 256, 3, 256, true, true, false,
                                     rt::DType::E4M3, true);
  rt::Expected<cg::EntryPlan> refused =
      cg::buildEntryPlan(dgrad, dgrad.entries[0]);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.status().message().find("or MXFP8 both read rowwise"),
            std::string::npos)
      << refused.status().message();
}

TEST(GroupedGemmPlan, PerExpertScalingQuantizesBothOperandsFirst) {
  if (!rt::cutlassIncludeDir())
    GTEST_SKIP() << "the CUTLASS headers are not installed "
                    "(scripts/install-deps.sh)";
  cg::Program p = te::test::perExpertScaledProgram(
      300, 256, 3, 256, true, rt::Scheme::fp8Current(DType::E5M2),
      rt::Scheme::fp8Current(DType::E4M3));
  const cg::Entry &e = p.entries[0];
  rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(p, e);
  ASSERT_TRUE(plan) << plan.status().toString();
  const cg::KernelPlan &kp = plan->kernels.back();
  ASSERT_EQ(kp.plan.validate(), "");
  ASSERT_EQ(kp.plan.kernels.size(), 5u);
  ASSERT_EQ(kp.plan.steps.size(), 7u);
  const auto &g = std::get<cg::GroupedGemmKernel>(e.kernels.back());
  int x = plan->values[size_t(g.x)].tensor,
      w = plan->values[size_t(g.w)].tensor;
  for (int operand = 0; operand < 2; ++operand) {
    const rt::Step &fill = kp.plan.steps[size_t(3 * operand)];
    const rt::KernelSpec &amax = kp.plan.kernels[size_t(2 * operand)];
    const rt::KernelSpec &cast = kp.plan.kernels[size_t(2 * operand + 1)];
    EXPECT_EQ(fill.kind, rt::Step::Kind::Fill);
    EXPECT_EQ(amax.args[0].pointer.buffer, operand ? w : x);
    EXPECT_EQ(amax.args[5].pointer.buffer, int(fill.index));
    EXPECT_EQ(cast.args[5].pointer.buffer, int(fill.index));
    // The tokens read the split sizes; the stack has N rows per expert.
    EXPECT_EQ(amax.args[3].pointer.buffer,
              operand ? -1 : plan->values[size_t(g.splits)].tensor);
    EXPECT_EQ(amax.args[4].i, operand ? 256 : 0);
  }
  const rt::KernelSpec &gemm = kp.plan.kernels[4];
  cg::GroupedGemmSpec spec;
  spec.operands = cg::GroupedGemmSpec::Operands::Fp8Block;
  spec.fp8Formats = {DType::E5M2, DType::E4M3};
  spec.groups = 3;
  spec.n = 256;
  spec.k = 256;
  EXPECT_EQ(gemm.entry, spec.kernelName());
  // The GEMM's x codes and scales, and w's, are the casts' outputs.
  EXPECT_EQ(gemm.args[0].pointer.buffer,
            kp.plan.kernels[1].args[7].pointer.buffer);
  EXPECT_EQ(gemm.args[2].pointer.buffer,
            kp.plan.kernels[1].args[9].pointer.buffer);
  EXPECT_EQ(gemm.args[1].pointer.buffer,
            kp.plan.kernels[3].args[7].pointer.buffer);
  EXPECT_EQ(gemm.args[4].pointer.buffer,
            kp.plan.kernels[3].args[9].pointer.buffer);
  // An f32 layer is refused with the rule's words.
  cg::Program f32 = p;
  for (cg::Value &v : f32.entries[0].values)
    if (v.dtype == DType::BF16)
      v.dtype = DType::F32;
  rt::Expected<cg::EntryPlan> refused = cg::buildEntryPlan(f32, f32.entries[0]);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.status().message().find("must be bf16 tensors"),
            std::string::npos)
      << refused.status().message();
}

// NVFP4 read as codes (te-legalize-target's `generated` path): each
// operand's amax pass, then its codes cast (packed codes and E4M3 block
// scales), then the engine's NVFP4 kernel, whose x and W maps, scale
// pointers and global-scale amaxes are those buffers.
TEST(GroupedGemmPlan, Nvfp4CodesFeedTheNvfp4Kernel) {
  if (!rt::cutlassIncludeDir())
    GTEST_SKIP() << "the CUTLASS headers are not installed "
                    "(scripts/install-deps.sh)";
  cg::Program p = te::test::perExpertScaledProgram(
      300, 384, 3, 256, true, rt::Scheme::nvfp4(),
      rt::Scheme::nvfp4(false, false, true), /*dgrad=*/false,
      /*nvfp4Codes=*/true);
  rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(p, p.entries[0]);
  ASSERT_TRUE(plan) << plan.status().toString();
  const cg::KernelPlan &kp = plan->kernels.back();
  ASSERT_EQ(kp.plan.validate(), "");
  EXPECT_EQ(kp.engine, "generated, NVFP4 operands");
  std::vector<std::string> entries;
  for (const rt::KernelSpec &ks : kp.plan.kernels)
    entries.push_back(ks.entry);
  ASSERT_EQ(entries.size(), 5u);
  EXPECT_EQ(entries[1], "te_grouped_rows_nvfp4_g3_c384_tokens_codes");
  EXPECT_EQ(entries[3], "te_grouped_rows_nvfp4_2d_g3_c384_weights_codes");
  EXPECT_NE(entries[4].find("te_grouped_gemm_nvfp4_g3_n256_k384"),
            std::string::npos)
      << entries[4];
  const rt::KernelSpec &x = kp.plan.kernels[1], &w = kp.plan.kernels[3],
                       &gemm = kp.plan.kernels[4];
  auto buffer = [](const rt::ArgDesc &a) { return a.pointer.buffer; };
  // The casts' codes (arg 7) and scale bytes (arg 9), their amaxes (arg 5).
  EXPECT_EQ(buffer(gemm.args[0]), buffer(x.args[7]));
  EXPECT_EQ(buffer(gemm.args[1]), buffer(w.args[7]));
  EXPECT_EQ(buffer(gemm.args[4]), buffer(w.args[9]));
  EXPECT_EQ(buffer(gemm.args[5]), buffer(x.args[9]));
  EXPECT_EQ(buffer(gemm.args[10]), buffer(x.args[5]));
  EXPECT_EQ(buffer(gemm.args[11]), buffer(w.args[5]));
  for (int i : {4, 5, 10, 11})
    EXPECT_GE(buffer(gemm.args[i]), 0) << i;
  // The codes are half a byte an element, the scales a byte per 16.
  EXPECT_EQ(plan->buffers[size_t(buffer(x.args[7]))].bytes, 300u * 384 / 2);
  EXPECT_EQ(plan->buffers[size_t(buffer(x.args[9]))].bytes, 300u * 384 / 16);

  // The dgrad reads values, never codes.
  cg::Program d = te::test::perExpertScaledProgram(
      300, 384, 3, 256, false, rt::Scheme::nvfp4(), rt::Scheme::nvfp4(),
      /*dgrad=*/true, /*nvfp4Codes=*/true);
  rt::Expected<cg::EntryPlan> refused = cg::buildEntryPlan(d, d.entries[0]);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.status().message().find("reads the weight rowwise"),
            std::string::npos)
      << refused.status().message();
}

// The NVFP4 backward's plans: the dgrad quantizes dy (stochastically
// rounded, the program's random state) and the stack's 16x1 columns per
// expert, then runs the BF16 dgrad on their values; the wgrad takes each
// operand's amax of its transformed runs, then its grouped pass, then the
// BF16 K-grouped GEMM.
TEST(GroupedGemmPlan, Nvfp4BackwardQuantizesEachExpertFirst) {
  if (!rt::cutlassIncludeDir())
    GTEST_SKIP() << "the CUTLASS headers are not installed "
                    "(scripts/install-deps.sh)";
  cg::Program p = te::test::perExpertScaledProgram(
      300, 384, 3, 256, false, rt::Scheme::nvfp4(true, true),
      rt::Scheme::nvfp4(), /*dgrad=*/true);
  p.random.seed = 1234;
  p.random.offset = 5;
  rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(p, p.entries[0]);
  ASSERT_TRUE(plan) << plan.status().toString();
  const cg::KernelPlan &dgrad = plan->kernels.back();
  ASSERT_EQ(dgrad.plan.validate(), "");
  ASSERT_EQ(dgrad.plan.kernels.size(), 5u);
  EXPECT_EQ(dgrad.plan.kernels[1].entry,
            "te_grouped_rows_nvfp4_sr_g3_c256_tokens");
  EXPECT_EQ(dgrad.plan.kernels[1].args[11].i, 1234);
  EXPECT_EQ(dgrad.plan.kernels[1].args[12].i, 5);
  EXPECT_EQ(dgrad.plan.kernels[3].entry,
            "te_grouped_rows_nvfp4_g3_c384_weights_t");
  // The BF16 dgrad reads the two casts' values.
  EXPECT_EQ(dgrad.plan.kernels[4].args[0].pointer.buffer,
            dgrad.plan.kernels[1].args[7].pointer.buffer);
  EXPECT_EQ(dgrad.plan.kernels[4].args[1].pointer.buffer,
            dgrad.plan.kernels[3].args[7].pointer.buffer);

  cg::Program q = test::groupedWgradProgram(300, 256, 144, 3, false, true);
  auto &w = std::get<cg::GroupedWgradKernel>(q.entries[0].kernels[0]);
  w.dyScheme = rt::Scheme::nvfp4(true, true);
  w.xScheme = rt::Scheme::nvfp4(true);
  rt::Expected<cg::EntryPlan> wplan = cg::buildEntryPlan(q, q.entries[0]);
  ASSERT_TRUE(wplan) << wplan.status().toString();
  const rt::Plan &wp = wplan->kernels.back().plan;
  ASSERT_EQ(wp.validate(), "");
  std::vector<std::string> entries;
  for (const rt::KernelSpec &ks : wp.kernels)
    entries.push_back(ks.entry);
  ASSERT_EQ(entries.size(), 6u);
  EXPECT_EQ(entries[0], "te_grouped_rht_amax_g3");
  EXPECT_EQ(entries[1], "te_grouped_quantize_nvfp4_rht_sr_g3_c256_db");
  EXPECT_EQ(entries[2], "te_grouped_quantize_nvfp4_rht_sr_g3_c256_db_bias");
  // The bias gradient overlaps the quantize kernel's last wave, which lets
  // it start; nothing else overlaps its predecessor.
  for (size_t i = 0; i < entries.size(); ++i)
    EXPECT_EQ(wp.kernels[i].overlapsPredecessor, i == 2) << entries[i];
  EXPECT_NE(wp.kernels[1].source.find("te::dev::releaseDependents();"),
            std::string::npos);
  EXPECT_EQ(wp.kernels[4].source.find("te::dev::releaseDependents();"),
            std::string::npos);
  EXPECT_EQ(entries[3], "te_grouped_rht_amax_g3");
  EXPECT_EQ(entries[4], "te_grouped_quantize_nvfp4_rht_g3_c144");
  // Each block pass reads its own amax pass's result.
  EXPECT_EQ(wp.kernels[1].args[9].pointer.buffer,
            wp.kernels[0].args[4].pointer.buffer);
  EXPECT_EQ(wp.kernels[4].args[9].pointer.buffer,
            wp.kernels[3].args[4].pointer.buffer);
}

// An entry computes each expert amax once: the per-tensor dgrad and wgrad
// of one dy share its amax pass (the dgrad's plan runs it, the wgrad's
// block pass reads its buffer); x, read only by the wgrad, gets its own.
TEST(GroupedGemmPlan, TheDgradAndWgradOfOneDyShareItsAmaxPass) {
  if (!rt::cutlassIncludeDir())
    GTEST_SKIP() << "the CUTLASS headers are not installed "
                    "(scripts/install-deps.sh)";
  const int64_t m = 300, k = 256, g = 3, n = 256;
  cg::Program p = te::test::perExpertScaledProgram(
      m, k, g, n, false, rt::Scheme::fp8Current(DType::E5M2),
      rt::Scheme::fp8Current(DType::E4M3), /*dgrad=*/true);
  cg::Entry &e = p.entries[0];
  e.values.push_back(test::tensor("x", {m, k}, DType::BF16));
  e.args.push_back(int(e.values.size()) - 1);
  cg::GroupedWgradKernel w;
  w.name = "wgrad";
  w.dy = 0;
  w.x = int(e.values.size()) - 1;
  w.splits = 2;
  w.dyScheme = rt::Scheme::fp8Current(DType::E5M2);
  w.xScheme = rt::Scheme::fp8Current(DType::E4M3);
  e.values.push_back(test::tensor("dw", {g, n, k}, DType::F32));
  w.output = int(e.values.size()) - 1;
  e.kernels.push_back(w);
  e.results.push_back(w.output);
  ASSERT_EQ(cg::validate(e), "");
  rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(p, e);
  ASSERT_TRUE(plan) << plan.status().toString();
  const rt::Plan &dgrad = plan->kernels[0].plan;
  const rt::Plan &wgrad = plan->kernels[1].plan;
  auto amaxPasses = [](const rt::Plan &pl) {
    int count = 0;
    for (const rt::KernelSpec &ks : pl.kernels)
      count += ks.entry.rfind("te_grouped_amax_", 0) == 0;
    return count;
  };
  EXPECT_EQ(amaxPasses(dgrad), 2); // dy and the stack
  EXPECT_EQ(amaxPasses(wgrad), 1); // x only
  // dy's amax: the dgrad's first pass writes it, the wgrad's dy block pass
  // (its first launch) reads it.
  ASSERT_EQ(wgrad.kernels[0].entry.rfind("te_grouped_quantize_", 0), 0u);
  EXPECT_EQ(wgrad.kernels[0].args[9].pointer.buffer,
            dgrad.kernels[0].args[5].pointer.buffer);
  // x's block pass reads x's own amax (named alike: values of one name
  // are told apart by their buffers).
  ASSERT_EQ(wgrad.kernels[2].entry.rfind("te_grouped_quantize_", 0), 0u);
  EXPECT_EQ(wgrad.kernels[2].args[9].pointer.buffer,
            wgrad.kernels[1].args[5].pointer.buffer);
}

/// Empties `e` down to the second layer's inputs, h [m, n] bf16 and the
/// split sizes [g] (values 0 and 1, both arguments): what the two-layer
/// programs below keep when they build the second layer alone.
void keepOnlyHAndSplits(cg::Entry &e, int64_t m, int64_t n, int64_t g) {
  e.values = {test::tensor("h", {m, n}, DType::BF16),
              test::tensor("splits", {g}, DType::I64)};
  e.args = {0, 1};
  e.kernels.clear();
}

/// Two MoE layers in a row: groupedProgram's bf16 (or block-FP8) layer
/// x [m, k] -> h [m, n], then a layer over h whose grouped GEMM quantizes h
/// and its stack w2 [g, n2, n] per expert by `h` (per-tensor FP8 or NVFP4;
/// with `nvfp4Codes` read as codes), and a grouped wgrad dW2 of dy [m, n2]
/// and h by `dy` and `hWgrad`. Arguments x, w, splits, w2, dy; results h,
/// y2, dW2. With `alone`, the second layer and the wgrad only, h an
/// argument: h, splits, w2, dy; results y2, dW2.
cg::Program chainedProgram(int64_t m, int64_t k, int64_t g, int64_t n,
                           int64_t n2, bool fp8, const rt::Scheme &h,
                           const rt::Scheme &dy, const rt::Scheme &hWgrad,
                           bool nvfp4Codes = false, bool alone = false) {
  cg::Program p = groupedProgram(m, k, g, n, fp8);
  cg::Entry &e = p.entries[0];
  int hv = std::get<cg::GroupedGemmKernel>(e.kernels.back()).output;
  if (alone) {
    keepOnlyHAndSplits(e, m, n, g);
    hv = 0;
  }
  const int splitsValue = alone ? 1 : 2;
  auto add = [&](cg::Value v) {
    e.values.push_back(std::move(v));
    return int(e.values.size()) - 1;
  };
  cg::GroupedGemmKernel second;
  second.name = "second";
  second.x = hv;
  second.w = add(test::tensor("w2", {g, n2, n}, DType::BF16));
  second.splits = splitsValue;
  second.output = add(test::tensor("y2", {m, n2}, DType::BF16));
  second.xScheme = h;
  second.wScheme = h;
  second.nvfp4Codes = nvfp4Codes;
  e.args.push_back(second.w);
  e.kernels.push_back(second);
  cg::GroupedWgradKernel w;
  w.name = "wgrad2";
  w.dy = add(test::tensor("dy", {m, n2}, DType::BF16));
  w.x = hv;
  w.splits = splitsValue;
  w.dyScheme = dy;
  w.xScheme = hWgrad;
  w.output = add(test::tensor("dw2", {g, n2, n}, DType::F32));
  e.args.push_back(w.dy);
  e.kernels.push_back(w);
  e.results = {second.output, w.output};
  if (!alone)
    e.results.insert(e.results.begin(), hv);
  return p;
}

// A grouped GEMM whose output a later kernel quantizes with one amax per
// expert takes that amax in its epilogue: its plan zeroes the buffer and
// passes it, and the later kernels (the next layer's GEMM and a wgrad of
// the same h) run no amax pass over h but read that buffer. Not where no
// later kernel takes it (delayed scaling, the Hadamard transform's amax).
TEST(GroupedGemmPlan, TheEpilogueHandsItsOutputsAmaxToTheNextLayer) {
  if (!rt::cutlassIncludeDir())
    GTEST_SKIP() << "the CUTLASS headers are not installed "
                    "(scripts/install-deps.sh)";
  const int64_t m = 300, k = 256, g = 3, n = 256, n2 = 128;
  for (bool fp8 : {false, true}) {
    SCOPED_TRACE(fp8 ? "block FP8 first layer" : "bf16 first layer");
    cg::Program p =
        chainedProgram(m, k, g, n, n2, fp8, rt::Scheme::fp8Current(DType::E4M3),
                       rt::Scheme::fp8Current(DType::E5M2),
                       rt::Scheme::fp8Current(DType::E4M3));
    const cg::Entry &e = p.entries[0];
    ASSERT_EQ(cg::validate(e), "");
    rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(p, e);
    ASSERT_TRUE(plan) << plan.status().toString();
    const size_t first = plan->kernels.size() - 3;
    const rt::Plan &producer = plan->kernels[first].plan;
    const rt::Plan &next = plan->kernels[first + 1].plan;
    const rt::Plan &wgrad = plan->kernels[first + 2].plan;
    // The producer: a fill of the amax buffer, then the GEMM ("_amax").
    const rt::KernelSpec &gemm = producer.kernels.back();
    ASSERT_EQ(gemm.args.size(), 18u);
    const int amaxY = gemm.args[12].pointer.buffer;
    ASSERT_GE(amaxY, 0);
    EXPECT_NE(gemm.entry.find("_amax"), std::string::npos) << gemm.entry;
    EXPECT_NE(gemm.source.find("Epilogue<true, false, false, false, false>"),
              std::string::npos);
    ASSERT_FALSE(producer.steps.empty());
    bool filled = false;
    for (const rt::Step &st : producer.steps)
      filled = filled ||
               (st.kind == rt::Step::Kind::Fill && st.index == uint32_t(amaxY));
    EXPECT_TRUE(filled) << "the epilogue max-accumulates into a zeroed buffer";
    auto entries = [](const rt::Plan &pl) {
      std::vector<std::string> out;
      for (const rt::KernelSpec &ks : pl.kernels)
        out.push_back(ks.entry);
      return out;
    };
    // The next layer: an amax pass over w2 only; h's cast reads amaxY.
    std::vector<std::string> nextEntries = entries(next);
    ASSERT_EQ(nextEntries.size(), 4u) << ::testing::PrintToString(nextEntries);
    EXPECT_EQ(nextEntries[0].rfind("te_grouped_rows_", 0), 0u);
    EXPECT_EQ(next.kernels[0].args[5].pointer.buffer, amaxY);
    EXPECT_EQ(nextEntries[1].rfind("te_grouped_amax_", 0), 0u);
    // The wgrad: dy's amax pass; h's block pass reads amaxY.
    std::vector<std::string> wgradEntries = entries(wgrad);
    ASSERT_EQ(wgradEntries.size(), 4u)
        << ::testing::PrintToString(wgradEntries);
    EXPECT_EQ(wgradEntries[0].rfind("te_grouped_amax_", 0), 0u);
    EXPECT_EQ(wgradEntries[2].rfind("te_grouped_quantize_", 0), 0u);
    EXPECT_EQ(wgrad.kernels[2].args[9].pointer.buffer, amaxY);
  }
  // Nothing takes h's amax: the next layer under delayed scaling reading
  // h's values (its stack NVFP4: the BF16 kernel) and the wgrad's h through
  // the Hadamard transform (the amax of its transformed columns), or h
  // under block FP8 (no tensor amax).
  for (auto [h, hWgrad] :
       {std::pair{rt::Scheme::fp8Delayed(DType::E4M3, 16),
                  rt::Scheme::nvfp4(true)},
        std::pair{rt::Scheme::fp8Delayed(DType::E4M3, 16),
                  rt::Scheme::fp8Block(DType::E4M3, 1, 128)}}) {
    cg::Program p =
        chainedProgram(m, k, g, n, n2, false, h,
                       hWgrad.kind == rt::SchemeKind::Nvfp4
                           ? rt::Scheme::nvfp4(true, true)
                           : rt::Scheme::fp8Block(DType::E4M3, 1, 128),
                       hWgrad);
    auto &second = std::get<cg::GroupedGemmKernel>(p.entries[0].kernels[1]);
    second.xState = "h";
    second.wScheme = rt::Scheme::nvfp4();
    rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(p, p.entries[0]);
    ASSERT_TRUE(plan) << plan.status().toString();
    const rt::KernelSpec &gemm = plan->kernels[0].plan.kernels.back();
    EXPECT_EQ(gemm.args[12].pointer.buffer, -1) << gemm.entry;
    EXPECT_EQ(gemm.entry.find("_amax"), std::string::npos) << gemm.entry;
    EXPECT_EQ(gemm.args[17].pointer.buffer, -1) << gemm.entry;
  }
}

// A grouped GEMM whose output the next grouped GEMM casts per expert by
// delayed scaling into FP8 codes (both of its operands per-tensor FP8)
// casts it in its epilogue: its plan gathers the next layer's scales and
// zeroes that layer's amax record, its epilogue (Epilogue<..., true>, entry
// "_amax_qe4m3d") writes the codes and block scales the next GEMM reads
// and each expert's amax into the record; the next layer casts its stack
// only. The record keeps its name, so the entry's state update reads it.
TEST(GroupedGemmPlan, TheEpilogueCastsTheNextLayersDelayedTokens) {
  if (!rt::cutlassIncludeDir())
    GTEST_SKIP() << "the CUTLASS headers are not installed "
                    "(scripts/install-deps.sh)";
  const int64_t m = 301, k = 256, g = 3, n = 256, n2 = 128;
  for (bool fp8 : {false, true}) {
    SCOPED_TRACE(fp8 ? "block FP8 first layer" : "bf16 first layer");
    cg::Program p = chainedProgram(m, k, g, n, n2, fp8,
                                   rt::Scheme::fp8Delayed(DType::E4M3, 16),
                                   rt::Scheme::fp8Block(DType::E5M2, 1, 128),
                                   rt::Scheme::fp8Block(DType::E4M3, 1, 128));
    cg::Entry &e = p.entries[0];
    auto &second =
        std::get<cg::GroupedGemmKernel>(e.kernels[e.kernels.size() - 2]);
    second.xState = "h";
    second.wState = "w2";
    ASSERT_EQ(cg::validate(e), "");
    rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(p, e);
    ASSERT_TRUE(plan) << plan.status().toString();
    // The two GEMMs' plans, then the wgrad's and the states' update.
    size_t first = 0;
    while (first + 1 < plan->kernels.size() &&
           plan->kernels[first + 1].name != second.name)
      ++first;
    ASSERT_LT(first + 1, plan->kernels.size());
    const rt::Plan &producer = plan->kernels[first].plan;
    const rt::Plan &next = plan->kernels[first + 1].plan;
    const rt::KernelSpec &gemm = producer.kernels.back();
    ASSERT_EQ(gemm.args.size(), 18u);
    EXPECT_NE(gemm.entry.find("_amax_qe4m3d"), std::string::npos) << gemm.entry;
    EXPECT_NE(gemm.source.find("Epilogue<true, true, false, false, true>"),
              std::string::npos);
    // The scales: gathered by the launch before the GEMM.
    const rt::KernelSpec &gather =
        producer.kernels[producer.kernels.size() - 2];
    EXPECT_EQ(gather.entry.rfind("te_gather_scales_", 0), 0u) << gather.entry;
    const int scales = gemm.args[17].pointer.buffer;
    ASSERT_GE(scales, 0);
    EXPECT_EQ(gather.args[1].pointer.buffer, scales);
    // The record: zeroed, then the epilogue's amaxes. And (M_total = 301,
    // not a multiple of 4) the block scales' padding columns zeroed, as
    // the cast leaves them.
    const int record = gemm.args[12].pointer.buffer;
    ASSERT_GE(record, 0);
    auto filled = [&](int buffer) {
      for (const rt::Step &st : producer.steps)
        if (st.kind == rt::Step::Kind::Fill && st.index == uint32_t(buffer))
          return true;
      return false;
    };
    EXPECT_TRUE(filled(record));
    EXPECT_TRUE(filled(gemm.args[14].pointer.buffer));
    // The next layer: its stack's gather and cast, then its GEMM on h's
    // codes (x's map) and block scales (the third map) from the epilogue.
    std::vector<std::string> nextEntries;
    for (const rt::KernelSpec &ks : next.kernels)
      nextEntries.push_back(ks.entry);
    ASSERT_EQ(nextEntries.size(), 3u) << ::testing::PrintToString(nextEntries);
    EXPECT_NE(nextEntries[1].find("_weights"), std::string::npos);
    const rt::KernelSpec &nextGemm = next.kernels.back();
    EXPECT_EQ(nextGemm.args[0].pointer.buffer, gemm.args[13].pointer.buffer);
    EXPECT_EQ(nextGemm.args[2].pointer.buffer, gemm.args[14].pointer.buffer);
    EXPECT_EQ(nextGemm.args[17].pointer.buffer, -1);
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

//===----------------------------------------------------------------------===//
// On the GPU
//===----------------------------------------------------------------------===//

class GroupedGemmPlanGpu : public test::HopperGpuTest {};

/// Runs program `p`'s entry once on the GPU on `args` (outputs poisoned
/// first) and returns its results (none on a failure, which it reports).
std::vector<exec::ValueData>
runOnGpu(const cg::Program &p, const std::vector<std::vector<uint8_t>> &args,
         const rt::Device &dev, const rt::Stream &stream,
         rt::KernelCache &cache) {
  auto runner = exec::CudaRunner::create(p, p.entries[0], dev, cache);
  EXPECT_TRUE(runner) << runner.status().toString();
  if (!runner)
    return {};
  for (size_t i = 0; i < args.size(); ++i)
    EXPECT_TRUE(runner->setArgument(i, args[i], stream).isOk());
  EXPECT_TRUE(runner->poison(0xA5, stream).isOk());
  EXPECT_TRUE(runner->run(stream).isOk());
  auto out = runner->results(stream);
  EXPECT_TRUE(out) << out.status().toString();
  return out ? *out : std::vector<exec::ValueData>{};
}

/// Captures program `p`'s entry once on `args`, then for each of `splits`
/// writes it into argument `splitArg`, replays the graph and compares the
/// results with the CPU backend's on the same arguments; returns each
/// replay's comparison.
std::vector<exec::Comparison> replayWithNewSplits(
    const cg::Program &p, std::vector<std::vector<uint8_t>> args,
    size_t splitArg, const std::vector<std::vector<int64_t>> &splits,
    const rt::Device &dev, const rt::Stream &stream, rt::KernelCache &cache) {
  std::vector<exec::Comparison> out;
  auto runner = exec::CudaRunner::create(p, p.entries[0], dev, cache);
  EXPECT_TRUE(runner) << runner.status().toString();
  if (!runner)
    return out;
  args[splitArg] = i64Bytes(splits[0]);
  for (size_t i = 0; i < args.size(); ++i)
    EXPECT_TRUE(runner->setArgument(i, args[i], stream).isOk());
  EXPECT_TRUE(runner->capture(stream).isOk());
  for (const std::vector<int64_t> &s : splits) {
    args[splitArg] = i64Bytes(s);
    EXPECT_TRUE(runner->setArgument(splitArg, args[splitArg], stream).isOk());
    EXPECT_TRUE(runner->poison(0xA5, stream).isOk());
    EXPECT_TRUE(runner->replay(stream).isOk());
    auto gpu = runner->results(stream);
    auto cpu = exec::runCpu(p, p.entries[0], args);
    EXPECT_TRUE(gpu && cpu);
    if (!gpu || !cpu)
      return out;
    out.push_back(exec::compareResults(*cpu, *gpu, "cpu", "cuda"));
    EXPECT_EQ(out.back().difference, "")
        << "replay " << out.size() << " of " << splits.size();
    EXPECT_LE(out.back().worstBoundRatio, 1.0);
  }
  return out;
}

/// A run of `p` on `args` within the bound of the CPU backend (one bounded
/// result), then replayWithNewSplits over `splits` (argument 2).
void runThenReplayWithinTheBound(
    const cg::Program &p, const std::vector<std::vector<uint8_t>> &args,
    const std::vector<std::vector<int64_t>> &splits, const rt::Device &dev,
    const rt::Stream &stream, rt::KernelCache &cache) {
  exec::Comparison first = test::gpuVersusCpu(p, args, dev, stream, cache);
  EXPECT_EQ(first.difference, "");
  EXPECT_EQ(first.boundedBuffers, 1u);
  EXPECT_LE(first.worstBoundRatio, 1.0);
  replayWithNewSplits(p, args, 2, splits, dev, stream, cache);
}

TEST_F(GroupedGemmPlanGpu, RunsAndReplaysWithNewSplitSizesWithinTheBound) {
  rt::KernelCache cache("");
  // 4 experts, N = 256 (two column blocks: 2-CTA clusters), K = 384,
  // M_total = 700 (not a multiple of 128).
  const int64_t m = 700, k = 384, g = 4, n = 256;
  std::vector<float> w = normals(size_t(g * n * k), 2);
  std::vector<float> b = normals(size_t(g * n), 3);
  // fprop in bf16 and block FP8, each with and without a bias, and block
  // FP8 dgrad (K = 384 output columns: 3 blocks, no cluster).
  for (int variant = 0; variant < 5; ++variant) {
    bool fp8 = variant % 2 == 1 || variant == 4, dgrad = variant == 4;
    bool withBias = variant == 2 || variant == 3;
    SCOPED_TRACE(std::string(dgrad ? "block FP8 dgrad"
                             : fp8 ? "block FP8"
                                   : "bf16") +
                 (withBias ? " + bias" : ""));
    std::vector<float> x = normals(size_t(m * (dgrad ? n : k)), 1);
    cg::Program p = groupedProgram(m, k, g, n, fp8, dgrad, withBias);
    // Ragged with padding, then one expert with every token but a few,
    // then ragged again with an empty expert: same M_total throughout.
    const std::vector<std::vector<int64_t>> splits = {
        {200, 131, 0, 300}, {0, 0, 690, 0}, {1, 257, 0, 442}};
    std::vector<std::vector<uint8_t>> args = {bf16Bytes(x), bf16Bytes(w),
                                              i64Bytes(splits[0])};
    if (withBias)
      args.push_back(bf16Bytes(b));
    // A plain run, checked as every backend pair is.
    exec::Comparison first =
        test::gpuVersusCpu(p, args, *device_, *stream_, cache);
    EXPECT_EQ(first.difference, "");
    EXPECT_EQ(first.boundedBuffers, 1u);

    // Captured once; each replay after new split sizes are uploaded into
    // the same device tensor computes those.
    replayWithNewSplits(p, args, 2, splits, *device_, *stream_, cache);
  }
}

// MXFP8 x MXFP8 through the engine's MXFP8 kernel (a bias, M_total not a
// multiple of 128, ragged splits with an empty expert), within the bound of
// the CPU backend (ref::groupedMxfp8Gemm), and after new split sizes in a
// replayed graph.
TEST_F(GroupedGemmPlanGpu, Mxfp8RunsAndReplaysWithinTheBound) {
  rt::KernelCache cache("");
  const int64_t m = 700, k = 384, g = 4, n = 256;
  cg::Program p =
      groupedProgram(m, k, g, n, true, false, true, rt::DType::E4M3, true);
  const std::vector<std::vector<int64_t>> splits = {
      {200, 131, 0, 300}, {0, 0, 690, 0}, {1, 257, 0, 442}};
  std::vector<std::vector<uint8_t>> args = {
      bf16Bytes(normals(size_t(m * k), 1)),
      bf16Bytes(normals(size_t(g * n * k), 2)), i64Bytes(splits[0]),
      bf16Bytes(normals(size_t(g * n), 3))};
  runThenReplayWithinTheBound(p, args, splits, *device_, *stream_, cache);
}

// Two layers in a row on the GPU, the first GEMM's epilogue handing each
// expert's amax of h to the second layer's cast and to a wgrad of h: their
// results are bit for bit those of the same kernels run alone on the h the
// first layer wrote (whose amaxes come from a pass of their own) - per-tensor
// FP8 and NVFP4 codes for the second GEMM, after a bf16 and a block-FP8
// first layer; ragged splits with an empty expert, M_total not a multiple of
// 128.
TEST_F(GroupedGemmPlanGpu, TheEpilogueAmaxFeedsTheNextLayerBitForBit) {
  rt::KernelCache cache("");
  const int64_t m = 700, k = 384, g = 4, n = 256, n2 = 128;
  const std::vector<int64_t> splits = {200, 131, 0, 300};
  std::vector<float> x = normals(size_t(m * k), 21);
  for (size_t i = 200 * k; i < 331 * k; ++i) // expert 1's rows larger
    x[i] *= 40.0f;
  const std::vector<uint8_t> w = bf16Bytes(normals(size_t(g * n * k), 22)),
                             w2 = bf16Bytes(normals(size_t(g * n2 * n), 23)),
                             dy = bf16Bytes(normals(size_t(m * n2), 24));
  const rt::Scheme current = rt::Scheme::fp8Current(DType::E4M3),
                   currentDy = rt::Scheme::fp8Current(DType::E5M2);
  for (int variant = 0; variant < 3; ++variant) {
    const bool fp8 = variant == 1, nvfp4 = variant == 2;
    SCOPED_TRACE(nvfp4 ? "NVFP4 second layer"
                 : fp8 ? "block-FP8 first layer"
                       : "bf16 first layer");
    const rt::Scheme h = nvfp4 ? rt::Scheme::nvfp4() : current;
    cg::Program chain =
        chainedProgram(m, k, g, n, n2, fp8, h, currentDy, current, nvfp4);
    rt::Expected<cg::EntryPlan> plan =
        cg::buildEntryPlan(chain, chain.entries[0]);
    ASSERT_TRUE(plan) << plan.status().toString();
    ASSERT_NE(
        plan->kernels[plan->kernels.size() - 3].plan.kernels.back().entry.find(
            "_amax"),
        std::string::npos)
        << "the first GEMM takes h's amax";
    auto run = [&](const cg::Program &p,
                   const std::vector<std::vector<uint8_t>> &args) {
      return runOnGpu(p, args, *device_, *stream_, cache);
    };
    std::vector<exec::ValueData> chained =
        run(chain, {bf16Bytes(x), w, i64Bytes(splits), w2, dy});
    ASSERT_EQ(chained.size(), 3u);
    const std::vector<uint8_t> &hBytes = chained[0].front().bytes;
    cg::Program alone = chainedProgram(m, k, g, n, n2, fp8, h, currentDy,
                                       current, nvfp4, /*alone=*/true);
    std::vector<exec::ValueData> separate =
        run(alone, {hBytes, i64Bytes(splits), w2, dy});
    ASSERT_EQ(separate.size(), 2u);
    for (size_t r = 0; r < 2; ++r) {
      SCOPED_TRACE(r == 0 ? "y2" : "dW2");
      EXPECT_TRUE(chained[r + 1].front().bytes == separate[r].front().bytes);
    }
    // The chain is also the CPU backend's within the bound where it has
    // one (h; y2 and dW2 are computed from it).
    exec::Comparison cmp =
        test::gpuVersusCpu(chain, {bf16Bytes(x), w, i64Bytes(splits), w2, dy},
                           *device_, *stream_, cache);
    EXPECT_EQ(cmp.difference, "");
  }
}

// A chain whose second layer is under per-tensor delayed scaling reads h's
// codes from the first GEMM's epilogue, which casts h by each expert's
// scale of the second layer's state and records its amaxes there
// (TheEpilogueCastsTheNextLayersDelayedTokens). Over three steps with new
// split sizes (so the experts' scales move apart, and an expert is empty
// at times), the second layer's output, the wgrad of h, and every state of
// the second layer equal, bit for bit, those of the same kernels run alone
// on the first layer's h, which cast h themselves.
TEST_F(GroupedGemmPlanGpu, TheEpilogueCastOfDelayedTokensFeedsTheNextLayer) {
  rt::KernelCache cache("");
  const int64_t m = 700, k = 384, g = 4, n = 256, n2 = 128;
  const rt::Scheme delayed = rt::Scheme::fp8Delayed(DType::E4M3, 4),
                   block = rt::Scheme::fp8Block(DType::E4M3, 1, 128),
                   blockDy = rt::Scheme::fp8Block(DType::E5M2, 1, 128);
  const std::vector<std::vector<int64_t>> splits = {
      {200, 131, 0, 300}, {0, 700, 0, 0}, {10, 20, 30, 640}};
  for (bool fp8 : {false, true}) {
    SCOPED_TRACE(fp8 ? "block-FP8 first layer" : "bf16 first layer");
    cg::Program chain =
        chainedProgram(m, k, g, n, n2, fp8, delayed, blockDy, block);
    cg::Program alone = chainedProgram(m, k, g, n, n2, fp8, delayed, blockDy,
                                       block, false, /*alone=*/true);
    for (cg::Program *p : {&chain, &alone}) {
      cg::Entry &e = p->entries[0];
      for (cg::Kernel &kernel : e.kernels)
        if (auto *gg = std::get_if<cg::GroupedGemmKernel>(&kernel);
            gg && gg->name == "second") {
          gg->xState = "second.input.delayed_scaling";
          gg->wState = "second.weight.delayed_scaling";
        }
      ASSERT_EQ(cg::validate(e), "");
    }
    rt::Expected<cg::EntryPlan> plan =
        cg::buildEntryPlan(chain, chain.entries[0]);
    ASSERT_TRUE(plan) << plan.status().toString();
    bool fused = false;
    for (const cg::KernelPlan &kp : plan->kernels)
      for (const rt::KernelSpec &ks : kp.plan.kernels)
        fused = fused || ks.entry.find("_qe4m3d") != std::string::npos;
    ASSERT_TRUE(fused) << "the first GEMM casts h";
    std::vector<std::string> names;
    for (const cg::ScalingState &st : cg::scalingStates(alone.entries[0]))
      names.push_back(st.name);
    ASSERT_EQ(names.size(), size_t(2 * g));
    exec::DeviceStore chainStore, aloneStore;
    auto chained = exec::CudaRunner::create(chain, chain.entries[0], *device_,
                                            cache, &chainStore);
    auto separate = exec::CudaRunner::create(alone, alone.entries[0], *device_,
                                             cache, &aloneStore);
    ASSERT_TRUE(chained && separate);
    auto run = [&](exec::CudaRunner &r,
                   const std::vector<std::vector<uint8_t>> &args) {
      for (size_t j = 0; j < args.size(); ++j)
        EXPECT_TRUE(r.setArgument(j, args[j], *stream_).isOk());
      EXPECT_TRUE(r.poison(0xA5, *stream_).isOk());
      EXPECT_TRUE(r.run(*stream_).isOk());
      auto out = r.results(*stream_);
      EXPECT_TRUE(out) << out.status().toString();
      return out ? *out : std::vector<exec::ValueData>{};
    };
    for (size_t i = 0; i < splits.size(); ++i) {
      SCOPED_TRACE("step " + std::to_string(i));
      std::vector<float> x = normals(size_t(m * k), 80 + i);
      for (size_t e = 1; e < x.size(); e += 7) // amaxes that move between
        x[e] *= float(1 + (i + e) % 5);        // experts and steps
      const std::vector<uint8_t> w2 =
                                     bf16Bytes(normals(size_t(g * n2 * n), 90)),
                                 dy =
                                     bf16Bytes(normals(size_t(m * n2), 91 + i));
      std::vector<exec::ValueData> a = run(
          *chained, {bf16Bytes(x), bf16Bytes(normals(size_t(g * n * k), 92)),
                     i64Bytes(splits[i]), w2, dy});
      ASSERT_EQ(a.size(), 3u);
      std::vector<exec::ValueData> b =
          run(*separate, {a[0].front().bytes, i64Bytes(splits[i]), w2, dy});
      ASSERT_EQ(b.size(), 2u);
      EXPECT_TRUE(a[1].front().bytes == b[0].front().bytes) << "y2";
      EXPECT_TRUE(a[2].front().bytes == b[1].front().bytes) << "dW2";
      for (const std::string &name : names) {
        auto sa = exec::readState(chainStore, name, *stream_);
        auto sb = exec::readState(aloneStore, name, *stream_);
        ASSERT_TRUE(sa && sb) << name;
        EXPECT_EQ(exec::firstDifference({*sa}, {*sb}, "chained", "alone"), "")
            << name;
      }
    }
  }
}

/// A quantize kernel of `input` into a new value: `scheme` rowwise.
int addRowwiseQuantize(cg::Entry &e, int input, const rt::Scheme &scheme) {
  cg::Value q = e.values[size_t(input)];
  q.kind = cg::Value::Kind::Quantized;
  q.name += "_q";
  q.rowwise = scheme;
  e.values.push_back(q);
  const int out = int(e.values.size()) - 1;
  cg::QuantizeKernel qk;
  qk.name = "quantize_" + q.name;
  qk.input = input;
  qk.stages = {{scheme, rt::Direction::Rowwise, out}};
  e.kernels.push_back(qk);
  return out;
}

/// Two block-FP8 layers (1x128 tokens, 128x128 weights): x [m, k], w [g, n,
/// k], splits, a bias [g, n], w2 [g, n2, n] -> h, h quantized by `hs` in
/// the first GEMM's epilogue, y2 = the second layer over that. With
/// `alone`, the second layer only after a quantize kernel over h: h,
/// splits, w2 -> h quantized, y2.
cg::Program blockChain(int64_t m, int64_t k, int64_t g, int64_t n, int64_t n2,
                       const rt::Scheme &hs, bool alone) {
  const rt::Scheme weights = rt::Scheme::fp8Block(DType::E4M3, 128, 128);
  cg::Program p = groupedProgram(m, k, g, n, true, false, true);
  cg::Entry &e = p.entries[0];
  int h = std::get<cg::GroupedGemmKernel>(e.kernels.back()).output, hq = -1;
  int splits = 2;
  if (alone) {
    keepOnlyHAndSplits(e, m, n, g);
    h = 0;
    splits = 1;
    hq = addRowwiseQuantize(e, h, hs);
  } else {
    auto &first = std::get<cg::GroupedGemmKernel>(e.kernels.back());
    cg::Value q = e.values[size_t(h)];
    q.kind = cg::Value::Kind::Quantized;
    q.name = "h_q";
    q.rowwise = hs;
    e.values.push_back(q);
    hq = first.quantizedOutput = int(e.values.size()) - 1;
  }
  e.values.push_back(test::tensor("w2", {g, n2, n}, DType::BF16));
  const int w2 = int(e.values.size()) - 1;
  e.args.push_back(w2);
  cg::GroupedGemmKernel second;
  second.name = "second";
  second.x = hq;
  second.w = addRowwiseQuantize(e, w2, weights);
  second.splits = splits;
  e.values.push_back(test::tensor("y2", {m, n2}, DType::BF16));
  second.output = int(e.values.size()) - 1;
  e.kernels.push_back(second);
  e.results = {hq, second.output};
  if (!alone)
    e.results.insert(e.results.begin(), h);
  return p;
}

const rt::Scheme kBlockHs[] = {
    rt::Scheme::fp8Block(DType::E4M3, 1, 128),
    rt::Scheme::fp8Block(DType::E5M2, 1, 128, /*pow2=*/true)};

// On the CPU backend too, the fused epilogue quantize is a quantize of the
// y the GEMM computed: the chain's h quantized and y2 are bit for bit those
// of a quantize kernel over its h and the same next layer.
TEST(GroupedGemmPlan, TheEpilogueQuantizeIsAQuantizeKernelOnTheCpu) {
  // M_total not a multiple of 4: the scales' padding rows.
  const int64_t m = 302, k = 256, g = 3, n = 256, n2 = 128;
  const std::vector<int64_t> splits = {120, 0, 150};
  for (const rt::Scheme &hs : kBlockHs) {
    cg::Program chain = blockChain(m, k, g, n, n2, hs, false);
    cg::Program alone = blockChain(m, k, g, n, n2, hs, true);
    ASSERT_EQ(cg::validate(chain.entries[0]), "");
    ASSERT_EQ(cg::validate(alone.entries[0]), "");
    const std::vector<uint8_t> w2 = bf16Bytes(normals(size_t(g * n2 * n), 4));
    auto fused = exec::runCpu(chain, chain.entries[0],
                              {bf16Bytes(normals(size_t(m * k), 1)),
                               bf16Bytes(normals(size_t(g * n * k), 2)),
                               i64Bytes(splits),
                               bf16Bytes(normals(size_t(g * n), 3)), w2});
    ASSERT_TRUE(fused) << fused.status().toString();
    auto separate =
        exec::runCpu(alone, alone.entries[0],
                     {(*fused)[0].front().bytes, i64Bytes(splits), w2});
    ASSERT_TRUE(separate) << separate.status().toString();
    ASSERT_EQ((*fused)[1].size(), (*separate)[0].size());
    for (size_t i = 0; i < (*fused)[1].size(); ++i)
      EXPECT_TRUE((*fused)[1][i].bytes == (*separate)[0][i].bytes)
          << (*fused)[1][i].name;
    EXPECT_TRUE((*fused)[2].front().bytes == (*separate)[1].front().bytes);
    // The plan: no quantize kernel over h; the first GEMM writes it.
    rt::Expected<cg::EntryPlan> plan =
        cg::buildEntryPlan(chain, chain.entries[0]);
    if (!rt::cutlassIncludeDir())
      continue;
    ASSERT_TRUE(plan) << plan.status().toString();
    const rt::KernelSpec &gemm = plan->kernels[2].plan.kernels.back();
    EXPECT_NE(gemm.entry.find(hs.pow2 ? "_qe5m2p2" : "_qe4m3"),
              std::string::npos)
        << gemm.entry;
    const cg::ValueBuffers &qb = plan->values[size_t(
        std::get<cg::GroupedGemmKernel>(chain.entries[0].kernels[2])
            .quantizedOutput)];
    EXPECT_EQ(gemm.args[13].pointer.buffer, qb.dir[0].data);
    EXPECT_EQ(gemm.args[14].pointer.buffer, qb.dir[0].scale);
    // Zeroed first, as a quantize kernel's plan zeroes the padding.
    bool filled = false;
    for (const rt::Step &st : plan->kernels[2].plan.steps)
      filled = filled || (st.kind == rt::Step::Kind::Fill &&
                          st.index == uint32_t(qb.dir[0].scale));
    EXPECT_TRUE(filled);
  }
}

// A block-FP8 layer whose epilogue quantizes h for the next block-FP8
// layer (te-fuse-gemm-epilogue's kernel): h's codes and scales and the
// next layer's output are bit for bit those of a quantize kernel over the
// h the first layer wrote and the same next layer. Ragged splits with an
// empty expert, M_total not a multiple of 4 (the scales' padding rows), a
// bias on the first layer; E4M3 and E5M2 (pow2) h.
TEST_F(GroupedGemmPlanGpu, TheEpilogueQuantizeFeedsTheNextLayerBitForBit) {
  rt::KernelCache cache("");
  const int64_t m = 702, k = 384, g = 4, n = 256, n2 = 384;
  const std::vector<int64_t> splits = {200, 131, 0, 300};
  const std::vector<uint8_t> x = bf16Bytes(normals(size_t(m * k), 31)),
                             w = bf16Bytes(normals(size_t(g * n * k), 32)),
                             b = bf16Bytes(normals(size_t(g * n), 33)),
                             w2 = bf16Bytes(normals(size_t(g * n2 * n), 34));
  for (const rt::Scheme &hs : kBlockHs) {
    SCOPED_TRACE(rt::dtypeName(hs.element));
    cg::Program chain = blockChain(m, k, g, n, n2, hs, false);
    cg::Program alone = blockChain(m, k, g, n, n2, hs, true);
    auto run = [&](const cg::Program &p,
                   const std::vector<std::vector<uint8_t>> &args) {
      return runOnGpu(p, args, *device_, *stream_, cache);
    };
    std::vector<exec::ValueData> fused =
        run(chain, {x, w, i64Bytes(splits), b, w2});
    ASSERT_EQ(fused.size(), 3u);
    std::vector<exec::ValueData> separate =
        run(alone, {fused[0].front().bytes, i64Bytes(splits), w2});
    ASSERT_EQ(separate.size(), 2u);
    ASSERT_EQ(fused[1].size(), separate[0].size());
    for (size_t i = 0; i < fused[1].size(); ++i) {
      SCOPED_TRACE(fused[1][i].name);
      EXPECT_TRUE(fused[1][i].bytes == separate[0][i].bytes);
    }
    EXPECT_TRUE(fused[2].front().bytes == separate[1].front().bytes) << "y2";
    // h within the bound of the CPU backend (which quantizes its own h).
    exec::Comparison cmp = test::gpuVersusCpu(
        chain, {x, w, i64Bytes(splits), b, w2}, *device_, *stream_, cache);
    EXPECT_EQ(cmp.difference, "");
  }
}

// Per-tensor FP8 current scaling with one amax per expert (E5M2 tokens,
// E4M3 weights, a bias): each expert's operands scaled by their own amax,
// within the bound of the CPU backend, and again after new split sizes
// move rows between experts (and so their amaxes) in a replayed graph.
TEST_F(GroupedGemmPlanGpu, PerExpertScalingRunsAndReplaysWithinTheBound) {
  rt::KernelCache cache("");
  const int64_t m = 700, k = 384, g = 4, n = 256;
  std::vector<float> x = normals(size_t(m * k), 11);
  std::vector<float> w = normals(size_t(g * n * k), 12);
  std::vector<float> b = normals(size_t(g * n), 13);
  for (size_t i = 200 * k; i < 331 * k; ++i) // expert 1's tokens larger
    x[i] *= 300.0f;
  for (size_t i = 2 * n * k; i < 3 * n * k; ++i) // expert 2's weight smaller
    w[i] /= 500.0f;
  const std::vector<std::vector<int64_t>> splits = {
      {200, 131, 0, 300}, {0, 0, 690, 0}, {1, 257, 0, 442}};
  // The fprop with a bias, then the dgrad (dy [m, n] by each expert's
  // weight read through its columnwise copy: K = 384 output columns); then
  // the NVFP4 fprop (each expert's dequantized values, 16x16 weight blocks,
  // the BF16 kernel) and the NVFP4 dgrad (dy stochastically rounded, the
  // stack through its 16x1 column blocks, then its 16x16 blocks); then the
  // NVFP4 fprop read as codes by the engine's NVFP4 kernel (16x16 weight
  // blocks; 1x16 ones with the tokens stochastically rounded).
  for (int variant = 0; variant < 7; ++variant) {
    const bool codes = variant >= 5;
    const bool dgrad = variant == 1 || variant == 3 || variant == 4,
               nvfp4 = variant >= 2;
    SCOPED_TRACE(variant == 0   ? "fprop"
                 : variant == 1 ? "dgrad"
                 : variant == 2 ? "NVFP4 fprop"
                 : variant == 3 ? "NVFP4 dgrad, 16x1 weight blocks"
                 : variant == 4 ? "NVFP4 dgrad, 16x16 weight blocks"
                 : variant == 5 ? "NVFP4 codes, 16x16 weight blocks"
                                : "NVFP4 codes, 1x16 weight blocks, tokens "
                                  "stochastically rounded");
    cg::Program p = te::test::perExpertScaledProgram(
        m, k, g, n, !dgrad,
        nvfp4 ? rt::Scheme::nvfp4(false, dgrad || variant == 6)
              : rt::Scheme::fp8Current(DType::E5M2),
        nvfp4 ? rt::Scheme::nvfp4(false, false, variant != 3 && variant != 6)
              : rt::Scheme::fp8Current(DType::E4M3),
        dgrad, codes);
    p.random.seed = 99;
    std::vector<float> xIn =
        dgrad ? normals(size_t(m * n), 14) : x; // dgrad: x is dy [m, n]
    std::vector<std::vector<uint8_t>> args = {bf16Bytes(xIn), bf16Bytes(w),
                                              i64Bytes(splits[0])};
    if (!dgrad)
      args.push_back(bf16Bytes(b));
    runThenReplayWithinTheBound(p, args, splits, *device_, *stream_, cache);
  }
}

// One operand quantized per expert beside another family's values (what
// te-lower-to-kernels dequantized), and two tensor-wide families: the
// per-expert side quantized to each expert's dequantized values, then the
// BF16 kernel - within the bound of the CPU backend, and after new split
// sizes in a replayed graph.
TEST_F(GroupedGemmPlanGpu, PerExpertBesideAnotherFamilyRunsWithinTheBound) {
  rt::KernelCache cache("");
  const int64_t m = 700, k = 384, g = 4, n = 256;
  std::vector<float> w = normals(size_t(g * n * k), 16);
  for (size_t i = 2 * n * k; i < 3 * n * k; ++i) // expert 2's weight smaller
    w[i] /= 500.0f;
  const std::vector<std::vector<int64_t>> splits = {
      {200, 131, 0, 300}, {0, 0, 690, 0}, {1, 257, 0, 442}};
  struct Case {
    const char *name;
    std::optional<rt::Scheme> x, w;
    bool dgrad;
  } cases[] = {{"per-tensor E4M3 tokens, values stack",
                rt::Scheme::fp8Current(DType::E4M3),
                {},
                false},
               {"NVFP4 dy stochastically rounded, values stack",
                rt::Scheme::nvfp4(false, true),
                {},
                true},
               {"NVFP4 tokens, per-tensor stack", rt::Scheme::nvfp4(),
                rt::Scheme::fp8Current(DType::E4M3, true), false},
               {"values dy, per-tensor E5M2 stack read columnwise",
                {},
                rt::Scheme::fp8Current(DType::E5M2),
                true},
               {"per-tensor dy, NVFP4 16x1 stack read columnwise",
                rt::Scheme::fp8Current(DType::E5M2), rt::Scheme::nvfp4(),
                true}};
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    const rt::Scheme any = rt::Scheme::fp8Current(DType::E4M3);
    cg::Program p = te::test::perExpertScaledProgram(m, k, g, n, !c.dgrad, any,
                                                     any, c.dgrad);
    auto &gg = std::get<cg::GroupedGemmKernel>(p.entries[0].kernels.back());
    gg.xScheme = c.x;
    gg.wScheme = c.w;
    ASSERT_EQ(cg::validate(p.entries[0]), "");
    p.random.seed = 77;
    const int64_t cols = c.dgrad ? n : k;
    std::vector<float> x = normals(size_t(m * cols), 17);
    for (int64_t i = 200 * cols; i < 331 * cols; ++i)
      x[size_t(i)] *= 300.0f; // expert 1's tokens larger
    std::vector<std::vector<uint8_t>> args = {bf16Bytes(x), bf16Bytes(w),
                                              i64Bytes(splits[0])};
    if (!c.dgrad)
      args.push_back(bf16Bytes(normals(size_t(g * n), 18)));
    runThenReplayWithinTheBound(p, args, splits, *device_, *stream_, cache);
  }
}

// Delayed scaling, one state per expert: the fprop (x and the stack) and
// the wgrad (dy and x) over eight steps, eager and then captured once and
// replayed, with new split sizes every step (so experts gain and lose rows,
// and one is empty at times): every expert's scale and amax history equal
// the CPU backend's bit for bit after each step, and the results are
// within the bound.
TEST_F(GroupedGemmPlanGpu,
       DelayedScalingPerExpertMatchesTheCpuEagerAndReplayed) {
  rt::KernelCache cache("");
  const int64_t m = 700, k = 384, g = 4, n = 256;
  const rt::Scheme e4m3 = rt::Scheme::fp8Delayed(DType::E4M3, 4),
                   e5m2 = rt::Scheme::fp8Delayed(DType::E5M2, 4,
                                                 rt::AmaxAlgo::MostRecent, 1);
  cg::Program fprop =
      te::test::perExpertScaledProgram(m, k, g, n, false, e4m3, e4m3);
  auto &gg = std::get<cg::GroupedGemmKernel>(fprop.entries[0].kernels.back());
  gg.xState = "moe.input.delayed_scaling";
  gg.wState = "moe.weight.delayed_scaling";
  cg::Program wgrad = test::groupedWgradProgram(m, n, k, g, false, false);
  auto &wk = std::get<cg::GroupedWgradKernel>(wgrad.entries[0].kernels[0]);
  wk.dyScheme = e5m2;
  wk.xScheme = e4m3;
  wk.dyState = "moe.grad_output.delayed_scaling";
  wk.xState = "moe.input.delayed_scaling";
  // The tokens alone per expert, beside the stack's values (another
  // family's, dequantized before): the values path's delayed cast.
  cg::Program oneSided = fprop;
  auto &og =
      std::get<cg::GroupedGemmKernel>(oneSided.entries[0].kernels.back());
  og.wScheme.reset();
  og.wState.clear();
  const std::vector<std::vector<int64_t>> splits = {
      {200, 131, 0, 300}, {0, 0, 690, 0},       {1, 257, 0, 442},
      {300, 300, 50, 50}, {175, 175, 175, 175}, {0, 700, 0, 0},
      {10, 20, 30, 40},   {699, 0, 0, 1}};
  for (int entry = 0; entry < 3; ++entry) {
    const bool wgradEntry = entry == 1;
    const cg::Program &p = entry == 0 ? fprop : entry == 1 ? wgrad : oneSided;
    ASSERT_EQ(cg::validate(p.entries[0]), "");
    std::vector<std::string> names;
    for (const cg::ScalingState &s : cg::scalingStates(p.entries[0]))
      names.push_back(s.name);
    ASSERT_EQ(names.size(), size_t(entry == 2 ? g : 2 * g));
    for (bool graph : {false, true}) {
      SCOPED_TRACE(std::string(entry == 0 ? "fprop"
                               : entry == 1
                                   ? "wgrad"
                                   : "fprop, tokens alone per expert") +
                   (graph ? ", graph replays" : ", eager runs"));
      exec::HostStore host;
      exec::DeviceStore device;
      host.declareStates(p);
      auto runner =
          exec::CudaRunner::create(p, p.entries[0], *device_, cache, &device);
      ASSERT_TRUE(runner) << runner.status().toString();
      for (size_t i = 0; i < splits.size(); ++i) {
        SCOPED_TRACE("step " + std::to_string(i));
        std::vector<float> a =
            normals(size_t(m * (wgradEntry ? n : k)), 40 + i);
        std::vector<float> b =
            normals(size_t(wgradEntry ? m * k : g * n * k), 60 + i);
        for (float &v : a) // amaxes that move between steps
          v *= float(1 + i % 3);
        std::vector<std::vector<uint8_t>> args = {bf16Bytes(a), bf16Bytes(b),
                                                  i64Bytes(splits[i])};
        for (size_t j = 0; j < args.size(); ++j)
          ASSERT_TRUE(runner->setArgument(j, args[j], *stream_));
        rt::Status st =
            graph && i > 0 ? runner->replay(*stream_) : runner->run(*stream_);
        ASSERT_TRUE(st) << st.toString();
        if (graph && i == 0) {
          ASSERT_TRUE(runner->capture(*stream_));
        }
        auto cuda = runner->results(*stream_);
        auto cpu = exec::runCpu(p, p.entries[0], args, nullptr, nullptr, &host);
        ASSERT_TRUE(cuda && cpu);
        exec::Comparison c = exec::compareResults(*cpu, *cuda, "cpu", "cuda");
        EXPECT_EQ(c.difference, "");
        EXPECT_LE(c.worstBoundRatio, 1.0);
        for (const std::string &name : names) {
          auto state = exec::readState(device, name, *stream_);
          ASSERT_TRUE(state) << state.status().toString();
          EXPECT_EQ(
              exec::firstDifference({host.read(name)}, {*state}, "cpu", "cuda"),
              "")
              << name;
        }
      }
    }
  }
}

TEST_F(GroupedGemmPlanGpu, WgradRunsAndReplaysWithNewSplitSizesWithinTheBound) {
  rt::KernelCache cache("");
  // 4 experts, N = 256, K = 136, M_total = 700: the grouped quantize of dy
  // (with each expert's bias gradient) and x, then the K-grouped GEMM;
  // block FP8, bf16, MXFP8 (E5M2 dy, E4M3 x: each expert's ragged rows
  // quantized and dequantized in whole 32-row blocks, then the BF16 GEMM),
  // per-tensor FP8 current scaling (one amax per expert, E5M2 dy), and
  // NVFP4 (16-row blocks; TE's recipe - both Hadamard-transformed, dy
  // stochastically rounded - and without the transform; K = 144, NVFP4
  // needs whole 16-element blocks); then two families, each laid out as
  // bf16 values for the BF16 GEMM: block FP8 (E5M2) dy with MXFP8 x, and
  // NVFP4 dy with per-tensor FP8 x (its values by each expert's amax).
  const int64_t m = 700, n = 256, g = 4;
  std::vector<float> dy = normals(size_t(m * n), 7),
                     x = normals(size_t(m * 144), 8);
  for (size_t i = 200 * n; i < 331 * n; ++i) // expert 1's dy larger
    dy[i] *= 100.0f;
  for (int variant = 0; variant < 8; ++variant) {
    const bool fp8 = variant == 0, mxfp8 = variant == 2, current = variant == 3,
               nvfp4 = variant == 4 || variant == 5;
    const int64_t k = nvfp4 || variant == 7 ? 144 : 136;
    SCOPED_TRACE(fp8            ? "block FP8"
                 : mxfp8        ? "MXFP8"
                 : current      ? "per-tensor FP8"
                 : variant == 4 ? "NVFP4 with the transform"
                 : nvfp4        ? "NVFP4"
                 : variant == 6 ? "block FP8 dy, MXFP8 x"
                 : variant == 7 ? "NVFP4 dy, per-tensor FP8 x"
                                : "bf16");
    cg::Program p = test::groupedWgradProgram(m, n, k, g, fp8, true);
    auto &w = std::get<cg::GroupedWgradKernel>(p.entries[0].kernels[0]);
    if (mxfp8) {
      w.dyScheme = rt::Scheme::mxfp8(DType::E5M2);
      w.xScheme = rt::Scheme::mxfp8(DType::E4M3);
    }
    if (current) {
      w.dyScheme = rt::Scheme::fp8Current(DType::E5M2);
      w.xScheme = rt::Scheme::fp8Current(DType::E4M3, true);
    }
    if (nvfp4) {
      w.dyScheme = rt::Scheme::nvfp4(variant == 4, true);
      w.xScheme = rt::Scheme::nvfp4(variant == 4);
    }
    if (variant == 6) {
      w.dyScheme = rt::Scheme::fp8Block(DType::E5M2, 1, 128);
      w.xScheme = rt::Scheme::mxfp8(DType::E4M3);
    }
    if (variant == 7) {
      w.dyScheme = rt::Scheme::nvfp4(false, true);
      w.xScheme = rt::Scheme::fp8Current(DType::E4M3);
    }
    const std::vector<std::vector<int64_t>> splits = {
        {200, 131, 0, 300}, {0, 0, 690, 0}, {1, 257, 0, 442}};
    std::vector<float> xk(x.begin(), x.begin() + m * k);
    std::vector<std::vector<uint8_t>> args = {bf16Bytes(dy), bf16Bytes(xk),
                                              i64Bytes(splits[0])};
    exec::Comparison first =
        test::gpuVersusCpu(p, args, *device_, *stream_, cache);
    EXPECT_EQ(first.difference, "");
    EXPECT_EQ(first.boundedBuffers, 1u); // dW; db is bit for bit
    EXPECT_EQ(first.exactBuffers, 1u);
    replayWithNewSplits(p, args, 2, splits, *device_, *stream_, cache);
  }
}

/// One MoE layer's whole train step as one entry: x, W, dy, the split
/// sizes and the bias in; y, dx, dW and db out. Block FP8 (1x128 tokens,
/// 128x128 weight): x rowwise, W in both directions, dy rowwise, then the
/// fprop (with the bias), the dgrad, and the grouped wgrad with db.
cg::Program moeTrainStep(int64_t m, int64_t k, int64_t n, int64_t g) {
  using test::tensor;
  cg::Entry e;
  e.name = "train_step";
  e.values = {
      tensor("x", {m, k}, DType::BF16), tensor("w", {g, n, k}, DType::BF16),
      tensor("dy", {m, n}, DType::BF16), tensor("splits", {g}, DType::I64),
      tensor("b", {g, n}, DType::BF16)};
  e.args = {0, 1, 2, 3, 4};
  rt::Scheme tokens = rt::Scheme::fp8Block(DType::E4M3, 1, 128);
  rt::Scheme tiles = rt::Scheme::fp8Block(DType::E4M3, 128, 128);
  auto quantize = [&](int input, const rt::Scheme &s, bool rowwise,
                      bool columnwise) {
    cg::Value q = e.values[size_t(input)];
    q.kind = cg::Value::Kind::Quantized;
    q.name += "_q";
    if (rowwise)
      q.rowwise = s;
    if (columnwise)
      q.columnwise = s;
    e.values.push_back(q);
    int v = int(e.values.size()) - 1;
    cg::QuantizeKernel qk;
    qk.name = "quantize_" + q.name;
    qk.input = input;
    if (rowwise)
      qk.stages.push_back({s, rt::Direction::Rowwise, v});
    if (columnwise)
      qk.stages.push_back({s, rt::Direction::Columnwise, v});
    e.kernels.push_back(qk);
    return v;
  };
  auto result = [&](const char *name, std::vector<int64_t> shape, DType t) {
    e.values.push_back(tensor(name, std::move(shape), t));
    return int(e.values.size()) - 1;
  };
  int xq = quantize(0, tokens, true, false);
  int wq = quantize(1, tiles, true, true);
  int dyq = quantize(2, tokens, true, false);
  cg::GroupedGemmKernel fprop;
  fprop.name = "fprop";
  fprop.x = xq;
  fprop.w = wq;
  fprop.splits = 3;
  fprop.bias = 4;
  fprop.output = result("y", {m, n}, DType::BF16);
  e.kernels.push_back(fprop);
  cg::GroupedGemmKernel dgrad;
  dgrad.name = "dgrad";
  dgrad.x = dyq;
  dgrad.w = wq;
  dgrad.splits = 3;
  dgrad.weightColumnwise = true;
  dgrad.output = result("dx", {m, k}, DType::BF16);
  e.kernels.push_back(dgrad);
  cg::GroupedWgradKernel wgrad;
  wgrad.name = "wgrad";
  wgrad.dy = 2;
  wgrad.x = 0;
  wgrad.splits = 3;
  wgrad.dyScheme = wgrad.xScheme = tokens;
  wgrad.output = result("dw", {g, n, k}, DType::F32);
  wgrad.biasGrad = result("db", {g, n}, DType::F32);
  e.kernels.push_back(wgrad);
  e.results = {fprop.output, dgrad.output, wgrad.output, wgrad.biasGrad};
  cg::Program p;
  p.entries.push_back(e);
  return p;
}

TEST_F(GroupedGemmPlanGpu, AWholeTrainStepReplaysInAGraphWithNewSplitSizes) {
  rt::KernelCache cache("");
  const int64_t m = 900, k = 384, n = 256, g = 4;
  cg::Program p = moeTrainStep(m, k, n, g);
  ASSERT_EQ(cg::validate(p.entries[0]), "");
  std::vector<std::vector<uint8_t>> args = {
      bf16Bytes(normals(size_t(m * k), 11)),
      bf16Bytes(normals(size_t(g * n * k), 12)),
      bf16Bytes(normals(size_t(m * n), 13)),
      {},
      bf16Bytes(normals(size_t(g * n), 14))};
  // Same M_total, new split sizes each replay: ragged with padding, one
  // expert with all but a few rows, empty experts.
  const std::vector<std::vector<int64_t>> splits = {
      {300, 1, 250, 300}, {0, 0, 880, 0}, {128, 0, 0, 772}};
  std::vector<exec::Comparison> replays =
      replayWithNewSplits(p, args, 3, splits, *device_, *stream_, cache);
  EXPECT_EQ(replays.size(), splits.size());
  for (const exec::Comparison &c : replays) {
    EXPECT_EQ(c.boundedBuffers, 3u); // y, dx, dW
    EXPECT_EQ(c.exactBuffers, 1u);   // db, bit for bit
  }
}

} // namespace
