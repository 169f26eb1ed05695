//===- QuantizeCodegenTest.cpp - Generated quantize kernels
//----------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Every scheme x direction set (rowwise, columnwise, both, hybrid pairs),
// with and without a fused bias gradient:
//  * the generated CUDA compiles with NVRTC (no GPU needed: runs in CI);
//  * on a GPU, the generated kernels' storage bytes equal the CPU
//    reference's bit for bit, on block-multiple and non-multiple shapes and
//    on random and edge data (zeros, subnormals, huge values, Inf, NaN).
//
//===----------------------------------------------------------------------===//

#include "te/codegen/DequantizeEmitter.h"
#include "te/codegen/PlanBuilder.h"
#include "te/codegen/QuantizeEmitter.h"
#include "te/exec/CudaRunner.h"
#include "te/runtime/NvrtcCompiler.h"
#include "te/runtime/reference/Gemm.h"

#include "BackendComparison.h"
#include "ProgramHelpers.h"
#include "SassHazards.h"
#include "SchemeCases.h"
#include "Support/TestSupport.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace te;
using rt::Direction;
using rt::DType;
using rt::Scheme;

namespace {

struct Case {
  std::string name;
  std::optional<Scheme> row, col;
  bool biasGrad = false;
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

std::vector<Case> allCases() {
  std::vector<Case> cases;
  for (const Scheme &s : test::allSchemes()) {
    cases.push_back({test::schemeLabel(s) + "_row", s, std::nullopt});
    cases.push_back({test::schemeLabel(s) + "_col", std::nullopt, s});
    cases.push_back({test::schemeLabel(s) + "_both_dbias", s, s, true});
  }
  // Hybrid pairs: the recipes IR.md names, plus a per-tensor/block mix.
  cases.push_back({"hybrid_mxfp8_nvfp4_dbias", Scheme::mxfp8(DType::E4M3),
                   Scheme::nvfp4(), true});
  cases.push_back({"hybrid_block_1x128_mxfp8",
                   Scheme::fp8Block(DType::E4M3, 1, 128),
                   Scheme::mxfp8(DType::E5M2)});
  cases.push_back({"hybrid_current_block128", Scheme::fp8Current(DType::E4M3),
                   Scheme::fp8Block(DType::E4M3, 128, 128)});
  cases.push_back({"hybrid_nvfp4sr_identity", Scheme::nvfp4(false, true),
                   Scheme::identity(DType::BF16)});
  cases.push_back({"dbias_only", std::nullopt, std::nullopt, true});
  return cases;
}

/// An entry quantizing an M x K input into one value holding the case's
/// directions (+ a bias gradient).
cg::Program programFor(const Case &c, int64_t m, int64_t k, DType input) {
  cg::Program p;
  cg::Entry e;
  e.name = "main";
  cg::Value x;
  x.name = "x";
  x.shape = {m, k};
  x.dtype = input;
  e.values.push_back(x);
  e.args = {0};
  cg::QuantizeKernel q;
  q.name = "quantize_x";
  q.input = 0;
  if (c.row || c.col) {
    cg::Value v;
    v.kind = cg::Value::Kind::Quantized;
    v.name = "q";
    v.shape = {m, k};
    v.dtype = input;
    v.rowwise = c.row;
    v.columnwise = c.col;
    e.values.push_back(v);
    e.results.push_back(1);
    if (c.row)
      q.stages.push_back(test::stageOf(v, 1, Direction::Rowwise));
    if (c.col)
      q.stages.push_back(test::stageOf(v, 1, Direction::Columnwise));
  }
  if (c.biasGrad) {
    cg::Value db;
    db.name = "db";
    db.shape = {k};
    db.dtype = DType::F32;
    e.values.push_back(db);
    q.biasGrad = int(e.values.size()) - 1;
    e.results.push_back(q.biasGrad);
  }
  e.kernels.push_back(q);
  p.entries.push_back(e);
  return p;
}

/// Whether every direction of the case accepts an M x K tensor.
bool shapeFits(const Case &c, int64_t m, int64_t k) {
  if (c.row && !rt::validateShape(*c.row, Direction::Rowwise, m, k).empty())
    return false;
  if (c.col && !rt::validateShape(*c.col, Direction::Columnwise, m, k).empty())
    return false;
  return true;
}

enum class Data { Random, Edge };

/// bf16 bit patterns: normal values over many binades, or a mix of edge
/// values (zeros, subnormals, huge, Inf, NaN) among normal ones.
std::vector<uint8_t> makeInput(int64_t count, Data kind, uint64_t seed) {
  test::SplitMix64 rng(seed);
  std::vector<uint8_t> bytes(size_t(count) * 2);
  for (int64_t i = 0; i < count; ++i) {
    uint32_t r = rng.next32();
    uint16_t h;
    // Sign, exponent 2^-20 .. 2^20, random mantissa.
    h = uint16_t((r & 0x8000u) | ((107u + (r >> 16) % 41u) << 7) | (r & 0x7Fu));
    if (kind == Data::Edge) {
      switch ((r >> 24) % 16) {
      case 0:
        h = 0x0000;
        break; // +0
      case 1:
        h = 0x8000;
        break; // -0
      case 2:
        h = uint16_t(0x0001 + (r & 0x7F));
        break; // subnormal
      case 3:
        h = 0x7F7F;
        break; // bf16 max
      case 4:
        h = uint16_t(0x7000 | (r & 0x7FF));
        break; // huge
      case 5:
        if (i % 97 == 0)
          h = 0x7F80;
        break; // +Inf, rarely
      case 6:
        if (i % 89 == 0)
          h = 0xFFC1;
        break; // NaN, rarely
      default:
        break;
      }
    }
    bytes[2 * size_t(i)] = uint8_t(h);
    bytes[2 * size_t(i) + 1] = uint8_t(h >> 8);
  }
  return bytes;
}

/// f32 bit patterns: normal values over 2^-60 .. 2^60 (beyond bf16's
/// precision: every mantissa bit set at random), or edge values among them
/// (zeros, f32 subnormals, FLT_MAX, huge, Inf, NaN).
std::vector<uint8_t> makeInputF32(int64_t count, Data kind, uint64_t seed) {
  test::SplitMix64 rng(seed);
  std::vector<uint8_t> bytes(size_t(count) * 4);
  for (int64_t i = 0; i < count; ++i) {
    uint64_t r = rng.next();
    uint32_t f = uint32_t(r & 0x80000000u) |
                 (uint32_t(67 + (r >> 32) % 121) << 23) |
                 uint32_t((r >> 8) & 0x7FFFFFu);
    if (kind == Data::Edge) {
      switch ((r >> 40) % 16) {
      case 0:
        f = 0u;
        break;
      case 1:
        f = 0x80000000u;
        break;
      case 2:
        f = uint32_t(1 + (r & 0x7FFFFF)); // subnormal
        break;
      case 3:
        f = 0x7F7FFFFFu; // FLT_MAX
        break;
      case 4:
        f = 0x7E000000u | uint32_t(r & 0xFFFFFF); // huge
        break;
      case 5:
        if (i % 97 == 0)
          f = 0xFF800000u; // -Inf, rarely
        break;
      case 6:
        if (i % 89 == 0)
          f = 0x7FC00001u; // NaN, rarely
        break;
      default:
        break;
      }
    }
    std::memcpy(&bytes[4 * size_t(i)], &f, 4);
  }
  return bytes;
}

/// n elements of `input` type: random or edge data (the edge patterns are
/// bf16 bit patterns, so f16 takes random data only), f16 kept finite.
std::vector<uint8_t> inputOf(DType input, int64_t n, Data d, uint64_t seed) {
  std::vector<uint8_t> x =
      input == DType::F32 ? makeInputF32(n, d, seed) : makeInput(n, d, seed);
  if (input == DType::F16)
    for (size_t i = 1; i < x.size(); i += 2)
      x[i] &= 0x7B; // keep f16 values finite
  return x;
}

class QuantizeCodegen : public ::testing::TestWithParam<Case> {};

} // namespace

TEST_P(QuantizeCodegen, CompilesWithNvrtc) {
  for (DType input : {DType::BF16, DType::F32}) {
    cg::Program p = programFor(GetParam(), 256, 256, input);
    rt::KernelCache cache(""); // memory only
    rt::Expected<size_t> n = exec::compileEntry(p, p.entries[0], cache);
    if (!n && n.status().code() == rt::StatusCode::LibraryMissing)
      GTEST_SKIP() << n.status().toString();
    ASSERT_TRUE(n) << rt::dtypeName(input) << ": " << n.status().toString();
    // The quantize kernel, and delayed scaling's update.
    bool delayed = false;
    for (const std::optional<Scheme> &s : {GetParam().row, GetParam().col})
      delayed |= s && s->kind == rt::SchemeKind::Fp8Delayed;
    EXPECT_EQ(*n, delayed ? 2u : 1u);
  }
}

/// The tile kernel runs at a register cap (four CTAs an SM for 16-bit
/// inputs, three for f32, QuantizeEmitter.h): a stage combination that
/// spills under it runs slower (the NVFP4 stages did at five CTAs), so
/// ptxas's report of every kernel of the entry must show no spills - except
/// where an NVFP4 stage rounds stochastically: its Philox block lives next
/// to the run's values, and those kernels spill 28-52 bytes at the cap
/// (measured 2026-11-27, docs/Performance.md); they may not spill more.
TEST_P(QuantizeCodegen, KernelsDoNotSpillUnderTheirRegisterCap) {
  bool stochastic = false;
  for (const std::optional<Scheme> &s : {GetParam().row, GetParam().col})
    stochastic |=
        s && s->kind == rt::SchemeKind::Nvfp4 && s->stochasticRounding;
  const unsigned long budget = stochastic ? 64 : 0;
  for (DType input : {DType::BF16, DType::F32}) {
    cg::Program p = programFor(GetParam(), 256, 256, input);
    rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(p, p.entries[0]);
    ASSERT_TRUE(plan) << plan.status().toString();
    for (const cg::KernelPlan &kp : plan->kernels)
      for (const rt::KernelSpec &spec : kp.plan.kernels) {
        rt::CompileOptions opts = spec.options;
        opts.flags.push_back("--ptxas-options=-v");
        rt::Expected<rt::CompiledKernel> k =
            rt::compileCuda(spec.source, spec.name, opts);
        if (!k && k.status().code() == rt::StatusCode::LibraryMissing)
          GTEST_SKIP() << k.status().toString();
        ASSERT_TRUE(k) << k.status().toString();
        // One "N bytes spill stores" line per function of the module.
        size_t lines = 0;
        for (size_t at = k->log.find(" bytes spill stores");
             at != std::string::npos;
             at = k->log.find(" bytes spill stores", at + 1)) {
          size_t start = k->log.rfind(',', at);
          start = start == std::string::npos ? at : start + 1;
          EXPECT_LE(std::stoul(k->log.substr(start, at - start)), budget)
              << rt::dtypeName(input) << " " << spec.name << ":\n"
              << k->log;
          ++lines;
        }
        EXPECT_GT(lines, 0u) << "no ptxas report for " << spec.name << ":\n"
                             << k->log;
      }
  }
}

/// SassHazards.h on the tile kernels of both inputs (ragged, so edge
/// tasks are skipped); runs where nvdisasm is found.
TEST_P(QuantizeCodegen, KernelsHaveNoReconvergenceHazard) {
  for (DType input : {DType::BF16, DType::F32})
    test::expectNoReconvergenceHazards(programFor(GetParam(), 288, 224, input));
}

TEST_P(QuantizeCodegen, BitExactAgainstReferenceOnGpu) {
  test::GpuStream gpu = test::GpuStream::open();
  if (!gpu.stream)
    GTEST_SKIP() << gpu.why;
  static rt::KernelCache cache("");
  const Case &c = GetParam();
  struct Shape {
    int64_t m, k;
  };
  // Whole tiles, partial tiles in both dimensions, non-multiples of 128 and
  // (where the scheme allows) of the block size.
  int tested = 0;
  for (Shape s : {Shape{256, 512}, Shape{96, 64}, Shape{48, 80},
                  Shape{200, 160}, Shape{130, 33}}) {
    if (!shapeFits(c, s.m, s.k))
      continue;
    for (DType input : {DType::BF16, DType::F16, DType::F32}) {
      for (Data d : {Data::Random, Data::Edge}) {
        if (input == DType::F16 && d == Data::Edge)
          continue; // the edge patterns are bf16 bit patterns
        cg::Program p = programFor(c, s.m, s.k, input);
        uint64_t seed = uint64_t(s.m * 131 + s.k + int(d));
        std::vector<uint8_t> x = inputOf(input, s.m * s.k, d, seed);
        EXPECT_EQ(test::gpuVersusCpu(p, {x}, *gpu.device, *gpu.stream, cache)
                      .difference,
                  "")
            << s.m << "x" << s.k << " " << rt::dtypeName(input)
            << (d == Data::Edge ? " edge data" : " random data");
        ++tested;
      }
    }
  }
  EXPECT_GT(tested, 0);
}

// The bias gradient's finishing launch overlaps the tile kernel
// (programmatic dependent launch): the tile kernel lets it start, and it
// waits for the partials (te/device/LaunchOrder.cuh). Without a bias
// gradient nothing overlaps.
TEST(QuantizeCodegenDbias, TheFinishingLaunchOverlapsTheTileKernel) {
  for (bool dbias : {true, false}) {
    Scheme s = Scheme::fp8Block(DType::E4M3, 1, 128, true);
    cg::Program p =
        programFor(Case{"block", s, s, dbias}, 256, 256, DType::BF16);
    rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(p, p.entries[0]);
    ASSERT_TRUE(plan) << plan.status().toString();
    const rt::Plan &kp = plan->kernels.at(0).plan;
    ASSERT_EQ(kp.kernels.size(), dbias ? 2u : 1u);
    EXPECT_FALSE(kp.kernels[0].overlapsPredecessor);
    EXPECT_EQ(kp.kernels[0].source.find("te::dev::releaseDependents();") !=
                  std::string::npos,
              dbias);
    if (dbias) {
      EXPECT_EQ(kp.kernels[1].entry, kp.kernels[0].entry + "_dbias");
      EXPECT_TRUE(kp.kernels[1].overlapsPredecessor);
    }
  }
}

// A cast after an amax pre-pass (per-tensor current scaling; NVFP4, with
// and without the RHT) overlaps it: the pre-pass lets it start, and its
// tiles wait for the amax after loading (quantizeTileIn). A cast without
// one (MXFP8) is an ordinary launch, and so is one with a fill between
// (NVFP4 scales padded to 128 rows: 208 rows).
TEST(QuantizeCodegenPlan, TheCastOverlapsItsAmaxPrePass) {
  {
    Scheme s = Scheme::nvfp4();
    cg::Program p = programFor(Case{"c", s, s, false}, 208, 256, DType::BF16);
    rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(p, p.entries[0]);
    ASSERT_TRUE(plan) << plan.status().toString();
    const rt::Plan &kp = plan->kernels.at(0).plan;
    ASSERT_GE(kp.steps.size(), 2u);
    EXPECT_EQ(kp.steps[kp.steps.size() - 2].kind, rt::Step::Kind::Fill);
    EXPECT_FALSE(kp.kernels.back().overlapsPredecessor);
  }
  for (auto [scheme, prepass] :
       {std::pair{Scheme::fp8Current(DType::E4M3), true},
        std::pair{Scheme::nvfp4(), true}, std::pair{Scheme::nvfp4(true), true},
        std::pair{Scheme::mxfp8(DType::E4M3), false}}) {
    cg::Program p =
        programFor(Case{"c", scheme, scheme, false}, 256, 256, DType::BF16);
    rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(p, p.entries[0]);
    ASSERT_TRUE(plan) << plan.status().toString();
    const rt::Plan &kp = plan->kernels.at(0).plan;
    const rt::KernelSpec &cast = kp.kernels.back();
    EXPECT_EQ(cast.overlapsPredecessor, prepass) << cast.entry;
    EXPECT_EQ(kp.kernels.size(), prepass ? 2u : 1u) << cast.entry;
    if (prepass) {
      // The pass right before it in the plan's steps lets it start.
      EXPECT_FALSE(kp.kernels[0].overlapsPredecessor);
      ASSERT_GE(kp.steps.size(), 2u);
      const rt::Step &before = kp.steps[kp.steps.size() - 2];
      EXPECT_EQ(before.kind, rt::Step::Kind::Launch);
      EXPECT_EQ(before.index, 0);
      size_t body = kp.kernels[0].source.find(kp.kernels[0].entry + "(");
      EXPECT_NE(
          kp.kernels[0].source.find("te::dev::releaseDependents();", body),
          std::string::npos);
    }
  }
}

// The bias gradient's finishing launch sums a column's 128-row partials in
// batches of 32 loads: tall inputs take the batched loop (41 and 67
// chunks: a batch and a remainder, two batches and a remainder), bit for
// bit against the reference's chunk-ordered sum, alone and with a quantize.
TEST(QuantizeCodegenDbias, ManyChunksSumInChunkOrderOnGpu) {
  test::GpuStream gpu = test::GpuStream::open();
  if (!gpu.stream)
    GTEST_SKIP() << gpu.why;
  static rt::KernelCache cache("");
  for (int64_t m : {int64_t(128 * 40 + 5), int64_t(128 * 67)}) {
    const int64_t k = 130;
    std::vector<uint8_t> x = makeInput(m * k, Data::Random, uint64_t(m));
    for (const Case &c :
         {Case{"dbias_only", std::nullopt, std::nullopt, true},
          Case{"block_both_dbias", Scheme::fp8Block(DType::E4M3, 1, 128, true),
               Scheme::fp8Block(DType::E4M3, 1, 128, true), true}}) {
      cg::Program p = programFor(c, m, k, DType::BF16);
      EXPECT_EQ(test::gpuVersusCpu(p, {x}, *gpu.device, *gpu.stream, cache)
                    .difference,
                "")
          << c.name << " M " << m;
    }
  }
}

// A bias gradient alone runs in column strips, one launch with no partial
// sums, where its rows are whole 16-byte groups and the strips make one
// wave, 128 to 132 (cg::biasGradStrips; 10240 bf16 columns would be 160);
// elsewhere in the tile kernel and a finishing launch.
TEST(QuantizeCodegenDbias, AloneInColumnStripsWhereTheyMakeOneWave) {
  struct Shape {
    int64_t k;
    DType dtype;
    int64_t strips; // 0: the tile kernel
  };
  for (Shape s : {Shape{8192, DType::BF16, 128}, Shape{4096, DType::F32, 128},
                  Shape{8200, DType::F16, 129}, Shape{4096, DType::BF16, 0},
                  Shape{8196, DType::BF16, 0}, Shape{10240, DType::BF16, 0}}) {
    for (bool quantizes : {false, true}) {
      Scheme b = Scheme::fp8Block(DType::E4M3, 1, 128, true);
      Case c{"dbias", std::nullopt, std::nullopt, true};
      if (quantizes)
        c.row = b;
      cg::Program p = programFor(c, 256, s.k, s.dtype);
      rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(p, p.entries[0]);
      ASSERT_TRUE(plan) << plan.status().toString();
      const rt::Plan &kp = plan->kernels.at(0).plan;
      bool strips = s.strips > 0 && !quantizes;
      ASSERT_EQ(kp.kernels.size(), strips ? 1u : 2u) << s.k;
      EXPECT_EQ(kp.kernels[0].source.find("biasGradStrips") !=
                    std::string::npos,
                strips)
          << s.k;
      if (strips) {
        EXPECT_EQ(kp.kernels[0].grid.x, unsigned(s.strips));
        // NVRTC compiles it (both the 16-byte and the byte-wise reads).
        rt::KernelCache cache(""); // memory only
        rt::Expected<size_t> n = exec::compileEntry(p, p.entries[0], cache);
        if (n || n.status().code() != rt::StatusCode::LibraryMissing) {
          EXPECT_TRUE(n) << s.k << ": " << n.status().toString();
        }
        // The input read and the bias gradient written, nothing else.
        EXPECT_EQ(
            plan->kernels.at(0).bytesMoved,
            uint64_t(256 * s.k * int64_t(rt::dtypeSize(s.dtype)) + 4 * s.k));
      }
    }
  }
}

// The column strips sum bit for bit as the reference does: ragged last
// chunks, two rounds of 32 chunks, a last strip only partly inside the
// tensor, Inf and NaN.
TEST(QuantizeCodegenDbias, ColumnStripsSumInChunkOrderOnGpu) {
  test::GpuStream gpu = test::GpuStream::open();
  if (!gpu.stream)
    GTEST_SKIP() << gpu.why;
  static rt::KernelCache cache("");
  struct Shape {
    int64_t m, k;
    DType dtype;
  };
  for (Shape s :
       {Shape{128 * 40 + 5, 8192, DType::BF16}, Shape{300, 4096, DType::F32},
        Shape{1000, 8200, DType::F16}, Shape{77, 8192, DType::BF16}}) {
    for (Data d : {Data::Random, Data::Edge}) {
      if (s.dtype == DType::F16 && d == Data::Edge)
        continue; // the edge patterns are bf16 bit patterns
      cg::Program p =
          programFor(Case{"dbias_only", std::nullopt, std::nullopt, true}, s.m,
                     s.k, s.dtype);
      uint64_t seed = uint64_t(s.m + s.k + int(d));
      std::vector<uint8_t> x = inputOf(s.dtype, s.m * s.k, d, seed);
      EXPECT_EQ(test::gpuVersusCpu(p, {x}, *gpu.device, *gpu.stream, cache)
                    .difference,
                "")
          << s.m << "x" << s.k << " " << rt::dtypeName(s.dtype)
          << (d == Data::Edge ? " edge data" : " random data");
    }
  }
}

// An input view at an odd element offset (not 16-byte aligned) takes the
// strips' byte-wise reads: the launch pointed 2 bytes into x over M - 1
// rows sums, bit for bit, what the reference sums over that view.
TEST(QuantizeCodegenDbias, ColumnStripsReadAMisalignedViewOnGpu) {
  test::GpuStream gpu = test::GpuStream::open();
  if (!gpu.stream)
    GTEST_SKIP() << gpu.why;
  static rt::KernelCache cache("");
  const int64_t m = 300, k = 8192;
  std::vector<uint8_t> x = makeInput(m * k, Data::Random, 5);
  cg::Program p = programFor(
      Case{"dbias_only", std::nullopt, std::nullopt, true}, m, k, DType::BF16);
  rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(p, p.entries[0]);
  ASSERT_TRUE(plan) << plan.status().toString();
  rt::KernelSpec &strips = plan->kernels.at(0).plan.kernels.at(0);
  ASSERT_NE(strips.source.find("biasGradStrips"), std::string::npos);
  strips.args.at(0).pointer.offset = 2; // x + 1 element
  strips.args.at(1) = rt::ArgDesc::i64(m - 1);
  auto runner = exec::CudaRunner::create(p, p.entries[0], std::move(*plan),
                                         *gpu.device, cache);
  ASSERT_TRUE(runner) << runner.status().toString();
  ASSERT_TRUE(runner->setArgument(0, x, *gpu.stream).isOk());
  rt::Status st = runner->run(*gpu.stream);
  ASSERT_TRUE(st.isOk()) << st.toString();
  auto got = runner->results(*gpu.stream);
  ASSERT_TRUE(got) << got.status().toString();
  std::vector<float> want =
      rt::ref::biasGrad(x.data() + 2, rt::ref::SourceType::BF16, m - 1, k, 128);
  const std::vector<uint8_t> &bytes = got->at(0).at(0).bytes;
  ASSERT_EQ(bytes.size(), want.size() * 4);
  EXPECT_EQ(std::memcmp(bytes.data(), want.data(), bytes.size()), 0);
}

INSTANTIATE_TEST_SUITE_P(AllSchemes, QuantizeCodegen,
                         ::testing::ValuesIn(allCases()),
                         [](const ::testing::TestParamInfo<Case> &i) {
                           return i.param.name;
                         });

//===----------------------------------------------------------------------===//
// Dequantize: quantize one direction, then te.dequantize it back (the
// result is only the dequantized tensor), for every scheme, direction and
// output type. NVRTC compile everywhere; bit-exact against the CPU
// reference on a GPU.
//===----------------------------------------------------------------------===//

namespace {

struct DequantCase {
  std::string name;
  Scheme scheme;
  Direction dir;
  DType out;
};

void PrintTo(const DequantCase &c, std::ostream *os) { *os << c.name; }

std::vector<DequantCase> dequantCases() {
  std::vector<DequantCase> cases;
  for (const Scheme &s : test::allSchemes())
    for (Direction d : {Direction::Rowwise, Direction::Columnwise})
      for (DType out : {DType::BF16, DType::F32}) {
        cases.push_back({test::schemeLabel(s) +
                             (d == Direction::Rowwise ? "_row" : "_col") +
                             "_to_" + rt::dtypeName(out),
                         s, d, out});
      }
  cases.push_back({"mxfp8_e4m3_col_to_f16", Scheme::mxfp8(DType::E4M3),
                   Direction::Columnwise, DType::F16});
  return cases;
}

cg::Program dequantProgram(const DequantCase &c, int64_t m, int64_t k,
                           DType input) {
  Case q{"", std::nullopt, std::nullopt};
  (c.dir == Direction::Rowwise ? q.row : q.col) = c.scheme;
  cg::Program p = programFor(q, m, k, input);
  cg::Entry &e = p.entries[0];
  cg::Value y;
  y.name = "y";
  y.shape = {m, k};
  y.dtype = c.out;
  e.values.push_back(y);
  cg::DequantizeKernel kernel{"dequantize_q", 1, c.dir,
                              int(e.values.size()) - 1};
  e.kernels.push_back(kernel);
  e.results = {kernel.output};
  return p;
}

class DequantizeCodegen : public ::testing::TestWithParam<DequantCase> {};

} // namespace

TEST_P(DequantizeCodegen, CompilesWithNvrtc) {
  cg::Program p = dequantProgram(GetParam(), 256, 256, DType::BF16);
  rt::KernelCache cache("");
  rt::Expected<size_t> n = exec::compileEntry(p, p.entries[0], cache);
  if (!n && n.status().code() == rt::StatusCode::LibraryMissing)
    GTEST_SKIP() << n.status().toString();
  ASSERT_TRUE(n) << n.status().toString();
  // The quantize and the dequantize kernel, and delayed scaling's update.
  bool delayed = GetParam().scheme.kind == rt::SchemeKind::Fp8Delayed;
  EXPECT_EQ(*n, delayed ? 3u : 2u);
}

TEST_P(DequantizeCodegen, BitExactAgainstReferenceOnGpu) {
  test::GpuStream gpu = test::GpuStream::open();
  if (!gpu.stream)
    GTEST_SKIP() << gpu.why;
  static rt::KernelCache cache("");
  const DequantCase &c = GetParam();
  int tested = 0;
  // Full and edge tiles of the transposed path (128 x 64), 8-element row
  // runs, and the element path (K not a multiple of 8).
  for (auto [m, k] : {std::pair<int64_t, int64_t>{256, 512},
                      {384, 288},
                      {160, 256},
                      {96, 64},
                      {48, 80},
                      {130, 33}}) {
    Case q{"", std::nullopt, std::nullopt};
    (c.dir == Direction::Rowwise ? q.row : q.col) = c.scheme;
    if (!shapeFits(q, m, k))
      continue;
    for (Data d : {Data::Random, Data::Edge}) {
      cg::Program p = dequantProgram(c, m, k, DType::BF16);
      std::vector<uint8_t> x = makeInput(m * k, d, uint64_t(m * 7 + k));
      EXPECT_EQ(test::gpuVersusCpu(p, {x}, *gpu.device, *gpu.stream, cache)
                    .difference,
                "")
          << m << "x" << k << (d == Data::Edge ? " edge data" : " random");
      ++tested;
    }
  }
  EXPECT_GT(tested, 0);
}

// The emitter picks the path from the storage: 8-element runs of [M, K]
// data, shared-memory tiles of transposed data, elements otherwise.
TEST(DequantizeCodegenPaths, StorageAndShapePickThePath) {
  auto source = [](const DequantCase &c, int64_t m, int64_t k) {
    cg::Program p = dequantProgram(c, m, k, DType::BF16);
    rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(p, p.entries[0]);
    EXPECT_TRUE(plan) << plan.status().toString();
    return plan ? plan->kernels.back().plan.kernels.back().source
                : std::string();
  };
  DequantCase row{"", Scheme::fp8Block(DType::E4M3, 1, 128, true),
                  Direction::Rowwise, DType::BF16};
  DequantCase col = row;
  col.dir = Direction::Columnwise;
  EXPECT_NE(source(row, 256, 256).find("DequantPath::Rows"), std::string::npos);
  EXPECT_NE(source(col, 256, 256).find("DequantPath::Tiles"),
            std::string::npos);
  EXPECT_NE(source(col, 130, 33).find("DequantPath::Tiles"), std::string::npos);
  EXPECT_NE(source(row, 130, 33).find("DequantPath::Elements"),
            std::string::npos);
  // MXFP8's columnwise data is stored [M, K]: the row path.
  DequantCase mx{"", Scheme::mxfp8(DType::E4M3), Direction::Columnwise,
                 DType::F32};
  EXPECT_NE(source(mx, 64, 64).find("DequantPath::Rows"), std::string::npos);

  // The element path compiles too (the parameterised test compiles the
  // other two).
  cg::Program p = dequantProgram(row, 130, 33, DType::BF16);
  rt::KernelCache cache("");
  rt::Expected<size_t> n = exec::compileEntry(p, p.entries[0], cache);
  if (!n && n.status().code() == rt::StatusCode::LibraryMissing)
    GTEST_SKIP() << n.status().toString();
  ASSERT_TRUE(n) << n.status().toString();
}

// The grid rule (te/formats/Launch.h) and the row path's 32-bit bound.
TEST(DequantizeCodegenPaths, GridRuleAndRowPathBound) {
  EXPECT_EQ(rt::dequantizeGrid(0), 1);
  EXPECT_EQ(rt::dequantizeGrid(1), 1);
  EXPECT_EQ(rt::dequantizeGrid(200 * 130), 102); // a thread per element
  EXPECT_EQ(rt::dequantizeGrid(2048 * 2048), 1056); // a full wave
  EXPECT_EQ(rt::dequantizeGrid(8192 * 8192), 8192); // a CTA per 8192
  EXPECT_EQ(rt::dequantizeGrid(int64_t(1) << 50), INT32_MAX);
  const int64_t k = 4096, rowsAtBound = cg::kMaxRowPathRuns * 8 / k;
  EXPECT_EQ(cg::dequantizePath(rowsAtBound, k, false),
            cg::DequantizePath::Rows);
  EXPECT_EQ(cg::dequantizePath(rowsAtBound + 1, k, false),
            cg::DequantizePath::Elements);
  // The bound keeps a run index plus four strides of the grid in 32 bits.
  const int64_t runs = cg::kMaxRowPathRuns;
  const int64_t stride = rt::dequantizeGrid(runs * 8) * rt::kDequantizeThreads;
  EXPECT_LT(runs + 4 * stride, int64_t(1) << 32);
}

// te-run --bench names what runs each GEMM: a library GEMM on operands a
// dequantize kernel of the entry wrote is the emulated path.
TEST(DequantizeCodegenPaths, GemmPlansNameTheirEngine) {
  DequantCase c{"", Scheme::mxfp8(DType::E4M3), Direction::Rowwise,
                DType::BF16};
  cg::Program p = dequantProgram(c, 64, 64, DType::BF16);
  cg::Entry &e = p.entries[0];
  const int dequantized = e.results[0], plain = e.args[0];
  for (auto [name, operand] :
       {std::pair<const char *, int>{"gemm_dequantized", dequantized},
        {"gemm_plain", plain}}) {
    cg::Value z;
    z.name = name;
    z.shape = {64, 64};
    z.dtype = DType::BF16;
    e.values.push_back(z);
    cg::GemmKernel g;
    g.name = name;
    g.a = g.b = operand;
    g.transposeB = true;
    g.output = int(e.values.size()) - 1;
    e.kernels.push_back(g);
    e.results.push_back(g.output);
  }
  rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(p, e);
  ASSERT_TRUE(plan) << plan.status().toString();
  const auto &kernels = plan->kernels;
  ASSERT_GE(kernels.size(), 2u);
  EXPECT_EQ(kernels[kernels.size() - 2].engine,
            "cuBLASLt, dequantized operands");
  EXPECT_EQ(kernels.back().engine, "cuBLASLt");
  EXPECT_EQ(kernels.front().engine, ""); // not a GEMM
}

// Tensors of more CTAs than an H100 holds at once (1536 CTAs of the
// one-pass grid, rt::dequantizeGrid). The grid rule gives every thread one
// pass, so the grid-stride loops themselves are no longer taken by a plan.
TEST(DequantizeCodegenLarge, ManyWavesAreBitExactOnGpu) {
  test::GpuStream gpu = test::GpuStream::open();
  if (!gpu.stream)
    GTEST_SKIP() << gpu.why;
  static rt::KernelCache cache("");
  const int64_t m = 3072, k = 4096;
  std::vector<uint8_t> x = makeInput(m * k, Data::Random, 11);
  for (const DequantCase &c :
       {DequantCase{"mxfp8_row", Scheme::mxfp8(DType::E4M3), Direction::Rowwise,
                    DType::BF16},
        DequantCase{"fp8_block_col",
                    Scheme::fp8Block(DType::E4M3, 1, 128, true),
                    Direction::Columnwise, DType::BF16},
        DequantCase{"nvfp4_col", Scheme::nvfp4(false, false, false),
                    Direction::Columnwise, DType::BF16}}) {
    cg::Program p = dequantProgram(c, m, k, DType::BF16);
    EXPECT_EQ(
        test::gpuVersusCpu(p, {x}, *gpu.device, *gpu.stream, cache).difference,
        "")
        << c.name;
  }
}

// The grid-stride loops of the three dequantize paths, which no plan takes
// (the grid rule gives every thread one pass): the dequantize launch's
// grid shrunk to 7 CTAs, so each thread takes many passes over the tensor;
// tile rows and columns past the tensor's edge included.
TEST(DequantizeCodegenLarge, AShrunkenGridLoopsOverTheTensorOnGpu) {
  test::GpuStream gpu = test::GpuStream::open();
  if (!gpu.stream)
    GTEST_SKIP() << gpu.why;
  static rt::KernelCache cache("");
  struct Shrunk {
    DequantCase c;
    int64_t m, k;
    const char *path;
  };
  const Scheme block = Scheme::fp8Block(DType::E4M3, 1, 128, true);
  for (const Shrunk &s :
       {Shrunk{{"mxfp8_row", Scheme::mxfp8(DType::E4M3), Direction::Rowwise,
                DType::BF16},
               384,
               1024,
               "DequantPath::Rows"},
        Shrunk{{"block_col", block, Direction::Columnwise, DType::F32},
               320,
               520,
               "DequantPath::Tiles"},
        Shrunk{{"nvfp4_col", Scheme::nvfp4(false, false, false),
                Direction::Columnwise, DType::BF16},
               224,
               384,
               "DequantPath::Tiles"},
        Shrunk{{"block_row", block, Direction::Rowwise, DType::BF16},
               130,
               1001,
               "DequantPath::Elements"}}) {
    cg::Program p = dequantProgram(s.c, s.m, s.k, DType::BF16);
    std::vector<uint8_t> x = makeInput(s.m * s.k, Data::Random, 13);
    auto shrink = [&](cg::EntryPlan &plan) {
      rt::KernelSpec &ks = plan.kernels.back().plan.kernels.back();
      EXPECT_NE(ks.source.find(s.path), std::string::npos) << s.c.name;
      EXPECT_GT(ks.grid.x, 7u) << s.c.name;
      ks.grid = rt::Dim3{7, 1, 1};
    };
    EXPECT_EQ(
        test::gpuVersusCpu(p, {x}, *gpu.device, *gpu.stream, cache, shrink)
            .difference,
        "")
        << s.c.name;
  }
}

INSTANTIATE_TEST_SUITE_P(AllSchemes, DequantizeCodegen,
                         ::testing::ValuesIn(dequantCases()),
                         [](const ::testing::TestParamInfo<DequantCase> &i) {
                           return i.param.name;
                         });

TEST(QuantizeEmitter, RhtWith16x16BlocksUsesTheBlock2dColumnStage) {
  Case c{"rht2d", std::nullopt,
         Scheme::nvfp4(/*rht=*/true, false, /*block2d=*/true), false};
  cg::Program p = programFor(c, 64, 64, DType::BF16);
  rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(p, p.entries[0]);
  ASSERT_TRUE(plan) << plan.status().toString();
  EXPECT_NE(plan->kernels[0].plan.kernels.back().source.find(
                "Nvfp4RhtColumnStage<false, true>"),
            std::string::npos);
}

TEST(QuantizeEmitter, OneReadTakesTheRhtAndTheTensorAmax) {
  // Rowwise NVFP4 scales by the tensor amax, the RHT columnwise direction
  // by its transform's: one pre-pass writes both, then the tile kernel.
  Scheme rht = Scheme::nvfp4(/*rht=*/true);
  cg::Program both = programFor({"both", rht, rht}, 64, 64, DType::BF16);
  rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(both, both.entries[0]);
  ASSERT_TRUE(plan) << plan.status().toString();
  const cg::KernelPlan &kp = plan->kernels[0];
  ASSERT_EQ(kp.launches, 2u);
  const rt::KernelSpec &pre = kp.plan.kernels[0];
  EXPECT_EQ(pre.entry, "quantize_x_amaxes");
  ASSERT_EQ(pre.args.size(), 5u); // x, m, k, the RHT amax, the tensor amax
  EXPECT_NE(pre.source.find("rhtColumnAmax<te::dev::SourceType::BF16, true>"),
            std::string::npos);
  // Without a plain NVFP4 direction the pre-pass takes the RHT amax only.
  cg::Program col = programFor({"col", std::nullopt, rht}, 64, 64, DType::BF16);
  plan = cg::buildEntryPlan(col, col.entries[0]);
  ASSERT_TRUE(plan) << plan.status().toString();
  EXPECT_EQ(plan->kernels[0].plan.kernels[0].entry, "quantize_x_rht_amax");
  EXPECT_EQ(plan->kernels[0].plan.kernels[0].args.size(), 4u);
}

TEST(QuantizeEmitter, F32TilesTakeTheirLowHalvesPlaneAsDynamicSharedMemory) {
  cg::Program f32 = programFor(
      {"f32", Scheme::mxfp8(DType::E4M3), std::nullopt}, 64, 64, DType::F32);
  rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(f32, f32.entries[0]);
  ASSERT_TRUE(plan) << plan.status().toString();
  const rt::KernelSpec &spec = plan->kernels[0].plan.kernels.back();
  EXPECT_EQ(spec.sharedBytes, 128u * 128u * 2u);
  EXPECT_NE(spec.source.find("te::dev::SourceType::F32"), std::string::npos);
  cg::Program bf16 = programFor(
      {"bf16", Scheme::mxfp8(DType::E4M3), std::nullopt}, 64, 64, DType::BF16);
  plan = cg::buildEntryPlan(bf16, bf16.entries[0]);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->kernels[0].plan.kernels.back().sharedBytes, 0u);
}

TEST(QuantizeEmitter, StageTypesNameTheScheme) {
  EXPECT_EQ(cg::stageType(Scheme::mxfp8(DType::E5M2), Direction::Columnwise,
                          DType::BF16),
            "te::dev::Mxfp8Stage<te::dev::Fp8Format::E5M2, false>");
  EXPECT_EQ(cg::stageType(Scheme::fp8Block(DType::E4M3, 128, 128, true),
                          Direction::Rowwise, DType::F16),
            "te::dev::Fp8BlockStage<te::dev::Fp8Format::E4M3, true, true, "
            "true, te::dev::SourceType::F16>");
  EXPECT_EQ(cg::stageType(Scheme::nvfp4(true, true), Direction::Columnwise,
                          DType::BF16),
            "te::dev::Nvfp4RhtColumnStage<true, false>");
  // RHT is a columnwise transform: the rowwise direction is plain NVFP4.
  EXPECT_EQ(cg::stageType(Scheme::nvfp4(true), Direction::Rowwise, DType::BF16),
            "te::dev::Nvfp4Stage<true, false, false>");
}
