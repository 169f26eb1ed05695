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
// expert's own block-scaled GEMM. The per-tensor FP8 quantize of a grouped
// GEMM's operands with one amax per expert (tokens and stacked weight):
// each expert's codes, amax and scale as its rows alone give them, bit for
// bit on the GPU, with its scale laid out over the GEMM's blocks (the
// stack also in its columnwise copy, the dgrad's); and the wgrad's grouped
// columnwise layout under per-tensor FP8 with one amax per expert.
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

/// Each expert's delayed-scaling state (expert e's scale base * 2^(step * e
/// + offset), far from the others'), the pointers the reference takes and
/// the scales the device pass is given.
struct ExpertStates {
  std::vector<ref::DelayedScalingState> states;
  std::vector<ref::DelayedScalingState *> pointers;
  std::vector<float> scales;
  ExpertStates(int64_t g, float base, int step, int offset)
      : states(static_cast<size_t>(g)) {
    for (int64_t e = 0; e < g; ++e) {
      states[e].scale = std::ldexp(base, int(step * e) + offset);
      states[e].history.assign(4, 0.0f);
      pointers.push_back(&states[e]);
      scales.push_back(states[e].scale);
    }
  }
};

std::vector<uint16_t> randomBf16(size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<uint16_t> v(count);
  for (uint16_t &x : v)
    x = ref::floatToBF16(d(rng) * 3.0f);
  return v;
}

/// Two kernels of one generated source, compiled through `cache`.
struct KernelPair {
  rt::Kernel first, second;
};
rt::Expected<KernelPair> loadPair(rt::KernelCache &cache,
                                  const std::string &source,
                                  const std::string &first,
                                  const std::string &second) {
  auto compiled = cache.getOrCompile(source, rt::CompileOptions{});
  if (!compiled)
    return compiled.status();
  rt::Expected<rt::Kernel> a = rt::Kernel::load((*compiled)->cubin, first);
  if (!a)
    return a.status();
  rt::Expected<rt::Kernel> b = rt::Kernel::load((*compiled)->cubin, second);
  if (!b)
    return b.status();
  return KernelPair{std::move(*a), std::move(*b)};
}

/// Device addresses of a grouped quantize's buffers (0: none).
struct GroupedQuantizeBuffers {
  uint64_t in = 0, splits = 0, out = 0, scales = 0, partial = 0, amax = 0,
           record = 0, db = 0;
};

/// The block pass of `spec` over M = m rows into a `cap`-row grouped
/// layout, then (with db) the bias reduction.
rt::Status launchGroupedQuantize(KernelPair &k,
                                 const cg::GroupedQuantizeSpec &spec, int64_t m,
                                 int64_t cap, GroupedQuantizeBuffers b,
                                 float eps, unsigned long long seed,
                                 unsigned long long offset,
                                 const rt::Stream &s) {
  long long mm = m, cc = spec.cols, capacity = cap;
  void *args[] = {&b.in,  &mm,       &cc,      &b.splits,  &capacity,
                  &b.out, &b.scales, &eps,     &b.partial, &b.amax,
                  &seed,  &offset,   &b.record};
  rt::Status st = k.first.launch(cg::groupedQuantizeGrid(cap, spec.cols),
                                 {cg::kGroupedQuantizeThreads, 1, 1},
                                 cg::groupedQuantizeSharedBytes(spec), s, args);
  if (!st.isOk() || !b.db)
    return st;
  void *bargs[] = {&b.partial, &mm, &cc, &b.splits, &b.db};
  return k.second.launch(cg::groupedBiasGrid(spec.groups, spec.cols),
                         {cg::kGroupedBiasThreads, 1, 1}, 0, s, bargs);
}

/// Counts (and reports the first few of) the bias gradients `got` [G, c]
/// that differ from `want` in any bit.
int64_t wrongBiasGradients(const std::vector<float> &got,
                           const std::vector<float> &want, int64_t c) {
  int64_t wrong = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], 4) && wrong++ < 5)
      ADD_FAILURE() << "bias gradient of expert " << i / c << " column "
                    << i % c << ": " << got[i] << " want " << want[i];
  return wrong;
}

/// The grouped quantize's block pass (first) and, with a bias gradient,
/// its reduction (second).
rt::Expected<KernelPair>
loadGroupedQuantize(rt::KernelCache &cache,
                    const cg::GroupedQuantizeSpec &spec) {
  cg::EmittedGroupedQuantize e = cg::emitGroupedQuantize(spec);
  return loadPair(cache, e.source, e.mainEntry, e.biasEntry);
}

const Scheme kSchemes[] = {Scheme::fp8Block(DType::E4M3, 1, 128),
                           Scheme::fp8Block(DType::E4M3, 1, 128, true),
                           Scheme::fp8Block(DType::E5M2, 1, 128, false, 1e-3),
                           Scheme::identity(DType::BF16),
                           Scheme::mxfp8(DType::E4M3),
                           Scheme::mxfp8(DType::E5M2),
                           Scheme::fp8Current(DType::E4M3),
                           Scheme::fp8Current(DType::E5M2, true),
                           Scheme::nvfp4(true, true),
                           Scheme::nvfp4(true),
                           Scheme::nvfp4(false, true),
                           Scheme::nvfp4(),
                           Scheme::fp8Delayed(DType::E4M3, 4),
                           Scheme::fp8Delayed(DType::E5M2, 4)};

TEST(GroupedQuantize, KernelsCompileAndRefuseWhatTheyCannotDo) {
  // Block FP8 codes and scales; MXFP8's dequantized values; per-tensor
  // FP8 codes by each expert's amax; NVFP4's values with the transform and
  // stochastic rounding (and its amax pass).
  for (const Scheme &scheme :
       {kSchemes[1], kSchemes[4], kSchemes[7], kSchemes[8]}) {
    cg::GroupedQuantizeSpec s{scheme, 8, 4096, true};
    ASSERT_TRUE(cg::checkGroupedQuantize(s).isOk());
    if (rt::nvrtcVersion()) {
      cg::EmittedGroupedQuantize e = cg::emitGroupedQuantize(s);
      rt::Expected<rt::CompiledKernel> k =
          rt::compileCuda(e.source, e.mainEntry + ".cu", rt::CompileOptions{});
      ASSERT_TRUE(k) << k.status().message();
    }
  }
  if (rt::nvrtcVersion()) {
    cg::EmittedGroupedAmax rht = cg::emitGroupedRhtAmax(8);
    ASSERT_TRUE(
        rt::compileCuda(rht.source, rht.entry + ".cu", rt::CompileOptions{}));
  }
  EXPECT_EQ(cg::GroupedQuantizeSpec({kSchemes[8], 8, 4096, true}).kernelName(),
            "te_grouped_quantize_nvfp4_rht_sr_g8_c4096_db");
  EXPECT_NE(cg::checkGroupedQuantize({kSchemes[11], 8, 264, false})
                .message()
                .find("multiple of 16"),
            std::string::npos);
  EXPECT_NE(cg::checkGroupedQuantize(
                {Scheme::nvfp4(false, false, true), 8, 256, false})
                .message()
                .find("NVFP4 with 1x16 blocks"),
            std::string::npos);
  EXPECT_EQ(cg::GroupedQuantizeSpec({kSchemes[5], 8, 4096, false}).kernelName(),
            "te_grouped_quantize_mxfp8_e5m2_g8_c4096");
  // FP8 codes laid out as their values (a wgrad pairing them with another
  // family); no other scheme has codes to lay out so.
  cg::GroupedQuantizeSpec values{kSchemes[7], 8, 4096, true};
  values.fp8Values = true;
  EXPECT_EQ(values.kernelName(),
            "te_grouped_quantize_e5m2_tensor_pow2_values_g8_c4096_db");
  ASSERT_TRUE(cg::checkGroupedQuantize(values).isOk());
  if (rt::nvrtcVersion()) {
    cg::EmittedGroupedQuantize e = cg::emitGroupedQuantize(values);
    ASSERT_TRUE(
        rt::compileCuda(e.source, e.mainEntry + ".cu", rt::CompileOptions{}))
        << e.source;
  }
  values.scheme = kSchemes[4];
  EXPECT_NE(cg::checkGroupedQuantize(values).message().find(
                "only FP8 codes are laid out as their values"),
            std::string::npos);
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

class GroupedQuantizeGpu : public test::HopperGpuTest {
public:
  using HopperGpuTest::upload;
  const rt::Stream &stream() const { return *stream_; }
};

TEST_F(GroupedQuantizeGpu, EveryExpertSegmentIsBitExact) {
  // C: two whole 128-column tiles and a 16-column one (NVFP4 needs C a
  // multiple of 16).
  const int64_t m = 700, c = 272, g = 4;
  const int64_t cap = cg::groupedWgradCapacity(m, g), colsPad = 272;
  const uint64_t seed = 0xC0FFEE12345ull, offset = 3;
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
  for (const Scheme &scheme : kSchemes)
    for (bool values : {false, true}) {
      // FP8 codes: block FP8, per-tensor FP8 (current or delayed scaling);
      // or, for a wgrad pairing them with another family, their values.
      const bool fp8Scheme = scheme.kind == rt::SchemeKind::Fp8Block ||
                             scheme.kind == rt::SchemeKind::Fp8Current ||
                             scheme.kind == rt::SchemeKind::Fp8Delayed;
      if (values && !fp8Scheme)
        continue;
      cg::GroupedQuantizeSpec spec{scheme, g, c, true};
      spec.fp8Values = values;
      SCOPED_TRACE(spec.kernelName());
      const bool fp8 = fp8Scheme && !values;
      rt::Expected<KernelPair> kernels = loadGroupedQuantize(cache, spec);
      ASSERT_TRUE(kernels) << kernels.status().message();
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
      uint64_t inP = in.devicePtr(), spP = sp.devicePtr(),
               outP = out.devicePtr(), scP = scales.devicePtr(),
               paP = partial.devicePtr(), dbP = db.devicePtr();
      long long mm = m, cc = c;
      float eps = static_cast<float>(scheme.eps);
      // Per-tensor FP8 and NVFP4: each expert's amax first (the amax pass the
      // plan runs; with the Hadamard transform, of the transformed runs).
      rt::DeviceBuffer amax = alloc(g * 4), record = alloc(g * 4);
      ASSERT_TRUE(amax.fill(0, *stream_));
      ASSERT_TRUE(record.fill(0, *stream_));
      uint64_t amP =
          spec.needsExpertAmax() || spec.delayed() ? amax.devicePtr() : 0;
      // Delayed scaling: each expert's state (its scale given to the pass,
      // its amax recorded).
      ExpertStates expert(g, 1.25f, 5, -6);
      std::vector<ref::DelayedScalingState> &states = expert.states;
      if (spec.delayed()) {
        ASSERT_TRUE(amax.copyFromHost(expert.scales.data(), g * 4, *stream_));
      }
      if (spec.needsExpertAmax()) {
        const bool rht = scheme.kind == rt::SchemeKind::Nvfp4 && scheme.rht;
        cg::EmittedGroupedAmax r =
            rht ? cg::emitGroupedRhtAmax(g) : cg::emitGroupedExpertAmax(g);
        auto rc = cache.getOrCompile(r.source, rt::CompileOptions{});
        ASSERT_TRUE(rc) << rc.status().message();
        rt::Expected<rt::Kernel> pass = rt::Kernel::load((*rc)->cubin, r.entry);
        ASSERT_TRUE(pass);
        long long none = 0;
        void *amaxArgs[] = {&inP, &mm, &cc, &spP, &none, &amP};
        void *rhtArgs[] = {&inP, &mm, &cc, &spP, &amP};
        ASSERT_TRUE(rht ? pass->launch(cg::groupedQuantizeGrid(cap, c),
                                       {cg::kGroupedQuantizeThreads, 1, 1}, 0,
                                       *stream_, rhtArgs)
                        : pass->launch(cg::groupedRowsGrid(m),
                                       {cg::kGroupedRowsThreads, 1, 1}, 0,
                                       *stream_, amaxArgs));
      }
      uint64_t recP = spec.delayed() ? record.devicePtr() : 0;
      ASSERT_TRUE(launchGroupedQuantize(
          *kernels, spec, m, cap, {inP, spP, outP, scP, paP, amP, recP, dbP},
          eps, seed, offset, *stream_));
      std::vector<uint8_t> gotData(c * cap * (fp8 ? 1 : 2));
      std::vector<float> gotScales(cap / 128 * colsPad), gotDb(g * c);
      ASSERT_TRUE(out.copyToHost(gotData.data(), gotData.size(), *stream_));
      ASSERT_TRUE(
          scales.copyToHost(gotScales.data(), gotScales.size() * 4, *stream_));
      ASSERT_TRUE(db.copyToHost(gotDb.data(), gotDb.size() * 4, *stream_));
      ASSERT_TRUE(stream_->synchronize());

      ref::GroupedColumnwise want = ref::groupedColumnwiseQuantize(
          x.data(), m, c, splits, scheme, cap, seed, offset,
          spec.delayed() ? &expert.pointers : nullptr, values);
      ASSERT_EQ(want.error, "");
      if (spec.delayed()) {
        std::vector<float> gotRecord(g);
        ASSERT_TRUE(record.copyToHost(gotRecord.data(), g * 4, *stream_));
        ASSERT_TRUE(stream_->synchronize());
        for (int64_t e = 0; e < g; ++e)
          EXPECT_EQ(0, std::memcmp(&gotRecord[e], &states[e].history[0], 4))
              << "expert " << e << ": " << gotRecord[e] << " want "
              << states[e].history[0];
      }
      int64_t width = fp8 ? 1 : 2, wrong = 0;
      std::vector<int64_t> clamped = ref::clampSplits(splits, m);
      for (int64_t e = 0; e < g; ++e) {
        int64_t first = want.segmentStart[e], blocks = (clamped[e] + 127) / 128;
        for (int64_t col = 0; col < c; ++col) {
          size_t at = size_t((col * cap + first * 128) * width);
          for (int64_t i = 0; i < blocks * 128 * width; i += width) {
            // bf16 values: a NaN is a NaN (the device writes the canonical
            // one, the reference keeps the sign; NVFP4 decodes a zero code
            // of an expert whose amax is infinite to 0 · inf).
            auto bits = [&](const std::vector<uint8_t> &d) {
              return width == 1 ? unsigned(d[at + i])
                                : unsigned(d[at + i] | d[at + i + 1] << 8);
            };
            auto nan = [&](unsigned b) {
              return width == 2 && (b & 0x7F80u) == 0x7F80u && (b & 0x7Fu);
            };
            unsigned got = bits(gotData), exp = bits(want.data);
            if (got != exp && !(nan(got) && nan(exp)) && wrong++ < 5)
              ADD_FAILURE()
                  << "expert " << e << " column " << col << " byte " << i
                  << ": 0x" << std::hex << got << " want 0x" << exp;
          }
          for (int64_t b = 0; fp8 && b < blocks; ++b) {
            size_t s = size_t((first + b) * colsPad + col);
            if (std::memcmp(&gotScales[s], &want.scaleInv[s], 4) && wrong++ < 5)
              ADD_FAILURE() << "expert " << e << " block " << b << " column "
                            << col << ": scale_inv " << gotScales[s] << " want "
                            << want.scaleInv[s];
          }
        }
      }
      wrong += wrongBiasGradients(gotDb, want.biasGrad, c);
      EXPECT_EQ(wrong, 0);
    }
}

// Each expert's bias gradient, its partials summed in block order: experts
// without rows before, between and after the ones with rows get +0 (all of
// them when no expert has rows), and an expert of 35 blocks takes two
// batches of the ordered sum.
TEST_F(GroupedQuantizeGpu, BiasGradientsOfEmptyAndLongExperts) {
  const int64_t m = 4400, c = 136, g = 5;
  const int64_t cap = cg::groupedWgradCapacity(m, g);
  std::vector<uint16_t> x = randomBf16(m * c, 7);
  rt::DeviceBuffer in = upload(x);
  const Scheme scheme = Scheme::fp8Block(DType::E4M3, 1, 128, true);
  cg::GroupedQuantizeSpec spec{scheme, g, c, true};
  rt::KernelCache cache;
  rt::Expected<KernelPair> kernels = loadGroupedQuantize(cache, spec);
  ASSERT_TRUE(kernels) << kernels.status().message();
  auto alloc = [&](int64_t bytes) {
    rt::Expected<rt::DeviceBuffer> b = rt::DeviceBuffer::allocate(bytes);
    EXPECT_TRUE(b);
    return std::move(*b);
  };
  rt::DeviceBuffer out = alloc(c * cap), scales = alloc(cap / 128 * c * 4),
                   partial = alloc(cap / 128 * c * 4), db = alloc(g * c * 4);
  const std::vector<std::vector<int64_t>> cases = {{0, 0, 4400, 0, 0},
                                                   {0, 0, 0, 0, 0},
                                                   {0, 1000, 0, 0, 3000},
                                                   {4400, 0, 0, 0, 9}};
  for (const std::vector<int64_t> &splits : cases) {
    SCOPED_TRACE(::testing::PrintToString(splits));
    rt::DeviceBuffer sp = upload(splits);
    ASSERT_TRUE(db.fill(0xA5, *stream_)); // poison
    uint64_t inP = in.devicePtr(), spP = sp.devicePtr(), outP = out.devicePtr(),
             scP = scales.devicePtr(), paP = partial.devicePtr(), amP = 0,
             recP = 0, dbP = db.devicePtr();
    ASSERT_TRUE(launchGroupedQuantize(
        *kernels, spec, m, cap, {inP, spP, outP, scP, paP, amP, recP, dbP},
        0.0f, 0, 0, *stream_));
    std::vector<float> gotDb(g * c);
    ASSERT_TRUE(db.copyToHost(gotDb.data(), gotDb.size() * 4, *stream_));
    ASSERT_TRUE(stream_->synchronize());
    ref::GroupedColumnwise want =
        ref::groupedColumnwiseQuantize(x.data(), m, c, splits, scheme, cap);
    ASSERT_EQ(want.error, "");
    EXPECT_EQ(wrongBiasGradients(gotDb, want.biasGrad, c), 0);
  }
}

//===----------------------------------------------------------------------===//
// Per-tensor FP8 with one amax per expert (the grouped GEMM's own quantize)
//===----------------------------------------------------------------------===//

const Scheme kCurrentSchemes[] = {Scheme::fp8Current(DType::E4M3),
                                  Scheme::fp8Current(DType::E5M2, true),
                                  Scheme::fp8Current(DType::E4M3, false, 0.5)};

TEST(GroupedRowsQuantize, KernelsCompileAndRefuseWhatTheyCannotDo) {
  // Accepted, and (with NVRTC) compiled without spills: the 16x16 NVFP4
  // kernels hold a band's 16 rows of a block in registers.
  auto compiles = [](const cg::GroupedRowsQuantizeSpec &s) {
    SCOPED_TRACE(s.kernelName());
    ASSERT_TRUE(cg::checkGroupedRowsQuantize(s).isOk());
    if (!rt::nvrtcVersion())
      return;
    cg::EmittedGroupedRowsQuantize e = cg::emitGroupedRowsQuantize(s);
    rt::CompileOptions opts;
    opts.flags.push_back("--ptxas-options=-v");
    rt::Expected<rt::CompiledKernel> k =
        rt::compileCuda(e.source, e.quantizeEntry + ".cu", opts);
    ASSERT_TRUE(k) << k.status().message();
    size_t reports = 0;
    for (size_t at = k->log.find(" bytes spill stores");
         at != std::string::npos;
         at = k->log.find(" bytes spill stores", at + 1), ++reports)
      EXPECT_EQ(k->log.compare(at - 2, 2, " 0"), 0) << k->log;
    EXPECT_GT(reports, 0u) << k->log;
  };
  for (bool stack : {false, true})
    compiles({kCurrentSchemes[1], 8, 4096, stack});
  EXPECT_EQ(cg::GroupedRowsQuantizeSpec({kCurrentSchemes[1], 8, 4096, true})
                .kernelName(),
            "te_grouped_rows_e5m2_pow2_g8_c4096_weights");
  cg::GroupedRowsQuantizeSpec odd{kCurrentSchemes[0], 8, 100, false};
  EXPECT_NE(cg::checkGroupedRowsQuantize(odd).message().find("multiple of 8"),
            std::string::npos);
  // NVFP4 values: 1x16 or, for the stack, 16x16 blocks (stochastically
  // rounded or not) and 16x1 columns (rounded to nearest); C a multiple of
  // 16.
  for (bool block2d : {false, true})
    compiles({Scheme::nvfp4(false, true, block2d), 8, 4096, block2d});
  compiles({Scheme::nvfp4(), 8, 4096, true, true});
  auto nvfp4Refused = [](cg::GroupedRowsQuantizeSpec s, const char *why) {
    EXPECT_NE(cg::checkGroupedRowsQuantize(s).message().find(why),
              std::string::npos)
        << cg::checkGroupedRowsQuantize(s).message();
  };
  nvfp4Refused({Scheme::nvfp4(false, true), 8, 128, true, true},
               "rounded to nearest");
  nvfp4Refused({Scheme::nvfp4(false, false, true), 8, 128, true, true},
               "quantize the stack rowwise");
  nvfp4Refused({Scheme::nvfp4(false, false, true), 8, 128, false},
               "16x16 NVFP4 blocks need the stack");
  nvfp4Refused({Scheme::nvfp4(), 8, 136, false}, "multiple of 16");
  // NVFP4 codes (what the engine's NVFP4 GEMM reads): rowwise, 1x16 or
  // 16x16; E4M3 scale bytes [rows, C/16] counted in whole floats.
  for (bool block2d : {false, true}) {
    cg::GroupedRowsQuantizeSpec codes{
        Scheme::nvfp4(false, true, block2d), 8, 4096, block2d, false, true};
    compiles(codes);
    EXPECT_EQ(cg::groupedRowsBlockScales(codes, 301), (301 * 256 + 3) / 4);
  }
  EXPECT_EQ(cg::GroupedRowsQuantizeSpec(
                {Scheme::nvfp4(), 8, 4096, false, false, true})
                .kernelName(),
            "te_grouped_rows_nvfp4_g8_c4096_tokens_codes");
  nvfp4Refused({Scheme::nvfp4(), 8, 128, true, true, true},
               "NVFP4 codes are written rowwise");
  cg::GroupedRowsQuantizeSpec fp8Codes{
      kCurrentSchemes[0], 8, 128, false, false, true};
  EXPECT_NE(cg::checkGroupedRowsQuantize(fp8Codes).message().find(
                "codes instead of values are NVFP4's"),
            std::string::npos);
  cg::GroupedRowsQuantizeSpec block{Scheme::fp8Block(DType::E4M3, 1, 128), 8,
                                    128, false};
  EXPECT_NE(cg::checkGroupedRowsQuantize(block).message().find(
                "per-tensor FP8, current or delayed scaling"),
            std::string::npos);
  // The layouts: the tokens' 1x128 blocks over roundup(rows, 4) columns,
  // the stack's 128x128 tiles over roundup(ceil(C/128), 4).
  cg::GroupedRowsQuantizeSpec tokens{kCurrentSchemes[0], 4, 264, false};
  EXPECT_EQ(cg::groupedRowsBlockStride(tokens, 701), 704);
  EXPECT_EQ(cg::groupedRowsBlockScales(tokens, 701), 3 * 704);
  cg::GroupedRowsQuantizeSpec weights{kCurrentSchemes[0], 4, 264, true};
  EXPECT_EQ(cg::groupedRowsBlockStride(weights, 4 * 256), 4);
  EXPECT_EQ(cg::groupedRowsBlockScales(weights, 4 * 256), 4 * 2 * 4);
}

// Each expert's rows are their own tensor: its codes and scale are those of
// quantizing the rows alone, its scale repeated over the GEMM's blocks.
TEST(GroupedRowsQuantize, TheReferenceIsEachExpertAlone) {
  const int64_t m = 300, c = 136;
  std::vector<uint16_t> x = randomBf16(m * c, 4);
  for (int64_t i = 130 * c; i < 170 * c; ++i) // expert 2 much larger
    x[i] = ref::floatToBF16(ref::bf16ToFloat(x[i]) * 64.0f);
  std::vector<int64_t> splits = {130, 0, 160}; // 10 padding rows
  ref::GroupedTensorScaled g = ref::groupedTensorScaledQuantize(
      x.data(), m, c, splits, 3, kCurrentSchemes[0]);
  ASSERT_EQ(g.error, "");
  ref::QuantizedTensor alone =
      ref::quantize(x.data() + 130 * c, ref::SourceType::BF16, 160, c,
                    kCurrentSchemes[0], ref::kRowwiseMask, {});
  const ref::QuantizedDirection &d = *alone.rowwise;
  EXPECT_EQ(0, std::memcmp(&g.codes[130 * c], d.data.bytes.data(), 160 * c));
  EXPECT_EQ(g.scaleInv[2], ref::loadF32(d.scaleInv, 0));
  EXPECT_EQ(g.amax[2], ref::loadF32(d.amax, 0));
  EXPECT_NE(g.scaleInv[0], g.scaleInv[2]); // two amaxes, two scales
  // The values the BF16 GEMM reads: the expert's own dequantized codes.
  std::vector<uint16_t> values =
      ref::groupedTensorScaledValues(g, m, c, splits, 3, kCurrentSchemes[0]);
  std::vector<float> aloneValues = ref::dequantize(
      alone, rt::Direction::Rowwise, kCurrentSchemes[0], 160, c);
  for (int64_t i = 0; i < 160 * c; ++i)
    ASSERT_EQ(values[size_t(130 * c + i)],
              ref::floatToBF16(aloneValues[size_t(i)]))
        << i;
  for (int64_t i = 290 * c; i < m * c; ++i)
    ASSERT_EQ(values[size_t(i)], 0) << "padding row " << i / c;
  EXPECT_EQ(g.amax[1], 0.0f);              // the empty expert
  EXPECT_EQ(g.scaleInv[1], 1.0f);
  for (int64_t i = 290 * c; i < m * c; ++i)
    ASSERT_EQ(g.codes[i], 0) << "padding row " << i / c;
  ASSERT_EQ(g.blockStride, 300);
  for (int64_t kb = 0; kb < 2; ++kb)
    for (int64_t r = 0; r < 300; ++r)
      ASSERT_EQ(g.blockScaleInv[kb * 300 + r], r < 130   ? g.scaleInv[0]
                                               : r < 290 ? g.scaleInv[2]
                                                         : 0.0f)
          << kb << " " << r;
  // The stack: expert 1's two 128-row tiles carry its scale, the padding
  // columns of each tile row are zero.
  std::vector<uint16_t> w = randomBf16(3 * 256 * c, 5);
  ref::GroupedTensorScaled s = ref::groupedTensorScaledQuantize(
      w.data(), 3 * 256, c, {}, 3, kCurrentSchemes[1]);
  ASSERT_EQ(s.error, "");
  ASSERT_EQ(s.blockStride, 4);
  for (int64_t t = 0; t < 6; ++t)
    for (int64_t kb = 0; kb < 4; ++kb)
      ASSERT_EQ(s.blockScaleInv[t * 4 + kb], kb < 2 ? s.scaleInv[t / 2] : 0.0f)
          << t << " " << kb;
}

/// The amax pass (first) and the cast (second) of `spec`.
rt::Expected<KernelPair>
loadGroupedRows(rt::KernelCache &cache,
                const cg::GroupedRowsQuantizeSpec &spec) {
  cg::EmittedGroupedRowsQuantize e = cg::emitGroupedRowsQuantize(spec);
  return loadPair(cache, e.source, e.amaxEntry, e.quantizeEntry);
}

/// Runs the per-expert per-tensor quantizes of tokens `x` [m, c] under
/// `splits` and of a stack `w` [g·n, c] (and its columnwise copy) and
/// compares every byte with the reference.
void checkPerExpertQuantize(GroupedQuantizeGpu &t, int64_t m, int64_t c,
                            int64_t g, int64_t n,
                            const std::vector<int64_t> &splits,
                            const std::vector<uint16_t> &x,
                            const std::vector<uint16_t> &w) {
  const rt::Stream &stream = t.stream();
  rt::DeviceBuffer xIn = t.upload(x), wIn = t.upload(w), sp = t.upload(splits);
  rt::KernelCache cache;
  // Current scaling, and delayed scaling (each expert's scale given, its
  // amax recorded) - the tokens, the stack, the stack's columnwise copy
  // (the dgrad's); then the bf16 values of the tokens' and the stack's
  // codes (fp8Values, what the BF16 GEMM reads beside another family).
  std::vector<Scheme> schemes(std::begin(kCurrentSchemes),
                              std::end(kCurrentSchemes));
  schemes.push_back(Scheme::fp8Delayed(DType::E4M3, 4));
  schemes.push_back(Scheme::fp8Delayed(DType::E5M2, 4));
  for (const Scheme &scheme : schemes)
    for (int variant = 0; variant < 5; ++variant) {
      const bool stack = variant == 1 || variant == 2 || variant == 4,
                 columnwise = variant == 2, values = variant >= 3;
      cg::GroupedRowsQuantizeSpec spec{scheme,     g,     c,     stack,
                                       columnwise, false, values};
      SCOPED_TRACE(spec.kernelName());
      const int64_t rows = stack ? g * n : m;
      rt::Expected<KernelPair> k = loadGroupedRows(cache, spec);
      ASSERT_TRUE(k) << k.status().message();
      auto alloc = [&](int64_t bytes, int byte) {
        rt::Expected<rt::DeviceBuffer> b = rt::DeviceBuffer::allocate(bytes);
        EXPECT_TRUE(b);
        EXPECT_TRUE(b->fill(byte, stream));
        return std::move(*b);
      };
      const int64_t scales = cg::groupedRowsBlockScales(spec, rows);
      const int64_t width = values ? 2 : 1;
      rt::DeviceBuffer amax = alloc(g * 4, 0),
                       codes = alloc(rows * c * width, 0xA5),
                       sInv = alloc(g * 4, 0xA5),
                       block = alloc(std::max<int64_t>(scales, 1) * 4, 0xA5),
                       record = alloc(g * 4, 0);
      // Delayed: each expert's state, its scale far from the others'.
      const bool delayed = spec.delayed();
      ExpertStates expert(g, 1.5f, 3, -4);
      std::vector<ref::DelayedScalingState> &states = expert.states;
      if (delayed) {
        ASSERT_TRUE(amax.copyFromHost(expert.scales.data(), g * 4, stream));
      }
      cg::GroupedRowsBuffers buf;
      buf.in = (stack ? wIn : xIn).devicePtr();
      buf.splits = stack ? 0 : sp.devicePtr();
      buf.amax = amax.devicePtr();
      buf.codes = codes.devicePtr();
      // Values take no scales: null pointers, so a stray store would fault.
      buf.scaleInv = values ? 0 : sInv.devicePtr();
      buf.blockScales = values ? 0 : block.devicePtr();
      buf.rows = rows;
      buf.amaxRecord = delayed ? record.devicePtr() : 0;
      ASSERT_TRUE(cg::launchGroupedRowsQuantize(spec, k->first, k->second, buf,
                                                stream));
      std::vector<uint8_t> gotCodes(rows * c * width);
      std::vector<float> gotBlock(scales), gotInv(g), gotAmax(g), gotRecord(g);
      ASSERT_TRUE(record.copyToHost(gotRecord.data(), g * 4, stream));
      ASSERT_TRUE(codes.copyToHost(gotCodes.data(), gotCodes.size(), stream));
      if (scales > 0)
        ASSERT_TRUE(block.copyToHost(gotBlock.data(), scales * 4, stream));
      ASSERT_TRUE(sInv.copyToHost(gotInv.data(), g * 4, stream));
      ASSERT_TRUE(amax.copyToHost(gotAmax.data(), g * 4, stream));
      ASSERT_TRUE(stream.synchronize());

      ref::GroupedTensorScaled want = ref::groupedTensorScaledQuantize(
          (stack ? w : x).data(), rows, c,
          stack ? std::vector<int64_t>{} : splits, g, scheme, columnwise,
          delayed ? &expert.pointers : nullptr);
      ASSERT_EQ(want.error, "");
      const int64_t ld = columnwise ? rows : c;
      int64_t wrong = 0;
      if (values) {
        std::vector<uint16_t> v = ref::groupedTensorScaledValues(
            want, rows, c, stack ? std::vector<int64_t>{} : splits, g, scheme);
        ASSERT_EQ(v.size(), size_t(rows * c));
        for (int64_t i = 0; i < rows * c; ++i) {
          uint16_t got;
          std::memcpy(&got, &gotCodes[size_t(2 * i)], 2);
          if (got != v[size_t(i)] && wrong++ < 5)
            ADD_FAILURE() << "row " << i / c << " column " << i % c << ": 0x"
                          << std::hex << got << " want 0x" << v[size_t(i)];
        }
        if (delayed)
          for (int64_t e = 0; e < g; ++e)
            EXPECT_EQ(0, std::memcmp(&gotRecord[e], &states[e].history[0], 4))
                << "expert " << e;
        else
          EXPECT_EQ(0, std::memcmp(gotAmax.data(), want.amax.data(), g * 4));
        EXPECT_EQ(wrong, 0);
        continue;
      }
      for (int64_t i = 0; i < rows * c; ++i)
        if (gotCodes[i] != want.codes[i] && wrong++ < 5)
          ADD_FAILURE() << "row " << i / ld << " column " << i % ld << ": 0x"
                        << std::hex << int(gotCodes[i]) << " want 0x"
                        << int(want.codes[i]);
      for (int64_t i = 0; i < scales; ++i)
        if (std::memcmp(&gotBlock[i], &want.blockScaleInv[i], 4) && wrong++ < 5)
          ADD_FAILURE() << "block scale " << i << ": " << gotBlock[i]
                        << " want " << want.blockScaleInv[i];
      EXPECT_EQ(0, std::memcmp(gotInv.data(), want.scaleInv.data(), g * 4));
      if (delayed) // each expert's amax recorded as its state records it
        for (int64_t e = 0; e < g; ++e)
          EXPECT_EQ(0, std::memcmp(&gotRecord[e], &states[e].history[0], 4))
              << "expert " << e << ": " << gotRecord[e] << " want "
              << states[e].history[0];
      else
        EXPECT_EQ(0, std::memcmp(gotAmax.data(), want.amax.data(), g * 4));
      EXPECT_EQ(wrong, 0);
    }
}

TEST_F(GroupedQuantizeGpu, PerExpertTensorScalesAreBitExact) {
  const int64_t m = 701, c = 264, g = 4, n = 256;
  std::vector<uint16_t> x = randomBf16(m * c, 6), w = randomBf16(g * n * c, 7);
  // A huge value and an infinity (the amax and the saturating encode), an
  // expert 64x larger than the others, and zeros.
  x[5 * c + 7] = 0x7F7F;
  x[140 * c + 8] = 0x7F80;
  for (int64_t i = 429 * c; i < 729 * c && i < m * c; ++i)
    x[i] = ref::floatToBF16(ref::bf16ToFloat(x[i]) * 64.0f);
  for (int64_t i = 256 * c; i < 512 * c; ++i) // expert 1's weight
    w[i] = ref::floatToBF16(ref::bf16ToFloat(w[i]) / 1024.0f);
  checkPerExpertQuantize(*this, m, c, g, n, {129, 0, 300, 250}, x, w);
}

// Past 8448 rows each warp takes a run of several rows: runs that cross
// experts (an empty one and a one-row one among them) flush their amax
// per expert and look the next expert up; the tokens' scale columns are
// written by every lane.
TEST_F(GroupedQuantizeGpu, PerExpertRunsOfManyRowsAreBitExact) {
  const int64_t m = 20011, c = 64, g = 5, n = 2048;
  std::vector<uint16_t> x = randomBf16(m * c, 8), w = randomBf16(g * n * c, 9);
  for (int64_t i = 5003 * c; i < 12780 * c; ++i) // expert 2 larger
    x[i] = ref::floatToBF16(ref::bf16ToFloat(x[i]) * 256.0f);
  for (int64_t i = 3 * n * c; i < 4 * n * c; ++i) // expert 3's weight
    w[i] = ref::floatToBF16(ref::bf16ToFloat(w[i]) * 64.0f);
  // 18781 rows of experts, 1230 padding rows.
  checkPerExpertQuantize(*this, m, c, g, n, {5003, 0, 7777, 1, 6000}, x, w);
}

/// NVFP4 per expert: the amax pass and the values kernel on tokens `x` [m,
/// c] under `splits` and on a stack `w` [g·n, c] (1x16 and 16x16 blocks);
/// every bf16 value and amax against the reference; then the codes kernels
/// (what the GEMM engine's NVFP4 kernel reads): every code byte and scale.
void checkPerExpertNvfp4(GroupedQuantizeGpu &t, int64_t m, int64_t c, int64_t g,
                         int64_t n, const std::vector<int64_t> &splits,
                         const std::vector<uint16_t> &x,
                         const std::vector<uint16_t> &w) {
  const rt::Stream &stream = t.stream();
  rt::DeviceBuffer xIn = t.upload(x), wIn = t.upload(w), sp = t.upload(splits);
  rt::KernelCache cache;
  // The tokens (1x16, rounded to nearest or stochastically) and the stack
  // (1x16, 16x16 either way, and its 16x1 columns, which the dgrad reads).
  const cg::GroupedRowsQuantizeSpec specs[] = {
      {Scheme::nvfp4(), g, c, false},
      {Scheme::nvfp4(false, true), g, c, false},
      {Scheme::nvfp4(), g, c, true},
      {Scheme::nvfp4(false, false, true), g, c, true},
      {Scheme::nvfp4(false, true, true), g, c, true},
      {Scheme::nvfp4(), g, c, true, true},
      {Scheme::nvfp4(), g, c, false, false, true},
      {Scheme::nvfp4(false, true), g, c, false, false, true},
      {Scheme::nvfp4(), g, c, true, false, true},
      {Scheme::nvfp4(false, false, true), g, c, true, false, true},
      {Scheme::nvfp4(false, true, true), g, c, true, false, true}};
  const uint64_t seed = 0x5EED0123456789ull, offset = 77;
  for (const cg::GroupedRowsQuantizeSpec &spec : specs) {
    const bool stack = spec.weightStack;
    SCOPED_TRACE(spec.kernelName());
    ASSERT_TRUE(cg::checkGroupedRowsQuantize(spec).isOk());
    const int64_t rows = stack ? g * n : m;
    rt::Expected<KernelPair> k = loadGroupedRows(cache, spec);
    ASSERT_TRUE(k) << k.status().message();
    rt::Expected<rt::DeviceBuffer> amax = rt::DeviceBuffer::allocate(g * 4);
    const bool codes = spec.nvfp4Codes;
    rt::Expected<rt::DeviceBuffer> out =
        rt::DeviceBuffer::allocate(rows * c * (codes ? 1 : 4) / 2);
    rt::Expected<rt::DeviceBuffer> scales =
        rt::DeviceBuffer::allocate(rows * c / 16);
    ASSERT_TRUE(amax && out && scales);
    ASSERT_TRUE(amax->fill(0, stream));
    ASSERT_TRUE(out->fill(0xA5, stream)); // poison
    ASSERT_TRUE(scales->fill(0xA5, stream));
    cg::GroupedRowsBuffers buf;
    buf.in = (stack ? wIn : xIn).devicePtr();
    buf.splits = stack ? 0 : sp.devicePtr();
    buf.amax = amax->devicePtr();
    buf.codes = out->devicePtr();
    if (codes)
      buf.blockScales = scales->devicePtr();
    buf.rows = rows;
    buf.seed = seed;
    buf.offset = offset;
    ASSERT_TRUE(
        cg::launchGroupedRowsQuantize(spec, k->first, k->second, buf, stream));
    std::vector<uint16_t> got(codes ? 0 : rows * c);
    std::vector<uint8_t> gotCodes(codes ? rows * c / 2 : 0),
        gotScales(codes ? rows * c / 16 : 0);
    std::vector<float> gotAmax(g);
    if (codes) {
      ASSERT_TRUE(out->copyToHost(gotCodes.data(), gotCodes.size(), stream));
      ASSERT_TRUE(
          scales->copyToHost(gotScales.data(), gotScales.size(), stream));
    } else {
      ASSERT_TRUE(out->copyToHost(got.data(), got.size() * 2, stream));
    }
    ASSERT_TRUE(amax->copyToHost(gotAmax.data(), g * 4, stream));
    ASSERT_TRUE(stream.synchronize());
    ref::GroupedNvfp4Values want =
        ref::groupedNvfp4Values((stack ? w : x).data(), rows, c,
                                stack ? std::vector<int64_t>{} : splits, g,
                                spec.scheme, seed, offset, spec.columnwise);
    ASSERT_EQ(want.error, "");
    int64_t wrong = 0;
    for (size_t i = 0; i < gotCodes.size(); ++i)
      if (gotCodes[i] != want.codes[i] && wrong++ < 5)
        ADD_FAILURE() << "code byte " << i << " (row " << i / (c / 2) << "): 0x"
                      << std::hex << int(gotCodes[i]) << " want 0x"
                      << int(want.codes[i]);
    for (size_t i = 0; i < gotScales.size(); ++i)
      if (gotScales[i] != want.scales[i] && wrong++ < 5)
        ADD_FAILURE() << "scale " << i << " (row " << i / (c / 16) << "): 0x"
                      << std::hex << int(gotScales[i]) << " want 0x"
                      << int(want.scales[i]);
    for (size_t i = 0; i < got.size(); ++i)
      if (got[i] != want.values[i] && wrong++ < 5)
        ADD_FAILURE() << "row " << i / c << " column " << i % c << ": 0x"
                      << std::hex << got[i] << " want 0x" << want.values[i];
    EXPECT_EQ(0, std::memcmp(gotAmax.data(), want.amax.data(), g * 4));
    EXPECT_EQ(wrong, 0);
  }
}

// NVFP4 per expert (each expert's own tensor scale): the values the BF16
// grouped GEMM reads, and the codes and scales the NVFP4 one reads, bit for
// bit against each expert quantized (and dequantized) alone; ragged splits with
// an empty expert and padding rows, an expert far larger than the others, and
// runs of many rows per warp; rows of 16, 4 and 25 blocks (a warp's lanes,
// or lane pairs for 16x16 tiles, take 32 or 16 blocks at a time: one full
// round, one partial, and a full round then a partial one).
TEST_F(GroupedQuantizeGpu, PerExpertNvfp4ValuesAreBitExact) {
  {
    const int64_t m = 701, c = 256, g = 4, n = 256;
    std::vector<uint16_t> x = randomBf16(m * c, 10),
                          w = randomBf16(g * n * c, 11);
    for (int64_t i = 429 * c; i < m * c; ++i)
      x[i] = ref::floatToBF16(ref::bf16ToFloat(x[i]) * 300.0f);
    for (int64_t i = 256 * c; i < 512 * c; ++i)
      w[i] = ref::floatToBF16(ref::bf16ToFloat(w[i]) / 1000.0f);
    checkPerExpertNvfp4(*this, m, c, g, n, {129, 0, 300, 250}, x, w);
  }
  {
    const int64_t m = 333, c = 400, g = 3, n = 48;
    checkPerExpertNvfp4(*this, m, c, g, n, {100, 0, 200}, randomBf16(m * c, 14),
                        randomBf16(g * n * c, 15));
  }
  const int64_t m = 20011, c = 64, g = 5, n = 2048;
  checkPerExpertNvfp4(*this, m, c, g, n, {5003, 0, 7777, 1, 6000},
                      randomBf16(m * c, 12), randomBf16(g * n * c, 13));
}

} // namespace
