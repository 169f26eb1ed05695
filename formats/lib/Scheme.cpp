//===- Scheme.cpp - Quantization schemes and storage layouts --------------===//
//
// Part of tejit. Plain C++17, no MLIR and no CUDA.
//
//===----------------------------------------------------------------------===//
//
// Buffer shapes follow docs/Numerics.md §2 (TransformerEngine's PyTorch
// storage): per-tensor FP8 keeps an explicit transpose for the columnwise
// direction on TN-only targets, MXFP8 keeps both directions untransposed, block
// FP8 and NVFP4 store the columnwise data transposed, and the MX/NV scale
// matrices are padded to 128 x 4 tiles (the cuBLAS swizzle unit) while
// block-FP8 scales are padded to multiples of 4.
//
//===----------------------------------------------------------------------===//

#include "te/formats/Scheme.h"

#include <cmath>
#include <cstdio>

namespace te::rt {

int64_t dtypeSize(DType t) {
  switch (t) {
  case DType::F32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::E4M3:
  case DType::E5M2:
  case DType::E8M0:
  case DType::E2M1x2:
    return 1;
  case DType::I64:
    return 8;
  }
  return 0;
}

const char *dtypeName(DType t) {
  switch (t) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::E4M3:
    return "e4m3";
  case DType::E5M2:
    return "e5m2";
  case DType::E8M0:
    return "e8m0";
  case DType::E2M1x2:
    return "e2m1x2";
  case DType::I64:
    return "i64";
  }
  return "?";
}

const char *directionName(Direction d) {
  return d == Direction::Rowwise ? "rowwise" : "columnwise";
}

const char *schemeKindName(SchemeKind k) {
  switch (k) {
  case SchemeKind::Fp8Current:
    return "fp8_current";
  case SchemeKind::Fp8Delayed:
    return "fp8_delayed";
  case SchemeKind::Mxfp8:
    return "mxfp8";
  case SchemeKind::Nvfp4:
    return "nvfp4";
  case SchemeKind::Fp8Block:
    return "fp8_block";
  case SchemeKind::Identity:
    return "identity";
  }
  return "?";
}

Scheme Scheme::fp8Current(DType element, bool pow2, double eps) {
  Scheme s;
  s.kind = SchemeKind::Fp8Current;
  s.element = element;
  s.pow2 = pow2;
  s.eps = eps;
  return s;
}

Scheme Scheme::fp8Delayed(DType element, int64_t history, AmaxAlgo algo,
                          int64_t margin, bool pow2) {
  Scheme s;
  s.kind = SchemeKind::Fp8Delayed;
  s.pow2 = pow2;
  s.element = element;
  s.history = history;
  s.algo = algo;
  s.margin = margin;
  return s;
}

Scheme Scheme::mxfp8(DType element) {
  Scheme s;
  s.kind = SchemeKind::Mxfp8;
  s.element = element;
  return s;
}

Scheme Scheme::nvfp4(bool rht, bool sr, bool block2d) {
  Scheme s;
  s.kind = SchemeKind::Nvfp4;
  s.element = DType::E2M1x2;
  s.rht = rht;
  s.stochasticRounding = sr;
  s.block2d = block2d;
  return s;
}

Scheme Scheme::fp8Block(DType element, int64_t tileRows, int64_t tileCols,
                        bool pow2, double eps) {
  Scheme s;
  s.kind = SchemeKind::Fp8Block;
  s.element = element;
  s.tileRows = tileRows;
  s.tileCols = tileCols;
  s.pow2 = pow2;
  s.eps = eps;
  return s;
}

Scheme Scheme::identity(DType element) {
  Scheme s;
  s.kind = SchemeKind::Identity;
  s.element = element;
  return s;
}

DType Scheme::scaleType() const {
  switch (kind) {
  case SchemeKind::Mxfp8:
    return DType::E8M0;
  case SchemeKind::Nvfp4:
    return DType::E4M3;
  case SchemeKind::Fp8Current:
  case SchemeKind::Fp8Delayed:
  case SchemeKind::Fp8Block:
  case SchemeKind::Identity:
    return DType::F32;
  }
  return DType::F32;
}

bool isFp8(DType t) { return t == DType::E4M3 || t == DType::E5M2; }

bool fp8ElementsPair(DType a, DType b) {
  return !(a == DType::E5M2 && b == DType::E5M2);
}

/// The shortest %g text of `v` (diagnostics).
static std::string formatDouble(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", v);
  return text;
}

std::string Scheme::validate() const {
  switch (kind) {
  case SchemeKind::Fp8Current:
  case SchemeKind::Fp8Delayed:
  case SchemeKind::Mxfp8:
  case SchemeKind::Fp8Block:
    if (!isFp8(element))
      return std::string(schemeKindName(kind)) +
             " elements must be e4m3 or e5m2";
    break;
  case SchemeKind::Nvfp4:
    if (element != DType::E2M1x2)
      return "nvfp4 elements are always e2m1";
    break;
  case SchemeKind::Identity:
    if (element != DType::F32 && element != DType::F16 &&
        element != DType::BF16)
      return "identity keeps a high-precision type: f32, f16 or bf16";
    break;
  }
  // eps floors a near-zero amax before scale = fp8_max / amax; above 1 it
  // would replace the amax of ordinary tensors.
  if (!std::isfinite(eps) || eps < 0.0 || eps > kMaxEps)
    return "eps must be a finite value in [0, 1] (it bounds amax from "
           "below), got " +
           formatDouble(eps);
  if (kind == SchemeKind::Fp8Delayed) {
    if (history < 1 || history > kMaxHistory)
      return "history must be in [1, " + std::to_string(kMaxHistory) +
             "] (the amax window holds at least the current step and is "
             "kept per tensor), got " +
             std::to_string(history);
    if (margin < 0 || margin > kMaxMargin)
      return "margin must be in [0, " + std::to_string(kMaxMargin) +
             "] (the scale is divided by 2^margin; beyond that even the "
             "amax quantizes to zero), got " +
             std::to_string(margin);
  }
  if (kind == SchemeKind::Fp8Block &&
      !(tileCols == 128 && (tileRows == 1 || tileRows == 128)))
    return "fp8_block tiles are 1x128 or 128x128";
  return "";
}

bool Scheme::operator==(const Scheme &o) const {
  return kind == o.kind && element == o.element && pow2 == o.pow2 &&
         eps == o.eps && history == o.history && algo == o.algo &&
         margin == o.margin && rht == o.rht &&
         stochasticRounding == o.stochasticRounding && block2d == o.block2d &&
         tileRows == o.tileRows && tileCols == o.tileCols;
}

std::string delayedStateName(const std::string &base, const Scheme &rowwise,
                             const Scheme &columnwise, Direction dir) {
  const Scheme &own = dir == Direction::Rowwise ? rowwise : columnwise;
  if (own.kind != SchemeKind::Fp8Delayed)
    return "";
  bool twoQuantizers = rowwise != columnwise &&
                       rowwise.kind == SchemeKind::Fp8Delayed &&
                       columnwise.kind == SchemeKind::Fp8Delayed;
  return twoQuantizers ? base + "." + directionName(dir) : base;
}

std::string expertStateName(const std::string &state, int64_t expert) {
  return state + ".expert" + std::to_string(expert);
}

BlockShape blockShape(const Scheme &s, Direction d) {
  bool row = d == Direction::Rowwise;
  switch (s.kind) {
  case SchemeKind::Fp8Current:
  case SchemeKind::Fp8Delayed:
    return {0, 0};
  case SchemeKind::Mxfp8:
    return row ? BlockShape{1, 32} : BlockShape{32, 1};
  case SchemeKind::Nvfp4:
    if (s.block2d)
      return {16, 16};
    return row ? BlockShape{1, 16} : BlockShape{16, 1};
  case SchemeKind::Fp8Block:
    if (s.tileRows == 128)
      return {128, 128};
    return row ? BlockShape{1, 128} : BlockShape{128, 1};
  case SchemeKind::Identity:
    return {1, 1};
  }
  return {0, 0};
}

DirectionStorage storageFor(const Scheme &s, Direction d, int64_t m, int64_t k,
                            const Target &target) {
  bool row = d == Direction::Rowwise;
  DirectionStorage st;
  switch (s.kind) {
  case SchemeKind::Fp8Current:
  case SchemeKind::Fp8Delayed:
    st.scaleInv = {DType::F32, 1, 1};
    st.amax = {DType::F32, 1, 1};
    if (row) {
      st.data = {s.element, m, k};
    } else if (target.tnOnlyFp8Gemm) {
      st.data = {s.element, k, m};
      st.dataTransposed = true;
      st.sharesRowwiseScale = true;
    } else {
      st.data = {s.element, m, k};
      st.sharesRowwiseData = true;
      st.sharesRowwiseScale = true;
    }
    return st;
  case SchemeKind::Mxfp8:
    st.data = {s.element, m, k};
    if (row)
      st.scaleInv = {DType::E8M0, roundUp(m, 128), roundUp(k / 32, 4)};
    else
      st.scaleInv = {DType::E8M0, roundUp(m / 32, 4), roundUp(k, 128)};
    return st;
  case SchemeKind::Nvfp4:
    st.amax = {DType::F32, 1, 1};
    if (row) {
      st.data = {DType::E2M1x2, m, k / 2};
      st.scaleInv = {DType::E4M3, roundUp(m, 128), roundUp(k / 16, 4)};
    } else {
      st.data = {DType::E2M1x2, k, m / 2};
      st.dataTransposed = true;
      st.scaleInv = {DType::E4M3, roundUp(k, 128), roundUp(m / 16, 4)};
    }
    return st;
  case SchemeKind::Fp8Block: {
    int64_t mb = ceilDiv(m, 128), kb = ceilDiv(k, 128);
    if (row) {
      st.data = {s.element, m, k};
      st.scaleInv = s.tileRows == 1
                        ? BufferDesc{DType::F32, kb, roundUp(m, 4)}
                        : BufferDesc{DType::F32, mb, roundUp(kb, 4)};
    } else {
      st.data = {s.element, k, m};
      st.dataTransposed = true;
      st.scaleInv = s.tileRows == 1
                        ? BufferDesc{DType::F32, mb, roundUp(k, 4)}
                        : BufferDesc{DType::F32, kb, roundUp(mb, 4)};
    }
    return st;
  }
  case SchemeKind::Identity:
    st.data = {s.element, m, k};
    st.sharesRowwiseData = !row;
    return st;
  }
  return st;
}

std::string validateShape(const Scheme &s, Direction d, int64_t m, int64_t k) {
  if (m < 1 || k < 1)
    return "quantized tensors must not be empty";
  auto need = [&](int64_t block, bool alongRows) -> std::string {
    std::string name = schemeKindName(s.kind);
    if (alongRows && k % block != 0)
      return name + " " + directionName(d) +
             " blocks run along the last "
             "dimension: its size " +
             std::to_string(k) + " must be a multiple of the block size " +
             std::to_string(block);
    if (!alongRows && m % block != 0)
      return name + " " + directionName(d) +
             " blocks run down the leading "
             "dimension(s): their size " +
             std::to_string(m) + " must be a multiple of the block size " +
             std::to_string(block);
    return "";
  };
  bool row = d == Direction::Rowwise;
  switch (s.kind) {
  case SchemeKind::Mxfp8:
    return need(32, row);
  case SchemeKind::Nvfp4:
    if (s.block2d) {
      // 16x16 tiles need both extents, whichever direction is stored.
      if (m % 16 != 0 || k % 16 != 0)
        return "nvfp4 block2d quantizes 16x16 tiles: the leading dimension(s) "
               "(size " +
               std::to_string(m) + ") and the last dimension (size " +
               std::to_string(k) + ") must both be multiples of 16";
      return "";
    }
    return need(16, row);
  case SchemeKind::Fp8Current:
  case SchemeKind::Fp8Delayed:
  case SchemeKind::Fp8Block: // partial edge blocks use only valid elements
  case SchemeKind::Identity:
    return "";
  }
  return "";
}

/// a * b, or false when it overflows int64.
static bool mulChecked(int64_t a, int64_t b, int64_t &out) {
  return !__builtin_mul_overflow(a, b, &out);
}

std::string validateSize(const int64_t *dims, size_t rank, int64_t elementBytes,
                         const Scheme *rowwise, const Scheme *columnwise) {
  int64_t count = 1, rows = 1;
  for (size_t i = 0; i < rank; ++i)
    if (dims[i] <= 0) // dynamic, or no elements at all
      return "";
  for (size_t i = 0; i < rank; ++i) {
    if (!mulChecked(count, dims[i], count))
      return "its element count overflows a 64-bit integer";
    if (i + 1 < rank)
      rows = count;
  }
  int64_t bytes;
  if (!mulChecked(count, elementBytes, bytes) || bytes > kMaxBufferBytes)
    return "its " + std::to_string(count) + " elements of " +
           std::to_string(elementBytes) +
           " bytes exceed the 2^48 bytes one buffer may hold";
  if (rank < 2)
    return "";
  // Padded scale buffers can outgrow the data: check each one. With the
  // data within 2^48 bytes every extent below is too, so storageFor's
  // rounding cannot overflow; only the products are checked.
  int64_t k = dims[rank - 1];
  const Scheme *schemes[] = {rowwise, columnwise};
  for (Direction d : {Direction::Rowwise, Direction::Columnwise}) {
    const Scheme *s = schemes[d == Direction::Rowwise ? 0 : 1];
    if (!s)
      continue;
    DirectionStorage st = storageFor(*s, d, rows, k);
    std::pair<const char *, const BufferDesc *> buffers[] = {
        {"data", &st.data}, {"scale_inv", &st.scaleInv}, {"amax", &st.amax}};
    for (auto [name, b] : buffers) {
      int64_t n, size;
      if (!b->present())
        continue;
      if (!mulChecked(b->rows, b->cols, n) ||
          !mulChecked(n, dtypeSize(b->dtype), size) || size > kMaxBufferBytes)
        return std::string("its ") + directionName(d) + " " +
               schemeKindName(s->kind) + " " + name + " buffer (" +
               std::to_string(b->rows) + " x " + std::to_string(b->cols) + " " +
               dtypeName(b->dtype) +
               ") exceeds the 2^48 bytes one buffer may hold";
    }
  }
  return "";
}

int smVersion(const std::string &arch) {
  if (arch.rfind("sm_", 0) != 0)
    return -1;
  std::string digits = arch.substr(3);
  if (!digits.empty() && digits.back() == 'a')
    digits.pop_back();
  if (digits.empty() || digits.size() > 3 ||
      digits.find_first_not_of("0123456789") != std::string::npos)
    return -1;
  int v = std::stoi(digits);
  return v >= 10 ? v : -1;
}

Target Target::forArch(const std::string &arch) {
  int sm = smVersion(arch);
  bool anyLayout = (sm >= 100 && sm < 120) || sm >= 130;
  return anyLayout ? sm100() : sm90();
}

} // namespace te::rt
