//===- GroupedGemmTest.cpp - Generated Hopper grouped GEMMs ---------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Without a GPU: the generated kernels (BF16, FP8 block-scaled, MXFP8) compile
// with NVRTC for sm_90a on CUTLASS/CuTe, and shapes without a kernel are
// refused with the rule. On a Hopper GPU: each expert's rows of the grouped
// result equal the reference GEMM of that expert alone, bit for bit, and
// the padding rows are zeros. The operands hold small multiples of 1/2, so
// every 128-element partial sum is exact whatever order the tensor cores
// add in; FP8 scales are not powers of two, so the promotion rule
// (docs/Numerics.md §7.3: y = fma(P, s_x·s_w, y)) shows in every bit.
// MXFP8: every 32-element partial sum is exact likewise, and the E8M0
// scales (2^-3 .. 2^3, and 2^-127, an fp32 subnormal) are promoted by the
// rule of docs/Numerics.md §5.4, y = fma(P · s_x, s_w, y), which the
// reference (ref::mxfp8Gemm) states.
//
//===----------------------------------------------------------------------===//

#include "HopperGpuTest.h"
#include "SassHazards.h"

#include "te/codegen/GroupedGemmEmitter.h"
#include "te/runtime/KernelCache.h"
#include "te/runtime/reference/Codecs.h"
#include "te/runtime/reference/Gemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

using namespace te;
using cg::GroupedGemmSpec;
namespace ref = te::rt::ref;

namespace {

GroupedGemmSpec spec(GroupedGemmSpec::Operands op, int64_t g, int64_t n,
                     int64_t k) {
  GroupedGemmSpec s;
  s.operands = op;
  s.groups = g;
  s.n = n;
  s.k = k;
  return s;
}

/// Compiles the kernel of `s` for sm_90a and checks that ptxas kept its
/// warpgroup MMAs asynchronous: it serialises those it cannot prove safe to
/// overlap (warnings C7510-C7520), which silently costs most of the speed.
/// Returns the compiled kernel (ptxas's report in its log).
rt::CompiledKernel expectCompiles(GroupedGemmSpec s) {
  s = s.resolved();
  rt::CompileOptions opts = *cg::groupedGemmCompileOptions();
  opts.flags.push_back("--ptxas-options=-v");
  rt::Expected<rt::CompiledKernel> k =
      rt::compileCuda(cg::emitGroupedGemm(s), s.kernelName() + ".cu", opts);
  EXPECT_TRUE(k) << k.status().message();
  if (!k)
    return {};
  EXPECT_EQ(k->log.find("wgmma.mma_async instructions are serialized"),
            std::string::npos)
      << k->log;
  std::printf("[   info   ] %s: NVRTC %.0f ms (cold), %zu-byte CUBIN\n",
              s.kernelName().c_str(), k->compileMillis, k->cubin.size());
  return *k;
}

/// The micro-scaled kernels' (MXFP8, NVFP4) shared rules, each refused by
/// name: both operands rowwise, one CTA a cluster.
void expectFpropOneCtaRules(const GroupedGemmSpec &s) {
  GroupedGemmSpec wcol = s;
  wcol.weightColumnwise = true;
  EXPECT_NE(
      cg::checkGroupedGemm(wcol).message().find("reads both operands rowwise"),
      std::string::npos);
  GroupedGemmSpec pair = s;
  pair.cluster = 2;
  EXPECT_NE(cg::checkGroupedGemm(pair).message().find("one CTA a cluster"),
            std::string::npos);
}

} // namespace

TEST(GroupedGemm, EveryKernelKindCompilesForSm90a) {
  if (!rt::nvrtcVersion())
    GTEST_SKIP() << rt::nvrtcVersion().status().message();
  // FP8 and BF16 fprop; FP8 and BF16 dgrad (the weight read columnwise:
  // the layer's N = 4096 contracted, K = 7168 out); the FP8 dgrad of an
  // E5M2 gradient (TE's hybrid format); then 2 x 2 clusters: FP8 and BF16
  // fprop, FP8 dgrad.
  for (int variant = 0; variant < 8; ++variant) {
    GroupedGemmSpec::Operands op = variant % 2 == 0
                                       ? GroupedGemmSpec::Operands::Fp8Block
                                       : GroupedGemmSpec::Operands::BF16;
    bool dgrad = (variant >= 2 && variant <= 4) || variant == 7;
    if (variant == 7)
      op = GroupedGemmSpec::Operands::Fp8Block;
    GroupedGemmSpec s =
        dgrad ? spec(op, 8, 7168, 4096) : spec(op, 8, 4096, 7168);
    s.weightColumnwise = dgrad;
    if (variant == 4)
      s.fp8Formats = {rt::DType::E5M2, rt::DType::E4M3};
    if (variant >= 5) {
      s.cluster = 2;
      s.clusterM = 2;
    }
    SCOPED_TRACE(variant);
    expectCompiles(s);
  }
}

// The MXFP8 kernel (and its E5M2 x E4M3 form) compiles without serialised
// MMAs. (Its math warpgroups hold three 64x128 accumulators; ptxas spills a
// few epilogue addresses, reloaded once a tile, none in the K loop.)
TEST(GroupedGemm, Mxfp8KernelCompilesForSm90a) {
  if (!rt::nvrtcVersion())
    GTEST_SKIP() << rt::nvrtcVersion().status().message();
  for (bool e5m2 : {false, true}) {
    GroupedGemmSpec s = spec(GroupedGemmSpec::Operands::Mxfp8, 8, 4096, 7168);
    if (e5m2)
      s.fp8Formats = {rt::DType::E5M2, rt::DType::E4M3};
    expectCompiles(s);
  }
}

// The NVFP4 kernel (f16 tiles converted by the producer's warps) compiles
// without serialised MMAs, with every register reallocation kept (the
// warpgroups' split fills the CTA's pool exactly) and without a
// reconvergence hazard (where nvdisasm is found), at both tile widths.
// (At 256-wide tiles ptxas spills a few values around the epilogue and the
// tile loop, none in the K loop or the conversion.)
TEST(GroupedGemm, Nvfp4KernelCompilesForSm90a) {
  if (!rt::nvrtcVersion())
    GTEST_SKIP() << rt::nvrtcVersion().status().message();
  for (int width : {256, 128}) {
    GroupedGemmSpec s = spec(GroupedGemmSpec::Operands::Nvfp4, 8, 4096, 7168);
    s.blockN = width;
    rt::CompiledKernel k = expectCompiles(s);
    EXPECT_EQ(k.log.find("setmaxnreg"), std::string::npos) << k.log;
    std::string why;
    std::optional<std::string> sass = test::disassembleCubin(k.cubin, why);
    if (!sass) {
      std::printf("[   info   ] no reconvergence scan: %s\n", why.c_str());
      continue;
    }
    std::vector<std::string> hazards = test::reconvergenceHazards(*sass);
    EXPECT_TRUE(hazards.empty()) << hazards.front();
  }
}

TEST(GroupedGemm, Nvfp4ShapesWithoutAKernelAreRefusedWithTheRule) {
  GroupedGemmSpec s = spec(GroupedGemmSpec::Operands::Nvfp4, 4, 512, 512);
  EXPECT_TRUE(cg::checkGroupedGemm(s).isOk());
  EXPECT_NE(s.kernelName().find("te_grouped_gemm_nvfp4_g4_n512_k512_t256_c1"),
            std::string::npos)
      << s.kernelName();
  // Three f16 stages (48 KB each at 256-wide tiles), then the packed-code
  // ring fills the rest: five stages of 12 KB; eight (the most) of 8 KB at
  // 128-wide tiles. Both depths are named.
  EXPECT_EQ(s.resolved().stages, 3);
  EXPECT_EQ(s.resolved().rawStages, 5);
  EXPECT_NE(s.kernelName().find("_s3r5"), std::string::npos) << s.kernelName();
  GroupedGemmSpec narrow = s;
  narrow.blockN = 128;
  EXPECT_EQ(narrow.resolved().stages, 3);
  EXPECT_EQ(narrow.resolved().rawStages, 8);
  GroupedGemmSpec shallow = s;
  shallow.stages = 2;
  EXPECT_NE(
      cg::checkGroupedGemm(shallow).message().find("three f16 stages or more"),
      std::string::npos);
  shallow = s;
  shallow.rawStages = 1;
  EXPECT_NE(cg::checkGroupedGemm(shallow).message().find(
                "two packed-code stages or more"),
            std::string::npos);
  auto maps = cg::groupedGemmMaps(s, 300);
  EXPECT_EQ(maps[0], (rt::TensorMapShape{rt::DType::E4M3, 300, 256, 256, 128,
                                         32, rt::TensorMapSwizzle::None}));
  EXPECT_EQ(maps[1], (rt::TensorMapShape{rt::DType::E4M3, 2048, 256, 256, 256,
                                         32, rt::TensorMapSwizzle::None}));
  // Rows stored from registers (N not a multiple of 8): the fourth map
  // repeats the packed x's, unused.
  GroupedGemmSpec odd = s;
  odd.n = 202;
  EXPECT_EQ(cg::groupedGemmMaps(odd, 300)[3], maps[0]);
  expectFpropOneCtaRules(s);
  GroupedGemmSpec ragged = s;
  ragged.k = 544;
  EXPECT_NE(cg::checkGroupedGemm(ragged).message().find("multiple of 64"),
            std::string::npos);
}

TEST(GroupedGemm, Mxfp8ShapesWithoutAKernelAreRefusedWithTheRule) {
  GroupedGemmSpec s = spec(GroupedGemmSpec::Operands::Mxfp8, 4, 256, 512);
  EXPECT_TRUE(cg::checkGroupedGemm(s).isOk());
  EXPECT_NE(s.kernelName().find("te_grouped_gemm_mxfp8_g4_n256_k512_t128_c1"),
            std::string::npos)
      << s.kernelName();
  // 128 KB of operand tiles and 4 KB of fp32 scales a stage: five stages.
  EXPECT_EQ(s.resolved().stages, 5);
  expectFpropOneCtaRules(s);
  GroupedGemmSpec shallow = s;
  shallow.stages = 2;
  EXPECT_NE(cg::checkGroupedGemm(shallow).message().find("three stages"),
            std::string::npos);
  GroupedGemmSpec ragged = s;
  ragged.k = 480;
  EXPECT_NE(cg::checkGroupedGemm(ragged).message().find("multiple of 128"),
            std::string::npos);
  // No scale map: the third tensor map repeats x's.
  EXPECT_EQ(cg::groupedGemmMaps(s, 300)[2], cg::groupedGemmMaps(s, 300)[0]);
}

TEST(GroupedGemm, ShapesWithoutAKernelAreRefusedWithTheRule) {
  auto msg = [](const GroupedGemmSpec &s) {
    return cg::checkGroupedGemm(s).message();
  };
  EXPECT_NE(msg(spec(GroupedGemmSpec::Operands::Fp8Block, 4, 256, 200))
                .find("K must be a positive multiple of 128"),
            std::string::npos);
  EXPECT_NE(msg(spec(GroupedGemmSpec::Operands::BF16, 4, 256, 96))
                .find("multiple of 64"),
            std::string::npos);
  EXPECT_NE(msg(spec(GroupedGemmSpec::Operands::BF16, 4, 255, 128))
                .find("N must be even"),
            std::string::npos);
  EXPECT_NE(msg(spec(GroupedGemmSpec::Operands::BF16, 0, 256, 128))
                .find("number of experts"),
            std::string::npos);
  // A BF16 weight read columnwise is the stack itself: its rows (N long)
  // need the TMA's 16-byte stride.
  GroupedGemmSpec columnwiseBf16 =
      spec(GroupedGemmSpec::Operands::BF16, 4, 250, 128);
  columnwiseBf16.weightColumnwise = true;
  EXPECT_NE(msg(columnwiseBf16).find("N (its row length) a multiple of 8"),
            std::string::npos);
  columnwiseBf16.n = 248;
  EXPECT_TRUE(cg::checkGroupedGemm(columnwiseBf16).isOk());
  GroupedGemmSpec deep = spec(GroupedGemmSpec::Operands::Fp8Block, 4, 256, 512);
  deep.stages = 8;
  EXPECT_NE(msg(deep).find("227 KiB"), std::string::npos);
  // 2 x 2 clusters: named; at most 2 CTAs along M; the BF16 stack read
  // along N is not split between row-tile pairs.
  GroupedGemmSpec pairs = spec(GroupedGemmSpec::Operands::Fp8Block, 4, 256, 512);
  pairs.cluster = 2;
  pairs.clusterM = 2;
  EXPECT_TRUE(cg::checkGroupedGemm(pairs).isOk());
  EXPECT_NE(pairs.kernelName().find("_t128_c2x2_b16_o1_s"), std::string::npos);
  pairs.clusterM = 3;
  EXPECT_NE(msg(pairs).find("1 or 2 CTAs along M"), std::string::npos);
  GroupedGemmSpec stackPairs = spec(GroupedGemmSpec::Operands::BF16, 4, 256, 128);
  stackPairs.weightColumnwise = true;
  stackPairs.clusterM = 2;
  EXPECT_NE(msg(stackPairs).find("not the BF16 stack"), std::string::npos);
  // Bands of the tile order: named; 1..1024 row units.
  GroupedGemmSpec banded = pairs;
  banded.clusterM = 2;
  banded.band = 8;
  EXPECT_TRUE(cg::checkGroupedGemm(banded).isOk());
  EXPECT_NE(banded.kernelName().find("_c2x2_b8_o1_s"), std::string::npos);
  banded.band = 1025;
  EXPECT_NE(msg(banded).find("1..1024 row units"), std::string::npos);
  GroupedGemmSpec wide = spec(GroupedGemmSpec::Operands::Fp8Block, 4, 256, 512);
  wide.blockN = 256;
  EXPECT_NE(msg(wide).find("FP8 tile width must be 128"), std::string::npos);
  // E5M2 on one side names the kernel; on both, no FP8 MMA exists.
  GroupedGemmSpec e5m2 = spec(GroupedGemmSpec::Operands::Fp8Block, 4, 256, 512);
  e5m2.fp8Formats = {rt::DType::E5M2, rt::DType::E4M3};
  EXPECT_TRUE(cg::checkGroupedGemm(e5m2).isOk());
  EXPECT_NE(e5m2.kernelName().find("fp8block_e5m2xe4m3_g4"), std::string::npos);
  e5m2.fp8Formats.b = rt::DType::E5M2;
  EXPECT_NE(msg(e5m2).find("no FP8 GEMM multiplies e5m2 by e5m2"),
            std::string::npos);
  e5m2.fp8Formats.b = rt::DType::BF16;
  EXPECT_NE(msg(e5m2).find("e4m3 or e5m2, got e5m2 and bf16"),
            std::string::npos);
  GroupedGemmSpec odd = spec(GroupedGemmSpec::Operands::BF16, 4, 384, 512);
  odd.blockN = 128;
  odd.cluster = 2; // 3 column blocks
  EXPECT_NE(msg(odd).find("even number of column blocks"), std::string::npos);
  // The picks: wide tiles, no cluster (FP8 and BF16).
  GroupedGemmSpec fp8 =
      spec(GroupedGemmSpec::Operands::Fp8Block, 8, 4096, 7168).resolved();
  EXPECT_EQ(fp8.blockN, 128);
  EXPECT_EQ(fp8.cluster, 1);
  EXPECT_EQ(fp8.stages, 6); // 16 KB of output boxes
  EXPECT_EQ(fp8.outBoxes, 1);
  EXPECT_EQ(fp8.band, 16);
  GroupedGemmSpec bf16 =
      spec(GroupedGemmSpec::Operands::BF16, 8, 768, 7168).resolved();
  EXPECT_EQ(bf16.blockN, 256);
  EXPECT_EQ(bf16.cluster, 1);
  EXPECT_EQ(bf16.stages, 4);
  EXPECT_EQ(bf16.band, 32);
  EXPECT_EQ(
      spec(GroupedGemmSpec::Operands::BF16, 8, 4096, 7168).resolved().cluster,
      1);
  EXPECT_TRUE(
      cg::checkGroupedGemm(spec(GroupedGemmSpec::Operands::BF16, 4, 256, 128))
          .isOk());
}

// Tiles leave by TMA store where the bf16 rows' stride allows one (N a
// multiple of 8), FP8 and BF16 alike: 16 KB of output boxes (one a
// warpgroup) in the shared memory, and the fourth tensor map is y's (64 x
// 64 boxes, 128-byte swizzle); otherwise the fourth map repeats x's and is
// unused.
TEST(GroupedGemm, TilesWithAlignedRowsLeaveByTmaStore) {
  for (auto op :
       {GroupedGemmSpec::Operands::Fp8Block, GroupedGemmSpec::Operands::BF16}) {
    GroupedGemmSpec aligned = spec(op, 2, 200, 256);
    aligned.stages = 4;
    GroupedGemmSpec odd = aligned;
    odd.n = 202;
    EXPECT_TRUE(cg::groupedGemmTmaStore(aligned));
    EXPECT_FALSE(cg::groupedGemmTmaStore(odd));
    EXPECT_EQ(cg::groupedGemmSharedBytes(aligned),
              cg::groupedGemmSharedBytes(odd) + 2 * 64 * 128);
    auto maps = cg::groupedGemmMaps(aligned, 300);
    EXPECT_EQ(maps[3], (rt::TensorMapShape{rt::DType::BF16, 300, 200, 400, 64,
                                           64, rt::TensorMapSwizzle::B128}));
    EXPECT_EQ(cg::groupedGemmMaps(odd, 300)[3],
              cg::groupedGemmMaps(odd, 300)[0]);
  }
}

// One output box a warpgroup (the default) halves the boxes' 32 KB, which
// buys the ring a stage at 128x128 FP8 tiles; it is named, and only 1 or 2
// boxes exist.
TEST(GroupedGemm, OneOutputBoxAWarpgroupBuysAStage) {
  GroupedGemmSpec one =
      spec(GroupedGemmSpec::Operands::Fp8Block, 8, 4096, 7168);
  GroupedGemmSpec two = one;
  two.outBoxes = 2;
  EXPECT_EQ(one.resolved().outBoxes, 1);
  EXPECT_EQ(one.resolved().stages, 6);
  EXPECT_EQ(one.resolved().stages, two.resolved().stages + 1);
  EXPECT_NE(one.kernelName().find("_o1_s"), std::string::npos)
      << one.kernelName();
  EXPECT_EQ(two.kernelName().find("_o1"), std::string::npos);
  GroupedGemmSpec fixed = two;
  fixed.stages = 4;
  GroupedGemmSpec fixedOne = fixed;
  fixedOne.outBoxes = 1;
  EXPECT_EQ(cg::groupedGemmSharedBytes(fixed),
            cg::groupedGemmSharedBytes(fixedOne) + 2 * 64 * 128);
  GroupedGemmSpec three = two;
  three.outBoxes = 3;
  rt::Status st = cg::checkGroupedGemm(three);
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("1 or 2 output boxes"), std::string::npos)
      << st.message();
}

namespace {

class GroupedGemmGpu : public test::HopperGpuTest {
protected:
  /// Runs the grouped GEMM of `s` on M_total rows split as `splits` and
  /// checks every row against the reference of its expert; with
  /// `replaySplits`, through a CUDA graph replayed after those are written.
  void check(const GroupedGemmSpec &s, int64_t mTotal,
             const std::vector<int64_t> &splits, int maxCtas = 0,
             const std::vector<int64_t> &replaySplits = {}) {
    // The tile and cluster the spec picks, and the other tile widths and
    // cluster sizes where the shape allows them.
    std::vector<GroupedGemmSpec> variants = {s.resolved()};
    for (auto [width, cluster] :
         {std::pair<int, int>{128, 1}, {128, 2}, {256, 1}, {256, 2}}) {
      GroupedGemmSpec v = s;
      v.blockN = width;
      v.cluster = cluster;
      v = v.resolved();
      if (cg::checkGroupedGemm(v).isOk() &&
          v.kernelName() != variants[0].kernelName())
        variants.push_back(v);
    }
    for (const GroupedGemmSpec &v : variants) {
      SCOPED_TRACE(v.kernelName());
      checkOne(v, mTotal, splits, maxCtas, replaySplits);
    }
  }

  void checkOne(const GroupedGemmSpec &s, int64_t mTotal,
                const std::vector<int64_t> &splits, int maxCtas,
                const std::vector<int64_t> &replaySplits) {
    ASSERT_EQ(static_cast<int64_t>(splits.size()), s.groups);
    const int64_t n = s.n, k = s.k, g = s.groups, kb = (k + 127) / 128;
    const int64_t mPad = (mTotal + 3) / 4 * 4, nb = (n + 127) / 128,
                  kbPad = (kb + 3) / 4 * 4;
    std::mt19937 rng(static_cast<unsigned>(mTotal * 131 + g));
    std::uniform_int_distribution<int> small(-8, 8);
    std::uniform_real_distribution<float> scale(0.5f, 2.0f);
    std::vector<float> xv(mTotal * k), wv(g * n * k);
    for (float &v : xv)
      v = small(rng) * 0.5f;
    for (float &v : wv)
      v = small(rng) * 0.5f;
    std::vector<float> sx(kb * mPad), sw(g * nb * kbPad);
    for (float &v : sx)
      v = scale(rng);
    for (float &v : sw)
      v = scale(rng);

    rt::DeviceBuffer x =
        s.fp8() ? upload(fp8Codes(xv, s.fp8Formats.a)) : upload(bf16(xv));
    rt::DeviceBuffer w =
        s.fp8() ? upload(fp8Codes(wv, s.fp8Formats.b)) : upload(bf16(wv));
    rt::DeviceBuffer sxBuf = upload(sx), swBuf = upload(sw);
    if (s.mxfp8()) {
      // E8M0 scales [roundup(rows,128)][K/32]: 2^-3 .. 2^3, every 11th
      // 2^-127 (the fp32 subnormal the decode must keep).
      std::uniform_int_distribution<int> exponent(124, 130);
      auto scales = [&](int64_t rows) {
        std::vector<uint8_t> v((rows + 127) / 128 * 128 * (k / 32));
        for (size_t i = 0; i < v.size(); ++i)
          v[i] = i % 11 == 5 ? 0 : uint8_t(exponent(rng));
        return v;
      };
      mxSx_ = scales(mTotal);
      mxSw_ = scales(g * n);
      sxBuf = upload(mxSx_);
      swBuf = upload(mxSw_);
    }
    rt::DeviceBuffer amaxXBuf, amaxWBuf;
    if (s.nvfp4()) {
      // E2M1 codes of both signs (-0 too): every code in W, x's half zeros
      // and magnitudes up to 2; E4M3 block scales 0.5, 0.75, 1, 1.5, 2,
      // every 13th 0. Every value is then a multiple of 1/8 and each
      // product of 1/64 (x's values at most 4, W's 12), so every partial
      // sum below 2^18 in magnitude is exact in fp32, whatever the order the
      // tensor cores add in. Not a bound (at K = 7168 the worst case is
      // 344064), but these random-signed sums stay in the hundreds.
      const uint8_t kScales[] = {0x30, 0x34, 0x38, 0x3C, 0x40};
      std::uniform_int_distribution<int> byte(0, 255), pick(0, 4), half(0, 1),
          magnitude(1, 4);
      auto codes = [&](int64_t rows, bool small) {
        std::vector<uint8_t> v(rows * k / 2);
        for (uint8_t &c : v) {
          c = uint8_t(byte(rng));
          if (small)
            for (int shift : {0, 4}) {
              int code = half(rng) ? 0 : magnitude(rng) | (half(rng) << 3);
              c = uint8_t((c & ~(0xF << shift)) | (code << shift));
            }
        }
        return v;
      };
      auto scales = [&](int64_t rows) {
        std::vector<uint8_t> v((rows + 127) / 128 * 128 * (k / 16));
        for (size_t i = 0; i < v.size(); ++i)
          v[i] = i % 13 == 7 ? 0 : kScales[pick(rng)];
        return v;
      };
      nvX_ = codes(mTotal, true);
      nvW_ = codes(g * n, false);
      mxSx_ = scales(mTotal);
      mxSw_ = scales(g * n);
      amaxX_.resize(g);
      amaxW_.resize(g);
      for (int64_t e = 0; e < g; ++e) {
        amaxX_[e] = 10.0f * scale(rng);
        amaxW_[e] = 1000.0f * scale(rng);
      }
      x = upload(nvX_);
      w = upload(nvW_);
      sxBuf = upload(mxSx_);
      swBuf = upload(mxSw_);
      amaxXBuf = upload(amaxX_);
      amaxWBuf = upload(amaxW_);
    }
    rt::DeviceBuffer splitBuf = upload(splits);
    // With a bias: bf16 values of both signs, -0 and +0 among them (a -0
    // sum stays -0 only without one).
    rt::DeviceBuffer biasBuf;
    bias_.clear();
    if (withBias_) {
      ASSERT_TRUE(s.nvfp4() || s.mxfp8()) << "the test's reference adds a "
                                             "bias for MXFP8 and NVFP4 only";
      std::uniform_int_distribution<int> biasCode(-64, 64);
      bias_.resize(g * n);
      for (size_t i = 0; i < bias_.size(); ++i)
        bias_[i] = i % 17 == 3 ? -0.0f : biasCode(rng) * 0.375f;
      biasBuf = upload(bf16(bias_));
    }
    rt::Expected<rt::DeviceBuffer> y =
        rt::DeviceBuffer::allocate(mTotal * n * 2);
    ASSERT_TRUE(y);
    ASSERT_TRUE(y->fill(0xFF, *stream_)); // NaN: unwritten rows show

    rt::KernelCache cache;
    rt::Expected<rt::CompileOptions> opts = cg::groupedGemmCompileOptions();
    ASSERT_TRUE(opts) << opts.status().message();
    auto compiled = cache.getOrCompile(cg::emitGroupedGemm(s), *opts);
    ASSERT_TRUE(compiled) << compiled.status().message();
    rt::Expected<rt::Kernel> kernel =
        rt::Kernel::load((*compiled)->cubin, s.kernelName());
    ASSERT_TRUE(kernel) << kernel.status().message();
    cg::GroupedGemmBuffers b{x.devicePtr(),
                             w.devicePtr(),
                             sxBuf.devicePtr(),
                             swBuf.devicePtr(),
                             splitBuf.devicePtr(),
                             y->devicePtr(),
                             mTotal};
    if (withBias_)
      b.bias = biasBuf.devicePtr();
    if (s.nvfp4()) {
      b.amaxX = amaxXBuf.devicePtr();
      b.amaxW = amaxWBuf.devicePtr();
    }
    rt::Expected<cg::GroupedGemmLaunch> launch =
        cg::prepareGroupedGemm(s, b, *device_, *kernel, maxCtas);
    ASSERT_TRUE(launch) << launch.status().message();
    auto enqueue = [&] {
      return cg::launchGroupedGemm(*kernel, *launch, *stream_);
    };
    if (replaySplits.empty()) {
      ASSERT_TRUE(enqueue());
      verify(s, *y, xv, wv, sx, sw, mTotal, splits);
      return;
    }
    // One captured graph, replayed after new split sizes are written into
    // the device tensor: the kernel reads them on every launch.
    rt::Expected<rt::Graph> graph = rt::Graph::capture(*stream_, enqueue);
    ASSERT_TRUE(graph) << graph.status().message();
    ASSERT_TRUE(graph->launch(*stream_));
    verify(s, *y, xv, wv, sx, sw, mTotal, splits);
    ASSERT_TRUE(splitBuf.copyFromHost(replaySplits.data(), g * 8, *stream_));
    ASSERT_TRUE(y->fill(0xFF, *stream_));
    ASSERT_TRUE(graph->launch(*stream_));
    verify(s, *y, xv, wv, sx, sw, mTotal, replaySplits);
  }

  /// Every expert's rows against its own reference GEMM; the rows past the
  /// experts' (split sizes clamped to [0, rows left]) are zeros.
  void verify(const GroupedGemmSpec &s, const rt::DeviceBuffer &y,
              const std::vector<float> &xv, const std::vector<float> &wv,
              const std::vector<float> &sx, const std::vector<float> &sw,
              int64_t mTotal, const std::vector<int64_t> &splits) {
    const int64_t n = s.n;
    std::vector<uint16_t> got(mTotal * n);
    ASSERT_TRUE(y.copyToHost(got.data(), got.size() * 2, *stream_));
    ASSERT_TRUE(stream_->synchronize());
    int64_t row0 = 0, wrong = 0;
    for (int64_t e = 0; e < s.groups; ++e) {
      int64_t m = std::min(std::max<int64_t>(splits[e], 0), mTotal - row0);
      std::vector<uint16_t> want = expected(s, xv, wv, sx, sw, row0, m, e);
      for (int64_t i = 0; i < m * n; ++i)
        if (got[row0 * n + i] != want[i] && wrong++ < 5)
          ADD_FAILURE() << "expert " << e << " row " << i / n << " col "
                        << i % n << ": got 0x" << std::hex << got[row0 * n + i]
                        << " want 0x" << want[i];
      row0 += m;
    }
    for (int64_t i = row0 * n; i < mTotal * n; ++i)
      if (got[i] != 0 && wrong++ < 5)
        ADD_FAILURE() << "padding row " << i / n << " col " << i % n << " is 0x"
                      << std::hex << got[i] << ", not zero";
    EXPECT_EQ(wrong, 0) << s.kernelName() << " M_total " << mTotal;
  }

private:
  /// MXFP8: the E8M0 scales of x and of the stack, as uploaded (NVFP4:
  /// their E4M3 block scales).
  std::vector<uint8_t> mxSx_, mxSw_;
  /// NVFP4: the packed codes of x and of the stack, each expert's amaxes.
  std::vector<uint8_t> nvX_, nvW_;
  std::vector<float> amaxX_, amaxW_;
  /// The [G, N] bias of checks with withBias_ (MXFP8, NVFP4), as uploaded.
  std::vector<float> bias_;

protected:
  bool withBias_ = false;

private:
  static std::vector<uint16_t> bf16(const std::vector<float> &v) {
    return bf16Codes(v);
  }

  const float *expertBias(int64_t e, int64_t n) const {
    return bias_.empty() ? nullptr : bias_.data() + e * n;
  }

  /// Expert `e`'s rows [row0, row0 + m) as their own GEMM, rounded to bf16.
  std::vector<uint16_t> expected(const GroupedGemmSpec &s,
                                 const std::vector<float> &xv,
                                 const std::vector<float> &wv,
                                 const std::vector<float> &sx,
                                 const std::vector<float> &sw, int64_t row0,
                                 int64_t m, int64_t e) const {
    const int64_t n = s.n, k = s.k, kb = (k + 127) / 128;
    const int64_t mTotalPad = static_cast<int64_t>(sx.size()) / kb;
    const int64_t nb = (n + 127) / 128, kbPad = (kb + 3) / 4 * 4;
    if (m == 0)
      return {};
    std::vector<float> out;
    if (s.nvfp4()) {
      ref::Nvfp4Operand xo, wo;
      xo.rows = m;
      wo.rows = n;
      xo.k = wo.k = k;
      xo.scaleStride = wo.scaleStride = k / 16;
      xo.codes.assign(nvX_.begin() + row0 * k / 2,
                      nvX_.begin() + (row0 + m) * k / 2);
      wo.codes.assign(nvW_.begin() + e * n * k / 2,
                      nvW_.begin() + (e + 1) * n * k / 2);
      xo.scales.assign(mxSx_.begin() + row0 * k / 16,
                       mxSx_.begin() + (row0 + m) * k / 16);
      wo.scales.assign(mxSw_.begin() + e * n * k / 16,
                       mxSw_.begin() + (e + 1) * n * k / 16);
      xo.amax = amaxX_[e];
      wo.amax = amaxW_[e];
      std::string error;
      out = ref::nvfp4Gemm(xo, wo, expertBias(e, n), &error);
      EXPECT_EQ(error, "");
    } else if (s.mxfp8()) {
      const int64_t stride = k / 32;
      ref::Mxfp8Operand xo, wo;
      xo.rows = m;
      wo.rows = n;
      xo.k = wo.k = k;
      xo.scaleStride = wo.scaleStride = stride;
      xo.format = fp8Format(s.fp8Formats.a);
      wo.format = fp8Format(s.fp8Formats.b);
      xo.codes = fp8Codes({xv.begin() + row0 * k, xv.begin() + (row0 + m) * k},
                          s.fp8Formats.a);
      wo.codes =
          fp8Codes({wv.begin() + e * n * k, wv.begin() + (e + 1) * n * k},
                   s.fp8Formats.b);
      xo.scales.assign(mxSx_.begin() + row0 * stride,
                       mxSx_.begin() + (row0 + m) * stride);
      wo.scales.assign(mxSw_.begin() + e * n * stride,
                       mxSw_.begin() + (e + 1) * n * stride);
      std::string error;
      out = ref::mxfp8Gemm(xo, wo, expertBias(e, n), &error);
      EXPECT_EQ(error, "");
    } else if (!s.fp8()) {
      // fprop: W [G·N, K]; dgrad: the [G, K, N] stack, read along N.
      out =
          ref::referenceGemm(xv.data() + row0 * k, false, wv.data() + e * n * k,
                             !s.weightColumnwise, m, n, k);
    } else {
      ref::BlockScaledOperand xo, wo;
      xo.rows = m;
      xo.k = k;
      xo.scaleStride = m;
      xo.format = fp8Format(s.fp8Formats.a);
      xo.codes = fp8Codes({xv.begin() + row0 * k, xv.begin() + (row0 + m) * k},
                          s.fp8Formats.a);
      xo.scaleInv.resize(kb * m);
      for (int64_t b = 0; b < kb; ++b)
        for (int64_t r = 0; r < m; ++r)
          xo.scaleInv[b * m + r] = sx[b * mTotalPad + row0 + r];
      wo.rows = n;
      wo.k = k;
      wo.tile2d = true;
      wo.scaleStride = kbPad;
      wo.format = fp8Format(s.fp8Formats.b);
      wo.codes =
          fp8Codes({wv.begin() + e * n * k, wv.begin() + (e + 1) * n * k},
                   s.fp8Formats.b);
      wo.scaleInv.assign(sw.begin() + e * nb * kbPad,
                         sw.begin() + (e + 1) * nb * kbPad);
      std::string error;
      out = ref::blockScaledGemm(xo, wo, nullptr, &error);
      EXPECT_EQ(error, "");
    }
    return ref::roundToBF16(out);
  }
};

} // namespace

// Ragged splits, an expert without tokens, padding rows, M_total not a
// multiple of 128.
TEST_F(GroupedGemmGpu, Fp8BlockRaggedSplitsMatchEachExpertAlone) {
  check(spec(GroupedGemmSpec::Operands::Fp8Block, 4, 384, 512), 700,
        {0, 300, 1, 250});
}

// Expert boundaries on 16-row multiples, and fewer CTAs than tiles.
TEST_F(GroupedGemmGpu, Fp8BlockAlignedSplits) {
  check(spec(GroupedGemmSpec::Operands::Fp8Block, 4, 384, 512), 700,
        {0, 304, 16, 240});
}
TEST_F(GroupedGemmGpu, Fp8BlockRaggedSplitsFewCtas) {
  check(spec(GroupedGemmSpec::Operands::Fp8Block, 4, 384, 512), 700,
        {0, 300, 1, 250}, 4);
}

// E5M2 codes on either side (an E5M2 gradient's dgrad reads them as x):
// the E5M2 x E4M3 and E4M3 x E5M2 tensor-core MMAs.
TEST_F(GroupedGemmGpu, Fp8BlockE5m2OperandsMatchEachExpertAlone) {
  for (cg::Fp8Operands formats :
       {cg::Fp8Operands{rt::DType::E5M2, rt::DType::E4M3},
        cg::Fp8Operands{rt::DType::E4M3, rt::DType::E5M2}}) {
    GroupedGemmSpec s = spec(GroupedGemmSpec::Operands::Fp8Block, 4, 384, 512);
    s.fp8Formats = formats;
    check(s, 700, {0, 300, 1, 250});
  }
}

TEST_F(GroupedGemmGpu, Bf16RaggedSplitsMatchEachExpertAlone) {
  check(spec(GroupedGemmSpec::Operands::BF16, 4, 384, 512), 700,
        {129, 0, 255, 200});
}

// dgrad of a BF16 layer: dX_g = dY_g W_g, the [G, K', N'] stack read along
// its rows (MN-major): K' = 256 contracted in 64-row slabs, N' = 384 out
// (tiles of 128 and 256, clusters), then N' = 200 (the last 64-column box
// partly past the row).
TEST_F(GroupedGemmGpu, Bf16DgradReadsTheStackAlongN) {
  GroupedGemmSpec s = spec(GroupedGemmSpec::Operands::BF16, 4, 384, 256);
  s.weightColumnwise = true;
  check(s, 700, {129, 0, 255, 200});
  s.n = 200;
  check(s, 300, {150, 1, 149, 0});
  GroupedGemmSpec one = spec(GroupedGemmSpec::Operands::BF16, 1, 128, 192);
  one.weightColumnwise = true;
  check(one, 130, {130});
}

// Row-tile pairs share the W tile: check() runs 1 x 2 and 2 x 2 clusters
// (its cluster variants keep clusterM). Experts with an odd number of row
// tiles (300 rows: 3; 1 row: 1) get a pad tile that computes rows it must
// not store; an expert without tokens none.
TEST_F(GroupedGemmGpu, RowTilePairsShareTheWeightTile) {
  GroupedGemmSpec fp8 = spec(GroupedGemmSpec::Operands::Fp8Block, 4, 256, 512);
  fp8.clusterM = 2;
  check(fp8, 700, {0, 300, 1, 250});
  check(fp8, 700, {0, 300, 1, 250}, 4); // one or two clusters walk every tile
  check(fp8, 640, {100, 200, 0, 340}, 0, {0, 17, 500, 123});
  GroupedGemmSpec bf = spec(GroupedGemmSpec::Operands::BF16, 4, 512, 256);
  bf.clusterM = 2;
  check(bf, 700, {129, 0, 255, 200});
  GroupedGemmSpec one = spec(GroupedGemmSpec::Operands::Fp8Block, 1, 256, 256);
  one.clusterM = 2;
  check(one, 200, {200});
}

// The tile order in bands of row units (walked row unit first; the other
// tests run the default bands): row by row, then bands of 3 against experts
// of 0, 2, 8, 4 and 1 row tiles, so most experts end in a short band; one
// cluster, a few, or one per tile walk them; with 2 x 2 clusters the units
// are row-tile pairs.
TEST_F(GroupedGemmGpu, BandsOfRowUnitsCoverEveryTile) {
  GroupedGemmSpec fp8 = spec(GroupedGemmSpec::Operands::Fp8Block, 5, 512, 256);
  fp8.band = 1;
  check(fp8, 1600, {0, 130, 900, 400, 128}, 2);
  fp8.band = 3;
  check(fp8, 1600, {0, 130, 900, 400, 128});
  check(fp8, 1600, {0, 130, 900, 400, 128}, 2);
  check(fp8, 1600, {0, 130, 900, 400, 128}, 6, {1000, 0, 0, 1, 599});
  GroupedGemmSpec bf = spec(GroupedGemmSpec::Operands::BF16, 5, 512, 128);
  bf.band = 3;
  check(bf, 1600, {0, 130, 900, 400, 128}, 4);
  GroupedGemmSpec pairs = fp8;
  pairs.clusterM = 2;
  pairs.band = 2;
  check(pairs, 1600, {0, 130, 900, 400, 128}, 4);
}

// MXFP8 x MXFP8 (E4M3, and an E5M2 x against E4M3 weights): ragged
// splits with an expert without tokens, a one-row expert and padding rows;
// few CTAs (each walks many tiles through the stage ring, so the scale
// warp's stage and phase wrap); a graph replayed with new split sizes; N
// not a multiple of the tile (columns past N get scale 1, never stored) and
// not a multiple of 8 (stored from registers); G = 1, a plain GEMM.
TEST_F(GroupedGemmGpu, Mxfp8MatchesEachExpertAloneUnderItsPromotionRule) {
  GroupedGemmSpec s = spec(GroupedGemmSpec::Operands::Mxfp8, 4, 384, 512);
  check(s, 700, {0, 300, 1, 250});
  check(s, 700, {0, 300, 1, 250}, 3);
  check(s, 640, {100, 200, 0, 340}, 0, {0, 17, 500, 123});
  GroupedGemmSpec e5m2 = s;
  e5m2.fp8Formats = {rt::DType::E5M2, rt::DType::E4M3};
  check(e5m2, 700, {0, 300, 1, 250});
  check(spec(GroupedGemmSpec::Operands::Mxfp8, 2, 200, 256), 300, {150, 150});
  check(spec(GroupedGemmSpec::Operands::Mxfp8, 2, 202, 384), 300, {150, 149});
  check(spec(GroupedGemmSpec::Operands::Mxfp8, 1, 256, 1024), 333, {333});
}

// NVFP4 x NVFP4 (f16 tiles converted in shared memory, 256- and 128-wide
// tiles): ragged splits with an expert without tokens, a one-row expert and
// padding rows; few CTAs (each convert warp's stage and phase wrap); a graph
// replayed with new split sizes; N not a multiple of the tile (columns past
// N get scale 0, never stored) and not a multiple of 8 (stored from
// registers); K = 64 (one stage a tile) and 1024; G = 1, a plain GEMM.
TEST_F(GroupedGemmGpu, Nvfp4MatchesEachExpertAloneOnExactF16Operands) {
  GroupedGemmSpec s = spec(GroupedGemmSpec::Operands::Nvfp4, 4, 384, 512);
  check(s, 700, {0, 300, 1, 250});
  check(s, 700, {0, 300, 1, 250}, 3);
  check(s, 640, {100, 200, 0, 340}, 0, {0, 17, 500, 123});
  check(spec(GroupedGemmSpec::Operands::Nvfp4, 2, 200, 64), 300, {150, 150});
  check(spec(GroupedGemmSpec::Operands::Nvfp4, 2, 202, 384), 300, {150, 149});
  check(spec(GroupedGemmSpec::Operands::Nvfp4, 1, 256, 1024), 333, {333});
}

// Each expert's bias row added in fp32 after the global scales (NVFP4) or
// the promotion (MXFP8), then rounded once: through the TMA store's boxes
// and, for the expert's last rows and N = 202, from registers.
TEST_F(GroupedGemmGpu, MicroScaledKernelsAddEachExpertsBias) {
  withBias_ = true;
  for (GroupedGemmSpec::Operands kind :
       {GroupedGemmSpec::Operands::Nvfp4, GroupedGemmSpec::Operands::Mxfp8}) {
    check(spec(kind, 4, 384, 512), 700, {0, 300, 1, 250});
    check(spec(kind, 2, 202, 384), 300, {150, 149});
  }
}

// A long reduction (K = 7168: 112 stages a tile through the three- and
// five-stage rings) over 16 column tiles, by every SM and by two CTAs.
TEST_F(GroupedGemmGpu, Nvfp4LongReductionsOverManyTiles) {
  GroupedGemmSpec s = spec(GroupedGemmSpec::Operands::Nvfp4, 2, 4096, 7168);
  check(s, 300, {200, 100});
  check(s, 300, {200, 100}, 2);
}

// One expert with every token; G = 1 is a plain GEMM.
TEST_F(GroupedGemmGpu, OneExpertWithEveryToken) {
  check(spec(GroupedGemmSpec::Operands::Fp8Block, 3, 256, 384), 333,
        {0, 333, 0});
  check(spec(GroupedGemmSpec::Operands::Fp8Block, 1, 256, 256), 200, {200});
  check(spec(GroupedGemmSpec::Operands::BF16, 1, 128, 192), 130, {130});
}

// N not a multiple of the 128-column tile: the last tile's columns past N
// read the next expert's weights (or zeros) and are not written (FP8: the
// TMA store's map clips them); N not a multiple of 8 has no TMA store (its
// rows' stride), the tiles are stored from registers.
TEST_F(GroupedGemmGpu, NNotAMultipleOfTheTile) {
  check(spec(GroupedGemmSpec::Operands::Fp8Block, 2, 200, 256), 300,
        {150, 150});
  check(spec(GroupedGemmSpec::Operands::Fp8Block, 2, 202, 256), 300,
        {150, 150});
  // A last tile whose second 64-column box lies wholly past N.
  check(spec(GroupedGemmSpec::Operands::Fp8Block, 2, 136, 256), 300,
        {150, 150});
}

// Two output boxes a warpgroup (the other tests run the default, one): a
// part's store runs while the next part is written - ragged splits (expert
// ends stored from registers), a last tile whose second half is partly
// (N = 200) or wholly (N = 136) past N, a graph replayed with new splits;
// check() runs clusters of 1 and 2.
TEST_F(GroupedGemmGpu, TwoOutputBoxesAWarpgroup) {
  GroupedGemmSpec s = spec(GroupedGemmSpec::Operands::Fp8Block, 4, 384, 512);
  s.outBoxes = 2;
  check(s, 700, {0, 300, 1, 250});
  check(s, 700, {0, 304, 16, 240}, 4);
  for (int64_t n : {200, 136}) {
    GroupedGemmSpec edge = spec(GroupedGemmSpec::Operands::Fp8Block, 2, n, 256);
    edge.outBoxes = 2;
    check(edge, 300, {150, 150});
  }
  GroupedGemmSpec replay =
      spec(GroupedGemmSpec::Operands::Fp8Block, 4, 256, 384);
  replay.outBoxes = 2;
  check(replay, 640, {100, 200, 0, 340}, 0, {0, 17, 500, 123});
  // One or two CTAs walking every tile, so that a last column tile of an
  // odd number of parts - ending on the first box - is followed by the
  // next tile (FP8 N = 136: one part; BF16 N = 296: one of its 256-wide
  // tile's four, N = 400: three).
  for (auto [op, n] : {std::pair{GroupedGemmSpec::Operands::Fp8Block, 136},
                       std::pair{GroupedGemmSpec::Operands::BF16, 296},
                       std::pair{GroupedGemmSpec::Operands::BF16, 400}}) {
    GroupedGemmSpec edge = spec(op, 2, n, 256);
    edge.outBoxes = 2;
    check(edge, 300, {150, 150}, 1);
    check(edge, 300, {150, 150}, 2);
  }
}

// Bad split sizes are clamped, never read or written out of bounds.
TEST_F(GroupedGemmGpu, SplitsPastMTotalAreClamped) {
  check(spec(GroupedGemmSpec::Operands::BF16, 2, 128, 128), 256, {200, 100});
  check(spec(GroupedGemmSpec::Operands::BF16, 3, 128, 128), 256,
        {-5, 100, 1000});
}

// The step captures into a CUDA graph: new split sizes (same M_total)
// written into the device tensor take effect on the next replay.
TEST_F(GroupedGemmGpu, AGraphReplaysWithNewSplitSizes) {
  check(spec(GroupedGemmSpec::Operands::Fp8Block, 4, 256, 384), 640,
        {100, 200, 0, 340}, 0, {0, 17, 500, 123});
  check(spec(GroupedGemmSpec::Operands::BF16, 2, 256, 128), 300, {300, 0}, 0,
        {0, 299});
}
