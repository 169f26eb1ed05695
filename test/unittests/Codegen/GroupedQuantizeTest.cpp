//===- GroupedQuantizeTest.cpp - per-expert columnwise quantization -------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Without a GPU: the generated grouped quantize kernels compile with NVRTC
// and refuse what they cannot do; the reference lays each expert out as
// its own columnwise quantization. On a Hopper GPU: the kernel's bytes equal
// the reference's in every expert's segment - codes, scale_inv and the
// per-expert bias gradient, bit for bit - for block FP8 (e4m3 and e5m2,
// pow2 and eps) and identity, ragged splits with an empty expert and
// padding rows; and the wgrad GEMM on the kernel's output equals each
// expert's own block-scaled GEMM.
//
//===----------------------------------------------------------------------===//

#include "HopperGpuTest.h"

#include "te/codegen/GroupedQuantizeEmitter.h"
#include "te/codegen/GroupedWgradEmitter.h"
#include "te/runtime/KernelCache.h"
#include "te/runtime/reference/Gemm.h"
#include "te/runtime/reference/GroupedQuantize.h"

#include <gtest/gtest.h>

#include <random>

using namespace te;
using rt::DType;
using rt::Scheme;
namespace ref = te::rt::ref;

namespace {

std::vector<uint16_t> randomBf16(size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<uint16_t> v(count);
  for (uint16_t &x : v)
    x = ref::floatToBF16(d(rng) * 3.0f);
  return v;
}

const Scheme kSchemes[] = {Scheme::fp8Block(DType::E4M3, 1, 128),
                           Scheme::fp8Block(DType::E4M3, 1, 128, true),
                           Scheme::fp8Block(DType::E5M2, 1, 128, false, 1e-3),
                           Scheme::identity(DType::BF16),
                           Scheme::mxfp8(DType::E4M3),
                           Scheme::mxfp8(DType::E5M2)};

TEST(GroupedQuantize, KernelsCompileAndRefuseWhatTheyCannotDo) {
  // Block FP8 codes and scales; MXFP8's dequantized values.
  for (const Scheme &scheme : {kSchemes[1], kSchemes[4]}) {
    cg::GroupedQuantizeSpec s{scheme, 8, 4096, true};
    ASSERT_TRUE(cg::checkGroupedQuantize(s).isOk());
    if (rt::nvrtcVersion()) {
      cg::EmittedGroupedQuantize e = cg::emitGroupedQuantize(s);
      rt::Expected<rt::CompiledKernel> k =
          rt::compileCuda(e.source, e.mainEntry + ".cu", rt::CompileOptions{});
      ASSERT_TRUE(k) << k.status().message();
    }
  }
  EXPECT_EQ(cg::GroupedQuantizeSpec({kSchemes[5], 8, 4096, false}).kernelName(),
            "te_grouped_quantize_mxfp8_e5m2_g8_c4096");
  cg::GroupedQuantizeSpec odd{kSchemes[0], 8, 100, false};
  EXPECT_NE(cg::checkGroupedQuantize(odd).message().find("multiple of 8"),
            std::string::npos);
  cg::GroupedQuantizeSpec tiles{Scheme::fp8Block(DType::E4M3, 128, 128), 8, 128,
                                false};
  EXPECT_NE(cg::checkGroupedQuantize(tiles).message().find("1x128"),
            std::string::npos);
}

// MXFP8 is laid out dequantized: expert 0's 130 rows are quantized as a
// 160-row tensor (30 zero rows: whole 32 x 1 blocks) and dequantized.
TEST(GroupedQuantize, TheMxfp8ReferencePadsEachExpertToWholeBlocks) {
  const int64_t m = 300, c = 64, cap = cg::groupedWgradCapacity(m, 2);
  std::vector<uint16_t> x = randomBf16(m * c, 3);
  ref::GroupedColumnwise g = ref::groupedColumnwiseQuantize(
      x.data(), m, c, {130, 170}, kSchemes[4], cap);
  std::vector<uint16_t> padded(160 * c, 0);
  std::copy(x.begin(), x.begin() + 130 * c, padded.begin());
  ref::QuantizedTensor alone =
      ref::quantize(padded.data(), ref::SourceType::BF16, 160, c, kSchemes[4],
                    unsigned(rt::Direction::Columnwise), {});
  std::vector<float> v =
      ref::dequantize(alone, rt::Direction::Columnwise, kSchemes[4], 160, c);
  for (int64_t col = 0; col < c; ++col)
    for (int64_t t = 0; t < 256; ++t) {
      uint16_t got;
      std::memcpy(&got, &g.data[2 * (col * cap + t)], 2);
      ASSERT_EQ(got, t < 130 ? ref::floatToBF16(v[t * c + col]) : 0)
          << col << " " << t;
    }
  EXPECT_TRUE(g.scaleInv.empty());
}

TEST(GroupedQuantize, TheReferenceIsEachExpertAlone) {
  // Expert 2's segment of the grouped layout is expert 2's own columnwise
  // quantization (transposed codes and scales), and its bias gradient.
  const int64_t m = 300, c = 136, cap = cg::groupedWgradCapacity(m, 3);
  std::vector<uint16_t> x = randomBf16(m * c, 1);
  std::vector<int64_t> splits = {130, 0, 160}; // 10 padding rows
  ref::GroupedColumnwise g =
      ref::groupedColumnwiseQuantize(x.data(), m, c, splits, kSchemes[0], cap);
  EXPECT_EQ(g.segmentStart, (std::vector<int64_t>{0, 2, 2}));
  ref::QuantizedTensor alone =
      ref::quantize(x.data() + 130 * c, ref::SourceType::BF16, 160, c,
                    kSchemes[0], unsigned(rt::Direction::Columnwise), {});
  const ref::QuantizedDirection &d = *alone.columnwise;
  for (int64_t col = 0; col < c; ++col)
    for (int64_t t = 0; t < 256; ++t)
      ASSERT_EQ(g.data[col * cap + 256 + t],
                t < 160 ? d.data.bytes[col * 160 + t] : 0)
          << col << " " << t;
  std::vector<float> db =
      ref::biasGrad(x.data() + 130 * c, ref::SourceType::BF16, 160, c, 128);
  EXPECT_EQ(0, std::memcmp(&g.biasGrad[2 * c], db.data(), 4 * c));
  for (int64_t col = 0; col < c; ++col)
    EXPECT_EQ(g.biasGrad[c + col], 0.0f); // the empty expert
}

class GroupedQuantizeGpu : public test::HopperGpuTest {};

TEST_F(GroupedQuantizeGpu, EveryExpertSegmentIsBitExact) {
  const int64_t m = 700, c = 264, g = 4;
  const int64_t cap = cg::groupedWgradCapacity(m, g), colsPad = 264;
  std::vector<uint16_t> x = randomBf16(m * c, 2);
  // A huge value, an infinity and a block of zeros. (No NaN: the
  // reference and the hardware encoder disagree on the E5M2 code of +NaN,
  // 0x7E against 0x7F, for every quantize kernel alike.)
  x[5 * c + 7] = 0x7F7F;
  x[40 * c + 8] = 0x7F80;
  for (int64_t r = 130; r < 258; ++r)
    x[r * c + 9] = 0x0000;
  std::vector<int64_t> splits = {129, 0, 300, 250}; // 21 padding rows
  rt::DeviceBuffer in = upload(x), sp = upload(splits);
  rt::KernelCache cache;
  for (const Scheme &scheme : kSchemes) {
    cg::GroupedQuantizeSpec spec{scheme, g, c, true};
    SCOPED_TRACE(spec.kernelName());
    bool fp8 = scheme.kind == rt::SchemeKind::Fp8Block;
    cg::EmittedGroupedQuantize e = cg::emitGroupedQuantize(spec);
    auto compiled = cache.getOrCompile(e.source, rt::CompileOptions{});
    ASSERT_TRUE(compiled) << compiled.status().message();
    rt::Expected<rt::Kernel> main =
        rt::Kernel::load((*compiled)->cubin, e.mainEntry);
    rt::Expected<rt::Kernel> bias =
        rt::Kernel::load((*compiled)->cubin, e.biasEntry);
    ASSERT_TRUE(main && bias);
    auto alloc = [&](int64_t bytes) {
      rt::Expected<rt::DeviceBuffer> b = rt::DeviceBuffer::allocate(bytes);
      EXPECT_TRUE(b);
      EXPECT_TRUE(b->fill(0xA5, *stream_)); // poison
      return std::move(*b);
    };
    rt::DeviceBuffer out = alloc(c * cap * (fp8 ? 1 : 2));
    rt::DeviceBuffer scales = alloc(cap / 128 * colsPad * 4);
    rt::DeviceBuffer partial = alloc(cap / 128 * c * 4);
    rt::DeviceBuffer db = alloc(g * c * 4);
    uint64_t inP = in.devicePtr(), spP = sp.devicePtr(), outP = out.devicePtr(),
             scP = scales.devicePtr(), paP = partial.devicePtr(),
             dbP = db.devicePtr();
    long long mm = m, cc = c, capacity = cap;
    float eps = static_cast<float>(scheme.eps);
    void *args[] = {&inP, &mm, &cc, &spP, &capacity, &outP, &scP, &eps, &paP};
    ASSERT_TRUE(main->launch(
        cg::groupedQuantizeGrid(cap, c), {cg::kGroupedQuantizeThreads, 1, 1},
        cg::groupedQuantizeSharedBytes(spec), *stream_, args));
    void *bargs[] = {&paP, &mm, &cc, &spP, &dbP};
    ASSERT_TRUE(bias->launch(cg::groupedBiasGrid(g, c),
                             {cg::kGroupedBiasThreads, 1, 1}, 0, *stream_,
                             bargs));
    std::vector<uint8_t> gotData(c * cap * (fp8 ? 1 : 2));
    std::vector<float> gotScales(cap / 128 * colsPad), gotDb(g * c);
    ASSERT_TRUE(out.copyToHost(gotData.data(), gotData.size(), *stream_));
    ASSERT_TRUE(
        scales.copyToHost(gotScales.data(), gotScales.size() * 4, *stream_));
    ASSERT_TRUE(db.copyToHost(gotDb.data(), gotDb.size() * 4, *stream_));
    ASSERT_TRUE(stream_->synchronize());

    ref::GroupedColumnwise want =
        ref::groupedColumnwiseQuantize(x.data(), m, c, splits, scheme, cap);
    int64_t width = fp8 ? 1 : 2, wrong = 0;
    std::vector<int64_t> clamped = ref::clampSplits(splits, m);
    for (int64_t e = 0; e < g; ++e) {
      int64_t first = want.segmentStart[e], blocks = (clamped[e] + 127) / 128;
      for (int64_t col = 0; col < c; ++col) {
        size_t at = size_t((col * cap + first * 128) * width);
        for (int64_t i = 0; i < blocks * 128 * width; ++i)
          if (gotData[at + i] != want.data[at + i] && wrong++ < 5)
            ADD_FAILURE() << "expert " << e << " column " << col << " byte "
                          << i << ": 0x" << std::hex << int(gotData[at + i])
                          << " want 0x" << int(want.data[at + i]);
        for (int64_t b = 0; fp8 && b < blocks; ++b) {
          size_t s = size_t((first + b) * colsPad + col);
          if (std::memcmp(&gotScales[s], &want.scaleInv[s], 4) && wrong++ < 5)
            ADD_FAILURE() << "expert " << e << " block " << b << " column "
                          << col << ": scale_inv " << gotScales[s] << " want "
                          << want.scaleInv[s];
        }
      }
    }
    for (size_t i = 0; i < gotDb.size(); ++i)
      if (std::memcmp(&gotDb[i], &want.biasGrad[i], 4) && wrong++ < 5)
        ADD_FAILURE() << "bias gradient of expert " << i / c << " column "
                      << i % c << ": " << gotDb[i] << " want "
                      << want.biasGrad[i];
    EXPECT_EQ(wrong, 0);
  }
}

} // namespace
