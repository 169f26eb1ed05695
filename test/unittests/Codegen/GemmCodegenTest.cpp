//===- GemmCodegenTest.cpp - GEMM kernels on both backends ----------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The CPU backend's GEMM (te.gemm at the kernel level): every combination
// of transpose flags on exact small-integer data, with tensors and with
// quantized operands read in the direction each flag implies, and the
// block-FP8 x block-FP8 path against the reference block-scaled GEMM.
// On a GPU (skipped without one): every operand kind and transpose as one
// cuBLASLt call, within the CPU backend's stated bound.
//
//===----------------------------------------------------------------------===//

#include "BackendComparison.h"
#include "ProgramHelpers.h"

#include "te/exec/Compare.h"
#include "te/exec/CudaRunner.h"
#include "te/runtime/reference/Codecs.h"
#include "te/runtime/reference/Gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace te;
using rt::Direction;
using rt::DType;
using rt::Scheme;
namespace ref = rt::ref;
using te::test::bf16Bytes;
using te::test::tensor;

namespace {

std::vector<float> f32Values(const std::vector<uint8_t> &bytes) {
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

struct GemmSetup {
  cg::Program program;
  std::vector<std::vector<uint8_t>> args;
};

/// D = op(A) op(B) + bias (`out`, bias of the same type) with A, B given
/// as logical bf16 matrices; `schemeA` / `schemeB` (if any) quantize each
/// operand first, in the direction it is read.
GemmSetup gemmProgram(const std::vector<float> &a, std::vector<int64_t> as,
                      const std::vector<float> &b, std::vector<int64_t> bs,
                      bool ta, bool tb, const std::vector<float> &bias,
                      std::optional<Scheme> schemeA,
                      std::optional<Scheme> schemeB, DType out = DType::F32) {
  cg::Program p;
  cg::Entry e;
  e.name = "gemm";
  e.values = {tensor("a", as, DType::BF16), tensor("b", bs, DType::BF16)};
  e.args = {0, 1};
  cg::GemmKernel g;
  g.name = "g";
  g.transposeA = ta;
  g.transposeB = tb;
  g.a = 0;
  g.b = 1;
  for (int i = 0; i < 2; ++i) {
    const std::optional<Scheme> &scheme = i == 0 ? schemeA : schemeB;
    if (scheme) {
      cg::Value q = e.values[i];
      q.kind = cg::Value::Kind::Quantized;
      q.name += "_q";
      Direction d = i == 0 ? g.directionA() : g.directionB();
      (d == Direction::Rowwise ? q.rowwise : q.columnwise) = scheme;
      e.values.push_back(q);
      cg::QuantizeKernel k;
      k.name = "quantize_" + std::to_string(i);
      k.input = i;
      k.stages = {{*scheme, d, int(e.values.size()) - 1}};
      e.kernels.push_back(k);
      (i == 0 ? g.a : g.b) = int(e.values.size()) - 1;
    }
  }
  int64_t m = ta ? as[1] : as[0], n = tb ? bs[0] : bs[1];
  std::vector<std::vector<uint8_t>> args = {bf16Bytes(a), bf16Bytes(b)};
  if (!bias.empty()) {
    e.values.push_back(tensor("bias", {n}, out));
    e.args.push_back(int(e.values.size()) - 1);
    g.bias = int(e.values.size()) - 1;
    std::vector<uint8_t> f32(bias.size() * 4);
    std::memcpy(f32.data(), bias.data(), f32.size());
    args.push_back(out == DType::F32 ? f32 : bf16Bytes(bias));
  }
  e.values.push_back(tensor("d", {m, n}, out));
  g.output = int(e.values.size()) - 1;
  e.results = {g.output};
  e.kernels.push_back(g);
  p.entries.push_back(e);
  return {p, args};
}

/// The CPU backend's D of gemmProgram(..., scheme, scheme).
std::vector<float> runGemm(const std::vector<float> &a, std::vector<int64_t> as,
                           const std::vector<float> &b, std::vector<int64_t> bs,
                           bool ta, bool tb, const std::vector<float> &bias,
                           std::optional<Scheme> scheme) {
  GemmSetup g = gemmProgram(a, as, b, bs, ta, tb, bias, scheme, scheme);
  auto out = exec::runCpu(g.program, g.program.entries[0], g.args);
  EXPECT_TRUE(out) << out.status().toString();
  return out ? f32Values((*out)[0][0].bytes) : std::vector<float>{};
}

} // namespace

TEST(GemmCpu, EveryTransposeOnExactData) {
  // op(A) = [[1, 2, 3], [4, 5, 6]], op(B) = [[1, 0], [0, 1], [2, -1]].
  std::vector<float> opA = {1, 2, 3, 4, 5, 6}, opAt = {1, 4, 2, 5, 3, 6};
  std::vector<float> opB = {1, 0, 0, 1, 2, -1}, opBt = {1, 0, 2, 0, 1, -1};
  std::vector<float> want = {7 + 10, 2 - 3 - 20, 16 + 10, 5 - 6 - 20};
  std::vector<float> bias = {10, -20};
  for (std::optional<Scheme> scheme :
       {std::optional<Scheme>(),
        std::optional<Scheme>(Scheme::identity(DType::BF16))})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        std::vector<float> d = runGemm(
            ta ? opAt : opA,
            ta ? std::vector<int64_t>{3, 2} : std::vector<int64_t>{2, 3},
            tb ? opBt : opB,
            tb ? std::vector<int64_t>{2, 3} : std::vector<int64_t>{3, 2}, ta,
            tb, bias, scheme);
        EXPECT_EQ(d, want) << "transpose_a " << ta << " transpose_b " << tb
                           << (scheme ? " (identity-quantized)" : "");
      }
}

TEST(GemmCpu, BlockFp8MatchesTheReferenceBlockScaledGemm) {
  // y = x w^T for x 128 x 256 (1x128 blocks) and w 64 x 256 (128x128): the
  // backend must hand the reference exactly the stored operands.
  std::vector<float> x(128 * 256), w(64 * 256);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(int(i * 37 % 29) - 14) * 0.125f;
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = float(int(i * 11 % 23) - 11) * 0.5f;
  std::vector<float> d = runGemm(x, {128, 256}, w, {64, 256}, false, true, {},
                                 Scheme::fp8Block(DType::E4M3, 1, 128));
  ASSERT_EQ(d.size(), 128u * 64);

  auto xb = bf16Bytes(x), wb = bf16Bytes(w);
  ref::QuantizeOptions o;
  ref::QuantizedTensor qx = ref::quantize(
      xb.data(), ref::SourceType::BF16, 128, 256,
      Scheme::fp8Block(DType::E4M3, 1, 128), ref::kRowwiseMask, o);
  ref::QuantizedTensor qw = ref::quantize(
      wb.data(), ref::SourceType::BF16, 64, 256,
      Scheme::fp8Block(DType::E4M3, 1, 128), ref::kRowwiseMask, o);
  std::vector<float> want = ref::blockScaledGemm(
      ref::blockScaledOperand(*qx.get(Direction::Rowwise),
                              Scheme::fp8Block(DType::E4M3, 1, 128)),
      ref::blockScaledOperand(*qw.get(Direction::Rowwise),
                              Scheme::fp8Block(DType::E4M3, 1, 128)));
  EXPECT_EQ(d, want);
  // And close to the exact product (quantization error only).
  std::vector<float> exact =
      ref::referenceGemm(x.data(), false, w.data(), true, 128, 64, 256);
  double worst = 0, scale = 0;
  for (size_t i = 0; i < d.size(); ++i) {
    worst = std::max(worst, double(std::fabs(d[i] - exact[i])));
    scale = std::max(scale, double(std::fabs(exact[i])));
  }
  EXPECT_LT(worst, 0.05 * scale);
}

// No kernel reads quantized operands of two families as stored: the
// kernel level takes them only dequantized (te-legalize-target's emulated
// path), and validation says so.
TEST(GemmCpu, KernelsReadNoPairOfTwoFamilies) {
  std::vector<float> a(128 * 128, 1.0f), b(128 * 128, 1.0f);
  GemmSetup g =
      gemmProgram(a, {128, 128}, b, {128, 128}, false, true, {},
                  Scheme::mxfp8(DType::E4M3), Scheme::nvfp4(), DType::BF16);
  std::string why = cg::validate(g.program.entries[0]);
  EXPECT_NE(why.find("operands of two scheme families (mxfp8 and nvfp4) have "
                     "no GEMM kernel"),
            std::string::npos)
      << why;
  g = gemmProgram(a, {128, 128}, b, {128, 128}, false, true, {},
                  Scheme::mxfp8(DType::E4M3), Scheme::mxfp8(DType::E5M2),
                  DType::BF16);
  EXPECT_EQ(cg::validate(g.program.entries[0]), "");
}

//===----------------------------------------------------------------------===//
// On the GPU: one cuBLASLt call per GEMM, within the stated bound
//===----------------------------------------------------------------------===//

TEST(GemmGpuCodegen, EveryOperandKindAndTransposeWithinTheBound) {
  auto dev = rt::Device::open();
  if (!dev)
    GTEST_SKIP() << dev.status().toString();
  auto stream = rt::Stream::create(*dev);
  ASSERT_TRUE(stream);
  rt::KernelCache cache("");
  // op(A) is 192 x 256, op(B) 256 x 128: M, N multiples of 8 and K of 128,
  // as block-scaled FP8 GEMMs need; values spread over 2^-4 .. 2^4.
  const int64_t m = 192, k = 256, n = 128;
  auto values = [](int64_t count, unsigned seed) {
    std::vector<float> v(static_cast<size_t>(count));
    for (size_t i = 0; i < v.size(); ++i) {
      unsigned h = unsigned(i) * 2654435761u + seed * 40503u;
      h ^= h >> 13;
      float mag = std::ldexp(1.0f + float(h % 1000) / 1000.0f, int(h % 9) - 4);
      v[i] = (h >> 20) & 1 ? -mag : mag;
    }
    return v;
  };
  std::vector<float> a = values(m * k, 1), b = values(k * n, 2);
  std::vector<float> bias = values(n, 3);
  for (float &v : bias) // exact in bf16, so the same bias either way
    v = ref::bf16ToFloat(ref::floatToBF16(v));
  struct Kind {
    const char *name;
    std::optional<Scheme> sa, sb;
  };
  const Scheme block1d = Scheme::fp8Block(DType::E4M3, 1, 128);
  const Scheme block2d = Scheme::fp8Block(DType::E4M3, 128, 128);
  const Kind kinds[] = {
      {"bf16 tensors", std::nullopt, std::nullopt},
      {"identity", Scheme::identity(DType::BF16),
       Scheme::identity(DType::BF16)},
      {"fp8 current e4m3 x e5m2", Scheme::fp8Current(DType::E4M3),
       Scheme::fp8Current(DType::E5M2)},
      {"block 1x128 x 1x128", block1d, block1d},
      {"block 1x128 x 128x128", block1d, block2d},
      {"block 128x128 x 1x128", block2d, block1d},
  };
  for (const Kind &kind : kinds)
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (bool withBias : {false, true})
          for (DType out : {DType::F32, DType::BF16}) {
            // A is stored as op(A) or its transpose; likewise B.
            std::vector<float> as(a.size()), bs(b.size());
            for (int64_t i = 0; i < m; ++i)
              for (int64_t kk = 0; kk < k; ++kk)
                as[ta ? kk * m + i : i * k + kk] = a[i * k + kk];
            for (int64_t kk = 0; kk < k; ++kk)
              for (int64_t j = 0; j < n; ++j)
                bs[tb ? j * k + kk : kk * n + j] = b[kk * n + j];
            GemmSetup g = gemmProgram(
                as,
                ta ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k},
                bs,
                tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n},
                ta, tb, withBias ? bias : std::vector<float>{}, kind.sa,
                kind.sb, out);
            exec::Comparison c =
                test::gpuVersusCpu(g.program, g.args, *dev, *stream, cache);
            std::string what =
                std::string(kind.name) + " transpose_a " + std::to_string(ta) +
                " transpose_b " + std::to_string(tb) +
                (withBias ? " + bias" : "") + " -> " + rt::dtypeName(out);
            if (kind.sa && kind.sa->kind != rt::SchemeKind::Identity &&
                withBias && out == DType::F32) {
              // No such cuBLASLt kernel: a clear error when planning.
              EXPECT_NE(c.difference.find("FP8 GEMMs with a bias need a bf16"),
                        std::string::npos)
                  << what << ": " << c.difference;
              continue;
            }
            EXPECT_EQ(c.difference, "") << what;
            EXPECT_EQ(c.boundedBuffers, 1u) << what;
            EXPECT_LE(c.worstBoundRatio, 1.0) << what;
          }
}
