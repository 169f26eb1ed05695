//===- runtime/src/reference/Quantize.cpp - Quantize ------------*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR and no CUDA.
//
//===----------------------------------------------------------------------===//
//
// The dispatcher and the FP8 family (per-tensor current and delayed scaling,
// MXFP8, block FP8) plus identity, and the dequantizer of every format.
// Each direction is a separate pass over the widened fp32 input with the
// operation order of docs/Numerics.md §13: amax on the input values (NaN
// ignored), scale from Scales.h, then code = encode(fl(x * multiplier)). Float
// expressions must be evaluated in float and never contracted (the library is
// built with -ffp-contract=off), so `a * b` here is the kernel's fl(a * b).
//
//===----------------------------------------------------------------------===//

#include "te/runtime/reference/Quantize.h"

#include "QuantizeInternal.h"

#include "te/runtime/reference/Codecs.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "the reference quantizer needs float arithmetic evaluated in float"
#endif

namespace te {
namespace rt {
namespace ref {

using detail::SourceView;

//===----------------------------------------------------------------------===//
// Host buffers
//===----------------------------------------------------------------------===//

HostBuffer HostBuffer::zeros(const BufferDesc &d) {
  HostBuffer b;
  b.desc = d;
  if (d.present())
    b.bytes.assign(static_cast<size_t>(d.bytes()), 0);
  return b;
}

float loadF32(const HostBuffer &b, int64_t index) {
  const uint8_t *p = b.bytes.data() + 4 * index;
  return bitsToFloat(uint32_t(p[0]) | uint32_t(p[1]) << 8 |
                     uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24);
}

void storeF32(HostBuffer &b, int64_t index, float value) {
  uint32_t bits = floatToBits(value);
  uint8_t *p = b.bytes.data() + 4 * index;
  for (int i = 0; i < 4; ++i)
    p[i] = static_cast<uint8_t>(bits >> (8 * i));
}

uint16_t loadU16(const HostBuffer &b, int64_t index) {
  const uint8_t *p = b.bytes.data() + 2 * index;
  return static_cast<uint16_t>(p[0] | p[1] << 8);
}

void storeU16(HostBuffer &b, int64_t index, uint16_t value) {
  uint8_t *p = b.bytes.data() + 2 * index;
  p[0] = static_cast<uint8_t>(value);
  p[1] = static_cast<uint8_t>(value >> 8);
}

const QuantizedDirection *QuantizedTensor::get(Direction d) const {
  const std::optional<QuantizedDirection> &q =
      d == Direction::Rowwise ? rowwise : columnwise;
  return q ? &*q : nullptr;
}

std::vector<float> widenToF32(const void *x, SourceType type, int64_t count) {
  std::vector<float> out(static_cast<size_t>(count));
  if (type == SourceType::F32) {
    const float *f = static_cast<const float *>(x);
    std::copy(f, f + count, out.begin());
    return out;
  }
  const uint16_t *h = static_cast<const uint16_t *>(x);
  for (int64_t i = 0; i < count; ++i)
    out[i] = type == SourceType::BF16 ? bf16ToFloat(h[i]) : f16ToFloat(h[i]);
  return out;
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static Fp8Format fp8FormatOf(DType t) {
  return t == DType::E5M2 ? Fp8Format::E5M2 : Fp8Format::E4M3;
}

float delayedScaledMax(const Scheme &s) {
  return delayedScaledMax(fp8MaxNorm(fp8FormatOf(s.element)), int(s.margin));
}

void updateDelayedScaling(DelayedScalingState &state, const Scheme &s) {
  updateDelayedScaling(
      state,
      s.algo == rt::AmaxAlgo::MostRecent ? ref::AmaxAlgo::MostRecent
                                         : ref::AmaxAlgo::Max,
      fp8MaxNorm(fp8FormatOf(s.element)), int(s.margin), 0.0f, s.pow2);
}

/// A direction with zero-filled buffers of the shapes storageFor gives.
static QuantizedDirection allocate(const Scheme &s, Direction d, int64_t m,
                                   int64_t k, const Target &target) {
  DirectionStorage st = storageFor(s, d, m, k, target);
  QuantizedDirection q;
  q.data = HostBuffer::zeros(st.data);
  q.scaleInv = HostBuffer::zeros(st.scaleInv);
  q.amax = HostBuffer::zeros(st.amax);
  q.dataTransposed = st.dataTransposed;
  q.sharesRowwiseData = st.sharesRowwiseData;
  q.sharesRowwiseScale = st.sharesRowwiseScale;
  return q;
}

/// Index of logical element (r, c) in a data buffer stored plain or
/// transposed.
static int64_t dataIndex(const QuantizedDirection &q, int64_t r, int64_t c,
                         int64_t m, int64_t k) {
  return q.dataTransposed ? c * m + r : r * k + c;
}

//===----------------------------------------------------------------------===//
// Per-tensor FP8 (docs/Numerics.md §3, 4)
//===----------------------------------------------------------------------===//

static QuantizedDirection quantizePerTensor(const SourceView &src,
                                            const Scheme &s, Direction d,
                                            const QuantizeOptions &options,
                                            DelayedScalingState *state) {
  QuantizedDirection q = allocate(s, d, src.m, src.k, options.target);
  Fp8Format format = fp8FormatOf(s.element);
  float amax = options.tensorAmax
                   ? *options.tensorAmax
                   : amaxOf(src.x, static_cast<size_t>(src.m * src.k));
  float scale;
  if (s.kind == SchemeKind::Fp8Current) {
    scale = computeScaleFromAmax(amax, fp8MaxNorm(format), s.pow2,
                                 static_cast<float>(s.eps), FLT_MAX);
  } else {
    // Delayed: the state's scale; the amax is recorded into history[0]
    // (TE's atomicMax into its amax pointer).
    scale = state->scale;
    state->history[0] = std::fmax(state->history[0], amax);
  }
  storeF32(q.scaleInv, 0, scaleInvFromScale(scale));
  storeF32(q.amax, 0, amax);
  for (int64_t r = 0; r < src.m; ++r)
    for (int64_t c = 0; c < src.k; ++c)
      q.data.bytes[dataIndex(q, r, c, src.m, src.k)] =
          encodeFp8(format, src.x[r * src.k + c] * scale);
  return q;
}

//===----------------------------------------------------------------------===//
// MXFP8 (docs/Numerics.md §5)
//===----------------------------------------------------------------------===//

static QuantizedDirection quantizeMxfp8(const SourceView &src, const Scheme &s,
                                        Direction d,
                                        const QuantizeOptions &options) {
  QuantizedDirection q = allocate(s, d, src.m, src.k, options.target);
  Fp8Format format = fp8FormatOf(s.element);
  int64_t m = src.m, k = src.k, scaleCols = q.scaleInv.desc.cols;
  bool row = d == Direction::Rowwise;
  // Block (bi, bj) in units of the block shape: 1x32 rowwise, 32x1
  // columnwise. The compact scale sits at [r][c/32] or [r/32][c].
  int64_t blocksDown = row ? m : m / 32, blocksAcross = row ? k / 32 : k;
  float values[32];
  for (int64_t bi = 0; bi < blocksDown; ++bi) {
    for (int64_t bj = 0; bj < blocksAcross; ++bj) {
      for (int64_t e = 0; e < 32; ++e)
        values[e] =
            row ? src.x[bi * k + bj * 32 + e] : src.x[(bi * 32 + e) * k + bj];
      uint8_t exponent = mxfp8BlockExponent(amaxOf(values, 32), format);
      float mult = e8m0ReciprocalScale(exponent);
      q.scaleInv.bytes[bi * scaleCols + bj] = exponent;
      for (int64_t e = 0; e < 32; ++e) {
        int64_t index = row ? bi * k + bj * 32 + e : (bi * 32 + e) * k + bj;
        q.data.bytes[index] = encodeFp8(format, values[e] * mult);
      }
    }
  }
  return q;
}

//===----------------------------------------------------------------------===//
// FP8 block scaling (docs/Numerics.md §7)
//===----------------------------------------------------------------------===//

static QuantizedDirection quantizeFp8Block(const SourceView &src,
                                           const Scheme &s, Direction d,
                                           const QuantizeOptions &options) {
  QuantizedDirection q = allocate(s, d, src.m, src.k, options.target);
  Fp8Format format = fp8FormatOf(s.element);
  int64_t m = src.m, k = src.k, stride = q.scaleInv.desc.cols;
  bool row = d == Direction::Rowwise;
  bool tile2d = s.tileRows == 128;
  // Block extents in the original matrix; edge blocks are clipped and use
  // only their valid elements.
  int64_t blockRows = tile2d ? 128 : (row ? 1 : 128);
  int64_t blockCols = tile2d ? 128 : (row ? 128 : 1);
  for (int64_t r0 = 0; r0 < m; r0 += blockRows) {
    for (int64_t c0 = 0; c0 < k; c0 += blockCols) {
      int64_t r1 = std::min(m, r0 + blockRows),
              c1 = std::min(k, c0 + blockCols);
      float amax = 0.0f;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c)
          amax = std::fmax(amax, std::fabs(src.x[r * k + c]));
      float scale = fp8BlockScale(amax, format, s.pow2,
                                  static_cast<float>(s.eps), src.type);
      // GEMM_READY scale positions (docs/Numerics.md §7.2).
      int64_t rb = r0 / 128, cb = c0 / 128, at;
      if (tile2d)
        at = row ? rb * stride + cb : cb * stride + rb;
      else
        at = row ? cb * stride + r0 : rb * stride + c0;
      storeF32(q.scaleInv, at, fp8BlockScaleInv(scale));
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c)
          q.data.bytes[dataIndex(q, r, c, m, k)] =
              encodeFp8(format, src.x[r * k + c] * scale);
    }
  }
  return q;
}

//===----------------------------------------------------------------------===//
// Identity (docs/Numerics.md §11)
//===----------------------------------------------------------------------===//

static bool sameType(SourceType src, DType element) {
  return (src == SourceType::F32 && element == DType::F32) ||
         (src == SourceType::F16 && element == DType::F16) ||
         (src == SourceType::BF16 && element == DType::BF16);
}

static QuantizedDirection quantizeIdentity(const SourceView &src,
                                           const Scheme &s, Direction d,
                                           const QuantizeOptions &options) {
  QuantizedDirection q = allocate(s, d, src.m, src.k, options.target);
  int64_t count = src.m * src.k;
  if (sameType(src.type, s.element)) {
    // A true passthrough: the caller's bits, NaN payloads included (the
    // fp32 widening of an fp32 input is a plain copy).
    if (s.element == DType::F32) {
      for (int64_t i = 0; i < count; ++i)
        storeF32(q.data, i, src.x[i]);
    } else {
      const uint16_t *h = static_cast<const uint16_t *>(src.raw);
      for (int64_t i = 0; i < count; ++i)
        storeU16(q.data, i, h[i]);
    }
    return q;
  }
  for (int64_t i = 0; i < count; ++i) {
    switch (s.element) {
    case DType::F32:
      storeF32(q.data, i, src.x[i]);
      break;
    case DType::BF16:
      storeU16(q.data, i, floatToBF16(src.x[i]));
      break;
    default:
      storeU16(q.data, i, floatToF16(src.x[i]));
      break;
    }
  }
  return q;
}

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

static std::string checkDirection(const Scheme &s, Direction d, int64_t m,
                                  int64_t k, const DelayedScalingState *state) {
  std::string prefix = std::string(directionName(d)) + " scheme: ";
  std::string e = s.validate();
  if (e.empty())
    e = validateShape(s, d, m, k);
  if (e.empty() && s.kind == SchemeKind::Fp8Delayed &&
      (!state || state->history.empty()))
    e = "fp8_delayed needs a DelayedScalingState with a non-empty history "
        "(QuantizeOptions::delayed / delayedColumnwise)";
  return e.empty() ? e : prefix + e;
}

static QuantizedDirection quantizeOne(const SourceView &src, const Scheme &s,
                                      Direction d,
                                      const QuantizeOptions &options,
                                      DelayedScalingState *state) {
  QuantizedDirection q;
  switch (s.kind) {
  case SchemeKind::Fp8Current:
  case SchemeKind::Fp8Delayed:
    return quantizePerTensor(src, s, d, options, state);
  case SchemeKind::Mxfp8:
    q = quantizeMxfp8(src, s, d, options);
    break;
  case SchemeKind::Nvfp4:
    q = detail::quantizeNvfp4(src, s, d, options);
    break;
  case SchemeKind::Fp8Block:
    return quantizeFp8Block(src, s, d, options);
  case SchemeKind::Identity:
    return quantizeIdentity(src, s, d, options);
  }
  if (options.swizzleScales) {
    q.scaleInv.bytes =
        swizzleScalesFor(s, d, q.scaleInv.bytes, q.scaleInv.desc);
    q.swizzledScales = true;
  }
  return q;
}

QuantizedTensor quantize(const void *x, SourceType type, int64_t m, int64_t k,
                         const Scheme &rowwise, const Scheme &columnwise,
                         unsigned directions, const QuantizeOptions &options) {
  QuantizedTensor t;
  if (directions == 0 || (directions & ~kBothDirections) != 0) {
    t.error = "directions must be a non-empty mask of kRowwiseMask and "
              "kColumnwiseMask";
    return t;
  }
  if (!x) {
    t.error = "the input pointer is null";
    return t;
  }
  bool wantRow = directions & kRowwiseMask;
  bool wantCol = directions & kColumnwiseMask;
  DelayedScalingState *rowState = options.delayed;
  DelayedScalingState *colState =
      options.delayedColumnwise ? options.delayedColumnwise : options.delayed;
  if (wantRow)
    t.error = checkDirection(rowwise, Direction::Rowwise, m, k, rowState);
  if (t.error.empty() && wantCol)
    t.error = checkDirection(columnwise, Direction::Columnwise, m, k, colState);
  if (!t.ok())
    return t;

  std::vector<float> widened = widenToF32(x, type, m * k);
  SourceView src;
  src.raw = x;
  src.type = type;
  src.x = widened.data();
  src.m = m;
  src.k = k;
  if (wantRow)
    t.rowwise =
        quantizeOne(src, rowwise, Direction::Rowwise, options, rowState);
  if (wantCol) {
    t.columnwise =
        quantizeOne(src, columnwise, Direction::Columnwise, options, colState);
    // storageFor describes one scheme; in a hybrid the columnwise direction
    // cannot share the (differently quantized) rowwise buffers.
    if (rowwise != columnwise)
      t.columnwise->sharesRowwiseData = t.columnwise->sharesRowwiseScale =
          false;
  }
  return t;
}

QuantizedTensor quantize(const void *x, SourceType type, int64_t m, int64_t k,
                         const Scheme &scheme, unsigned directions,
                         const QuantizeOptions &options) {
  return quantize(x, type, m, k, scheme, scheme, directions, options);
}

QuantizedTensor quantizeFromRowwiseDequantized(const void *x, SourceType type,
                                               int64_t m, int64_t k,
                                               const Scheme &source,
                                               const Scheme &columnwise,
                                               const QuantizeOptions &options) {
  // The rowwise step quantizes as a quantize of that scheme alone would
  // (a fresh delayed-scaling state of its own).
  QuantizeOptions first = options;
  DelayedScalingState fresh;
  fresh.history.assign(size_t(source.history), 0.0f);
  first.delayed = first.delayedColumnwise = &fresh;
  QuantizedTensor rowwise =
      quantize(x, type, m, k, source, kRowwiseMask, first);
  if (!rowwise.ok())
    return rowwise;
  std::vector<float> values =
      dequantize(rowwise, Direction::Rowwise, source, m, k);
  // Rounded to the tensor's type, as a dequantize to it writes them.
  std::vector<uint8_t> narrowed(values.size() *
                                (type == SourceType::F32 ? 4 : 2));
  for (size_t i = 0; i < values.size(); ++i) {
    // Little-endian, whatever the host's byte order.
    uint32_t bits = type == SourceType::F32    ? floatToBits(values[i])
                    : type == SourceType::BF16 ? floatToBF16(values[i])
                                               : floatToF16(values[i]);
    size_t size = type == SourceType::F32 ? 4 : 2;
    for (size_t b = 0; b < size; ++b)
      narrowed[size * i + b] = uint8_t(bits >> (8 * b));
  }
  return quantize(narrowed.data(), type, m, k, columnwise, kColumnwiseMask,
                  options);
}

//===----------------------------------------------------------------------===//
// Dequantize
//===----------------------------------------------------------------------===//

std::vector<float> dequantize(const QuantizedTensor &t, Direction d,
                              const Scheme &scheme, int64_t m, int64_t k) {
  const QuantizedDirection *q = t.get(d);
  if (!q)
    return {};
  return dequantize(*q, d, scheme, m, k);
}

std::vector<float> dequantize(const QuantizedDirection &q, Direction d,
                              const Scheme &scheme, int64_t m, int64_t k) {
  if (m < 1 || k < 1 || !q.data.present())
    return {};
  // The buffers must be the ones the scheme stores (any target: per-tensor
  // data is either plain or transposed, as the flag says).
  DirectionStorage st = storageFor(
      scheme, d, m, k, Target{q.dataTransposed || d == Direction::Rowwise});
  if (!(q.data.desc == st.data) || !(q.scaleInv.desc == st.scaleInv) ||
      q.data.bytes.size() != static_cast<size_t>(st.data.bytes()) ||
      q.scaleInv.bytes.size() != static_cast<size_t>(st.scaleInv.bytes()))
    return {};
  std::vector<float> out(static_cast<size_t>(m * k));
  bool row = d == Direction::Rowwise;
  switch (scheme.kind) {
  case SchemeKind::Fp8Current:
  case SchemeKind::Fp8Delayed: {
    Fp8Format format = fp8FormatOf(scheme.element);
    float scaleInv = loadF32(q.scaleInv, 0);
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < k; ++c)
        out[r * k + c] =
            decodeFp8(format, q.data.bytes[dataIndex(q, r, c, m, k)]) *
            scaleInv;
    return out;
  }
  case SchemeKind::Mxfp8: {
    Fp8Format format = fp8FormatOf(scheme.element);
    int64_t cols = q.scaleInv.desc.cols, rows = q.scaleInv.desc.rows;
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < k; ++c) {
        int64_t at;
        if (row)
          at = detail::scaleIndex(q.swizzledScales, r, c / 32, cols);
        else if (q.swizzledScales)
          at = gemmSwizzledScaleIndex(c, r / 32, rows);
        else
          at = (r / 32) * cols + c;
        out[r * k + c] = decodeFp8(format, q.data.bytes[r * k + c]) *
                         decodeE8M0(q.scaleInv.bytes[at]);
      }
    }
    return out;
  }
  case SchemeKind::Nvfp4:
    return detail::dequantizeNvfp4(q, d, m, k);
  case SchemeKind::Fp8Block: {
    Fp8Format format = fp8FormatOf(scheme.element);
    int64_t stride = q.scaleInv.desc.cols;
    bool tile2d = scheme.tileRows == 128;
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < k; ++c) {
        int64_t rb = r / 128, cb = c / 128, at;
        if (tile2d)
          at = row ? rb * stride + cb : cb * stride + rb;
        else
          at = row ? cb * stride + r : rb * stride + c;
        out[r * k + c] =
            decodeFp8(format, q.data.bytes[dataIndex(q, r, c, m, k)]) *
            loadF32(q.scaleInv, at);
      }
    }
    return out;
  }
  case SchemeKind::Identity:
    for (int64_t i = 0; i < m * k; ++i) {
      if (scheme.element == DType::F32)
        out[i] = loadF32(q.data, i);
      else if (scheme.element == DType::BF16)
        out[i] = bf16ToFloat(loadU16(q.data, i));
      else
        out[i] = f16ToFloat(loadU16(q.data, i));
    }
    return out;
  }
  return {};
}

} // namespace ref
} // namespace rt
} // namespace te
