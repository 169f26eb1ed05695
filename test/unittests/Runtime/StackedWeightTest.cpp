//===- StackedWeightTest.cpp - MoE weights [G, N, K] quantized as one
//------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// A grouped layer keeps its experts' weights stacked, [G, N, K], and the
// fused optimizer requantizes the stack as one [G·N, K] matrix
// (test/Passes/fuse-optimizer-stacked.mlir). That equals quantizing each
// expert alone - what docs/Numerics.md §7.4 promises - exactly when the
// scheme's blocks never span two experts (N a multiple of the block height)
// and it has no tensor-wide scale. Pinned here on the reference, bit for
// bit, for every direction; per-tensor FP8 and NVFP4 (a tensor-wide amax)
// are shown to differ, which is why the grouped layer must not use them
// for stacked weights without per-expert scaling.
//
//===----------------------------------------------------------------------===//

#include "te/runtime/reference/Quantize.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <random>

using namespace te::rt;
using namespace te::rt::ref;

namespace {

constexpr int64_t kG = 3, kN = 256, kK = 384;

/// bf16 weights whose experts differ in magnitude (expert g scaled by
/// 4^g), so that a tensor-wide amax differs from every expert's own.
std::vector<uint16_t> stackedWeights() {
  std::mt19937 rng(7);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<uint16_t> w(kG * kN * kK);
  for (int64_t g = 0; g < kG; ++g)
    for (int64_t i = 0; i < kN * kK; ++i) {
      float v = d(rng) * std::ldexp(1.f, 2 * int(g));
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      w[g * kN * kK + i] = uint16_t(bits >> 16);
    }
  return w;
}

/// Whether expert g's rows of the stacked tensor's direction `d` dequantize
/// to exactly the values of expert g quantized alone, and its data bytes are
/// the same. `why` says where they first differ.
bool expertsMatch(const Scheme &s, Direction d, std::string &why) {
  std::vector<uint16_t> w = stackedWeights();
  unsigned mask = d == Direction::Rowwise ? kRowwiseMask : kColumnwiseMask;
  QuantizeOptions opts;
  QuantizedTensor all =
      quantize(w.data(), SourceType::BF16, kG * kN, kK, s, mask, opts);
  EXPECT_TRUE(all.ok()) << all.error;
  std::vector<float> allValues = dequantize(all, d, s, kG * kN, kK);
  const QuantizedDirection *allQ = all.get(d);
  for (int64_t g = 0; g < kG; ++g) {
    QuantizedTensor one = quantize(w.data() + g * kN * kK, SourceType::BF16, kN,
                                   kK, s, mask, opts);
    EXPECT_TRUE(one.ok()) << one.error;
    std::vector<float> values = dequantize(one, d, s, kN, kK);
    for (int64_t i = 0; i < kN * kK; ++i) {
      float a = allValues[g * kN * kK + i], b = values[i];
      if (std::memcmp(&a, &b, 4) != 0) {
        why = "expert " + std::to_string(g) + " element " + std::to_string(i) +
              ": stacked " + std::to_string(a) + ", alone " + std::to_string(b);
        return false;
      }
    }
    // The data bytes: rows of the [G·N, K] data, or columns of its [K, G·N]
    // transpose.
    const std::vector<uint8_t> &allBytes = allQ->data.bytes;
    const std::vector<uint8_t> &bytes = one.get(d)->data.bytes;
    int64_t rowBytes = int64_t(bytes.size()) /
                       (allQ->dataTransposed ? kK : kN); // per stored row
    for (int64_t r = 0; r < (allQ->dataTransposed ? kK : kN); ++r) {
      int64_t from = allQ->dataTransposed ? r * rowBytes * kG + g * rowBytes
                                          : (g * kN + r) * rowBytes;
      if (std::memcmp(allBytes.data() + from, bytes.data() + r * rowBytes,
                      size_t(rowBytes)) != 0) {
        why = "expert " + std::to_string(g) + " data row " + std::to_string(r);
        return false;
      }
    }
  }
  return true;
}

} // namespace

TEST(StackedWeight, BlockSchemesQuantizeEachExpertAsAlone) {
  const Scheme schemes[] = {
      Scheme::fp8Block(DType::E4M3, 128, 128, /*pow2=*/true),
      Scheme::fp8Block(DType::E4M3, 128, 128),
      Scheme::fp8Block(DType::E4M3, 1, 128, /*pow2=*/true),
      Scheme::mxfp8(DType::E4M3),
      Scheme::mxfp8(DType::E5M2),
  };
  for (const Scheme &s : schemes)
    for (Direction d : {Direction::Rowwise, Direction::Columnwise}) {
      std::string why;
      EXPECT_TRUE(expertsMatch(s, d, why))
          << schemeKindName(s.kind) << " " << s.tileRows << "x" << s.tileCols
          << " " << directionName(d) << ": " << why;
    }
}

TEST(StackedWeight, TensorWideScalesDoNot) {
  // One amax for the whole stack: the small experts lose precision.
  for (const Scheme &s : {Scheme::fp8Current(DType::E4M3), Scheme::nvfp4()}) {
    std::string why;
    EXPECT_FALSE(expertsMatch(s, Direction::Rowwise, why))
        << schemeKindName(s.kind);
  }
}
