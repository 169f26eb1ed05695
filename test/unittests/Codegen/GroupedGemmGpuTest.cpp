//===- GroupedGemmGpuTest.cpp - Grouped GEMMs on a Hopper GPU -------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// On a Hopper GPU (skipped elsewhere): each expert's rows of the grouped
// result equal the reference GEMM of that expert alone, bit for bit, and
// the padding rows are zeros. The operands hold small multiples of 1/2, so
// every 128-element partial sum is exact whatever order the tensor cores
// add in; FP8 scales are not powers of two, so the promotion rule
// (docs/Numerics.md §7.3: y = fma(P, s_x·s_w, y)) shows in every bit.
// MXFP8: every 32-element partial sum is exact likewise, and the E8M0
// scales (2^-3 .. 2^3, and 2^-127, an fp32 subnormal) are promoted by the
// rule of docs/Numerics.md §5.4, y = fma(P · s_x, s_w, y), which the
// reference (ref::mxfp8Gemm) states. NVFP4: docs/Numerics.md §6.7. With
// Inf and NaN planted in operands, scales and amaxes, every output is the
// reference's: the same bits, or a NaN where it has a NaN.
//
//===----------------------------------------------------------------------===//

#include "GroupedGemmSpecs.h"
#include "HopperGpuTest.h"

#include "te/codegen/GroupedGemmEmitter.h"
#include "te/runtime/reference/Codecs.h"
#include "te/runtime/reference/Gemm.h"
#include "te/runtime/reference/Quantize.h"
#include "te/runtime/reference/Scales.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

using namespace te;
using cg::GroupedGemmSpec;
using te::test::spec;
namespace ref = te::rt::ref;

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

    if (specials_ && !s.fp8()) {
      plantSpecials(xv, k, 7, 3, {kNaN, kInf, -kInf});
      plantSpecials(wv, k, 11, 5, {-kInf, kNaN, kInf});
    }
    fp8X_.clear();
    fp8W_.clear();
    if (s.fp8()) {
      fp8X_ = fp8Codes(xv, s.fp8Formats.a);
      fp8W_ = fp8Codes(wv, s.fp8Formats.b);
      if (specials_) {
        plantSpecials(fp8X_, k, 7, 3, fp8Specials(s.fp8Formats.a));
        plantSpecials(fp8W_, k, 11, 5, fp8Specials(s.fp8Formats.b));
      }
      if (specials_ && !s.mxfp8()) {
        // Block scales: one row's 128-element block in every third 64 of
        // x's, every fourth expert column tile's 128x128 tile of W.
        plantSpecials(sx, 64, 3, 1, {kInf, kNaN});
        plantSpecials(sw, kbPad, 4, 1, {kNaN, kInf});
      }
    }
    rt::DeviceBuffer x = s.fp8() ? upload(fp8X_) : upload(bf16(xv));
    rt::DeviceBuffer w = s.fp8() ? upload(fp8W_) : upload(bf16(wv));
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
      if (specials_) { // E8M0 0xFF: NaN
        plantSpecials(mxSx_, k / 32, 37, 17, {uint8_t(0xFF)});
        plantSpecials(mxSw_, k / 32, 29, 8, {uint8_t(0xFF)});
      }
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
      if (specials_) {
        // E4M3 NaN block scales (0x7F, 0xFF; E2M1 has no Inf or NaN), and
        // the amaxes of a tensor with an Inf, a NaN, and of zeros.
        plantSpecials(mxSx_, k / 16, 7, 3, {uint8_t(0x7F), uint8_t(0xFF)});
        plantSpecials(mxSw_, k / 16, 11, 5, {uint8_t(0xFF), uint8_t(0x7F)});
        const float amaxes[] = {kInf, kNaN, 0.0f};
        for (int64_t e = 1; e < g; ++e)
          (e % 2 ? amaxX_ : amaxW_)[e] = amaxes[(e - 1) % 3];
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
    // Poison: NaN shows unwritten rows; with specials, where NaN is a
    // result, the finite 0xEEEE.
    const uint8_t poison = specials_ ? 0xEE : 0xFF;
    ASSERT_TRUE(y->fill(poison, *stream_));

    rt::Expected<rt::Kernel> kernel =
        loadEngineKernel(cg::emitGroupedGemm(s), s.kernelName());
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
    // The output's amax per expert (outputAmax): zeroed before each launch.
    rt::Expected<rt::DeviceBuffer> amaxY =
        rt::DeviceBuffer::allocate(uint64_t(g) * 4);
    ASSERT_TRUE(amaxY);
    const rt::DeviceBuffer *amaxOut = s.outputAmax ? &*amaxY : nullptr;
    if (s.outputAmax) {
      b.amaxY = amaxY->devicePtr();
      ASSERT_TRUE(amaxY->fill(0, *stream_));
    }
    // The epilogue's block quantize of y (quantizeOutput): codes and
    // scale_inv, poisoned so that an unwritten byte shows.
    const int64_t mPad4 = (mTotal + 3) / 4 * 4;
    rt::Expected<rt::DeviceBuffer> yCodes =
        rt::DeviceBuffer::allocate(uint64_t(mTotal * n));
    rt::Expected<rt::DeviceBuffer> yScales =
        rt::DeviceBuffer::allocate(uint64_t((n + 127) / 128 * mPad4 * 4));
    ASSERT_TRUE(yCodes && yScales);
    quantY_ = s.quantizeOutput ? std::make_pair(&*yCodes, &*yScales)
                               : std::make_pair(nullptr, nullptr);
    if (s.quantizeOutput) {
      b.yCodes = yCodes->devicePtr();
      b.yScaleInv = yScales->devicePtr();
      ASSERT_TRUE(yCodes->fill(0xEE, *stream_));
      ASSERT_TRUE(yScales->fill(0xEE, *stream_));
    }
    // Each expert's scale of the per-expert cast of y: some that saturate
    // the largest outputs, some that keep them, one power of two.
    rt::DeviceBuffer yScaleBuf;
    if (s.quantizesPerExpert()) {
      const float kScales[] = {0.75f, 12.1f, 0.0625f, 3.0f};
      yScales_.resize(g);
      for (int64_t e = 0; e < g; ++e)
        yScales_[e] = kScales[e % 4];
      yScaleBuf = upload(yScales_);
      b.yScale = yScaleBuf.devicePtr();
    }
    rt::Expected<cg::GroupedGemmLaunch> launch =
        cg::prepareGroupedGemm(s, b, *device_, *kernel, maxCtas);
    ASSERT_TRUE(launch) << launch.status().message();
    auto enqueue = [&] {
      return cg::launchGroupedGemm(*kernel, *launch, *stream_);
    };
    if (replaySplits.empty()) {
      ASSERT_TRUE(enqueue());
      verify(s, *y, xv, wv, sx, sw, mTotal, splits, amaxOut);
      return;
    }
    // One captured graph, replayed after new split sizes are written into
    // the device tensor: the kernel reads them on every launch.
    rt::Expected<rt::Graph> graph = rt::Graph::capture(*stream_, enqueue);
    ASSERT_TRUE(graph) << graph.status().message();
    ASSERT_TRUE(graph->launch(*stream_));
    verify(s, *y, xv, wv, sx, sw, mTotal, splits, amaxOut);
    ASSERT_TRUE(splitBuf.copyFromHost(replaySplits.data(), g * 8, *stream_));
    ASSERT_TRUE(y->fill(poison, *stream_));
    ASSERT_TRUE(amaxY->fill(0, *stream_));
    ASSERT_TRUE(yCodes->fill(0xEE, *stream_));
    ASSERT_TRUE(yScales->fill(0xEE, *stream_));
    ASSERT_TRUE(graph->launch(*stream_));
    verify(s, *y, xv, wv, sx, sw, mTotal, replaySplits, amaxOut);
  }

  /// Every expert's rows against its own reference GEMM; the rows past the
  /// experts' (split sizes clamped to [0, rows left]) are zeros. With
  /// `amaxY`, each expert's amax the epilogue took equals, bit for bit, the
  /// reference amax of the y it wrote (ref::amaxOf: NaN ignored).
  void verify(const GroupedGemmSpec &s, const rt::DeviceBuffer &y,
              const std::vector<float> &xv, const std::vector<float> &wv,
              const std::vector<float> &sx, const std::vector<float> &sw,
              int64_t mTotal, const std::vector<int64_t> &splits,
              const rt::DeviceBuffer *amaxY = nullptr) {
    const int64_t n = s.n;
    std::vector<uint16_t> got(mTotal * n);
    ASSERT_TRUE(y.copyToHost(got.data(), got.size() * 2, *stream_));
    ASSERT_TRUE(stream_->synchronize());
    int64_t row0 = 0, wrong = 0, nans = 0, infs = 0;
    for (int64_t e = 0; e < s.groups; ++e) {
      int64_t m = std::min(std::max<int64_t>(splits[e], 0), mTotal - row0);
      std::vector<uint16_t> want = expected(s, xv, wv, sx, sw, row0, m, e);
      for (int64_t i = 0; i < m * n; ++i) {
        // A NaN's payload and sign are not specified (docs/Numerics.md).
        bool nan = isBf16NaN(want[i]);
        nans += nan;
        infs += (want[i] & 0x7FFF) == 0x7F80;
        if (nan ? isBf16NaN(got[row0 * n + i]) : got[row0 * n + i] == want[i])
          continue;
        if (wrong++ < 5)
          ADD_FAILURE() << "expert " << e << " row " << i / n << " col "
                        << i % n << ": got 0x" << std::hex << got[row0 * n + i]
                        << " want 0x" << want[i];
      }
      row0 += m;
    }
    for (int64_t i = row0 * n; i < mTotal * n; ++i)
      if (got[i] != 0 && wrong++ < 5)
        ADD_FAILURE() << "padding row " << i / n << " col " << i % n << " is 0x"
                      << std::hex << got[i] << ", not zero";
    EXPECT_EQ(wrong, 0) << s.kernelName() << " M_total " << mTotal;
    if (amaxY) {
      std::vector<float> amax(s.groups);
      ASSERT_TRUE(amaxY->copyToHost(amax.data(), amax.size() * 4, *stream_));
      ASSERT_TRUE(stream_->synchronize());
      int64_t first = 0;
      for (int64_t e = 0; e < s.groups; ++e) {
        int64_t m = std::min(std::max<int64_t>(splits[e], 0), mTotal - first);
        std::vector<float> rows(size_t(m * n));
        for (int64_t i = 0; i < m * n; ++i)
          rows[size_t(i)] = ref::bf16ToFloat(got[first * n + i]);
        const float want = ref::amaxOf(rows.data(), rows.size());
        first += m;
        EXPECT_EQ(ref::floatToBits(amax[e]), ref::floatToBits(want))
            << "expert " << e << " amax " << amax[e] << ", the pass's " << want;
      }
      if (specials_ && canBeInf(s)) // an Inf reaches some expert's rows
        EXPECT_TRUE(std::any_of(amax.begin(), amax.end(),
                                [](float a) { return std::isinf(a); }));
    }
    if (s.quantizeOutput)
      verifyQuantizedY(s, got, mTotal, splits);
    if (specials_) {
      // The planted values reach the outputs: NaN always, Inf where the
      // operands can carry one.
      EXPECT_GT(nans, 0) << s.kernelName();
      if (canBeInf(s)) {
        EXPECT_GT(infs, 0) << s.kernelName();
      }
    }
  }

  /// The epilogue tests' cases with `set` applied to each spec: every
  /// kernel kind on ragged splits (an empty expert, a one-row one), by few
  /// CTAs, through a graph replayed with new splits, and at N = 200 and
  /// 202; then the micro-scaled kinds with a bias.
  void checkEveryKindWith(void (*set)(GroupedGemmSpec &)) {
    const GroupedGemmSpec::Operands kinds[] = {
        GroupedGemmSpec::Operands::BF16, GroupedGemmSpec::Operands::Fp8Block,
        GroupedGemmSpec::Operands::Mxfp8, GroupedGemmSpec::Operands::Nvfp4};
    for (GroupedGemmSpec::Operands kind : kinds) {
      GroupedGemmSpec s = spec(kind, 4, 384, 512);
      set(s);
      check(s, 700, {0, 300, 1, 250});
      check(s, 700, {0, 300, 1, 250}, 3);
      check(s, 640, {100, 200, 0, 340}, 0, {0, 17, 500, 123});
      for (int64_t n : {200, 202}) {
        GroupedGemmSpec edge = spec(kind, 2, n, 384);
        set(edge);
        check(edge, 300, {150, 140});
      }
    }
    withBias_ = true;
    for (GroupedGemmSpec::Operands kind : {kinds[2], kinds[3]}) {
      GroupedGemmSpec s = spec(kind, 4, 384, 512);
      set(s);
      check(s, 700, {0, 300, 1, 250});
    }
    withBias_ = false;
  }

  /// The epilogue's codes and scales of y equal, bit for bit, the reference
  /// quantize of the y the kernel wrote (`got`), padding rows included.
  /// quantizesPerExpert: each expert's rows (under `splits`) as a per-tensor
  /// delayed cast by its scale, every block of its rows with that cast's
  /// scale_inv; padding rows zero codes and scale_inv 0 - what the next
  /// grouped GEMM's per-expert cast writes.
  void verifyQuantizedY(const GroupedGemmSpec &s,
                        const std::vector<uint16_t> &got, int64_t mTotal,
                        const std::vector<int64_t> &splits) {
    const int64_t n = s.n, mPad4 = (mTotal + 3) / 4 * 4;
    std::vector<uint8_t> codes(size_t(mTotal * n));
    std::vector<float> scales(size_t((n + 127) / 128 * mPad4));
    ASSERT_TRUE(
        quantY_.first->copyToHost(codes.data(), codes.size(), *stream_));
    ASSERT_TRUE(
        quantY_.second->copyToHost(scales.data(), scales.size() * 4, *stream_));
    ASSERT_TRUE(stream_->synchronize());
    if (s.quantizesPerExpert()) {
      int64_t row0 = 0, wrong = 0;
      for (int64_t e = 0; e <= s.groups; ++e) {
        const bool padding = e == s.groups;
        const int64_t m =
            padding ? mTotal - row0
                    : std::min(std::max<int64_t>(splits[e], 0), mTotal - row0);
        std::vector<uint8_t> wantCodes(size_t(m * n), 0);
        float wantInv = 0.0f;
        if (!padding && m > 0) {
          ref::DelayedScalingState state;
          state.history.assign(size_t(s.quantizeOutput->history), 0.0f);
          state.scale = yScales_[size_t(e)];
          ref::QuantizeOptions o;
          o.delayed = &state;
          ref::QuantizedTensor want =
              ref::quantize(got.data() + row0 * n, ref::SourceType::BF16, m, n,
                            *s.quantizeOutput, ref::kRowwiseMask, o);
          ASSERT_TRUE(want.ok()) << want.error;
          wantCodes = want.rowwise->data.bytes;
          wantInv = ref::loadF32(want.rowwise->scaleInv, 0);
        }
        for (int64_t i = 0; i < m * n; ++i)
          if (codes[size_t(row0 * n + i)] != wantCodes[size_t(i)] &&
              wrong++ < 5)
            ADD_FAILURE() << "expert " << e << " code of row " << i / n
                          << " col " << i % n << ": got 0x" << std::hex
                          << int(codes[size_t(row0 * n + i)]) << " want 0x"
                          << int(wantCodes[size_t(i)]);
        for (int64_t cb = 0; cb < (n + 127) / 128; ++cb)
          for (int64_t row = row0; row < row0 + m; ++row) {
            const float gotInv = scales[size_t(cb * mPad4 + row)];
            if (ref::floatToBits(gotInv) != ref::floatToBits(wantInv) &&
                wrong++ < 5)
              ADD_FAILURE()
                  << "expert " << e << " scale_inv of row " << row << " block "
                  << cb << ": got " << gotInv << " want " << wantInv;
          }
        row0 += m;
      }
      EXPECT_EQ(wrong, 0) << s.kernelName();
      return;
    }
    ref::QuantizedTensor want =
        ref::quantize(got.data(), ref::SourceType::BF16, mTotal, n,
                      *s.quantizeOutput, ref::kRowwiseMask, {});
    ASSERT_TRUE(want.ok()) << want.error;
    const ref::QuantizedDirection &r = *want.rowwise;
    int64_t wrong = 0;
    for (int64_t i = 0; i < mTotal * n; ++i)
      if (codes[size_t(i)] != r.data.bytes[size_t(i)] && wrong++ < 5)
        ADD_FAILURE() << "code of row " << i / n << " col " << i % n
                      << ": got 0x" << std::hex << int(codes[size_t(i)])
                      << " want 0x" << int(r.data.bytes[size_t(i)]);
    for (int64_t cb = 0; cb < (n + 127) / 128; ++cb)
      for (int64_t row = 0; row < mTotal; ++row) {
        const int64_t at = cb * mPad4 + row;
        const float want = ref::loadF32(r.scaleInv, at);
        if (ref::floatToBits(scales[size_t(at)]) != ref::floatToBits(want) &&
            wrong++ < 5)
          ADD_FAILURE() << "scale_inv of row " << row << " block " << cb
                        << ": got " << scales[size_t(at)] << " want " << want;
      }
    EXPECT_EQ(wrong, 0) << s.kernelName();
  }

private:
  /// The epilogue's quantized y (codes, scale_inv) of the current check.
  std::pair<const rt::DeviceBuffer *, const rt::DeviceBuffer *> quantY_;
  /// quantizesPerExpert: each expert's scale, as uploaded.
  std::vector<float> yScales_;
  /// MXFP8: the E8M0 scales of x and of the stack, as uploaded (NVFP4:
  /// their E4M3 block scales).
  std::vector<uint8_t> mxSx_, mxSw_;
  /// NVFP4: the packed codes of x and of the stack, each expert's amaxes.
  std::vector<uint8_t> nvX_, nvW_;
  std::vector<float> amaxX_, amaxW_;
  /// The [G, N] bias of checks with withBias_ (MXFP8, NVFP4), as uploaded.
  std::vector<float> bias_;

  /// FP8 kinds: the codes of x and of the stack, encoded once, as uploaded.
  std::vector<uint8_t> fp8X_, fp8W_;

protected:
  bool withBias_ = false;
  /// Plant Inf and NaN in the operands, block scales and amaxes.
  bool specials_ = false;

private:
  static constexpr float kInf = std::numeric_limits<float>::infinity();
  static constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

  static std::vector<uint16_t> bf16(const std::vector<float> &v) {
    return bf16Codes(v);
  }
  /// Whether planted specials can make an output Inf: not an E4M3 x E4M3
  /// MXFP8 pair (no Inf codes, and E8M0 0xFF is NaN).
  static bool canBeInf(const GroupedGemmSpec &s) {
    return !(s.mxfp8() && s.fp8Formats.a == rt::DType::E4M3 &&
             s.fp8Formats.b == rt::DType::E4M3);
  }
  static bool isBf16NaN(uint16_t v) {
    return (v & 0x7F80) == 0x7F80 && (v & 0x7F) != 0;
  }
  /// The NaN codes of an FP8 format, and E5M2's Infs (E4M3 has none).
  static std::vector<uint8_t> fp8Specials(rt::DType format) {
    if (format == rt::DType::E5M2)
      return {0x7C, 0x7E, 0xFC, 0xFF};
    return {0x7F, 0xFF};
  }
  /// In every `every`-th row of `v` (rows of `cols` elements), from row
  /// `first`, one element - column (13 r) mod cols - takes the next of
  /// `values` in turn.
  template <typename T>
  static void plantSpecials(std::vector<T> &v, int64_t cols, int64_t every,
                            int64_t first, const std::vector<T> &values) {
    const int64_t rows = static_cast<int64_t>(v.size()) / cols;
    size_t next = 0;
    for (int64_t r = first; r < rows; r += every)
      v[r * cols + (13 * r) % cols] = values[next++ % values.size()];
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
      xo.codes.assign(fp8X_.begin() + row0 * k, fp8X_.begin() + (row0 + m) * k);
      wo.codes.assign(fp8W_.begin() + e * n * k,
                      fp8W_.begin() + (e + 1) * n * k);
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
      xo.codes.assign(fp8X_.begin() + row0 * k, fp8X_.begin() + (row0 + m) * k);
      xo.scaleInv.resize(kb * m);
      for (int64_t b = 0; b < kb; ++b)
        for (int64_t r = 0; r < m; ++r)
          xo.scaleInv[b * m + r] = sx[b * mTotalPad + row0 + r];
      wo.rows = n;
      wo.k = k;
      wo.tile2d = true;
      wo.scaleStride = kbPad;
      wo.format = fp8Format(s.fp8Formats.b);
      wo.codes.assign(fp8W_.begin() + e * n * k,
                      fp8W_.begin() + (e + 1) * n * k);
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

// The epilogue's amax of each expert's y (the amax a per-tensor scaled
// quantize of y reads): every kernel kind, ragged splits with an empty
// expert and a one-row one, tiles stored by TMA and from registers (the
// experts' last rows; N = 200 and 202), a bias, few CTAs (tiles of one
// expert on one CTA in turn), a graph replayed with new splits.
TEST_F(GroupedGemmGpu, TheEpilogueTakesEachExpertsAmaxOfY) {
  checkEveryKindWith([](GroupedGemmSpec &s) { s.outputAmax = true; });
}

// The epilogue's block quantize of y (1x128 FP8 blocks, rowwise): the same
// cases (padding rows get zero codes and the scale of amax 0; N = 200 and
// 202 end in a partial block and store their codes from registers), E4M3
// codes, then E5M2 with pow2 scales and an eps, with the output's amax
// alongside.
TEST_F(GroupedGemmGpu, TheEpilogueQuantizesYAsAQuantizeKernelWould) {
  checkEveryKindWith([](GroupedGemmSpec &s) {
    s.quantizeOutput = rt::Scheme::fp8Block(rt::DType::E4M3, 1, 128);
  });
  checkEveryKindWith([](GroupedGemmSpec &s) {
    s.quantizeOutput =
        rt::Scheme::fp8Block(rt::DType::E5M2, 1, 128, /*pow2=*/true, 1e-3);
    s.outputAmax = true;
  });
}

// The epilogue's per-expert cast of y (fp8_delayed: each expert's rows by
// the scale it is given, the codes and 1x128 block scales the next grouped
// GEMM's per-expert cast would write, the expert's amax taken for its
// state): the same cases, E4M3 then E5M2, an expert's scale saturating
// its largest outputs.
TEST_F(GroupedGemmGpu, TheEpilogueCastsEachExpertByItsScale) {
  checkEveryKindWith([](GroupedGemmSpec &s) {
    s.quantizeOutput = rt::Scheme::fp8Delayed(rt::DType::E4M3, 16);
    s.outputAmax = true;
  });
  checkEveryKindWith([](GroupedGemmSpec &s) {
    s.quantizeOutput = rt::Scheme::fp8Delayed(rt::DType::E5M2, 4);
    s.outputAmax = true;
  });
}

// The epilogues where the tiles leave otherwise: codes by TMA with a last
// 128-column block partly past N (N = 144, 208: the map clips it), two
// output boxes a warpgroup (the codes wait for both parts' stores), and
// 2 x 2 clusters (each expert's row tiles padded to a pair: the pad tile
// stores nothing); with the output's amax alongside.
TEST_F(GroupedGemmGpu, TheEpiloguesUnderOtherTileStores) {
  const rt::Scheme e4m3 = rt::Scheme::fp8Block(rt::DType::E4M3, 1, 128);
  for (GroupedGemmSpec::Operands kind :
       {GroupedGemmSpec::Operands::Fp8Block, GroupedGemmSpec::Operands::BF16})
    for (int64_t n : {144, 208}) {
      GroupedGemmSpec s = spec(kind, 2, n, 256);
      s.quantizeOutput = e4m3;
      s.outputAmax = true;
      check(s, 300, {150, 140});
    }
  // Two output boxes (N = 384), then 2 x 2 clusters (N = 256).
  for (int variant = 0; variant < 2; ++variant) {
    GroupedGemmSpec s = spec(GroupedGemmSpec::Operands::Fp8Block, 4,
                             variant == 0 ? 384 : 256, 512);
    (variant == 0 ? s.outBoxes : s.clusterM) = 2;
    s.quantizeOutput = e4m3;
    s.outputAmax = true;
    check(s, 700, {0, 300, 1, 250});
  }
}

// Inf and NaN in the operands (bf16 values; FP8 codes: E4M3 NaN, E5M2
// +-Inf and NaN), in the block scales (FP8 block: fp32 Inf and NaN; MXFP8:
// E8M0 0xFF; NVFP4: E4M3 NaN) and in NVFP4's amaxes (Inf, NaN, 0) reach
// each output as the reference's arithmetic says: Inf times a nonzero is
// Inf, times zero NaN, Inf - Inf NaN, a NaN stays NaN, and the global
// scale of an amax 0 gives signed zeros.
TEST_F(GroupedGemmGpu, InfAndNaNPropagateAsTheReferenceSays) {
  specials_ = true;
  GroupedGemmSpec e5m2 = spec(GroupedGemmSpec::Operands::Fp8Block, 4, 384, 512);
  e5m2.fp8Formats = {rt::DType::E5M2, rt::DType::E4M3};
  GroupedGemmSpec mxE5m2 = spec(GroupedGemmSpec::Operands::Mxfp8, 4, 384, 512);
  mxE5m2.fp8Formats = {rt::DType::E5M2, rt::DType::E4M3};
  for (const GroupedGemmSpec &s :
       {spec(GroupedGemmSpec::Operands::BF16, 4, 384, 512),
        spec(GroupedGemmSpec::Operands::Fp8Block, 4, 384, 512), e5m2,
        spec(GroupedGemmSpec::Operands::Mxfp8, 4, 384, 512), mxE5m2,
        spec(GroupedGemmSpec::Operands::Nvfp4, 4, 384, 512)}) {
    check(s, 700, {0, 300, 1, 250});
    // The output's amax (Inf where an expert's y has one, NaN ignored) and
    // its block quantize (Inf and NaN blocks as the quantize kernel's).
    GroupedGemmSpec withAmax = s;
    withAmax.outputAmax = true;
    withAmax.quantizeOutput = rt::Scheme::fp8Block(rt::DType::E4M3, 1, 128);
    check(withAmax, 700, {0, 300, 1, 250});
  }
}
