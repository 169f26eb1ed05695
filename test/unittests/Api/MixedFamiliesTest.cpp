//===- MixedFamiliesTest.cpp - GEMMs across two scheme families ---------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// A linear layer whose fprop pairs operands quantized by two scheme
// families, through the compiler and the CPU backend, against the GEMM
// docs/Numerics.md §11 defines: each operand quantized and dequantized by
// the reference, rounded to bf16, the two multiplied (here in double). The
// backend accumulates in its own order, so each output is compared within
// one bf16 step of the product's magnitude; a wrong scale, layout or
// direction is off by the size of the values. No GPU needed.
//
//===----------------------------------------------------------------------===//

#include "te/api/Tejit.h"
#include "te/runtime/reference/Codecs.h"
#include "te/runtime/reference/Quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace te;
using rt::DType;
using rt::Scheme;
namespace ref = te::rt::ref;

namespace {

constexpr int64_t kM = 64, kN = 48, kK = 256;

/// bf16 bits of values spread over 2^-3 .. 2^3, both signs.
std::vector<uint16_t> values(int64_t count, unsigned seed) {
  std::vector<uint16_t> v(static_cast<size_t>(count));
  for (size_t i = 0; i < v.size(); ++i) {
    unsigned h = unsigned(i) * 2654435761u + seed * 40503u;
    h ^= h >> 15;
    float mag = std::ldexp(1.0f + float(h % 997) / 997.0f, int(h % 7) - 3);
    v[i] = ref::floatToBF16((h >> 20) & 1 ? -mag : mag);
  }
  return v;
}

/// The bf16 values `scheme` quantizes `x` [rows, cols] to, rowwise.
std::vector<double> dequantizedRows(const std::vector<uint16_t> &x,
                                    int64_t rows, int64_t cols,
                                    const Scheme &scheme) {
  ref::QuantizedTensor q =
      ref::quantize(x.data(), ref::SourceType::BF16, rows, cols, scheme,
                    ref::kRowwiseMask, ref::QuantizeOptions{});
  EXPECT_EQ(q.error, "");
  std::vector<float> v =
      ref::dequantize(q, rt::Direction::Rowwise, scheme, rows, cols);
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = ref::bf16ToFloat(ref::floatToBF16(v[i]));
  return out;
}

struct Pair {
  const char *x, *w; ///< the recipe's schemes as written
  Scheme xs, ws;
};

} // namespace

TEST(MixedFamilies, AFpropIsTheBf16GemmOfItsDequantizedOperands) {
  const Pair pairs[] = {
      {"#te.mxfp8<e4m3>", "#te.nvfp4<>", Scheme::mxfp8(DType::E4M3),
       Scheme::nvfp4()},
      {"#te.fp8_block<e4m3, 1x128>", "#te.mxfp8<e5m2>",
       Scheme::fp8Block(DType::E4M3, 1, 128), Scheme::mxfp8(DType::E5M2)},
      {"#te.fp8_current<e4m3>", "#te.nvfp4<block2d>",
       Scheme::fp8Current(DType::E4M3), Scheme::nvfp4(false, false, true)},
  };
  const std::vector<uint16_t> x = values(kM * kK, 1), w = values(kN * kK, 2);
  for (const Pair &p : pairs) {
    SCOPED_TRACE(std::string(p.x) + " x " + p.w);
    const std::string source =
        std::string("te.recipe @mix {\n"
                    "  te.rule \"linear\", \"input\" -> ") +
        p.x + "\n  te.rule \"linear\", \"weight\" -> " + p.w +
        "\n  te.rule \"*\", \"*\" -> #te.identity<bf16>\n}\n"
        "func.func @fprop(%x: tensor<64x256xbf16>, %w: tensor<48x256xbf16>)"
        " -> tensor<64x48xbf16> {\n"
        "  %y = te.linear %x, %w {recipe = @mix} : tensor<64x256xbf16>, "
        "tensor<48x256xbf16> -> tensor<64x48xbf16>\n"
        "  return %y : tensor<64x48xbf16>\n}\n";
    auto m = api::CompiledModule::fromSource(source);
    ASSERT_TRUE(m) << m.status().toString();
    std::vector<uint8_t> xb(x.size() * 2), wb(w.size() * 2);
    std::memcpy(xb.data(), x.data(), xb.size());
    std::memcpy(wb.data(), w.data(), wb.size());
    auto out = m->runOnCpu("fprop", {xb, wb});
    ASSERT_TRUE(out) << out.status().toString();
    ASSERT_EQ(out->size(), 1u);
    ASSERT_EQ((*out)[0].bytes.size(), size_t(kM * kN * 2));

    const std::vector<double> xv = dequantizedRows(x, kM, kK, p.xs),
                              wv = dequantizedRows(w, kN, kK, p.ws);
    ASSERT_EQ(xv.size(), size_t(kM * kK));
    ASSERT_EQ(wv.size(), size_t(kN * kK));
    int64_t wrong = 0;
    for (int64_t i = 0; i < kM; ++i)
      for (int64_t j = 0; j < kN; ++j) {
        double want = 0, magnitude = 0;
        for (int64_t k = 0; k < kK; ++k) {
          want += xv[i * kK + k] * wv[j * kK + k];
          magnitude += std::fabs(xv[i * kK + k] * wv[j * kK + k]);
        }
        uint16_t bits;
        std::memcpy(&bits, &(*out)[0].bytes[2 * (i * kN + j)], 2);
        const double got = ref::bf16ToFloat(bits);
        // One bf16 step (2^-8 relative) of the result, and fp32 sums in
        // another order (K · 2^-24 of the magnitude).
        const double tolerance =
            std::ldexp(std::fabs(want), -8) + kK * std::ldexp(magnitude, -24);
        if (!(std::fabs(got - want) <= tolerance) && wrong++ < 5)
          ADD_FAILURE() << "y[" << i << "][" << j << "] = " << got << ", want "
                        << want << " within " << tolerance;
      }
    EXPECT_EQ(wrong, 0);
  }
}
