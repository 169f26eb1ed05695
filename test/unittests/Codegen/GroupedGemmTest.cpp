//===- GroupedGemmTest.cpp - Generated Hopper grouped GEMMs ---------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Without a GPU: the generated kernels (BF16, FP8 block-scaled, MXFP8,
// NVFP4) compile with NVRTC for sm_90a on CUTLASS/CuTe, keep their MMAs
// asynchronous, and shapes without a kernel are refused with the rule. The
// kernels' results on a Hopper GPU: GroupedGemmGpuTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "GroupedGemmSpecs.h"
#include "SassHazards.h"

#include "te/codegen/GroupedGemmEmitter.h"
#include "te/runtime/NvrtcCompiler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

using namespace te;
using cg::GroupedGemmSpec;
using te::test::spec;

namespace {

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

/// The bytes of spill stores ptxas reports for the kernel (-v), summed.
static long spillStoreBytes(const rt::CompiledKernel &k) {
  long bytes = 0;
  const std::string key = " bytes spill stores";
  for (size_t at = k.log.find(key); at != std::string::npos;
       at = k.log.find(key, at + 1)) {
    size_t start = k.log.rfind(' ', at - 1);
    bytes += std::stol(k.log.substr(start + 1, at - start - 1));
  }
  return bytes;
}

// The epilogues that also take each expert's amax of y (outputAmax) or
// quantize y by 1x128 FP8 blocks or by each expert's delayed-scaling scale
// (quantizeOutput) keep every kernel kind's MMAs asynchronous and spill no
// more than the kernel without them (MXFP8: a few values more), and each is
// a kernel of its own name.
TEST(GroupedGemm, TheOutputEpiloguesCostNoSpills) {
  if (!rt::nvrtcVersion())
    GTEST_SKIP() << rt::nvrtcVersion().status().message();
  for (GroupedGemmSpec::Operands op :
       {GroupedGemmSpec::Operands::BF16, GroupedGemmSpec::Operands::Fp8Block,
        GroupedGemmSpec::Operands::Mxfp8, GroupedGemmSpec::Operands::Nvfp4}) {
    GroupedGemmSpec s = spec(op, 8, 4096, 7168);
    GroupedGemmSpec withAmax = s;
    withAmax.outputAmax = true;
    GroupedGemmSpec quantized = s;
    quantized.quantizeOutput =
        rt::Scheme::fp8Block(rt::DType::E5M2, 1, 128, /*pow2=*/true);
    GroupedGemmSpec perExpert = withAmax;
    perExpert.quantizeOutput = rt::Scheme::fp8Delayed(rt::DType::E4M3, 16);
    SCOPED_TRACE(withAmax.kernelName());
    EXPECT_EQ(withAmax.kernelName(), s.kernelName() + "_amax");
    EXPECT_EQ(quantized.kernelName(), s.kernelName() + "_qe5m2p2");
    EXPECT_EQ(perExpert.kernelName(), s.kernelName() + "_amax_qe4m3d");
    rt::CompiledKernel plain = expectCompiles(s);
    // The MXFP8 kernel already spills a few epilogue addresses (above);
    // with the amax one value more, with the quantize 15 (measured: 104 ->
    // 108 and 164 bytes), with both (the per-expert cast) the two slacks.
    const bool mx = op == GroupedGemmSpec::Operands::Mxfp8;
    for (const GroupedGemmSpec &v : {withAmax, quantized, perExpert}) {
      const long slack = !mx                                ? 0
                         : v.quantizeOutput && v.outputAmax ? 72
                         : v.outputAmax                     ? 8
                                                            : 64;
      rt::CompiledKernel k = expectCompiles(v);
      EXPECT_LE(spillStoreBytes(k), spillStoreBytes(plain) + slack)
          << v.kernelName() << "\n"
          << k.log;
    }
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
