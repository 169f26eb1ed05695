//===- DoubleQuantizeTest.cpp - columnwise from the dequantized rowwise ---===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// docs/Numerics.md §11: a hybrid with columnwise_source =
// rowwise_dequantized quantizes its columnwise direction from the values
// its rowwise quantization dequantizes to. One quantize stage of such a
// value must equal the three kernels it stands for - quantize rowwise,
// dequantize to the input's type, quantize columnwise - on the CPU backend,
// and the GPU must match the CPU bit for bit.
//
//===----------------------------------------------------------------------===//

#include "BackendComparison.h"
#include "ProgramHelpers.h"

#include "te/codegen/PlanBuilder.h"
#include "te/codegen/QuantizeEmitter.h"
#include "te/exec/CpuBackend.h"

#include <gtest/gtest.h>

namespace te {
namespace {

using rt::Direction;
using rt::DType;
using rt::Scheme;

struct Pairing {
  std::string label;
  Scheme rowwise, columnwise;
  int64_t m = 256, k = 320;
  bool holdRowwise = true;
  DType input = DType::BF16;
};

/// `x` as argument bytes of the pairing's input type.
std::vector<uint8_t> inputBytes(const Pairing &c, const std::vector<float> &x) {
  if (c.input == DType::BF16)
    return test::bf16Bytes(x);
  std::vector<uint8_t> out(4 * x.size());
  std::memcpy(out.data(), x.data(), out.size());
  return out;
}

cg::Value quantizedValue(std::string name, std::vector<int64_t> shape,
                         const Pairing &c) {
  cg::Value v = test::tensor(std::move(name), std::move(shape), c.input);
  v.kind = cg::Value::Kind::Quantized;
  if (c.holdRowwise)
    v.rowwise = c.rowwise;
  v.columnwise = c.columnwise;
  v.columnwiseSource = c.rowwise;
  return v;
}

/// x -> one quantize kernel writing the double-quantized value.
cg::Program doubled(const Pairing &c) {
  cg::Entry e;
  e.name = "double";
  e.values = {test::tensor("x", {c.m, c.k}, c.input),
              quantizedValue("q", {c.m, c.k}, c)};
  e.args = {0};
  e.results = {1};
  cg::QuantizeKernel q{"te_quantize_0", 0, {}};
  if (c.holdRowwise)
    q.stages.push_back({c.rowwise, Direction::Rowwise, 1});
  q.stages.push_back({c.columnwise, Direction::Columnwise, 1});
  e.kernels.push_back(q);
  cg::Program p;
  p.entries.push_back(e);
  return p;
}

/// The same by hand: quantize rowwise, dequantize to bf16, quantize that
/// columnwise; returns the rowwise and the columnwise values.
cg::Program byHand(const Pairing &c) {
  cg::Entry e;
  e.name = "by_hand";
  cg::Value row = test::tensor("r", {c.m, c.k}, c.input);
  row.kind = cg::Value::Kind::Quantized;
  row.rowwise = c.rowwise;
  cg::Value col = row;
  col.name = "c";
  col.rowwise.reset();
  col.columnwise = c.columnwise;
  e.values = {test::tensor("x", {c.m, c.k}, c.input), row,
              test::tensor("d", {c.m, c.k}, c.input), col};
  e.args = {0};
  e.results = {1, 3};
  e.kernels.push_back(cg::QuantizeKernel{
      "te_quantize_0", 0, {{c.rowwise, Direction::Rowwise, 1}}});
  e.kernels.push_back(
      cg::DequantizeKernel{"te_dequantize_1", 1, Direction::Rowwise, 2});
  e.kernels.push_back(cg::QuantizeKernel{
      "te_quantize_2", 2, {{c.columnwise, Direction::Columnwise, 3}}});
  cg::Program p;
  p.entries.push_back(e);
  return p;
}

std::vector<Pairing> pairings() {
  Scheme mx = Scheme::mxfp8(DType::E4M3), mx5 = Scheme::mxfp8(DType::E5M2);
  Scheme fp4 = Scheme::nvfp4(), fp4rht = Scheme::nvfp4(/*rht=*/true);
  Scheme row128 = Scheme::fp8Block(DType::E4M3, 1, 128, /*pow2=*/true);
  Scheme tile = Scheme::fp8Block(DType::E4M3, 128, 128);
  Scheme current = Scheme::fp8Current(DType::E4M3);
  return {{"mxfp8_mxfp8", mx, mx},
          {"mxfp8_e5m2", mx, mx5},
          {"mxfp8_nvfp4_rht", mx, fp4rht},
          {"nvfp4_mxfp8", fp4, mx},
          {"nvfp4_nvfp4", fp4, fp4},
          {"block_1x128_block_1x128", row128, row128, 256, 200},
          {"block_128x128_mxfp8", tile, mx, 160, 224},
          {"current_nvfp4", current, fp4},
          {"mxfp8_nvfp4_columnwise_only", mx, fp4, 256, 320, false},
          {"nvfp4_mxfp8_columnwise_only", fp4, mx, 256, 320, false},
          {"mxfp8_block_1x128_f32", mx, row128, 160, 288, true, DType::F32},
          {"nvfp4_block_128x128_ragged", fp4, tile, 144, 208}};
}

class DoubleQuantize : public ::testing::TestWithParam<Pairing> {};

TEST_P(DoubleQuantize, OneStageIsTheThreeKernelsItStandsFor) {
  const Pairing &c = GetParam();
  cg::Program one = doubled(c), three = byHand(c);
  ASSERT_EQ(cg::validate(one.entries[0]), "");
  std::vector<float> x = test::normals(size_t(c.m * c.k), 5);
  x[7] = 300.0f; // an outlier: its block's scale differs from the rest
  auto got = exec::runCpu(one, one.entries[0], {inputBytes(c, x)});
  ASSERT_TRUE(got) << got.status().toString();
  auto want = exec::runCpu(three, three.entries[0], {inputBytes(c, x)});
  ASSERT_TRUE(want) << want.status().toString();
  // got: [rowwise..., columnwise...]; want: [rowwise...], [columnwise...].
  std::vector<exec::NamedBuffer> expected;
  if (c.holdRowwise)
    expected = (*want)[0];
  expected.insert(expected.end(), (*want)[1].begin(), (*want)[1].end());
  const exec::ValueData &actual = (*got)[0];
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(actual[i].name, expected[i].name);
    EXPECT_TRUE(actual[i].bytes == expected[i].bytes)
        << expected[i].name << " differs from the three-kernel composition";
  }
  // And it is not the columnwise quantization of x itself (the test could
  // not tell the two apart otherwise).
  cg::Program plain = one;
  plain.entries[0].values[1].columnwiseSource.reset();
  auto direct = exec::runCpu(plain, plain.entries[0], {inputBytes(c, x)});
  ASSERT_TRUE(direct);
  bool differs = false;
  for (size_t i = 0; i < actual.size(); ++i)
    differs |= (*direct)[0][i].bytes != actual[i].bytes;
  EXPECT_TRUE(differs) << "double quantization changed nothing";
}

TEST_P(DoubleQuantize, CompilesWithNvrtc) {
  cg::Program p = doubled(GetParam());
  rt::KernelCache cache("");
  rt::Expected<size_t> n = exec::compileEntry(p, p.entries[0], cache);
  if (!n && n.status().code() == rt::StatusCode::LibraryMissing)
    GTEST_SKIP() << n.status().toString();
  ASSERT_TRUE(n) << n.status().toString();
  // One source in one read (its amax pre-pass included), else the rowwise
  // quantize, the dequantize and the columnwise quantize.
  bool one = cg::doubleQuantizesInOneRead(GetParam().rowwise,
                                          GetParam().columnwise);
  EXPECT_EQ(*n, one ? 1u : 3u);
}

TEST_P(DoubleQuantize, GpuMatchesTheCpuBitForBit) {
  const Pairing &c = GetParam();
  auto gpu = test::GpuStream::open();
  if (!gpu.stream)
    GTEST_SKIP() << gpu.why;
  rt::KernelCache cache;
  std::vector<float> x = test::normals(size_t(c.m * c.k), 6);
  exec::Comparison cmp = test::gpuVersusCpu(doubled(c), {inputBytes(c, x)},
                                            *gpu.device, *gpu.stream, cache);
  EXPECT_EQ(cmp.difference, "");
}

INSTANTIATE_TEST_SUITE_P(Pairings, DoubleQuantize,
                         ::testing::ValuesIn(pairings()),
                         [](const ::testing::TestParamInfo<Pairing> &info) {
                           return info.param.label;
                         });

TEST(DoubleQuantizePlan, OneReadWhereEveryScaleStaysInATile) {
  // The kernels each plan launches, by entry name.
  auto launches = [](const Pairing &c) {
    cg::Program p = doubled(c);
    rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(p, p.entries[0]);
    EXPECT_TRUE(plan) << plan.status().toString();
    std::vector<std::string> names;
    for (const rt::KernelSpec &k : plan->kernels.at(0).plan.kernels)
      names.push_back(k.entry);
    return names;
  };
  for (const Pairing &c : pairings()) {
    SCOPED_TRACE(c.label);
    bool one = cg::doubleQuantizesInOneRead(c.rowwise, c.columnwise);
    std::vector<std::string> names = launches(c);
    bool dequantizes = false, fused = false, direct = false;
    for (const std::string &n : names) {
      dequantizes |= n.find("_dequantize") != std::string::npos;
      fused |= n == "te_quantize_0_double0";
      direct |= n == "te_quantize_0";
    }
    EXPECT_EQ(fused, one);
    EXPECT_EQ(dequantizes, !one);
    // The rowwise direction the value holds is the double quantization's
    // rowwise step: no direct pass writes it a second time.
    EXPECT_FALSE(direct);
    // One read: the rowwise direction the value holds is written by the
    // fused kernel only (no direct pass), after the input's amax pre-pass
    // where the rowwise scheme needs it.
    if (one) {
      EXPECT_EQ(names.size(), c.rowwise.scalesByTensorAmax() ? 2u : 1u);
    }
  }
  EXPECT_TRUE(cg::doubleQuantizesInOneRead(Scheme::nvfp4(),
                                           Scheme::mxfp8(DType::E4M3)));
  EXPECT_FALSE(cg::doubleQuantizesInOneRead(Scheme::mxfp8(DType::E4M3),
                                            Scheme::nvfp4()));
  EXPECT_FALSE(cg::doubleQuantizesInOneRead(Scheme::fp8Current(DType::E4M3),
                                            Scheme::mxfp8(DType::E4M3)));
}

TEST(DoubleQuantizeRules, TheOptimizerKernelRefusesIt) {
  Pairing c{"mx", Scheme::mxfp8(DType::E4M3), Scheme::mxfp8(DType::E4M3)};
  cg::Entry e;
  e.values = {test::tensor("lr", {}, DType::F32),
              test::tensor("step", {}, DType::I64)};
  for (const char *n : {"p", "g", "m", "v", "p1", "m1", "v1"})
    e.values.push_back(test::tensor(n, {c.m, c.k}, DType::F32));
  e.values[3].dtype = DType::BF16; // the gradient
  e.values.push_back(quantizedValue("q", {c.m, c.k}, c));
  cg::AdamKernel a;
  a.name = "te_adam_0";
  a.lr = 0;
  a.step = 1;
  a.tensors.push_back({2, 3, 4, 5, 6, 7, 8, {9}});
  a.stages = {{c.columnwise, Direction::Columnwise, 0}};
  std::string why = cg::validateKernel(e, a);
  EXPECT_NE(why.find("double-quantized"), std::string::npos) << why;
}

} // namespace
} // namespace te
