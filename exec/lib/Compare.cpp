//===- Compare.cpp - Compare two backends' results ------------------------===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//

#include "te/exec/Compare.h"

#include "te/runtime/reference/Codecs.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace te::exec {

using rt::DType;
namespace ref = rt::ref;

/// Whether element `i` of two buffers of type `t` are both NaN: the
/// documented equivalence (docs/Numerics.md) for NaN inputs, whose FP8 and
/// 16-bit codes differ between the reference and the hardware conversions.
static bool bothNaN(rt::DType t, const uint8_t *a, const uint8_t *b) {
  auto nan = [t](const uint8_t *p) {
    switch (t) {
    case DType::E4M3:
      return (p[0] & 0x7F) == 0x7F;
    case DType::E5M2:
      return (p[0] & 0x7F) > 0x7C;
    case DType::BF16:
      return ((p[0] | p[1] << 8) & 0x7FFF) > 0x7F80;
    case DType::F16:
      return ((p[0] | p[1] << 8) & 0x7FFF) > 0x7C00;
    case DType::F32: {
      uint32_t bits = uint32_t(p[0]) | uint32_t(p[1]) << 8 |
                      uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
      return (bits & 0x7FFFFFFFu) > 0x7F800000u;
    }
    default:
      return false;
    }
  };
  return nan(a) && nan(b);
}

/// The bytes that differ between two buffers of the same type and size, from
/// byte `from` on (the first difference: none before it), not counting
/// elements that are NaN in both. Says whether one stray byte or a whole
/// region disagrees.
static size_t differingBytes(const NamedBuffer &x, const NamedBuffer &y,
                             size_t from) {
  size_t elemBytes = size_t(rt::dtypeSize(x.desc.dtype)), n = 0;
  for (size_t e = from; e + elemBytes <= x.bytes.size(); e += elemBytes) {
    const uint8_t *p = &x.bytes[e], *q = &y.bytes[e];
    if (std::memcmp(p, q, elemBytes) == 0 || bothNaN(x.desc.dtype, p, q))
      continue;
    for (size_t b = 0; b < elemBytes; ++b)
      n += p[b] != q[b];
  }
  return n;
}

/// Element i of a 16/32-bit float buffer as float.
static float elementValue(const NamedBuffer &b, size_t i) {
  const uint8_t *p = &b.bytes[i * size_t(rt::dtypeSize(b.desc.dtype))];
  switch (b.desc.dtype) {
  case DType::F32: {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  case DType::BF16:
    return ref::bf16ToFloat(uint16_t(p[0] | p[1] << 8));
  default:
    return ref::f16ToFloat(uint16_t(p[0] | p[1] << 8));
  }
}

static std::string where(size_t r, const NamedBuffer &x, int64_t elem) {
  return "result " + std::to_string(r) + " " + x.name + ": element [" +
         std::to_string(elem / x.desc.cols) + ", " +
         std::to_string(elem % x.desc.cols) + "] of " +
         std::to_string(x.desc.rows) + "x" + std::to_string(x.desc.cols) + " " +
         rt::dtypeName(x.desc.dtype);
}

/// Bounded comparison of one buffer; "" when every element is in bound.
static std::string compareBounded(size_t r, const NamedBuffer &x,
                                  const NamedBuffer &y,
                                  const std::vector<float> &tolerance,
                                  const char *nameA, const char *nameB,
                                  double &worst) {
  size_t n = x.bytes.size() / size_t(rt::dtypeSize(x.desc.dtype));
  if (tolerance.size() != n)
    return "result " + std::to_string(r) + " " + x.name +
           ": tolerance does not cover the buffer";
  for (size_t i = 0; i < n; ++i) {
    float u = elementValue(x, i), v = elementValue(y, i);
    bool finite = std::isfinite(u) && std::isfinite(v);
    double err = finite ? std::fabs(double(u) - double(v)) : 0.0;
    bool ok = finite ? err <= tolerance[i]
                     : (std::isnan(u) && std::isnan(v)) || u == v;
    if (finite && tolerance[i] > 0)
      worst = std::max(worst, err / tolerance[i]);
    if (!ok) {
      char text[160];
      std::snprintf(text, sizeof text,
                    ": %s %.9g %s %.9g, |difference| %.3g > bound %.3g", nameA,
                    double(u), nameB, double(v), err, double(tolerance[i]));
      return where(r, x, int64_t(i)) + text;
    }
  }
  return "";
}

Comparison compareResults(const std::vector<ValueData> &a,
                          const std::vector<ValueData> &b, const char *nameA,
                          const char *nameB) {
  Comparison c;
  auto differ = [&c](std::string why) {
    c.difference = std::move(why);
    return c;
  };
  if (a.size() != b.size())
    return differ("different result counts");
  for (size_t r = 0; r < a.size(); ++r) {
    if (a[r].size() != b[r].size())
      return differ("result " + std::to_string(r) + ": different buffer sets");
    for (size_t i = 0; i < a[r].size(); ++i) {
      const NamedBuffer &x = a[r][i], &y = b[r][i];
      if (x.name != y.name || !(x.desc == y.desc) ||
          x.bytes.size() != y.bytes.size())
        return differ("result " + std::to_string(r) + " " + x.name +
                      ": different buffer shapes");
      c.bytes += x.bytes.size();
      if (x.unbounded || y.unbounded) {
        ++c.uncheckedBuffers;
        continue;
      }
      const std::vector<float> &tolerance =
          x.tolerance.empty() ? y.tolerance : x.tolerance;
      if (!tolerance.empty()) {
        ++c.boundedBuffers;
        std::string d =
            compareBounded(r, x, y, tolerance, nameA, nameB, c.worstBoundRatio);
        if (!d.empty())
          return differ(d);
        continue;
      }
      ++c.exactBuffers;
      size_t elemBytes = size_t(rt::dtypeSize(x.desc.dtype));
      for (size_t j = 0; j < x.bytes.size(); ++j) {
        if (x.bytes[j] == y.bytes[j])
          continue;
        size_t first = j / elemBytes * elemBytes;
        if (bothNaN(x.desc.dtype, &x.bytes[first], &y.bytes[first])) {
          j = first + elemBytes - 1;
          continue;
        }
        char hex[64];
        std::snprintf(hex, sizeof hex, ") %s 0x%02x %s 0x%02x", nameA,
                      unsigned(x.bytes[j]), nameB, unsigned(y.bytes[j]));
        std::string at = where(r, x, int64_t(j / elemBytes));
        size_t colon = at.find(": element");
        return differ(at.substr(0, colon) + ": byte " + std::to_string(j) +
                      " (" + at.substr(colon + 2) + hex + "; " +
                      std::to_string(differingBytes(x, y, first)) + " of " +
                      std::to_string(x.bytes.size()) +
                      " bytes of the buffer differ");
      }
    }
  }
  return c;
}

std::string firstDifference(const std::vector<ValueData> &a,
                            const std::vector<ValueData> &b, const char *nameA,
                            const char *nameB) {
  return compareResults(a, b, nameA, nameB).difference;
}

void Comparison::accumulate(const Comparison &c) {
  exactBuffers += c.exactBuffers;
  boundedBuffers += c.boundedBuffers;
  uncheckedBuffers += c.uncheckedBuffers;
  bytes += c.bytes;
  worstBoundRatio = std::max(worstBoundRatio, c.worstBoundRatio);
}

} // namespace te::exec
