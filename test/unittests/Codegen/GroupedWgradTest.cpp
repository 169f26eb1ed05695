//===- GroupedWgradTest.cpp - The generated K-grouped wgrad GEMM ----------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Without a GPU: the wgrad kernels (BF16 and FP8 1x128 x 1x128) compile
// with NVRTC for sm_90a without serialised MMAs, and the capacity rule
// covers every split. On a Hopper GPU: each expert's dW equals the
// reference GEMM of that expert's own tokens bit for bit (the operands are
// small multiples of 1/2, so every 128-token partial sum is exact; the
// scales are not powers of two, so the promotion rule shows in every bit),
// an expert with no tokens gets zeros, and the launch replays in a CUDA
// graph with new split sizes.
//
//===----------------------------------------------------------------------===//

#include "HopperGpuTest.h"

#include "te/codegen/GroupedWgradEmitter.h"
#include "te/runtime/reference/Gemm.h"

#include <gtest/gtest.h>

#include <random>

using namespace te;
using cg::GroupedGemmSpec;
using cg::GroupedWgradSpec;
namespace ref = te::rt::ref;

namespace {

GroupedWgradSpec wgradSpec(bool fp8, int64_t g, int64_t n, int64_t k) {
  GroupedWgradSpec s;
  s.operands = fp8 ? GroupedGemmSpec::Operands::Fp8Block
                   : GroupedGemmSpec::Operands::BF16;
  s.groups = g;
  s.n = n;
  s.k = k;
  return s;
}

TEST(GroupedWgrad, BothOperandKindsCompileForSm90a) {
  if (!rt::nvrtcVersion())
    GTEST_SKIP() << rt::nvrtcVersion().status().message();
  // FP8, BF16, and FP8 with an E5M2 gradient (TE's hybrid format).
  for (int variant = 0; variant < 3; ++variant) {
    GroupedWgradSpec s = wgradSpec(variant != 1, 8, 4096, 7168);
    if (variant == 2)
      s.fp8Formats = {rt::DType::E5M2, rt::DType::E4M3};
    s = s.resolved();
    ASSERT_TRUE(cg::checkGroupedWgrad(s).isOk());
    rt::CompileOptions opts = *cg::groupedGemmCompileOptions();
    opts.flags.push_back("--ptxas-options=-v");
    rt::Expected<rt::CompiledKernel> k =
        rt::compileCuda(cg::emitGroupedWgrad(s), s.kernelName() + ".cu", opts);
    ASSERT_TRUE(k) << k.status().message();
    EXPECT_EQ(k->log.find("wgmma.mma_async instructions are serialized"),
              std::string::npos)
        << k->log;
    std::printf("[   info   ] %s: NVRTC %.0f ms (cold)\n",
                s.kernelName().c_str(), k->compileMillis);
  }
}

// dW tiles leave by TMA store where K is a multiple of 4 (its fp32 rows'
// 16-byte stride): the boxes' 16 KB (one a warpgroup, the default) or 32
// KB in the shared memory, named, and a fifth tensor map over dW as
// [G·N, K] (64 x 32 boxes, 128-byte swizzle); otherwise A's map again.
TEST(GroupedWgrad, DwTilesLeaveByTmaStoreWhereKAllows) {
  GroupedWgradSpec s = wgradSpec(true, 8, 4096, 7168);
  s.stages = 4;
  GroupedWgradSpec odd = wgradSpec(true, 8, 4096, 7170);
  odd.stages = 4;
  EXPECT_TRUE(cg::groupedWgradTmaStore(s));
  EXPECT_FALSE(cg::groupedWgradTmaStore(odd));
  EXPECT_EQ(s.resolved().outBoxes, 1);
  EXPECT_EQ(cg::groupedWgradSharedBytes(s),
            cg::groupedWgradSharedBytes(odd) + 2 * 64 * 128);
  GroupedWgradSpec two = s;
  two.outBoxes = 2;
  EXPECT_EQ(cg::groupedWgradSharedBytes(two),
            cg::groupedWgradSharedBytes(odd) + 4 * 64 * 128);
  EXPECT_NE(s.kernelName().find("_b16_o1_s4"), std::string::npos);
  EXPECT_NE(two.kernelName().find("_b16_o2_s4"), std::string::npos);
  EXPECT_NE(odd.kernelName().find("_b16_s4"), std::string::npos);
  // The default ring keeps its depth with one box: 6 FP8 stages.
  EXPECT_EQ(wgradSpec(true, 8, 4096, 7168).resolved().stages, 6);
  auto maps = cg::groupedWgradMaps(s, 4096);
  EXPECT_EQ(maps[4],
            (rt::TensorMapShape{rt::DType::F32, 8 * 4096, 7168, 7168 * 4, 64,
                                32, rt::TensorMapSwizzle::B128}));
  EXPECT_EQ(cg::groupedWgradMaps(odd, 4096)[4],
            cg::groupedWgradMaps(odd, 4096)[0]);
  GroupedWgradSpec three = s;
  three.outBoxes = 3;
  EXPECT_NE(cg::checkGroupedWgrad(three).message().find("1 or 2 output boxes"),
            std::string::npos);
  // dW's rows are a TMA coordinate: G*N below 2^31 where it is stored so.
  GroupedWgradSpec tall = wgradSpec(true, 4096, int64_t(1) << 19, 4);
  EXPECT_NE(cg::checkGroupedWgrad(tall).message().find("G*N must be below"),
            std::string::npos);
  tall.k = 6; // no TMA store
  EXPECT_TRUE(cg::checkGroupedWgrad(tall).isOk())
      << cg::checkGroupedWgrad(tall).message();
}

TEST(GroupedWgrad, TheCapacityHoldsEverySplit) {
  // sum ceil(m_g / 128) <= ceil(M / 128) + G - 1 for any split of M.
  std::mt19937 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    int64_t g = 1 + rng() % 40, m = rng() % 5000;
    std::vector<int64_t> splits(size_t(g), 0);
    for (int64_t r = 0; r < m; ++r)
      ++splits[rng() % g];
    int64_t blocks = 0;
    for (int64_t s : splits)
      blocks += (s + 127) / 128;
    ASSERT_LE(128 * blocks, cg::groupedWgradCapacity(m, g))
        << "M " << m << " G " << g;
  }
  EXPECT_NE(cg::checkGroupedWgrad(wgradSpec(true, 4, 255, 128))
                .message()
                .find("even"),
            std::string::npos);
  GroupedWgradSpec e5m2 = wgradSpec(true, 4, 256, 128);
  e5m2.fp8Formats = {rt::DType::E5M2, rt::DType::E5M2};
  EXPECT_NE(cg::checkGroupedWgrad(e5m2).message().find(
                "no FP8 GEMM multiplies e5m2 by e5m2"),
            std::string::npos);
  // Bands of the tile order: 16 row tiles by default, named; 1..1024.
  GroupedWgradSpec banded = wgradSpec(true, 8, 4096, 7168);
  EXPECT_EQ(banded.resolved().band, 16);
  EXPECT_NE(banded.kernelName().find("_k7168_t128_b16_o1_s"),
            std::string::npos);
  banded.band = 1;
  EXPECT_NE(banded.kernelName().find("_k7168_t128_o1_s"), std::string::npos);
  banded.band = 1025;
  EXPECT_NE(cg::checkGroupedWgrad(banded).message().find("1..1024 row tiles"),
            std::string::npos);
  // Tile widths: FP8 128; BF16 256 by default, or 128.
  GroupedWgradSpec wide = wgradSpec(true, 8, 4096, 7168);
  wide.blockN = 256;
  EXPECT_NE(cg::checkGroupedWgrad(wide).message().find(
                "the FP8 tile width must be 128"),
            std::string::npos);
  GroupedWgradSpec bf16 = wgradSpec(false, 8, 4096, 7168);
  EXPECT_EQ(bf16.resolved().blockN, 256);
  EXPECT_NE(bf16.kernelName().find("_t256_b16_o1_s4"), std::string::npos);
  bf16.blockN = 192;
  EXPECT_NE(cg::checkGroupedWgrad(bf16).message().find("128 or 256"),
            std::string::npos);
}

class GroupedWgradGpu : public test::HopperGpuTest {
protected:
  /// Runs the wgrad of `s` for M_total tokens split as `splits` (then,
  /// replayed from a CUDA graph, as `replaySplits`) and checks each
  /// expert's dW against the reference of its own tokens.
  void check(const GroupedWgradSpec &spec, int64_t mTotal,
             const std::vector<int64_t> &splits,
             const std::vector<int64_t> &replaySplits = {}) {
    GroupedWgradSpec s = spec.resolved();
    const int64_t n = s.n, k = s.k, g = s.groups;
    const int64_t cap = cg::groupedWgradCapacity(mTotal, g), blocks = cap / 128;
    const int64_t nPad = (n + 3) / 4 * 4, kPad = (k + 3) / 4 * 4;
    // A [n, cap] and B [k, cap]: random outside the experts' segments too
    // (the kernel must read only those), scales random, not powers of two.
    std::mt19937 rng(static_cast<unsigned>(mTotal * 7 + g));
    std::uniform_int_distribution<int> small(-8, 8);
    std::uniform_real_distribution<float> scale(0.5f, 2.0f);
    std::vector<float> av(n * cap), bv(k * cap), sa(blocks * nPad),
        sb(blocks * kPad);
    for (float &v : av)
      v = small(rng) * 0.5f;
    for (float &v : bv)
      v = small(rng) * 0.5f;
    for (float &v : sa)
      v = scale(rng);
    for (float &v : sb)
      v = scale(rng);
    // The layout's padding: zero from each expert's last token to the end
    // of its segment's last 128-token block (for every split used).
    for (const std::vector<int64_t> &sp : {splits, replaySplits}) {
      int64_t block = 0;
      for (int64_t m : ref::clampSplits(sp, mTotal)) {
        for (int64_t t = block * 128 + m; t < (block + (m + 127) / 128) * 128;
             ++t) {
          for (int64_t r = 0; r < n; ++r)
            av[r * cap + t] = 0.0f;
          for (int64_t r = 0; r < k; ++r)
            bv[r * cap + t] = 0.0f;
        }
        block += (m + 127) / 128;
      }
    }

    rt::DeviceBuffer a =
        s.fp8() ? upload(fp8Codes(av, s.fp8Formats.a)) : upload(bf16Codes(av));
    rt::DeviceBuffer b =
        s.fp8() ? upload(fp8Codes(bv, s.fp8Formats.b)) : upload(bf16Codes(bv));
    rt::DeviceBuffer saBuf = upload(sa), sbBuf = upload(sb);
    rt::DeviceBuffer splitBuf = upload(splits);
    rt::Expected<rt::DeviceBuffer> dw =
        rt::DeviceBuffer::allocate(g * n * k * 4);
    ASSERT_TRUE(dw);
    ASSERT_TRUE(dw->fill(0xFF, *stream_)); // NaN: unwritten tiles show

    rt::Expected<rt::Kernel> kernel =
        loadEngineKernel(cg::emitGroupedWgrad(s), s.kernelName());
    ASSERT_TRUE(kernel) << kernel.status().message();
    cg::GroupedWgradBuffers buf{a.devicePtr(),
                                b.devicePtr(),
                                saBuf.devicePtr(),
                                sbBuf.devicePtr(),
                                splitBuf.devicePtr(),
                                dw->devicePtr(),
                                mTotal,
                                cap};
    rt::Expected<cg::GroupedWgradLaunch> launch =
        cg::prepareGroupedWgrad(s, buf, *device_, *kernel);
    ASSERT_TRUE(launch) << launch.status().message();
    if (replaySplits.empty()) {
      ASSERT_TRUE(cg::launchGroupedWgrad(*kernel, *launch, *stream_));
      verify(s, *dw, av, bv, sa, sb, cap, mTotal, splits);
      return;
    }
    rt::Expected<rt::Graph> graph = rt::Graph::capture(*stream_, [&] {
      return cg::launchGroupedWgrad(*kernel, *launch, *stream_);
    });
    ASSERT_TRUE(graph) << graph.status().message();
    for (const std::vector<int64_t> &sp : {splits, replaySplits}) {
      ASSERT_TRUE(splitBuf.copyFromHost(sp.data(), sp.size() * 8, *stream_));
      ASSERT_TRUE(dw->fill(0xFF, *stream_));
      ASSERT_TRUE(graph->launch(*stream_));
      verify(s, *dw, av, bv, sa, sb, cap, mTotal, sp);
    }
  }

  void verify(const GroupedWgradSpec &s, const rt::DeviceBuffer &dw,
              const std::vector<float> &av, const std::vector<float> &bv,
              const std::vector<float> &sa, const std::vector<float> &sb,
              int64_t cap, int64_t mTotal, const std::vector<int64_t> &splits) {
    const int64_t n = s.n, k = s.k;
    std::vector<float> got(s.groups * n * k);
    ASSERT_TRUE(dw.copyToHost(got.data(), got.size() * 4, *stream_));
    ASSERT_TRUE(stream_->synchronize());
    std::vector<int64_t> clamped = ref::clampSplits(splits, mTotal);
    int64_t block = 0, wrong = 0;
    for (int64_t e = 0; e < s.groups; ++e) {
      int64_t m = clamped[e];
      std::vector<float> want(n * k, 0.0f);
      if (m > 0)
        want = expected(s, av, bv, sa, sb, cap, block, m);
      for (int64_t i = 0; i < n * k; ++i)
        if (std::memcmp(&got[e * n * k + i], &want[i], 4) != 0 && wrong++ < 5)
          ADD_FAILURE() << "expert " << e << " dW[" << i / k << "][" << i % k
                        << "]: got " << got[e * n * k + i] << " want "
                        << want[i];
      block += (m + 127) / 128;
    }
    EXPECT_EQ(wrong, 0) << s.kernelName() << " M_total " << mTotal;
  }

  /// The expert whose segment starts at 128-token block `block`, with `m`
  /// tokens, as its own GEMM: A_g [n, m] times B_g [k, m]^T.
  static std::vector<float> expected(const GroupedWgradSpec &s,
                                     const std::vector<float> &av,
                                     const std::vector<float> &bv,
                                     const std::vector<float> &sa,
                                     const std::vector<float> &sb, int64_t cap,
                                     int64_t block, int64_t m) {
    auto slice = [&](const std::vector<float> &v, int64_t rows) {
      std::vector<float> out(rows * m);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t t = 0; t < m; ++t)
          out[r * m + t] = v[r * cap + block * 128 + t];
      return out;
    };
    std::vector<float> ag = slice(av, s.n), bg = slice(bv, s.k);
    if (!s.fp8())
      return ref::referenceGemm(ag.data(), false, bg.data(), true, s.n, s.k, m);
    auto operand = [&](const std::vector<float> &v, int64_t rows,
                       const std::vector<float> &scales, rt::DType format) {
      int64_t pad = (rows + 3) / 4 * 4, mb = (m + 127) / 128;
      ref::BlockScaledOperand o;
      o.rows = rows;
      o.k = m;
      o.format = fp8Format(format);
      o.codes = fp8Codes(v, format);
      o.scaleStride = rows;
      o.scaleInv.resize(mb * rows);
      for (int64_t b = 0; b < mb; ++b)
        for (int64_t r = 0; r < rows; ++r)
          o.scaleInv[b * rows + r] = scales[(block + b) * pad + r];
      return o;
    };
    std::string error;
    std::vector<float> out = ref::blockScaledGemm(
        operand(ag, s.n, sa, s.fp8Formats.a),
        operand(bg, s.k, sb, s.fp8Formats.b), nullptr, &error);
    EXPECT_EQ(error, "");
    return out;
  }
};

TEST_F(GroupedWgradGpu, Fp8RaggedSplitsMatchEachExpertAlone) {
  // 130 and 200 tokens (partial blocks), an empty expert, 10 padding rows.
  check(wgradSpec(true, 3, 256, 384), 340, {130, 0, 200});
}

// N = 200: the last row tile's second warpgroup holds rows past N and
// stores from registers, the first by TMA; K = 136: the last column tile's
// first part is clipped by dW's map, the other three are not stored.
TEST_F(GroupedWgradGpu, Fp8NAndKNotMultiplesOfTheTile) {
  check(wgradSpec(true, 2, 200, 136), 300, {1, 299});
}

// K = 130 (not a multiple of 4): no TMA store (dW's rows are not 16-byte
// strided), every tile from registers; two output boxes a warpgroup (the
// default is one): a part's store runs while the next part is written,
// also where a tile ends on either box (K = 136: one part of the last
// column tile; K = 200: three) and the next tile, of an expert without
// tokens, stores at once.
TEST_F(GroupedWgradGpu, DwTilesFromRegistersAndThroughTwoBoxes) {
  check(wgradSpec(true, 2, 256, 130), 300, {120, 180});
  for (bool fp8 : {true, false}) {
    GroupedWgradSpec s = wgradSpec(fp8, 3, 256, 384);
    s.outBoxes = 2;
    check(s, 340, {130, 0, 200});
    for (int64_t k : {136, 200}) {
      GroupedWgradSpec edge = wgradSpec(fp8, 3, 200, k);
      edge.outBoxes = 2;
      check(edge, 300, {1, 299, 0});
    }
  }
}

// An E5M2 gradient times E4M3 activations (TE's hybrid format).
TEST_F(GroupedWgradGpu, Fp8E5m2GradientMatchesEachExpertAlone) {
  GroupedWgradSpec s = wgradSpec(true, 3, 256, 384);
  s.fp8Formats = {rt::DType::E5M2, rt::DType::E4M3};
  check(s, 340, {130, 0, 200});
}

// BF16 with 256-wide dW tiles (the default; K = 384: one whole tile and
// one half past K) and 128-wide ones.
TEST_F(GroupedWgradGpu, Bf16RaggedSplitsMatchEachExpertAlone) {
  GroupedWgradSpec s = wgradSpec(false, 3, 256, 384);
  EXPECT_EQ(s.resolved().blockN, 256);
  check(s, 340, {130, 0, 200});
  s.blockN = 128;
  check(s, 340, {130, 0, 200});
}

// The tile order in bands (the other tests' 2-tile dW fits one band): row
// by row, then bands of 3 over 8 row tiles (3, 3 and a short 2), the last
// 104 rows past N.
TEST_F(GroupedWgradGpu, BandsOfRowTilesCoverEveryTile) {
  GroupedWgradSpec s = wgradSpec(true, 2, 1000, 384);
  s.band = 1;
  check(s, 400, {130, 250});
  s.band = 3;
  check(s, 400, {130, 250});
  check(s, 400, {0, 399});
}

TEST_F(GroupedWgradGpu, AGraphReplaysWithNewSplitSizes) {
  check(wgradSpec(true, 4, 128, 256), 600, {150, 150, 150, 150},
        {0, 600, 0, 0});
}

} // namespace
