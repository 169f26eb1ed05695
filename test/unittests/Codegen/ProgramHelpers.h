//===- ProgramHelpers.h - Building small programs in tests ------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// What the codegen tests that build a te::cg::Program by hand share: a
// tensor value, argument bytes, seeded data, and the grouped GEMM program.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TEST_UNITTESTS_CODEGEN_PROGRAMHELPERS_H
#define TE_TEST_UNITTESTS_CODEGEN_PROGRAMHELPERS_H

#include "te/codegen/Program.h"
#include "te/runtime/reference/Codecs.h"

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace te::test {

/// A (not quantized) tensor value of `shape` and element type `t`.
inline cg::Value tensor(std::string name, std::vector<int64_t> shape,
                        rt::DType t) {
  cg::Value v;
  v.name = std::move(name);
  v.shape = std::move(shape);
  v.dtype = t;
  return v;
}

/// The stage writing direction `d` of quantized value `v` (index `value`);
/// a delayed-scaling direction casts with the state
/// "<v.name>.delayed_scaling", as te-expand-linear names a layer's.
inline cg::Stage stageOf(const cg::Value &v, int value, rt::Direction d) {
  const rt::Scheme &own = *v.scheme(d);
  return {own, d, value,
          rt::delayedStateName(v.name + ".delayed_scaling",
                               v.rowwise.value_or(own),
                               v.columnwise.value_or(own), d)};
}

/// The little-endian bf16 bytes (RNE) of `v`.
inline std::vector<uint8_t> bf16Bytes(const std::vector<float> &v) {
  std::vector<uint8_t> out(2 * v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t h = rt::ref::floatToBF16(v[i]);
    out[2 * i] = uint8_t(h);
    out[2 * i + 1] = uint8_t(h >> 8);
  }
  return out;
}

inline std::vector<uint8_t> i64Bytes(const std::vector<int64_t> &v) {
  std::vector<uint8_t> out(8 * v.size());
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

/// y = grouped GEMM of x [m, k] and w [g, n, k] (bf16 arguments), the
/// operands quantized first when `fp8` (x 1x128, w 128x128, rowwise); with
/// `dgrad`, y = x [m, n] times each expert's weight read columnwise; with
/// `bias`, a fourth argument [g, n] is each expert's bias. `xElement`: the
/// FP8 format of x's codes (an E5M2 gradient's dgrad), w's are E4M3. With
/// `mxfp8` (and `fp8`) both are MXFP8 instead (the engine's MXFP8 kernel).
inline cg::Program groupedProgram(int64_t m, int64_t k, int64_t g, int64_t n,
                                  bool fp8, bool dgrad = false,
                                  bool bias = false,
                                  rt::DType xElement = rt::DType::E4M3,
                                  bool mxfp8 = false) {
  // fprop: x [m, k], y [m, n]; dgrad (w read columnwise): x [m, n], y [m, k].
  cg::Entry e;
  e.name = "moe";
  e.values = {tensor("x", {m, dgrad ? n : k}, rt::DType::BF16),
              tensor("w", {g, n, k}, rt::DType::BF16),
              tensor("splits", {g}, rt::DType::I64)};
  e.args = {0, 1, 2};
  cg::GroupedGemmKernel gg;
  gg.name = "grouped";
  gg.x = 0;
  gg.w = 1;
  gg.splits = 2;
  gg.weightColumnwise = dgrad;
  if (bias) { // argument 3: [g, n] bf16
    e.values.push_back(tensor("b", {g, n}, rt::DType::BF16));
    e.args.push_back(3);
    gg.bias = 3;
  }
  if (fp8) {
    for (int i = 0; i < 2; ++i) {
      const rt::DType element = i == 0 ? xElement : rt::DType::E4M3;
      rt::Scheme s = mxfp8
                         ? rt::Scheme::mxfp8(element)
                         : rt::Scheme::fp8Block(element, i == 0 ? 1 : 128, 128);
      rt::Direction d =
          i == 1 && dgrad ? rt::Direction::Columnwise : rt::Direction::Rowwise;
      cg::Value q = e.values[i];
      q.kind = cg::Value::Kind::Quantized;
      q.name += "_q";
      (d == rt::Direction::Rowwise ? q.rowwise : q.columnwise) = s;
      e.values.push_back(q);
      cg::QuantizeKernel qk;
      qk.name = "quantize_" + q.name;
      qk.input = i;
      qk.stages = {{s, d, int(e.values.size()) - 1}};
      e.kernels.push_back(qk);
      (i == 0 ? gg.x : gg.w) = int(e.values.size()) - 1;
    }
  }
  e.values.push_back(tensor("y", {m, dgrad ? k : n}, rt::DType::BF16));
  gg.output = int(e.values.size()) - 1;
  e.results = {gg.output};
  e.kernels.push_back(gg);
  cg::Program p;
  p.entries.push_back(e);
  return p;
}

/// groupedProgram's bf16 fprop (or `dgrad`) whose grouped GEMM quantizes x
/// (by `x`) and w (by `w`; for the dgrad its columnwise copy) per expert
/// itself, one amax per expert: per-tensor FP8 or NVFP4 (with
/// `nvfp4Codes`, read as codes by the engine's NVFP4 kernel).
inline cg::Program
perExpertScaledProgram(int64_t m, int64_t k, int64_t g, int64_t n, bool bias,
                       const rt::Scheme &x, const rt::Scheme &w,
                       bool dgrad = false, bool nvfp4Codes = false) {
  cg::Program p = groupedProgram(m, k, g, n, false, dgrad, bias);
  auto &gg = std::get<cg::GroupedGemmKernel>(p.entries[0].kernels.back());
  gg.xScheme = x;
  gg.wScheme = w;
  gg.nvfp4Codes = nvfp4Codes;
  return p;
}

/// dW [g, n, k] f32 (and with `bias` db [g, n] f32) = the wgrad of dy
/// [m, n] and x [m, k] (bf16 arguments, then the splits), both quantized
/// columnwise per expert by block FP8 1x128 (dy's codes `dyElement`, x's
/// E4M3), or read as bf16.
inline cg::Program groupedWgradProgram(int64_t m, int64_t n, int64_t k,
                                       int64_t g, bool fp8, bool bias,
                                       rt::DType dyElement = rt::DType::E4M3) {
  cg::Entry e;
  e.name = "wgrad";
  e.values = {tensor("dy", {m, n}, rt::DType::BF16),
              tensor("x", {m, k}, rt::DType::BF16),
              tensor("splits", {g}, rt::DType::I64),
              tensor("dw", {g, n, k}, rt::DType::F32)};
  e.args = {0, 1, 2};
  cg::GroupedWgradKernel w;
  w.name = "wgrad";
  w.dy = 0;
  w.x = 1;
  w.splits = 2;
  w.output = 3;
  w.dyScheme = fp8 ? rt::Scheme::fp8Block(dyElement, 1, 128)
                   : rt::Scheme::identity(rt::DType::BF16);
  w.xScheme = fp8 ? rt::Scheme::fp8Block(rt::DType::E4M3, 1, 128)
                  : rt::Scheme::identity(rt::DType::BF16);
  e.results = {3};
  if (bias) {
    e.values.push_back(tensor("db", {g, n}, rt::DType::F32));
    w.biasGrad = 4;
    e.results.push_back(4);
  }
  e.kernels.push_back(w);
  cg::Program p;
  p.entries.push_back(e);
  return p;
}

inline std::vector<float> normals(size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> v(count);
  for (float &x : v)
    x = rt::ref::bf16ToFloat(rt::ref::floatToBF16(d(rng)));
  return v;
}

} // namespace te::test

#endif // TE_TEST_UNITTESTS_CODEGEN_PROGRAMHELPERS_H
