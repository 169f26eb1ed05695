//===- GemmCpuTest.cpp - GEMM kernels on the CPU backend ------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The CPU backend's GEMM (te.gemm at the kernel level): every combination
// of transpose flags on exact small-integer data, with tensors and with
// quantized operands read in the direction each flag implies, and the
// block-FP8 x block-FP8 path against the reference block-scaled GEMM.
//
//===----------------------------------------------------------------------===//

#include "te/codegen/Execute.h"
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

namespace {

std::vector<uint8_t> bf16Bytes(const std::vector<float> &v) {
  std::vector<uint8_t> out(2 * v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t h = ref::floatToBF16(v[i]);
    out[2 * i] = uint8_t(h);
    out[2 * i + 1] = uint8_t(h >> 8);
  }
  return out;
}

std::vector<float> f32Values(const std::vector<uint8_t> &bytes) {
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

cg::Value tensor(std::string name, std::vector<int64_t> shape, DType t) {
  cg::Value v;
  v.name = std::move(name);
  v.shape = std::move(shape);
  v.dtype = t;
  return v;
}

/// D = op(A) op(B) + bias with A, B given as logical matrices; `scheme`
/// (if any) quantizes each operand first, in the direction it is read.
std::vector<float> runGemm(const std::vector<float> &a, std::vector<int64_t> as,
                           const std::vector<float> &b, std::vector<int64_t> bs,
                           bool ta, bool tb, const std::vector<float> &bias,
                           std::optional<Scheme> scheme) {
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
  if (scheme) {
    for (int i = 0; i < 2; ++i) {
      cg::Value q = e.values[i];
      q.kind = cg::Value::Kind::Quantized;
      q.name += "_q";
      Direction d = i == 0 ? g.directionA() : g.directionB();
      (d == Direction::Rowwise ? q.rowwise : q.columnwise) = scheme;
      e.values.push_back(q);
      cg::Kernel k;
      k.quantize.name = "quantize_" + std::to_string(i);
      k.quantize.input = i;
      k.quantize.stages = {{*scheme, d, int(e.values.size()) - 1}};
      e.kernels.push_back(k);
      (i == 0 ? g.a : g.b) = int(e.values.size()) - 1;
    }
  }
  int64_t m = ta ? as[1] : as[0], n = tb ? bs[0] : bs[1];
  std::vector<std::vector<uint8_t>> args = {bf16Bytes(a), bf16Bytes(b)};
  if (!bias.empty()) {
    e.values.push_back(tensor("bias", {n}, DType::BF16));
    e.args.push_back(int(e.values.size()) - 1);
    g.bias = int(e.values.size()) - 1;
    args.push_back(bf16Bytes(bias));
  }
  e.values.push_back(tensor("d", {m, n}, DType::F32));
  g.output = int(e.values.size()) - 1;
  e.results = {g.output};
  cg::Kernel k;
  k.kind = cg::Kernel::Kind::Gemm;
  k.gemm = g;
  e.kernels.push_back(k);
  p.entries.push_back(e);
  auto out = cg::runCpu(p, p.entries[0], args);
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
