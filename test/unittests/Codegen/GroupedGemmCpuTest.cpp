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
// the GPU. The program's checks refuse malformed grouped GEMMs.
//
//===----------------------------------------------------------------------===//

#include "ProgramHelpers.h"

#include "te/codegen/GroupedGemmEmitter.h"
#include "te/codegen/PlanBuilder.h"
#include "te/exec/CpuBackend.h"
#include "te/formats/GemmRules.h"
#include "te/runtime/Cutlass.h"
#include "te/runtime/reference/Codecs.h"
#include "te/runtime/reference/Gemm.h"
#include "te/runtime/reference/Quantize.h"

#include <gtest/gtest.h>

#include <optional>

#include <cmath>
#include <cstring>

using namespace te;
using rt::Direction;
using rt::DType;
using rt::Scheme;
namespace ref = rt::ref;
using te::test::bf16Bytes;
using te::test::groupedProgram;
using te::test::groupedWgradProgram;
using te::test::i64Bytes;
using te::test::normals;
using te::test::perExpertScaledProgram;
using te::test::tensor;

namespace {} // namespace

TEST(GroupedGemmCpu, EachExpertsRowsAreItsOwnProgram) {
  const int64_t m = 300, k = 256, g = 3, n = 128;
  std::vector<float> x = normals(m * k, 1), w = normals(g * n * k, 2);
  std::vector<float> b = normals(g * n, 3);
  // bf16, block FP8 and MXFP8 (the engine's MXFP8 kernel, whose rule the
  // CPU backend runs: ref::groupedMxfp8Gemm), each with and without a bias.
  for (int variant = 0; variant < 6; ++variant) {
    bool mxfp8 = variant >= 4, fp8 = (variant & 1) || mxfp8,
         withBias = variant & 2 || variant == 5;
    SCOPED_TRACE(std::string(mxfp8 ? "MXFP8"
                             : fp8 ? "block FP8"
                                   : "bf16") +
                 (withBias ? " + bias" : ""));
    cg::Program p = groupedProgram(m, k, g, n, fp8, false, withBias,
                                   DType::E4M3, mxfp8);
    ASSERT_EQ(cg::validate(p.entries[0]), "");
    std::vector<int64_t> splits = {120, 0, 150}; // 30 padding rows
    std::vector<std::vector<uint8_t>> args = {bf16Bytes(x), bf16Bytes(w),
                                              i64Bytes(splits)};
    if (withBias)
      args.push_back(bf16Bytes(b));
    auto out = exec::runCpu(p, p.entries[0], args);
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
      cg::Program alone = groupedProgram(splits[e], k, 1, n, fp8, false,
                                         withBias, DType::E4M3, mxfp8);
      std::vector<float> xe(x.begin() + row * k,
                            x.begin() + (row + splits[e]) * k);
      std::vector<float> we(w.begin() + e * n * k, w.begin() + (e + 1) * n * k);
      std::vector<std::vector<uint8_t>> oneArgs = {bf16Bytes(xe), bf16Bytes(we),
                                                   i64Bytes({splits[e]})};
      if (withBias)
        oneArgs.push_back(bf16Bytes(
            std::vector<float>(b.begin() + e * n, b.begin() + (e + 1) * n)));
      auto one = exec::runCpu(alone, alone.entries[0], oneArgs);
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

/// y = x W^T (+ b) for one expert as a dense per-tensor FP8 te.linear
/// computes it: x [m, k] and w [n, k] quantized rowwise by `xs` and `ws`
/// (one amax each), one GEMM with the bias.
cg::Program densePerTensorFprop(int64_t m, int64_t k, int64_t n,
                                const Scheme &xs, const Scheme &ws) {
  cg::Entry e;
  e.name = "fprop";
  e.values = {tensor("x", {m, k}, DType::BF16),
              tensor("w", {n, k}, DType::BF16), tensor("b", {n}, DType::BF16)};
  e.args = {0, 1, 2};
  for (int i = 0; i < 2; ++i) {
    cg::Value q = e.values[i];
    q.kind = cg::Value::Kind::Quantized;
    q.name += "_q";
    q.rowwise = i == 0 ? xs : ws;
    e.values.push_back(q);
    cg::QuantizeKernel qk;
    qk.name = "quantize_" + q.name;
    qk.input = i;
    qk.stages = {{*q.rowwise, Direction::Rowwise, int(e.values.size()) - 1}};
    e.kernels.push_back(qk);
  }
  e.values.push_back(tensor("y", {m, n}, DType::BF16));
  cg::GemmKernel g;
  g.name = "gemm";
  g.a = 3;
  g.b = 4;
  g.bias = 2;
  g.transposeB = true;
  g.output = 5;
  e.kernels.push_back(g);
  e.results = {5};
  cg::Program p;
  p.entries.push_back(e);
  return p;
}

// Per-tensor FP8 with one amax per expert: each expert's rows agree with
// that expert run as its own per-tensor te.linear (its own amaxes) within
// the two results' bounds - the grouped GEMM promotes every 128-K block,
// the dense reference once (docs/Numerics.md §7.4) - and the experts'
// amaxes differ by orders of magnitude, so one amax for all would not.
TEST(GroupedGemmCpu, PerTensorRowsAreEachExpertsOwnLinearWithinTheBound) {
  const int64_t m = 300, k = 384, g = 3, n = 128;
  const Scheme xs = Scheme::fp8Current(DType::E5M2),
               ws = Scheme::fp8Current(DType::E4M3, true);
  std::vector<float> x = normals(m * k, 21), w = normals(g * n * k, 22);
  std::vector<float> b = normals(g * n, 23);
  for (int64_t i = 0; i < 120 * k; ++i) // expert 0's tokens tiny
    x[size_t(i)] = ref::bf16ToFloat(ref::floatToBF16(x[size_t(i)] / 4096.0f));
  for (int64_t i = 2 * n * k; i < 3 * n * k; ++i) // expert 2's weight large
    w[size_t(i)] = ref::bf16ToFloat(ref::floatToBF16(w[size_t(i)] * 512.0f));
  cg::Program p = te::test::perExpertScaledProgram(m, k, g, n, true, xs, ws);
  std::vector<int64_t> splits = {120, 0, 150}; // 30 padding rows
  auto out = exec::runCpu(
      p, p.entries[0],
      {bf16Bytes(x), bf16Bytes(w), i64Bytes(splits), bf16Bytes(b)});
  ASSERT_TRUE(out) << out.status().toString();
  const exec::NamedBuffer &y = (*out)[0][0];
  ASSERT_EQ(y.tolerance.size(), size_t(m * n));
  int64_t row = 0, checked = 0;
  for (int64_t e = 0; e < g; ++e) {
    if (splits[e] == 0)
      continue;
    cg::Program alone = densePerTensorFprop(splits[e], k, n, xs, ws);
    ASSERT_EQ(cg::validate(alone.entries[0]), "");
    std::vector<float> xe(x.begin() + row * k,
                          x.begin() + (row + splits[e]) * k);
    std::vector<float> we(w.begin() + e * n * k, w.begin() + (e + 1) * n * k);
    std::vector<float> be(b.begin() + e * n, b.begin() + (e + 1) * n);
    auto one = exec::runCpu(alone, alone.entries[0],
                            {bf16Bytes(xe), bf16Bytes(we), bf16Bytes(be)});
    ASSERT_TRUE(one) << one.status().toString();
    const exec::NamedBuffer &want = (*one)[0][0];
    ASSERT_EQ(want.tolerance.size(), size_t(splits[e] * n));
    for (int64_t i = 0; i < splits[e] * n; ++i) {
      uint16_t a, c;
      std::memcpy(&a, &y.bytes[size_t(2 * (row * n + i))], 2);
      std::memcpy(&c, &want.bytes[size_t(2 * i)], 2);
      float diff = std::fabs(ref::bf16ToFloat(a) - ref::bf16ToFloat(c));
      ASSERT_LE(diff,
                y.tolerance[size_t(row * n + i)] + want.tolerance[size_t(i)])
          << "expert " << e << " element " << i;
      ++checked;
    }
    row += splits[e];
  }
  EXPECT_EQ(checked, 270 * n);
  for (size_t i = size_t(row * n * 2); i < y.bytes.size(); ++i)
    ASSERT_EQ(y.bytes[i], 0) << "padding byte " << i;
}

/// dx = dy W for one expert as te.linear_grad's dgrad computes it on
/// Hopper, one (non-grouped) GEMM: dy quantized rowwise by `dyScheme` and W
/// [n, k] columnwise by `wScheme` (both or neither) - block FP8 read as
/// codes, NVFP4 dequantized to bf16 first (the emulated GEMM) - or bf16 (W
/// read as it is).
cg::Program denseDgrad(int64_t m, int64_t n, int64_t k,
                       const std::optional<Scheme> &dyScheme,
                       const std::optional<Scheme> &wScheme) {
  cg::Entry e;
  e.name = "dgrad";
  e.values = {tensor("dy", {m, n}, DType::BF16),
              tensor("w", {n, k}, DType::BF16)};
  e.args = {0, 1};
  int operand[2] = {0, 1};
  for (int i = 0; i < 2 && dyScheme; ++i) {
    const Scheme &s = i == 0 ? *dyScheme : *wScheme;
    Direction d = i == 0 ? Direction::Rowwise : Direction::Columnwise;
    cg::Value q = e.values[i];
    q.kind = cg::Value::Kind::Quantized;
    q.name += "_q";
    (i == 0 ? q.rowwise : q.columnwise) = s;
    e.values.push_back(q);
    cg::QuantizeKernel qk;
    qk.name = "quantize_" + q.name;
    qk.input = i;
    qk.stages = {{s, d, int(e.values.size()) - 1}};
    operand[i] = qk.stages[0].value;
    e.kernels.push_back(qk);
    if (s.kind == rt::SchemeKind::Nvfp4) {
      cg::DequantizeKernel dk;
      dk.name = "dequantize_" + q.name;
      dk.input = operand[i];
      dk.dir = d;
      e.values.push_back(
          tensor(q.name + "_bf16", e.values[i].shape, DType::BF16));
      dk.output = operand[i] = int(e.values.size()) - 1;
      e.kernels.push_back(dk);
    }
  }
  e.values.push_back(tensor("dx", {m, k}, DType::BF16));
  cg::GemmKernel g;
  g.name = "gemm";
  g.a = operand[0];
  g.b = operand[1];
  g.output = int(e.values.size()) - 1;
  e.kernels.push_back(g);
  e.results = {g.output};
  cg::Program p;
  p.entries.push_back(e);
  return p;
}

/// The grouped dgrad of 3 experts (N = 256 contracted, K = 384 out, 300
/// rows split as `splits`; `fp8`: block FP8 operands, dy's codes
/// `dyElement`, else bf16) on the CPU backend: each expert's rows must equal
/// denseDgrad on its rows and weight, and padding rows must be zero.
void checkDgradAgainstEachExpert(bool fp8, const std::vector<int64_t> &splits,
                                 DType dyElement = DType::E4M3) {
  const int64_t m = 300, n = 256, k = 384, g = 3;
  std::vector<float> dy = normals(size_t(m * n), fp8 ? 3 : 5),
                     w = normals(size_t(g * n * k), fp8 ? 4 : 6);
  cg::Program p =
      groupedProgram(m, k, g, n, fp8, /*dgrad=*/true, false, dyElement);
  ASSERT_EQ(cg::validate(p.entries[0]), "");
  auto out = exec::runCpu(p, p.entries[0],
                          {bf16Bytes(dy), bf16Bytes(w), i64Bytes(splits)});
  ASSERT_TRUE(out) << out.status().toString();
  const std::vector<uint8_t> &got = (*out)[0][0].bytes;
  ASSERT_EQ(got.size(), size_t(m * k * 2));
  EXPECT_EQ((*out)[0][0].tolerance.size(), size_t(m * k)); // bounded
  int64_t row = 0;
  for (int64_t e = 0; e < g; ++e) {
    if (splits[size_t(e)] == 0)
      continue;
    int64_t rows = splits[size_t(e)];
    cg::Program one =
        fp8 ? denseDgrad(rows, n, k, Scheme::fp8Block(dyElement, 1, 128),
                         Scheme::fp8Block(DType::E4M3, 128, 128))
            : denseDgrad(rows, n, k, std::nullopt, std::nullopt);
    std::vector<float> dye(dy.begin() + row * n, dy.begin() + (row + rows) * n);
    std::vector<float> we(w.begin() + e * n * k, w.begin() + (e + 1) * n * k);
    auto want =
        exec::runCpu(one, one.entries[0], {bf16Bytes(dye), bf16Bytes(we)});
    ASSERT_TRUE(want) << want.status().toString();
    const std::vector<uint8_t> &bytes = (*want)[0][0].bytes;
    EXPECT_EQ(std::memcmp(got.data() + row * k * 2, bytes.data(), bytes.size()),
              0)
        << "expert " << e;
    row += rows;
  }
  for (size_t i = size_t(row * k * 2); i < got.size(); ++i)
    ASSERT_EQ(got[i], 0) << "padding byte " << i;
}

// NVFP4 read as codes (te-legalize-target's `generated` path, the engine's
// NVFP4 kernel): each expert's rows are ref::nvfp4Gemm of its tokens and
// its weight (16x16 blocks) each quantized alone by ref::quantize, plus its
// bias, rounded to bf16, bit for bit; padding rows are zero.
TEST(GroupedGemmCpu, Nvfp4CodesRowsAreEachExpertsNvfp4Gemm) {
  const int64_t m = 300, k = 128, g = 3, n = 256;
  const std::vector<int64_t> splits = {130, 0, 150};
  std::vector<float> x = normals(size_t(m * k), 21),
                     w = normals(size_t(g * n * k), 22),
                     b = normals(size_t(g * n), 23);
  for (size_t i = 130 * k; i < 280 * k; ++i) // expert 2's tokens larger
    x[i] *= 40.0f;
  const Scheme xs = Scheme::nvfp4(), ws = Scheme::nvfp4(false, false, true);
  cg::Program p = te::test::perExpertScaledProgram(m, k, g, n, true, xs, ws,
                                                   false, /*nvfp4Codes=*/true);
  ASSERT_EQ(cg::validate(p.entries[0]), "");
  std::vector<std::vector<uint8_t>> args = {bf16Bytes(x), bf16Bytes(w),
                                            i64Bytes(splits), bf16Bytes(b)};
  auto out = exec::runCpu(p, p.entries[0], args);
  ASSERT_TRUE(out) << out.status().toString();
  const std::vector<uint8_t> &got = (*out)[0][0].bytes;
  ASSERT_EQ(got.size(), size_t(m * n * 2));
  // Each expert alone: its rows' bf16 codes, quantized rowwise.
  auto operand = [&](const std::vector<uint8_t> &bits, int64_t row0,
                     int64_t rows, const Scheme &s) {
    ref::QuantizedTensor q =
        ref::quantize(bits.data() + row0 * k * 2, ref::SourceType::BF16, rows,
                      k, s, ref::kRowwiseMask, ref::QuantizeOptions{});
    EXPECT_TRUE(q.ok()) << q.error;
    ref::Nvfp4Operand op;
    op.rows = rows;
    op.k = k;
    op.codes = q.rowwise->data.bytes;
    op.scales = q.rowwise->scaleInv.bytes;
    op.scaleStride = q.rowwise->scaleInv.desc.cols;
    op.amax = ref::loadF32(q.rowwise->amax, 0);
    return op;
  };
  const std::vector<uint8_t> xBits = args[0], wBits = args[1];
  int64_t row = 0;
  for (int64_t e = 0; e < g; ++e) {
    const int64_t rows = splits[size_t(e)];
    if (rows == 0)
      continue;
    std::string error;
    std::vector<float> want =
        ref::nvfp4Gemm(operand(xBits, row, rows, xs),
                       operand(wBits, e * n, n, ws), b.data() + e * n, &error);
    ASSERT_EQ(error, "");
    std::vector<uint16_t> bits = ref::roundToBF16(want);
    EXPECT_EQ(
        std::memcmp(got.data() + row * n * 2, bits.data(), bits.size() * 2), 0)
        << "expert " << e;
    row += rows;
  }
  for (size_t i = size_t(row * n * 2); i < got.size(); ++i)
    ASSERT_EQ(got[i], 0) << "padding byte " << i;
}

TEST(GroupedGemmCpu, DgradRowsAreEachExpertsDenseDgrad) {
  checkDgradAgainstEachExpert(true, {130, 0, 150});
}

// TE's hybrid format: E5M2 gradient codes times the E4M3 stack.
TEST(GroupedGemmCpu, E5m2GradientDgradRowsAreEachExpertsDenseDgrad) {
  checkDgradAgainstEachExpert(true, {0, 150, 130}, DType::E5M2);
}

// The NVFP4 dgrad, dy stochastically rounded (1x16) and the stack read
// columnwise through its 16x1 blocks or its 16x16 ones: each expert's rows
// are the dense NVFP4 dgrad of its rows (dequantize, BF16 GEMM), bit for
// bit - the random bytes each expert's own.
TEST(GroupedGemmCpu, Nvfp4DgradRowsAreEachExpertsDenseDgrad) {
  const int64_t m = 300, n = 256, k = 384, g = 3;
  const std::vector<int64_t> splits = {130, 0, 150};
  std::vector<float> dy = normals(size_t(m * n), 21),
                     w = normals(size_t(g * n * k), 22);
  for (bool block2d : {false, true}) {
    SCOPED_TRACE(block2d ? "16x16 weight blocks" : "16x1 weight blocks");
    const Scheme dyScheme = Scheme::nvfp4(true, true),
                 wScheme = Scheme::nvfp4(false, false, block2d);
    cg::Program p =
        perExpertScaledProgram(m, k, g, n, false, dyScheme, wScheme, true);
    ASSERT_EQ(cg::validate(p.entries[0]), "");
    auto out = exec::runCpu(p, p.entries[0],
                            {bf16Bytes(dy), bf16Bytes(w), i64Bytes(splits)});
    ASSERT_TRUE(out) << out.status().toString();
    const std::vector<uint8_t> &got = (*out)[0][0].bytes;
    int64_t row = 0;
    for (int64_t e = 0; e < g; ++e) {
      const int64_t rows = splits[size_t(e)];
      if (rows == 0)
        continue;
      cg::Program one = denseDgrad(rows, n, k, dyScheme, wScheme);
      ASSERT_EQ(cg::validate(one.entries[0]), "");
      std::vector<float> dye(dy.begin() + row * n,
                             dy.begin() + (row + rows) * n);
      std::vector<float> we(w.begin() + e * n * k, w.begin() + (e + 1) * n * k);
      auto want =
          exec::runCpu(one, one.entries[0], {bf16Bytes(dye), bf16Bytes(we)});
      ASSERT_TRUE(want) << want.status().toString();
      const std::vector<uint8_t> &bytes = (*want)[0][0].bytes;
      EXPECT_EQ(
          std::memcmp(got.data() + row * k * 2, bytes.data(), bytes.size()), 0)
          << "expert " << e;
      row += rows;
    }
  }
}

// A grouped GEMM that quantizes one operand per expert and reads the other
// as given (another family's values, dequantized before it), or both per
// expert by two families: the BF16 GEMM of each expert's own quantized and
// dequantized values - bit for bit the per-expert reference GEMM of the
// expert's rows quantized alone (ref::quantize, ref::dequantize), its
// NVFP4 random bytes its own.
TEST(GroupedGemmCpu, PerExpertValuesAreEachExpertsOwnQuantization) {
  const int64_t m = 300, k = 256, g = 3, n = 128;
  const std::vector<int64_t> splits = {130, 0, 150}; // 20 padding rows
  struct Case {
    const char *name;
    std::optional<Scheme> x, w;
    bool dgrad;
  } cases[] = {
      {"per-tensor x, w values", Scheme::fp8Current(DType::E4M3), {}, false},
      {"dy values, per-tensor w", {}, Scheme::fp8Current(DType::E5M2), true},
      {"NVFP4 dy, w values", Scheme::nvfp4(false, true), {}, true},
      {"x values, NVFP4 w (16x16)",
       {},
       Scheme::nvfp4(false, false, true),
       false},
      {"NVFP4 x, per-tensor w", Scheme::nvfp4(),
       Scheme::fp8Current(DType::E4M3), false},
      {"per-tensor dy, NVFP4 w (16x1)", Scheme::fp8Delayed(DType::E4M3, 4),
       Scheme::nvfp4(), true},
      {"delayed x alone, w values",
       Scheme::fp8Delayed(DType::E5M2, 4),
       {},
       false}};
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    const Scheme any = Scheme::fp8Current(DType::E4M3);
    cg::Program p =
        perExpertScaledProgram(m, k, g, n, false, any, any, c.dgrad);
    auto &gg = std::get<cg::GroupedGemmKernel>(p.entries[0].kernels.back());
    gg.xScheme = c.x;
    gg.wScheme = c.w;
    if (c.x && c.x->kind == rt::SchemeKind::Fp8Delayed)
      gg.xState = "moe.grad_output";
    ASSERT_EQ(cg::validate(p.entries[0]), "");
    ASSERT_TRUE(gg.readsPerExpertValues());
    const int64_t cols = c.dgrad ? n : k, out = c.dgrad ? k : n;
    std::vector<float> x = normals(size_t(m * cols), 31),
                       w = normals(size_t(g * n * k), 32);
    for (int64_t i = 0; i < 130 * cols; ++i) // expert 0's rows tiny
      x[size_t(i)] = ref::bf16ToFloat(ref::floatToBF16(x[size_t(i)] / 4096));
    for (int64_t i = 2 * n * k; i < 3 * n * k; ++i) // expert 2's weight large
      w[size_t(i)] = ref::bf16ToFloat(ref::floatToBF16(w[size_t(i)] * 512));
    exec::HostStore store;
    store.declareStates(p);
    auto got = exec::runCpu(p, p.entries[0],
                            {bf16Bytes(x), bf16Bytes(w), i64Bytes(splits)},
                            nullptr, nullptr, &store);
    ASSERT_TRUE(got) << got.status().toString();
    const std::vector<uint8_t> &y = (*got)[0][0].bytes;
    // Rows [first, first + rows) of a [*, cols] tensor, quantized alone by
    // `s` in `dir` and dequantized to bf16 - or as given.
    auto own = [&](const std::vector<float> &v, int64_t first, int64_t rows,
                   int64_t width, const std::optional<Scheme> &s,
                   rt::Direction dir) {
      std::vector<float> part(v.begin() + first * width,
                              v.begin() + (first + rows) * width);
      if (!s)
        return part;
      std::vector<uint16_t> bits(part.size());
      for (size_t i = 0; i < bits.size(); ++i)
        bits[i] = ref::floatToBF16(part[i]);
      // Delayed scaling casts with the state's first scale: 1.
      ref::DelayedScalingState state;
      state.history.assign(4, 0.0f);
      ref::QuantizeOptions options; // the program's random state
      options.seed = p.random.seed;
      options.offset = p.random.offset;
      options.delayed =
          s->kind == rt::SchemeKind::Fp8Delayed ? &state : nullptr;
      ref::QuantizedTensor q =
          ref::quantize(bits.data(), ref::SourceType::BF16, rows, width, *s,
                        unsigned(dir), options);
      EXPECT_TRUE(q.ok()) << q.error;
      std::vector<float> values = ref::dequantize(q, dir, *s, rows, width);
      EXPECT_EQ(values.size(), part.size());
      values.resize(part.size());
      for (float &f : values)
        f = ref::bf16ToFloat(ref::floatToBF16(f));
      return values;
    };
    int64_t row = 0;
    for (int64_t e = 0; e < g; ++e) {
      const int64_t rows = splits[size_t(e)];
      if (rows == 0)
        continue;
      std::vector<float> xe =
          own(x, row, rows, cols, c.x, rt::Direction::Rowwise);
      std::vector<float> we =
          own(w, e * n, n, k, c.w,
              c.dgrad ? rt::Direction::Columnwise : rt::Direction::Rowwise);
      std::vector<uint16_t> want = ref::roundToBF16(ref::referenceGemm(
          xe.data(), false, we.data(), !c.dgrad, rows, out, cols));
      EXPECT_EQ(
          std::memcmp(y.data() + row * out * 2, want.data(), want.size() * 2),
          0)
          << "expert " << e;
      row += rows;
    }
    for (size_t i = size_t(row * out * 2); i < y.size(); ++i)
      ASSERT_EQ(y[i], 0) << "padding byte " << i;
  }
}

TEST(GroupedGemmCpu, Bf16DgradRowsAreEachExpertsDenseDgrad) {
  // The bf16 stack read along N: dx_g = dy_g W_g.
  checkDgradAgainstEachExpert(false, {0, 170, 111});
}

/// dW = dy^T x and db for one expert as te.linear_grad computes them on
/// Hopper: dy and x quantized columnwise by their schemes, dy with its bias
/// gradient, then one dense GEMM - on the codes for FP8 of one family, else
/// on the values dequantized to bf16 (MXFP8, NVFP4, two families: the
/// emulated GEMM).
cg::Program denseWgrad(int64_t m, int64_t n, int64_t k, const Scheme &dyScheme,
                       const Scheme &xScheme) {
  cg::Entry e;
  e.name = "wgrad";
  e.values = {tensor("dy", {m, n}, DType::BF16),
              tensor("x", {m, k}, DType::BF16)};
  e.args = {0, 1};
  int operand[2], db = -1;
  for (int i = 0; i < 2; ++i) {
    const Scheme &s = i == 0 ? dyScheme : xScheme;
    cg::Value q = e.values[i];
    q.kind = cg::Value::Kind::Quantized;
    q.name += "_q";
    q.columnwise = s;
    e.values.push_back(q);
    cg::QuantizeKernel qk;
    qk.name = "quantize_" + q.name;
    qk.input = i;
    qk.stages = {{s, Direction::Columnwise, int(e.values.size()) - 1}};
    operand[i] = qk.stages[0].value;
    if (i == 0) {
      e.values.push_back(tensor("db", {n}, DType::F32));
      db = qk.biasGrad = int(e.values.size()) - 1;
    }
    e.kernels.push_back(qk);
    if (!rt::groupedWgradReadsCodes(dyScheme, xScheme) &&
        s.kind != rt::SchemeKind::Identity) {
      cg::DequantizeKernel dk;
      dk.name = "dequantize_" + q.name;
      dk.input = operand[i];
      dk.dir = Direction::Columnwise;
      e.values.push_back(
          tensor(q.name + "_bf16", {m, i == 0 ? n : k}, DType::BF16));
      dk.output = operand[i] = int(e.values.size()) - 1;
      e.kernels.push_back(dk);
    }
  }
  e.values.push_back(tensor("dw", {n, k}, DType::F32));
  cg::GemmKernel g;
  g.name = "gemm";
  g.a = operand[0];
  g.b = operand[1];
  g.transposeA = true;
  g.output = int(e.values.size()) - 1;
  e.kernels.push_back(g);
  e.results = {g.output, db};
  cg::Program p;
  p.entries.push_back(e);
  return p;
}

/// Expert e's dW [n, k] and db [n] in a grouped wgrad's results `dw`, `db`
/// equal `one`'s, a dense wgrad of that expert, bit for bit.
void expectExpertWgrad(const std::vector<uint8_t> &dw,
                       const std::vector<uint8_t> &db,
                       const std::vector<exec::ValueData> &one, int64_t e,
                       int64_t n, int64_t k) {
  EXPECT_EQ(
      std::memcmp(dw.data() + e * n * k * 4, one[0][0].bytes.data(), n * k * 4),
      0)
      << "expert " << e << " dW";
  EXPECT_EQ(std::memcmp(db.data() + e * n * 4, one[1][0].bytes.data(), n * 4),
            0)
      << "expert " << e << " db";
}

/// The grouped wgrad (dy's codes `dyElement`) of 3 experts, N = 256, K =
/// 136 (not a tile multiple), ragged splits with an empty expert and
/// padding rows, partial 128-row blocks, on the CPU backend: each expert's
/// dW and db must equal denseWgrad on its rows.
void checkWgradAgainstEachExpert(DType dyElement) {
  const int64_t m = 400, n = 256, k = 136, g = 3;
  std::vector<float> dy = normals(size_t(m * n), 5),
                     x = normals(size_t(m * k), 6);
  cg::Program p = groupedWgradProgram(m, n, k, g, true, true, dyElement);
  ASSERT_EQ(cg::validate(p.entries[0]), "");
  std::vector<int64_t> splits = {130, 0, 250}; // 20 padding rows
  auto out = exec::runCpu(p, p.entries[0],
                          {bf16Bytes(dy), bf16Bytes(x), i64Bytes(splits)});
  ASSERT_TRUE(out) << out.status().toString();
  const std::vector<uint8_t> &dw = (*out)[0][0].bytes;
  const std::vector<uint8_t> &db = (*out)[1][0].bytes;
  ASSERT_EQ(dw.size(), size_t(g * n * k * 4));
  EXPECT_EQ((*out)[0][0].tolerance.size(), size_t(g * n * k)); // bounded
  int64_t row = 0;
  for (int64_t e = 0; e < g; ++e) {
    if (splits[e] == 0) {
      for (int64_t i = 0; i < n * k * 4; ++i)
        ASSERT_EQ(dw[e * n * k * 4 + i], 0) << "the empty expert's dW";
      continue;
    }
    cg::Program dense =
        denseWgrad(splits[e], n, k, Scheme::fp8Block(dyElement, 1, 128),
                   Scheme::fp8Block(DType::E4M3, 1, 128));
    ASSERT_EQ(cg::validate(dense.entries[0]), "");
    std::vector<float> dye(dy.begin() + row * n,
                           dy.begin() + (row + splits[e]) * n);
    std::vector<float> xe(x.begin() + row * k,
                          x.begin() + (row + splits[e]) * k);
    auto one =
        exec::runCpu(dense, dense.entries[0], {bf16Bytes(dye), bf16Bytes(xe)});
    ASSERT_TRUE(one) << one.status().toString();
    expectExpertWgrad(dw, db, *one, e, n, k);
    row += splits[e];
  }
}

TEST(GroupedGemmCpu, WgradIsEachExpertsDenseWgrad) {
  checkWgradAgainstEachExpert(DType::E4M3);
}

// TE's hybrid format: the gradient quantized per expert to E5M2 codes.
TEST(GroupedGemmCpu, E5m2GradientWgradIsEachExpertsDenseWgrad) {
  checkWgradAgainstEachExpert(DType::E5M2);
}

/// The grouped wgrad of 3 experts with ragged splits (130, 0, 250; 20
/// padding rows) whose operands are read dequantized (MXFP8, NVFP4): each
/// expert's dW and db equal the dense wgrad under the same schemes of its
/// rows zero-padded to whole `height`-row blocks, bit for bit
/// (docs/Numerics.md §7.4).
void checkWgradOnPaddedRows(const Scheme &dyScheme, const Scheme &xScheme,
                            int64_t k, int64_t height) {
  const int64_t m = 400, n = 256, g = 3;
  std::vector<float> dy = normals(size_t(m * n), 15),
                     x = normals(size_t(m * k), 16);
  cg::Program p = groupedWgradProgram(m, n, k, g, false, true);
  auto &w = std::get<cg::GroupedWgradKernel>(p.entries[0].kernels.back());
  w.dyScheme = dyScheme;
  w.xScheme = xScheme;
  ASSERT_EQ(cg::validate(p.entries[0]), "");
  std::vector<int64_t> splits = {130, 0, 250};
  auto out = exec::runCpu(p, p.entries[0],
                          {bf16Bytes(dy), bf16Bytes(x), i64Bytes(splits)});
  ASSERT_TRUE(out) << out.status().toString();
  const std::vector<uint8_t> &dw = (*out)[0][0].bytes;
  const std::vector<uint8_t> &db = (*out)[1][0].bytes;
  int64_t row = 0;
  for (int64_t e = 0; e < g; ++e) {
    const int64_t rows = splits[e],
                  padded = (rows + height - 1) / height * height;
    if (rows == 0)
      continue;
    std::vector<float> dye(size_t(padded * n), 0.0f),
        xe(size_t(padded * k), 0.0f);
    std::copy(dy.begin() + row * n, dy.begin() + (row + rows) * n, dye.begin());
    std::copy(x.begin() + row * k, x.begin() + (row + rows) * k, xe.begin());
    cg::Program dense = denseWgrad(padded, n, k, w.dyScheme, w.xScheme);
    ASSERT_EQ(cg::validate(dense.entries[0]), "");
    auto one =
        exec::runCpu(dense, dense.entries[0], {bf16Bytes(dye), bf16Bytes(xe)});
    ASSERT_TRUE(one) << one.status().toString();
    expectExpertWgrad(dw, db, *one, e, n, k);
    row += rows;
  }
}

// MXFP8, E5M2 dy and E4M3 x: 32-row blocks (130 -> 160, 250 -> 256).
TEST(GroupedGemmCpu, Mxfp8WgradIsEachExpertsDenseWgradOnPaddedRows) {
  checkWgradOnPaddedRows(Scheme::mxfp8(DType::E5M2), Scheme::mxfp8(DType::E4M3),
                         136, 32);
}

// Two scheme families: FP8 (block 1x128, per-tensor current) laid out as the
// values its codes dequantize to, beside MXFP8's or NVFP4's; the zero rows
// of the padding change no block amax and no tensor amax.
TEST(GroupedGemmCpu, MixedFamilyWgradIsEachExpertsDenseWgradOnPaddedRows) {
  checkWgradOnPaddedRows(Scheme::fp8Block(DType::E5M2, 1, 128),
                         Scheme::mxfp8(DType::E4M3), 136, 32);
  checkWgradOnPaddedRows(Scheme::fp8Current(DType::E5M2), Scheme::nvfp4(), 144,
                         16);
  checkWgradOnPaddedRows(Scheme::nvfp4(false, true),
                         Scheme::fp8Block(DType::E4M3, 1, 128, true), 144, 16);
}

// NVFP4 as TE's recipe quantizes the wgrad's operands: both Hadamard-
// transformed, dy stochastically rounded; 16-row blocks (130 -> 144, 250 ->
// 256), the transform spreading each expert's last block over its padding
// rows. The random bytes are each expert's own (the dense program's).
TEST(GroupedGemmCpu, Nvfp4WgradIsEachExpertsDenseWgradOnPaddedRows) {
  checkWgradOnPaddedRows(Scheme::nvfp4(true, true), Scheme::nvfp4(true), 144,
                         16);
  // Without the transform.
  checkWgradOnPaddedRows(Scheme::nvfp4(false, true), Scheme::nvfp4(), 144, 16);
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
  q = groupedProgram(64, 128, 2, 128, false, false, /*bias=*/true);
  ASSERT_EQ(cg::validate(q.entries[0]), "");
  q.entries[0].values[3].shape = {128};
  EXPECT_NE(cg::validate(q.entries[0]).find("the bias must be a [G, N] tensor"),
            std::string::npos)
      << cg::validate(q.entries[0]);
  // dgrad reads the weight columnwise: the bf16 stack itself, or block
  // FP8 holding that direction.
  q = groupedProgram(64, 128, 2, 128, false, /*dgrad=*/true);
  EXPECT_EQ(cg::validate(q.entries[0]), "");
  q = groupedProgram(64, 128, 2, 128, true, /*dgrad=*/true);
  ASSERT_EQ(cg::validate(q.entries[0]), "");
  std::get<cg::GroupedGemmKernel>(q.entries[0].kernels.back())
      .weightColumnwise = false;
  EXPECT_NE(cg::validate(q.entries[0]).find("w 128x128 read rowwise"),
            std::string::npos)
      << cg::validate(q.entries[0]);
  // E5M2 codes on both sides of a GEMM: the pairing rule refuses them.
  q = groupedProgram(64, 128, 2, 128, true, /*dgrad=*/true, false, DType::E5M2);
  ASSERT_EQ(cg::validate(q.entries[0]), "");
  for (cg::Value &v : q.entries[0].values)
    if (v.columnwise)
      v.columnwise->element = DType::E5M2;
  for (cg::Kernel &k : q.entries[0].kernels)
    if (auto *qk = std::get_if<cg::QuantizeKernel>(&k))
      for (auto &s : qk->stages)
        s.scheme.element = DType::E5M2;
  EXPECT_NE(cg::validate(q.entries[0]).find("no FP8 GEMM multiplies e5m2"),
            std::string::npos)
      << cg::validate(q.entries[0]);
  cg::Program w =
      groupedWgradProgram(300, 128, 64, 2, true, false, DType::E5M2);
  ASSERT_EQ(cg::validate(w.entries[0]), "");
  std::get<cg::GroupedWgradKernel>(w.entries[0].kernels.back())
      .xScheme.element = DType::E5M2;
  EXPECT_NE(cg::validate(w.entries[0]).find("no FP8 GEMM multiplies e5m2"),
            std::string::npos)
      << cg::validate(w.entries[0]);

  // Operands quantized per expert: both schemes per-tensor FP8 current
  // scaling, bf16 tensors, the fprop, N a multiple of 128.
  const rt::Scheme current = rt::Scheme::fp8Current(DType::E4M3);
  auto perExpert = [&](int64_t n) {
    return te::test::perExpertScaledProgram(64, 128, 2, n, false, current,
                                            current);
  };
  auto refused = [](cg::Program prog, const char *want) {
    std::string got = cg::validate(prog.entries[0]);
    EXPECT_NE(got.find(want), std::string::npos) << got;
  };
  q = perExpert(128);
  ASSERT_EQ(cg::validate(q.entries[0]), "");
  auto &pe = std::get<cg::GroupedGemmKernel>(q.entries[0].kernels.back());
  // One operand per expert: the other holds another family's values.
  pe.wScheme.reset();
  EXPECT_EQ(cg::validate(q.entries[0]), "");
  EXPECT_TRUE(pe.readsPerExpertValues());
  pe.wScheme = rt::Scheme::fp8Block(DType::E4M3, 128, 128);
  refused(q, "per-tensor FP8 (current or delayed scaling; e4m3 or e5m2) or "
             "by NVFP4, not by");
  pe.xScheme.reset();
  pe.wScheme.reset();
  pe.nvfp4Codes = true;
  refused(q, "does not quantize both operands per expert");
  pe.nvfp4Codes = false;
  pe.xScheme = current;
  // A delayed-scaling state on an operand quantized by current scaling.
  pe.wScheme = current;
  pe.wState = "moe.weight";
  refused(q, "not quantized by fp8_delayed");
  pe.wState.clear();
  pe.wScheme = rt::Scheme::fp8Current(DType::E5M2);
  pe.xScheme = rt::Scheme::fp8Current(DType::E5M2);
  refused(q, "no FP8 GEMM multiplies e5m2");
  refused(perExpert(96), "N must be a multiple of 128");
  refused(
      te::test::perExpertScaledProgram(64, 96, 2, 128, false, current, current),
      "K must be a multiple of 128");
  q = perExpert(128);
  q.entries[0].values[0].dtype = DType::F16;
  refused(q, "must be bf16 tensors");
}
