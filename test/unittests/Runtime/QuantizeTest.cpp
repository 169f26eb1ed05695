//===- test/unittests/Runtime/QuantizeTest.cpp - Quantize -------*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR and no CUDA.
//
//===----------------------------------------------------------------------===//
//
// Checks the whole-tensor reference quantizer against a naive model written
// in this file straight from docs/Numerics.md: every element recomputes its own
// block amax, scale and code, and is placed by an explicit index formula.
// The model uses only the element codecs (Codecs.h, tested on their own) and
// Philox; it never calls the quantizer or Scales.h. Every scheme runs on
// random data and on edge data (zeros, subnormals, the largest finite
// values, +-Inf, NaN) for every direction set, and the tests also pin
// direction independence (hybrid == single scheme), hybrid pairs, round
// trips within each format's error bound, the RHT and stochastic rounding.
//
//===----------------------------------------------------------------------===//

#include "te/runtime/reference/Quantize.h"

#include "te/runtime/reference/Codecs.h"
#include "te/runtime/reference/Philox.h"

#include "gtest/gtest.h"

#include "Support/Minifloat.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

using namespace te::rt;
using namespace te::rt::ref;

namespace {

//===----------------------------------------------------------------------===//
// Inputs
//===----------------------------------------------------------------------===//

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

uint64_t splitmix(uint64_t &state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// Uniform in [-1, 1) times 2^e, e uniform in [-4, 4].
float randomValue(uint64_t &state) {
  uint64_t r = splitmix(state);
  float u = static_cast<float>(r >> 40) / 16777216.0f * 2.0f - 1.0f;
  int e = static_cast<int>((r >> 8) % 9) - 4;
  return std::ldexp(u, e);
}

/// A test tensor: the caller-side bits and their exact fp32 values.
struct Input {
  std::string name;
  SourceType type = SourceType::BF16;
  int64_t m = 0, k = 0;
  std::vector<uint16_t> half;
  std::vector<float> f32;
  std::vector<float> x; ///< widened values

  const void *ptr() const {
    return type == SourceType::F32 ? static_cast<const void *>(f32.data())
                                   : static_cast<const void *>(half.data());
  }
};

/// Encodes fp32 values (representable or not) into the source type.
Input makeInput(const std::string &name, SourceType type, int64_t m, int64_t k,
                const std::vector<float> &values) {
  Input in;
  in.name = name;
  in.type = type;
  in.m = m;
  in.k = k;
  for (float v : values) {
    if (type == SourceType::F32) {
      in.f32.push_back(v);
      in.x.push_back(v);
    } else if (type == SourceType::BF16) {
      in.half.push_back(floatToBF16(v));
      in.x.push_back(bf16ToFloat(in.half.back()));
    } else {
      in.half.push_back(floatToF16(v));
      in.x.push_back(f16ToFloat(in.half.back()));
    }
  }
  return in;
}

Input randomInput(SourceType type, int64_t m, int64_t k, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(m * k));
  for (float &e : v)
    e = randomValue(seed);
  return makeInput("random", type, m, k, v);
}

/// Largest finite value and smallest subnormal of the source type.
float typeMax(SourceType t) {
  return t == SourceType::F32    ? FLT_MAX
         : t == SourceType::BF16 ? bf16ToFloat(0x7F7F)
                                 : 65504.0f;
}
float typeMinSubnormal(SourceType t) {
  return t == SourceType::F32    ? std::ldexp(1.0f, -149)
         : t == SourceType::BF16 ? std::ldexp(1.0f, -133)
                                 : std::ldexp(1.0f, -24);
}

/// Random data with edge regions (needs m >= 64, k >= 96): an all-zero
/// 32x32 tile, a 32x32 tile of subnormals, +-max finite, NaNs (one an
/// all-NaN 1x32 run), -0 and, if `withInf`, +-Inf.
Input edgeInput(SourceType type, int64_t m, int64_t k, uint64_t seed,
                bool withInf) {
  std::vector<float> v(static_cast<size_t>(m * k));
  for (float &e : v)
    e = randomValue(seed);
  auto at = [&](int64_t r, int64_t c) -> float & { return v[r * k + c]; };
  for (int64_t r = 32; r < 64; ++r) {
    for (int64_t c = 0; c < 32; ++c)
      at(r, c) = 0.0f;
    for (int64_t c = 32; c < 64; ++c) {
      float mant = static_cast<float>(1 + splitmix(seed) % 7);
      at(r, c) = (splitmix(seed) & 1 ? -mant : mant) * typeMinSubnormal(type);
    }
  }
  at(5, 70) = typeMax(type);
  at(6, 71) = -typeMax(type);
  at(10, 3) = kNaN;
  at(11, 3) = -kNaN;
  for (int64_t c = 64; c < 96; ++c)
    at(16, c) = kNaN;
  at(20, 20) = -0.0f;
  at(1, 1) = 1.0f / 3.0f;
  if (withInf) {
    at(12, 80) = kInf;
    at(13, 81) = -kInf;
  }
  return makeInput(withInf ? "edge+inf" : "edge", type, m, k, v);
}

std::vector<Input> standardInputs(int64_t m, int64_t k) {
  std::vector<Input> ins;
  ins.push_back(randomInput(SourceType::BF16, m, k, 1));
  ins.push_back(randomInput(SourceType::F32, m, k, 2));
  ins.push_back(randomInput(SourceType::F16, m, k, 3));
  ins.push_back(edgeInput(SourceType::BF16, m, k, 4, false));
  ins.push_back(edgeInput(SourceType::BF16, m, k, 5, true));
  ins.push_back(edgeInput(SourceType::F32, m, k, 6, false));
  ins.push_back(edgeInput(SourceType::F32, m, k, 7, true));
  ins.push_back(edgeInput(SourceType::F16, m, k, 8, true));
  return ins;
}

//===----------------------------------------------------------------------===//
// The naive model (docs/Numerics.md, element by element)
//===----------------------------------------------------------------------===//

/// Expected bytes of one direction and the logical dequantized values.
struct Expected {
  std::vector<uint8_t> data, scale, amax;
  std::vector<float> deq;
};

void putF32(std::vector<uint8_t> &bytes, int64_t index, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  for (int i = 0; i < 4; ++i)
    bytes[4 * index + i] = static_cast<uint8_t>(bits >> (8 * i));
}

std::vector<uint8_t> f32Bytes(float v) {
  std::vector<uint8_t> b(4);
  putF32(b, 0, v);
  return b;
}

int64_t roundUpTo(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

/// max |x| ignoring NaN (fmax semantics).
float naiveAmax(const std::vector<float> &values) {
  float a = 0.0f;
  for (float v : values)
    if (!std::isnan(v))
      a = std::max(a, std::fabs(v));
  return a;
}

/// compute_scale_from_amax, docs/Numerics.md §3 step 3.
float naiveScale(float amax, float fp8Max, bool pow2, float eps,
                 float valueForInf) {
  if (amax < eps)
    amax = eps;
  if (std::isinf(amax) || amax == 0.0f || std::isnan(amax))
    return 1.0f;
  float s = fp8Max / amax;
  if (std::isinf(s))
    s = valueForInf;
  if (pow2) {
    uint32_t bits;
    std::memcpy(&bits, &s, 4);
    bits &= 0xFF800000u;
    std::memcpy(&s, &bits, 4);
  }
  return s;
}

Fp8Format formatOf(DType t) {
  return t == DType::E5M2 ? Fp8Format::E5M2 : Fp8Format::E4M3;
}

/// Per-tensor FP8 with a given scale: data plain [M][K] or transposed.
Expected naivePerTensor(const Input &in, Fp8Format f, float scale,
                        float recordedAmax, bool transposed) {
  int64_t m = in.m, k = in.k;
  Expected e;
  e.data.resize(m * k);
  e.deq.resize(m * k);
  float scaleInv = 1.0f / scale;
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < k; ++c) {
      uint8_t q = encodeFp8(f, in.x[r * k + c] * scale);
      e.data[transposed ? c * m + r : r * k + c] = q;
      e.deq[r * k + c] = decodeFp8(f, q) * scaleInv;
    }
  }
  e.scale = f32Bytes(scaleInv);
  e.amax = f32Bytes(recordedAmax);
  return e;
}

/// Swizzled position, docs/Numerics.md §5.3, written out again.
int64_t swz(int64_t i, int64_t j, int64_t cols) {
  int64_t tile = (i / 128) * (cols / 4) + j / 4;
  return tile * 512 + (i % 32) * 16 + ((i % 128) / 32) * 4 + j % 4;
}

/// Smallest E in [0, 254] with 2^(E-127) >= v (v >= 0), else 254.
uint8_t naiveE8M0(float v) {
  for (int e = 0; e <= 254; ++e)
    if (std::ldexp(1.0, e - 127) >= static_cast<double>(v))
      return static_cast<uint8_t>(e);
  return 254;
}

Expected naiveMxfp8(const Input &in, Fp8Format f, bool row, bool swizzled) {
  int64_t m = in.m, k = in.k;
  float rcp = static_cast<float>(1.0 / static_cast<double>(fp8MaxNorm(f)));
  int64_t sRows = row ? roundUpTo(m, 128) : roundUpTo(m / 32, 4);
  int64_t sCols = row ? roundUpTo(k / 32, 4) : roundUpTo(k, 128);
  Expected e;
  e.data.resize(m * k);
  e.deq.resize(m * k);
  e.scale.assign(sRows * sCols, 0);
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < k; ++c) {
      std::vector<float> block;
      for (int64_t t = 0; t < 32; ++t)
        block.push_back(row ? in.x[r * k + c / 32 * 32 + t]
                            : in.x[(r / 32 * 32 + t) * k + c]);
      uint8_t exponent = naiveE8M0(naiveAmax(block) * rcp);
      float mult = std::ldexp(1.0f, 127 - exponent);
      uint8_t q = encodeFp8(f, in.x[r * k + c] * mult);
      e.data[r * k + c] = q;
      e.deq[r * k + c] =
          decodeFp8(f, q) * static_cast<float>(std::ldexp(1.0, exponent - 127));
      int64_t at;
      if (row)
        at = swizzled ? swz(r, c / 32, sCols) : r * sCols + c / 32;
      else
        at = swizzled ? swz(c, r / 32, sRows) : (r / 32) * sCols + c;
      e.scale[at] = exponent;
    }
  }
  return e;
}

/// The NVFP4 source matrix of a direction: x, x^T or RHT(x^T) in bf16.
std::vector<float> nvfp4Source(const Input &in, bool row, bool rht) {
  int64_t m = in.m, k = in.k;
  if (row)
    return in.x;
  static const int kSigns[16] = {1,  1,  1,  -1, 1,  -1, -1, -1,
                                 -1, -1, -1, 1,  -1, 1,  -1, -1};
  std::vector<float> t(m * k);
  for (int64_t c = 0; c < k; ++c) {
    for (int64_t r = 0; r < m; ++r) {
      if (!rht) {
        t[c * m + r] = in.x[r * k + c];
        continue;
      }
      int64_t r0 = r / 16 * 16, j = r % 16;
      float acc = 0.0f;
      for (int kk = 0; kk < 16; ++kk) {
        int bitsSet = __builtin_popcount(static_cast<unsigned>(kk & j));
        float entry = kSigns[kk] * (bitsSet % 2 ? -0.25f : 0.25f);
        acc = acc + in.x[(r0 + kk) * k + c] * entry;
      }
      t[c * m + r] = bf16ToFloat(floatToBF16(acc));
    }
  }
  return t;
}

float e2m1Value(uint8_t code) {
  float magnitude =
      static_cast<float>(te::test::minifloatValue(code & 7, 1, 1));
  return code & 8 ? -magnitude : magnitude;
}

struct Nvfp4Config {
  bool rht = false, sr = false, block2d = false, swizzled = false;
  uint64_t seed = 0, offset = 0;
};

Expected naiveNvfp4(const Input &in, bool row, const Nvfp4Config &cfg) {
  int64_t rows = row ? in.m : in.k, cols = row ? in.k : in.m;
  std::vector<float> s = nvfp4Source(in, row, cfg.rht);
  float amax = naiveAmax(s);
  // docs/Numerics.md §6.2.
  float sEnc = std::fmin(2688.0f / amax, FLT_MAX);
  if (amax == 0.0f || sEnc == 0.0f)
    sEnc = 1.0f;
  float sDec = static_cast<float>(1.0 / static_cast<double>(sEnc));
  float sixth = static_cast<float>(1.0 / 6.0);
  float mult6 = sEnc * sixth;
  float inv2688 = static_cast<float>(1.0 / 2688.0);
  int64_t sRows = roundUpTo(rows, 128), sCols = roundUpTo(cols / 16, 4);
  Expected e;
  e.data.assign(rows * cols / 2, 0);
  e.scale.assign(sRows * sCols, 0);
  e.amax = f32Bytes(amax);
  e.deq.resize(in.m * in.k);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      std::vector<float> block;
      int64_t i0 = cfg.block2d ? i / 16 * 16 : i;
      int64_t i1 = cfg.block2d ? i0 + 16 : i + 1;
      for (int64_t ii = i0; ii < i1; ++ii)
        for (int64_t jj = j / 16 * 16; jj < j / 16 * 16 + 16; ++jj)
          block.push_back(s[ii * cols + jj]);
      uint8_t sb = encodeE4M3(std::fmin(naiveAmax(block) * mult6, FLT_MAX));
      float enc = std::fmin(1.0f / (decodeE4M3(sb) * sDec), FLT_MAX);
      float y = s[i * cols + j] * enc;
      uint8_t code =
          cfg.sr ? encodeE2M1Stochastic(
                       y, srRandomByte(cfg.seed, cfg.offset,
                                       static_cast<uint64_t>(i * cols + j)))
                 : encodeE2M1(y);
      e.data[(i * cols + j) / 2] |=
          static_cast<uint8_t>(j % 2 ? code << 4 : code);
      e.scale[cfg.swizzled ? swz(i, j / 16, sCols) : i * sCols + j / 16] = sb;
      int64_t r = row ? i : j, c = row ? j : i;
      e.deq[r * in.k + c] =
          e2m1Value(code) * ((decodeE4M3(sb) * amax) * inv2688);
    }
  }
  return e;
}

Expected naiveBlock(const Input &in, Fp8Format f, bool tile2d, bool row,
                    bool pow2, float eps) {
  int64_t m = in.m, k = in.k, mb = (m + 127) / 128, kb = (k + 127) / 128;
  int64_t sRows, sCols;
  if (tile2d) {
    sRows = row ? mb : kb;
    sCols = roundUpTo(row ? kb : mb, 4);
  } else {
    sRows = row ? kb : mb;
    sCols = roundUpTo(row ? m : k, 4);
  }
  Expected e;
  e.data.resize(m * k);
  e.deq.resize(m * k);
  e.scale.assign(sRows * sCols * 4, 0);
  // Scale of each block, computed when the block's first element is met.
  std::vector<float> cache(m * k, -1.0f);
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < k; ++c) {
      // The block holding (r, c), clipped at the edges.
      int64_t r0 = tile2d || !row ? r / 128 * 128 : r;
      int64_t r1 = tile2d || !row ? std::min(m, r0 + 128) : r + 1;
      int64_t c0 = tile2d || row ? c / 128 * 128 : c;
      int64_t c1 = tile2d || row ? std::min(k, c0 + 128) : c + 1;
      float &scale = cache[r0 * k + c0];
      if (scale < 0.0f) {
        std::vector<float> block;
        for (int64_t rr = r0; rr < r1; ++rr)
          for (int64_t cc = c0; cc < c1; ++cc)
            block.push_back(in.x[rr * k + cc]);
        scale = naiveScale(naiveAmax(block), fp8MaxNorm(f), pow2, eps,
                           typeMax(in.type));
      }
      float scaleInv = static_cast<float>(1.0 / static_cast<double>(scale));
      uint8_t q = encodeFp8(f, in.x[r * k + c] * scale);
      e.data[row ? r * k + c : c * m + r] = q;
      e.deq[r * k + c] = decodeFp8(f, q) * scaleInv;
      int64_t at;
      if (tile2d)
        at = row ? (r / 128) * sCols + c / 128 : (c / 128) * sCols + r / 128;
      else
        at = row ? (c / 128) * sCols + r : (r / 128) * sCols + c;
      putF32(e.scale, at, scaleInv);
    }
  }
  return e;
}

//===----------------------------------------------------------------------===//
// Comparison helpers
//===----------------------------------------------------------------------===//

/// Number of differing bytes, with the first one reported.
void expectSameBytes(const std::vector<uint8_t> &got,
                     const std::vector<uint8_t> &want, const char *what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int64_t mismatches = 0, first = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      if (first < 0)
        first = static_cast<int64_t>(i);
      ++mismatches;
    }
  }
  EXPECT_EQ(mismatches, 0) << what << ": first mismatch at byte " << first
                           << " (got " << (first >= 0 ? int(got[first]) : 0)
                           << ", want " << (first >= 0 ? int(want[first]) : 0)
                           << ")";
}

bool sameFloatBits(float a, float b) {
  if (std::isnan(a) && std::isnan(b))
    return true;
  return std::memcmp(&a, &b, 4) == 0;
}

void expectSameValues(const std::vector<float> &got,
                      const std::vector<float> &want, const char *what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int64_t mismatches = 0, first = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!sameFloatBits(got[i], want[i])) {
      if (first < 0)
        first = static_cast<int64_t>(i);
      ++mismatches;
    }
  }
  EXPECT_EQ(mismatches, 0) << what << ": first mismatch at " << first << " ("
                           << (first >= 0 ? got[first] : 0.0f) << " vs "
                           << (first >= 0 ? want[first] : 0.0f) << ")";
}

/// Checks a produced direction against the model, buffers and dequantize.
void expectDirection(const QuantizedTensor &t, Direction d, const Scheme &s,
                     const Input &in, const Expected &want) {
  const QuantizedDirection *q = t.get(d);
  ASSERT_NE(q, nullptr);
  expectSameBytes(q->data.bytes, want.data, "data");
  expectSameBytes(q->scaleInv.bytes, want.scale, "scale_inv");
  expectSameBytes(q->amax.bytes, want.amax, "amax");
  expectSameValues(dequantize(t, d, s, in.m, in.k), want.deq, "dequantize");
  DirectionStorage st = storageFor(
      s, d, in.m, in.k, Target{q->dataTransposed || d == Direction::Rowwise});
  EXPECT_EQ(q->data.desc, st.data);
  EXPECT_EQ(q->scaleInv.desc, st.scaleInv);
  EXPECT_EQ(q->amax.desc, st.amax);
}

const unsigned kMasks[] = {kRowwiseMask, kColumnwiseMask, kBothDirections};

std::string traceOf(const Input &in, unsigned mask) {
  const char *type = in.type == SourceType::BF16  ? "bf16"
                     : in.type == SourceType::F16 ? "f16"
                                                  : "f32";
  return in.name + " " + type + " " + std::to_string(in.m) + "x" +
         std::to_string(in.k) + " mask " + std::to_string(mask);
}

//===----------------------------------------------------------------------===//
// Per-tensor FP8
//===----------------------------------------------------------------------===//

TEST(QuantizeFp8Current, MatchesModelForEveryDirectionSetAndTarget) {
  for (const Input &in : standardInputs(64, 96)) {
    for (DType el : {DType::E4M3, DType::E5M2}) {
      for (bool pow2 : {false, true}) {
        Scheme s = Scheme::fp8Current(el, pow2);
        Fp8Format f = formatOf(el);
        float amax = naiveAmax(in.x);
        float scale = naiveScale(amax, fp8MaxNorm(f), pow2, 0.0f, FLT_MAX);
        for (bool tnOnly : {true, false}) {
          for (unsigned mask : kMasks) {
            SCOPED_TRACE(traceOf(in, mask) + " " + dtypeName(el) +
                         (pow2 ? " pow2" : "") + (tnOnly ? " sm90" : " sm100"));
            QuantizeOptions o;
            o.target = Target{tnOnly};
            QuantizedTensor t =
                quantize(in.ptr(), in.type, in.m, in.k, s, mask, o);
            ASSERT_TRUE(t.ok()) << t.error;
            EXPECT_EQ(bool(t.rowwise), bool(mask & kRowwiseMask));
            EXPECT_EQ(bool(t.columnwise), bool(mask & kColumnwiseMask));
            if (mask & kRowwiseMask)
              expectDirection(t, Direction::Rowwise, s, in,
                              naivePerTensor(in, f, scale, amax, false));
            if (mask & kColumnwiseMask) {
              // TN-only targets keep an explicit transpose; others share
              // (and the reference copies) the rowwise bytes.
              expectDirection(t, Direction::Columnwise, s, in,
                              naivePerTensor(in, f, scale, amax, tnOnly));
              EXPECT_EQ(t.columnwise->dataTransposed, tnOnly);
              EXPECT_EQ(t.columnwise->sharesRowwiseData, !tnOnly);
              EXPECT_TRUE(t.columnwise->sharesRowwiseScale);
            }
          }
        }
      }
    }
  }
}

TEST(QuantizeFp8Current, EdgeScales) {
  // amax 0 -> scale 1; amax Inf -> scale 1 and Inf saturates to +-448;
  // eps lifts a tiny amax; a tiny amax without eps gives FLT_MAX (2^127
  // with pow2).
  std::vector<float> zeros(4, 0.0f);
  QuantizedTensor t = quantize(zeros.data(), SourceType::F32, 2, 2,
                               Scheme::fp8Current(DType::E4M3), kRowwiseMask,
                               QuantizeOptions());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(loadF32(t.rowwise->scaleInv, 0), 1.0f);
  EXPECT_EQ(loadF32(t.rowwise->amax, 0), 0.0f);

  std::vector<float> inf = {kInf, -kInf, 1.0f, kNaN};
  t = quantize(inf.data(), SourceType::F32, 2, 2,
               Scheme::fp8Current(DType::E4M3), kRowwiseMask,
               QuantizeOptions());
  EXPECT_EQ(loadF32(t.rowwise->scaleInv, 0), 1.0f);
  EXPECT_TRUE(std::isinf(loadF32(t.rowwise->amax, 0)));
  EXPECT_EQ(t.rowwise->data.bytes,
            (std::vector<uint8_t>{0x7E, 0xFE, 0x38, 0x7F}));

  std::vector<float> tiny = {1e-40f, 0.0f, 0.0f, 0.0f};
  t = quantize(tiny.data(), SourceType::F32, 2, 2,
               Scheme::fp8Current(DType::E4M3), kRowwiseMask,
               QuantizeOptions());
  EXPECT_EQ(loadF32(t.rowwise->scaleInv, 0), 1.0f / FLT_MAX);
  t = quantize(tiny.data(), SourceType::F32, 2, 2,
               Scheme::fp8Current(DType::E4M3, /*pow2=*/true), kRowwiseMask,
               QuantizeOptions());
  EXPECT_EQ(loadF32(t.rowwise->scaleInv, 0), std::ldexp(1.0f, -127));
  t = quantize(tiny.data(), SourceType::F32, 2, 2,
               Scheme::fp8Current(DType::E4M3, false, /*eps=*/0.5),
               kRowwiseMask, QuantizeOptions());
  EXPECT_EQ(loadF32(t.rowwise->scaleInv, 0), 1.0f / 896.0f);
}

TEST(QuantizeFp8Delayed, UsesStateScaleAndMaxAccumulatesAmax) {
  Input in = randomInput(SourceType::BF16, 64, 96, 11);
  float tensorAmax = naiveAmax(in.x);
  Scheme s = Scheme::fp8Delayed(DType::E4M3);
  for (unsigned mask : kMasks) {
    SCOPED_TRACE(mask);
    DelayedScalingState state;
    state.scale = 300.0f; // stale: large values saturate
    state.history = {tensorAmax * 2.0f, 7.0f};
    QuantizeOptions o;
    o.delayed = &state;
    QuantizedTensor t = quantize(in.ptr(), in.type, in.m, in.k, s, mask, o);
    ASSERT_TRUE(t.ok()) << t.error;
    // history[0] keeps the larger old value; the tensor's amax buffer holds
    // its own amax.
    EXPECT_EQ(state.history[0], tensorAmax * 2.0f);
    EXPECT_EQ(state.history[1], 7.0f);
    EXPECT_EQ(state.scale, 300.0f);
    Expected want =
        naivePerTensor(in, Fp8Format::E4M3, 300.0f, tensorAmax, false);
    if (mask & kRowwiseMask)
      expectDirection(t, Direction::Rowwise, s, in, want);
    if (mask & kColumnwiseMask)
      expectDirection(
          t, Direction::Columnwise, s, in,
          naivePerTensor(in, Fp8Format::E4M3, 300.0f, tensorAmax, true));
  }
  // A smaller history slot is raised to the tensor amax; repeated casts in
  // one step accumulate a max (idempotent).
  DelayedScalingState state;
  state.history = {0.0f};
  QuantizeOptions o;
  o.delayed = &state;
  quantize(in.ptr(), in.type, in.m, in.k, s, kBothDirections, o);
  EXPECT_EQ(state.history[0], tensorAmax);
  quantize(in.ptr(), in.type, in.m, in.k, s, kRowwiseMask, o);
  EXPECT_EQ(state.history[0], tensorAmax);
}

TEST(QuantizeFp8Delayed, EdgeDataAndSeparateColumnwiseState) {
  Input in = edgeInput(SourceType::BF16, 64, 96, 12, true);
  DelayedScalingState row, col;
  row.scale = 2.0f;
  row.history = {0.0f, 0.0f, 0.0f};
  col.scale = 0.25f;
  col.history = {1.0f};
  QuantizeOptions o;
  o.delayed = &row;
  o.delayedColumnwise = &col;
  Scheme sr = Scheme::fp8Delayed(DType::E4M3);
  Scheme sc = Scheme::fp8Delayed(DType::E5M2);
  QuantizedTensor t =
      quantize(in.ptr(), in.type, in.m, in.k, sr, sc, kBothDirections, o);
  ASSERT_TRUE(t.ok()) << t.error;
  EXPECT_TRUE(std::isinf(row.history[0]));
  EXPECT_TRUE(std::isinf(col.history[0]));
  expectDirection(t, Direction::Rowwise, sr, in,
                  naivePerTensor(in, Fp8Format::E4M3, 2.0f, kInf, false));
  expectDirection(t, Direction::Columnwise, sc, in,
                  naivePerTensor(in, Fp8Format::E5M2, 0.25f, kInf, true));
}

//===----------------------------------------------------------------------===//
// MXFP8
//===----------------------------------------------------------------------===//

TEST(QuantizeMxfp8, MatchesModelCompactAndSwizzled) {
  for (const Input &in : standardInputs(64, 96)) {
    for (DType el : {DType::E4M3, DType::E5M2}) {
      Scheme s = Scheme::mxfp8(el);
      for (bool swizzle : {false, true}) {
        for (unsigned mask : kMasks) {
          SCOPED_TRACE(traceOf(in, mask) + " " + dtypeName(el) +
                       (swizzle ? " swizzled" : ""));
          QuantizeOptions o;
          o.swizzleScales = swizzle;
          QuantizedTensor t =
              quantize(in.ptr(), in.type, in.m, in.k, s, mask, o);
          ASSERT_TRUE(t.ok()) << t.error;
          for (Direction d : {Direction::Rowwise, Direction::Columnwise}) {
            if (!(mask & unsigned(d)))
              continue;
            expectDirection(
                t, d, s, in,
                naiveMxfp8(in, formatOf(el), d == Direction::Rowwise, swizzle));
            EXPECT_EQ(t.get(d)->swizzledScales, swizzle);
            EXPECT_FALSE(t.get(d)->dataTransposed);
          }
        }
      }
    }
  }
}

TEST(QuantizeMxfp8, EdgeBlocks) {
  // 1x32 blocks: zeros -> E = 0 and zero codes; an Inf -> E = 254, finite
  // neighbours flush to zero and the Inf saturates; an all-NaN block ->
  // E = 0 and NaN codes.
  std::vector<float> x(3 * 32, 0.0f);
  for (int i = 32; i < 64; ++i)
    x[i] = 1.0f;
  x[40] = kInf;
  for (int i = 64; i < 96; ++i)
    x[i] = kNaN;
  QuantizedTensor t =
      quantize(x.data(), SourceType::F32, 3, 32, Scheme::mxfp8(DType::E4M3),
               kRowwiseMask, QuantizeOptions());
  ASSERT_TRUE(t.ok()) << t.error;
  const std::vector<uint8_t> &sc = t.rowwise->scaleInv.bytes;
  EXPECT_EQ(sc[0 * 4], 0);
  EXPECT_EQ(sc[1 * 4], 254);
  EXPECT_EQ(sc[2 * 4], 0);
  EXPECT_EQ(t.rowwise->data.bytes[0], 0);
  EXPECT_EQ(t.rowwise->data.bytes[32], 0);    // 1 * 2^-127 -> 0
  EXPECT_EQ(t.rowwise->data.bytes[40], 0x7E); // Inf -> 448
  EXPECT_EQ(t.rowwise->data.bytes[64], 0x7F); // NaN
  // A block whose amax is exactly 448 * 2^3 gets E = 127 + 3.
  std::vector<float> y(32, 1.0f);
  y[7] = 448.0f * 8.0f;
  t = quantize(y.data(), SourceType::F32, 1, 32, Scheme::mxfp8(DType::E4M3),
               kRowwiseMask, QuantizeOptions());
  EXPECT_EQ(t.rowwise->scaleInv.bytes[0], 130);
  EXPECT_EQ(t.rowwise->data.bytes[7], 0x7E);
  EXPECT_EQ(t.rowwise->data.bytes[0], 0x20); // 1/8 = 2^-3: 0.0100.000
}

//===----------------------------------------------------------------------===//
// NVFP4
//===----------------------------------------------------------------------===//

TEST(QuantizeNvfp4, MatchesModelForEveryVariant) {
  for (const Input &in : standardInputs(64, 96)) {
    for (int variant = 0; variant < 16; ++variant) {
      Nvfp4Config cfg;
      cfg.rht = variant & 1;
      cfg.sr = variant & 2;
      cfg.block2d = variant & 4;
      cfg.swizzled = variant & 8;
      cfg.seed = 0x1234567890ABCDEFull;
      cfg.offset = 77;
      Scheme s = Scheme::nvfp4(cfg.rht, cfg.sr, cfg.block2d);
      Expected wantRow = naiveNvfp4(in, true, cfg);
      Expected wantCol = naiveNvfp4(in, false, cfg);
      for (unsigned mask : kMasks) {
        SCOPED_TRACE(traceOf(in, mask) + " variant " + std::to_string(variant));
        QuantizeOptions o;
        o.seed = cfg.seed;
        o.offset = cfg.offset;
        o.swizzleScales = cfg.swizzled;
        QuantizedTensor t = quantize(in.ptr(), in.type, in.m, in.k, s, mask, o);
        ASSERT_TRUE(t.ok()) << t.error;
        if (mask & kRowwiseMask)
          expectDirection(t, Direction::Rowwise, s, in, wantRow);
        if (mask & kColumnwiseMask) {
          expectDirection(t, Direction::Columnwise, s, in, wantCol);
          EXPECT_TRUE(t.columnwise->dataTransposed);
        }
      }
    }
  }
}

TEST(QuantizeNvfp4, HandComputedBlock) {
  // One 1x16 block, amax 6: S_enc = 2688/6 = 448, s_b = e4m3(6 * 448/6) =
  // e4m3(448) = 0x7E, S_dec = 1/448, enc = 1/(448 * (1/448)) = 1: the
  // values are quantized as they are, ties to the even code: 0.25 -> 0,
  // 0.75 -> 1.0, 2.5 -> 2, 5 -> 4.
  std::vector<float> x = {6.0f, 0.25f, 0.75f, 2.5f, 5.0f, -6.0f, 1.5f,  -0.5f,
                          3.0f, 0.0f,  -0.0f, 4.0f, 1.0f, 2.0f,  -1.0f, 0.1f};
  QuantizedTensor t =
      quantize(x.data(), SourceType::F32, 1, 16, Scheme::nvfp4(), kRowwiseMask,
               QuantizeOptions());
  ASSERT_TRUE(t.ok()) << t.error;
  EXPECT_EQ(t.rowwise->scaleInv.bytes[0], 0x7E);
  EXPECT_EQ(loadF32(t.rowwise->amax, 0), 6.0f);
  std::vector<uint8_t> want = {
      0x7 | 0x0 << 4, // 6, 0.25 -> 0
      0x2 | 0x4 << 4, // 0.75 -> 1.0, 2.5 -> 2
      0x6 | 0xF << 4, // 5 -> 4, -6
      0x3 | 0x9 << 4, // 1.5, -0.5
      0x5 | 0x0 << 4, // 3, 0
      0x8 | 0x6 << 4, // -0, 4
      0x2 | 0x4 << 4, // 1, 2
      0xA | 0x0 << 4, // -1, 0.1 -> 0
  };
  EXPECT_EQ(t.rowwise->data.bytes, want);
}

TEST(QuantizeNvfp4, ColumnwiseAmaxIsPostRht) {
  // Column 3 holds 1..16, everything else is 0: the columnwise amax is the
  // largest |y_j| of y = v R (all outputs multiples of 1/4 below 64, so
  // exact in bf16), not the input amax 16.
  std::vector<float> x(16 * 16, 0.0f);
  for (int r = 0; r < 16; ++r)
    x[r * 16 + 3] = static_cast<float>(r + 1);
  QuantizedTensor t =
      quantize(x.data(), SourceType::F32, 16, 16, Scheme::nvfp4(/*rht=*/true),
               kBothDirections, QuantizeOptions());
  ASSERT_TRUE(t.ok()) << t.error;
  EXPECT_EQ(loadF32(t.rowwise->amax, 0), 16.0f);
  float colAmax = loadF32(t.columnwise->amax, 0);
  double want = 0.0;
  for (int j = 0; j < 16; ++j) {
    double y = 0.0;
    for (int kk = 0; kk < 16; ++kk)
      y += (kk + 1) * double(rhtMatrixEntry(kk, j));
    want = std::max(want, std::fabs(y));
  }
  EXPECT_EQ(colAmax, want);
  EXPECT_NE(colAmax, 16.0f);
  // Without RHT the columnwise amax is the input amax.
  t = quantize(x.data(), SourceType::F32, 16, 16, Scheme::nvfp4(),
               kColumnwiseMask, QuantizeOptions());
  EXPECT_EQ(loadF32(t.columnwise->amax, 0), 16.0f);
}

//===----------------------------------------------------------------------===//
// Block FP8
//===----------------------------------------------------------------------===//

TEST(QuantizeFp8Block, MatchesModelIncludingRaggedEdges) {
  std::vector<Input> ins = standardInputs(64, 96);
  ins.push_back(randomInput(SourceType::BF16, 160, 200, 21));
  ins.push_back(edgeInput(SourceType::F32, 160, 200, 22, true));
  for (const Input &in : ins) {
    for (int64_t tileRows : {int64_t(1), int64_t(128)}) {
      for (bool pow2 : {false, true}) {
        for (DType el : {DType::E4M3, DType::E5M2}) {
          Scheme s = Scheme::fp8Block(el, tileRows, 128, pow2);
          Expected want[2];
          for (int dir = 0; dir < 2; ++dir)
            want[dir] = naiveBlock(in, formatOf(el), tileRows == 128, dir == 0,
                                   pow2, 0.0f);
          for (unsigned mask : kMasks) {
            SCOPED_TRACE(traceOf(in, mask) + " tile " +
                         std::to_string(tileRows) + (pow2 ? " pow2 " : " ") +
                         dtypeName(el));
            QuantizedTensor t = quantize(in.ptr(), in.type, in.m, in.k, s, mask,
                                         QuantizeOptions());
            ASSERT_TRUE(t.ok()) << t.error;
            for (Direction d : {Direction::Rowwise, Direction::Columnwise}) {
              if (mask & unsigned(d))
                expectDirection(t, d, s, in,
                                want[d == Direction::Rowwise ? 0 : 1]);
            }
          }
        }
      }
    }
  }
}

TEST(QuantizeFp8Block, ValueForInfFollowsSourceTypeAndEps) {
  // A block holding only the smallest bf16 subnormal: 448 / 2^-133
  // overflows fp32, so the scale becomes the bf16 maximum 0x1.FEp127.
  std::vector<uint16_t> x(128, 0);
  x[5] = 0x0001;
  QuantizedTensor t = quantize(x.data(), SourceType::BF16, 1, 128,
                               Scheme::fp8Block(DType::E4M3, 1, 128),
                               kRowwiseMask, QuantizeOptions());
  ASSERT_TRUE(t.ok()) << t.error;
  float bf16Max = bf16ToFloat(0x7F7F);
  EXPECT_EQ(loadF32(t.rowwise->scaleInv, 0),
            static_cast<float>(1.0 / static_cast<double>(bf16Max)));
  // With eps = 1 the amax is lifted to 1: scale 448.
  std::vector<float> y(128, 0.0f);
  y[0] = 0.5f;
  t = quantize(y.data(), SourceType::F32, 1, 128,
               Scheme::fp8Block(DType::E4M3, 1, 128, false, /*eps=*/1.0),
               kRowwiseMask, QuantizeOptions());
  EXPECT_EQ(loadF32(t.rowwise->scaleInv, 0), static_cast<float>(1.0 / 448.0));
  EXPECT_EQ(t.rowwise->data.bytes[0], encodeE4M3(224.0f));
}

//===----------------------------------------------------------------------===//
// Identity
//===----------------------------------------------------------------------===//

TEST(QuantizeIdentity, ConvertsRneAndPassesSameTypeBitsThrough) {
  for (const Input &in : standardInputs(64, 96)) {
    for (DType el : {DType::BF16, DType::F16, DType::F32}) {
      Scheme s = Scheme::identity(el);
      for (unsigned mask : kMasks) {
        SCOPED_TRACE(traceOf(in, mask) + " " + dtypeName(el));
        QuantizedTensor t =
            quantize(in.ptr(), in.type, in.m, in.k, s, mask, QuantizeOptions());
        ASSERT_TRUE(t.ok()) << t.error;
        Expected want;
        int64_t n = in.m * in.k;
        want.data.resize(n * dtypeSize(el));
        for (int64_t i = 0; i < n; ++i) {
          uint32_t bits;
          bool same = (el == DType::BF16 && in.type == SourceType::BF16) ||
                      (el == DType::F16 && in.type == SourceType::F16);
          if (el == DType::F32) {
            std::memcpy(&bits, &in.x[i], 4);
          } else if (same) {
            bits = in.half[i];
          } else {
            bits =
                el == DType::BF16 ? floatToBF16(in.x[i]) : floatToF16(in.x[i]);
          }
          for (int b = 0; b < dtypeSize(el); ++b)
            want.data[i * dtypeSize(el) + b] =
                static_cast<uint8_t>(bits >> (8 * b));
          want.deq.push_back(el == DType::F32    ? in.x[i]
                             : el == DType::BF16 ? bf16ToFloat(bits)
                                                 : f16ToFloat(bits));
        }
        for (Direction d : {Direction::Rowwise, Direction::Columnwise}) {
          if (mask & unsigned(d))
            expectDirection(t, d, s, in, want);
        }
        if (mask & kColumnwiseMask) {
          EXPECT_TRUE(t.columnwise->sharesRowwiseData);
        }
      }
    }
  }
  // A signalling bf16 NaN keeps its payload when passed through.
  uint16_t snan[2] = {0x7F81, 0x3F80};
  QuantizedTensor t =
      quantize(snan, SourceType::BF16, 1, 2, Scheme::identity(DType::BF16),
               kRowwiseMask, QuantizeOptions());
  EXPECT_EQ(loadU16(t.rowwise->data, 0), 0x7F81);
}

//===----------------------------------------------------------------------===//
// Hybrid and direction independence
//===----------------------------------------------------------------------===//

std::vector<Scheme> allSchemes() {
  return {Scheme::fp8Current(DType::E4M3),
          Scheme::fp8Current(DType::E5M2, true),
          Scheme::fp8Delayed(DType::E4M3),
          Scheme::mxfp8(DType::E4M3),
          Scheme::mxfp8(DType::E5M2),
          Scheme::nvfp4(),
          Scheme::nvfp4(true, true, false),
          Scheme::nvfp4(false, false, true),
          Scheme::fp8Block(DType::E4M3, 1, 128, true),
          Scheme::fp8Block(DType::E4M3, 128, 128),
          Scheme::identity(DType::BF16),
          Scheme::identity(DType::F32)};
}

void expectSameDirection(const QuantizedDirection &a,
                         const QuantizedDirection &b) {
  expectSameBytes(a.data.bytes, b.data.bytes, "data");
  expectSameBytes(a.scaleInv.bytes, b.scaleInv.bytes, "scale_inv");
  expectSameBytes(a.amax.bytes, b.amax.bytes, "amax");
  EXPECT_EQ(a.data.desc, b.data.desc);
  EXPECT_EQ(a.scaleInv.desc, b.scaleInv.desc);
  EXPECT_EQ(a.dataTransposed, b.dataTransposed);
  EXPECT_EQ(a.swizzledScales, b.swizzledScales);
}

TEST(QuantizeHybrid, SameSchemeTwiceEqualsSingleSchemeBitForBit) {
  Input in = edgeInput(SourceType::BF16, 64, 96, 31, true);
  for (const Scheme &s : allSchemes()) {
    SCOPED_TRACE(std::string(schemeKindName(s.kind)) + " " +
                 dtypeName(s.element));
    DelayedScalingState state1, state2, state3;
    state1.history = state2.history = state3.history = {0.5f};
    state1.scale = state2.scale = state3.scale = 3.0f;
    QuantizeOptions o;
    o.seed = 99;
    o.offset = 5;
    o.delayed = &state1;
    QuantizedTensor both =
        quantize(in.ptr(), in.type, in.m, in.k, s, s, kBothDirections, o);
    o.delayed = &state2;
    QuantizedTensor rowOnly =
        quantize(in.ptr(), in.type, in.m, in.k, s, kRowwiseMask, o);
    o.delayed = &state3;
    QuantizedTensor colOnly =
        quantize(in.ptr(), in.type, in.m, in.k, s, kColumnwiseMask, o);
    ASSERT_TRUE(both.ok() && rowOnly.ok() && colOnly.ok()) << both.error;
    expectSameDirection(*both.rowwise, *rowOnly.rowwise);
    expectSameDirection(*both.columnwise, *colOnly.columnwise);
    EXPECT_EQ(state1.history, state2.history);
    EXPECT_EQ(state1.history, state3.history);
  }
}

TEST(QuantizeHybrid, EachDirectionEqualsItsOwnScheme) {
  Input in = randomInput(SourceType::BF16, 64, 96, 32);
  std::vector<Scheme> schemes = allSchemes();
  QuantizeOptions o;
  DelayedScalingState state;
  state.history = {0.0f};
  o.delayed = &state;
  o.seed = 3;
  for (const Scheme &row : schemes) {
    for (const Scheme &col : schemes) {
      SCOPED_TRACE(std::string(schemeKindName(row.kind)) + " / " +
                   schemeKindName(col.kind));
      QuantizedTensor h =
          quantize(in.ptr(), in.type, in.m, in.k, row, col, kBothDirections, o);
      QuantizedTensor r =
          quantize(in.ptr(), in.type, in.m, in.k, row, kRowwiseMask, o);
      QuantizedTensor c =
          quantize(in.ptr(), in.type, in.m, in.k, col, kColumnwiseMask, o);
      ASSERT_TRUE(h.ok()) << h.error;
      expectSameDirection(*h.rowwise, *r.rowwise);
      expectSameDirection(*h.columnwise, *c.columnwise);
    }
  }
}

TEST(QuantizeHybrid, Mxfp8RowNvfp4RhtColumnAgainstModel) {
  // The "MXFP8 forward / NVFP4 backward" input quantizer of docs/Numerics.md
  // §11.
  Input in = edgeInput(SourceType::BF16, 64, 96, 33, false);
  Scheme row = Scheme::mxfp8(DType::E4M3);
  Scheme col = Scheme::nvfp4(/*rht=*/true, /*sr=*/true);
  QuantizeOptions o;
  o.seed = 42;
  o.offset = 1024;
  o.swizzleScales = true;
  QuantizedTensor t =
      quantize(in.ptr(), in.type, in.m, in.k, row, col, kBothDirections, o);
  ASSERT_TRUE(t.ok()) << t.error;
  expectDirection(t, Direction::Rowwise, row, in,
                  naiveMxfp8(in, Fp8Format::E4M3, true, true));
  Nvfp4Config cfg;
  cfg.rht = cfg.sr = cfg.swizzled = true;
  cfg.seed = 42;
  cfg.offset = 1024;
  expectDirection(t, Direction::Columnwise, col, in,
                  naiveNvfp4(in, false, cfg));
}

TEST(QuantizeHybrid, BlockRowIdentityColumnAndCurrentRowBlockColumn) {
  Input in = randomInput(SourceType::BF16, 160, 200, 34);
  Scheme block = Scheme::fp8Block(DType::E4M3, 1, 128, true);
  QuantizedTensor t = quantize(in.ptr(), in.type, in.m, in.k, block,
                               Scheme::identity(DType::BF16), kBothDirections,
                               QuantizeOptions());
  ASSERT_TRUE(t.ok()) << t.error;
  expectDirection(t, Direction::Rowwise, block, in,
                  naiveBlock(in, Fp8Format::E4M3, false, true, true, 0.0f));
  EXPECT_EQ(dequantize(t, Direction::Columnwise, Scheme::identity(DType::BF16),
                       in.m, in.k),
            in.x);
  // Hybrid columnwise directions never share the rowwise buffers.
  EXPECT_FALSE(t.columnwise->sharesRowwiseData);
  QuantizeOptions sm100;
  sm100.target = Target::sm100();
  t = quantize(in.ptr(), in.type, in.m, in.k, block,
               Scheme::fp8Current(DType::E5M2), kBothDirections, sm100);
  ASSERT_TRUE(t.ok()) << t.error;
  EXPECT_FALSE(t.columnwise->sharesRowwiseData);
  EXPECT_FALSE(t.columnwise->sharesRowwiseScale);
  EXPECT_EQ(t.columnwise->data.desc, (BufferDesc{DType::E5M2, in.m, in.k}));

  Scheme cur = Scheme::fp8Current(DType::E4M3);
  Scheme block2d = Scheme::fp8Block(DType::E5M2, 128, 128);
  t = quantize(in.ptr(), in.type, in.m, in.k, cur, block2d, kBothDirections,
               QuantizeOptions());
  ASSERT_TRUE(t.ok()) << t.error;
  float amax = naiveAmax(in.x);
  expectDirection(t, Direction::Rowwise, cur, in,
                  naivePerTensor(in, Fp8Format::E4M3,
                                 naiveScale(amax, 448.0f, false, 0, FLT_MAX),
                                 amax, false));
  expectDirection(t, Direction::Columnwise, block2d, in,
                  naiveBlock(in, Fp8Format::E5M2, true, false, false, 0.0f));
}

//===----------------------------------------------------------------------===//
// Round trips within the format error bounds
//===----------------------------------------------------------------------===//

/// |x - dq| <= relative * |x| + absolute for every finite element.
void expectWithin(const std::vector<float> &x, const std::vector<float> &dq,
                  const std::vector<float> &relative,
                  const std::vector<float> &absolute, const char *what) {
  ASSERT_EQ(x.size(), dq.size());
  int64_t bad = 0, first = -1;
  for (size_t i = 0; i < x.size(); ++i) {
    double err = std::fabs(double(x[i]) - double(dq[i]));
    if (!(err <= relative[i] * std::fabs(double(x[i])) + absolute[i])) {
      if (first < 0)
        first = static_cast<int64_t>(i);
      ++bad;
    }
  }
  EXPECT_EQ(bad, 0) << what << ": first at " << first
                    << " x=" << (first >= 0 ? x[first] : 0)
                    << " dq=" << (first >= 0 ? dq[first] : 0);
}

TEST(QuantizeRoundTrip, Fp8FormatsWithinHalfUlp) {
  // E4M3 keeps 3 mantissa bits (relative half-ulp 2^-4), E5M2 2 bits
  // (2^-3); below the normal range the absolute half-step 2^-10 / 2^-17
  // of the scaled domain applies, divided by the element's scale.
  Input in = randomInput(SourceType::BF16, 64, 96, 41);
  int64_t n = in.m * in.k;
  for (DType el : {DType::E4M3, DType::E5M2}) {
    float rel = el == DType::E4M3 ? 0.0625f : 0.125f;
    float sub =
        el == DType::E4M3 ? std::ldexp(1.0f, -10) : std::ldexp(1.0f, -17);
    std::vector<Scheme> schemes = {
        Scheme::fp8Current(el), Scheme::fp8Current(el, true), Scheme::mxfp8(el),
        Scheme::fp8Block(el, 1, 128), Scheme::fp8Block(el, 128, 128, true)};
    for (const Scheme &s : schemes) {
      QuantizedTensor t = quantize(in.ptr(), in.type, in.m, in.k, s,
                                   kBothDirections, QuantizeOptions());
      ASSERT_TRUE(t.ok()) << t.error;
      for (Direction d : {Direction::Rowwise, Direction::Columnwise}) {
        SCOPED_TRACE(std::string(schemeKindName(s.kind)) + " " +
                     directionName(d));
        std::vector<float> dq = dequantize(t, d, s, in.m, in.k);
        // Per-element scale: recover it as |x| / |x * scale| is awkward; the
        // largest scale_inv of any block bounds the absolute term.
        float maxScaleInv = 0.0f;
        const QuantizedDirection *q = t.get(d);
        if (s.kind == SchemeKind::Mxfp8) {
          for (uint8_t e : q->scaleInv.bytes)
            maxScaleInv = std::max(maxScaleInv, decodeE8M0(e));
        } else {
          for (int64_t i = 0; i < q->scaleInv.desc.numElements(); ++i)
            maxScaleInv = std::max(maxScaleInv, loadF32(q->scaleInv, i));
        }
        expectWithin(in.x, dq, std::vector<float>(n, rel),
                     std::vector<float>(n, sub * maxScaleInv), "fp8");
      }
    }
  }
}

TEST(QuantizeRoundTrip, Nvfp4WithinOneCodeStepOfItsBlock) {
  // After encoding, |x * enc| <= 6 * (1 + 2^-4) (E4M3 scale rounding), so the
  // code error is at most one grid unit (half of the largest step 2); in
  // value terms at most 1 * dequant factor of the block (with 1% slack for
  // enc vs the dequant factor). RHT columnwise data is checked after the
  // inverse transform with a relative Frobenius bound instead.
  Input in = randomInput(SourceType::BF16, 64, 96, 42);
  int64_t n = in.m * in.k;
  for (bool block2d : {false, true}) {
    Scheme s = Scheme::nvfp4(false, false, block2d);
    QuantizedTensor t = quantize(in.ptr(), in.type, in.m, in.k, s,
                                 kBothDirections, QuantizeOptions());
    ASSERT_TRUE(t.ok()) << t.error;
    for (Direction d : {Direction::Rowwise, Direction::Columnwise}) {
      bool row = d == Direction::Rowwise;
      const QuantizedDirection *q = t.get(d);
      float amax = loadF32(q->amax, 0);
      int64_t sCols = q->scaleInv.desc.cols;
      std::vector<float> absolute(n);
      for (int64_t r = 0; r < in.m; ++r)
        for (int64_t c = 0; c < in.k; ++c) {
          int64_t i = row ? r : c, j = row ? c : r;
          float factor = decodeE4M3(q->scaleInv.bytes[i * sCols + j / 16]) *
                         amax / 2688.0f;
          absolute[r * in.k + c] = 1.01f * factor;
        }
      expectWithin(in.x, dequantize(t, d, s, in.m, in.k),
                   std::vector<float>(n, 0.0f), absolute, "nvfp4");
    }
  }
  Scheme rht = Scheme::nvfp4(true);
  QuantizedTensor t = quantize(in.ptr(), in.type, in.m, in.k, rht,
                               kColumnwiseMask, QuantizeOptions());
  std::vector<float> dq = dequantize(t, Direction::Columnwise, rht, in.m, in.k);
  inverseRhtColumns(dq, in.m, in.k);
  double err = 0, norm = 0;
  for (int64_t i = 0; i < n; ++i) {
    err += (dq[i] - in.x[i]) * double(dq[i] - in.x[i]);
    norm += in.x[i] * double(in.x[i]);
  }
  EXPECT_LT(std::sqrt(err / norm), 0.2);
}

//===----------------------------------------------------------------------===//
// RHT
//===----------------------------------------------------------------------===//

TEST(QuantizeRht, MatrixIsTeSignedSylvesterHadamard) {
  // Row 0 of H16 is all ones: R[0][j] = s_0 / 4 = +0.25; R[3][j] =
  // s_3 (-1)^popcount(3 & j) / 4 with s_3 = -1.
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(rhtMatrixEntry(0, j), 0.25f);
    int p = __builtin_popcount(3u & unsigned(j)) % 2;
    EXPECT_EQ(rhtMatrixEntry(3, j), p ? 0.25f : -0.25f);
  }
  EXPECT_EQ(rhtMatrixEntry(15, 15), -0.25f); // s_15 = -1, popcount 4
  EXPECT_EQ(rhtMatrixEntry(11, 0), 0.25f);   // s_11 = +1
  // Orthogonality: R R^T = I exactly.
  for (int a = 0; a < 16; ++a)
    for (int b = 0; b < 16; ++b) {
      double dot = 0;
      for (int j = 0; j < 16; ++j)
        dot += double(rhtMatrixEntry(a, j)) * rhtMatrixEntry(b, j);
      EXPECT_EQ(dot, a == b ? 1.0 : 0.0);
    }
}

TEST(QuantizeRht, AppliedTwiceReturnsTheVector) {
  // Without signs R = H16 / 4 and R R = 16 I / 16: applying it twice to an
  // exactly representable vector returns the vector itself (scale 1). With
  // TE's signs the inverse is R^T, checked by transforming back in double.
  float v[16], y[16], z[16];
  for (int i = 0; i < 16; ++i)
    v[i] = static_cast<float>(i * 3 - 20);
  rht16(v, y, /*signMask=*/0);
  rht16(y, z, /*signMask=*/0);
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(z[i], v[i]);
  rht16(v, y);
  for (int kk = 0; kk < 16; ++kk) {
    double back = 0;
    for (int j = 0; j < 16; ++j)
      back += double(y[j]) * rhtMatrixEntry(kk, j);
    EXPECT_EQ(back, double(v[kk]));
  }
  // A unit vector e_3 maps to row 3 of R.
  float e3[16] = {};
  e3[3] = 1.0f;
  rht16(e3, y);
  for (int j = 0; j < 16; ++j)
    EXPECT_EQ(y[j], rhtMatrixEntry(3, j));
}

TEST(QuantizeRht, ColumnwiseOutputsAreRoundedToBf16) {
  // 1 + 2^-8 + 2^-9 is not a bf16 value: a column holding it in row 0 and
  // zeros elsewhere transforms to (1 + 2^-8 + 2^-9) / 4 in every output,
  // which rounds up to (1 + 2^-7) / 4 in bf16.
  std::vector<float> x(16 * 2, 0.0f);
  x[0] = 1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -9);
  x[1] = 2.0f;
  std::vector<float> t = rhtColumnwise(x.data(), 16, 2);
  ASSERT_EQ(t.size(), 32u);
  float scaled = x[0] * 0.25f;
  float want = bf16ToFloat(floatToBF16(scaled));
  EXPECT_NE(want, scaled);
  EXPECT_EQ(want, 0.25f * (1.0f + std::ldexp(1.0f, -7)));
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(t[j], want);      // column 0, s_0 = +1
    EXPECT_EQ(t[16 + j], 0.5f); // column 1
  }
  // Transposed back to 16 x 2 and inverted: the bf16-rounded column 0 and
  // the exact column 1.
  std::vector<float> mk(32);
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 2; ++c)
      mk[r * 2 + c] = t[c * 16 + r];
  inverseRhtColumns(mk, 16, 2);
  EXPECT_EQ(mk[0], want * 4.0f);
  EXPECT_EQ(mk[1], 2.0f);
  EXPECT_EQ(mk[2], 0.0f);
}

//===----------------------------------------------------------------------===//
// Stochastic rounding
//===----------------------------------------------------------------------===//

TEST(QuantizeSr, BracketsTheRoundToNearestValue) {
  Input in = randomInput(SourceType::BF16, 64, 96, 51);
  Scheme rn = Scheme::nvfp4(), sr = Scheme::nvfp4(false, true);
  QuantizeOptions o;
  o.seed = 123;
  QuantizedTensor a =
      quantize(in.ptr(), in.type, in.m, in.k, rn, kBothDirections, o);
  QuantizedTensor b =
      quantize(in.ptr(), in.type, in.m, in.k, sr, kBothDirections, o);
  const float grid[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (Direction d : {Direction::Rowwise, Direction::Columnwise}) {
    // Same scales; each SR magnitude is one of the two grid points around
    // the scaled value, and so is the RN one.
    EXPECT_EQ(a.get(d)->scaleInv.bytes, b.get(d)->scaleInv.bytes);
    std::vector<float> qa = dequantize(a, d, rn, in.m, in.k);
    std::vector<float> qb = dequantize(b, d, sr, in.m, in.k);
    const QuantizedDirection *q = b.get(d);
    bool row = d == Direction::Rowwise;
    int64_t cols = row ? in.k : in.m;
    int64_t differ = 0;
    for (int64_t r = 0; r < in.m; ++r) {
      for (int64_t c = 0; c < in.k; ++c) {
        int64_t i = row ? r : c, j = row ? c : r;
        uint8_t byte = q->data.bytes[(i * cols + j) / 2];
        uint8_t code = j % 2 ? byte >> 4 : byte & 0xF;
        float mag = grid[code & 7];
        float factor = qb[r * in.k + c] / (code & 8 ? -mag : mag);
        if (mag == 0.0f)
          continue;
        float scaled = std::fabs(in.x[r * in.k + c]) / factor;
        float lo = 0, hi = 6;
        for (float g : grid) {
          if (g <= scaled * 1.0001f)
            lo = std::max(lo, g);
        }
        for (int g = 7; g >= 0; --g)
          if (grid[g] >= scaled * 0.9999f)
            hi = grid[g];
        EXPECT_TRUE(mag == lo || mag == hi)
            << "mag " << mag << " scaled " << scaled;
        EXPECT_EQ(std::signbit(qb[r * in.k + c]),
                  std::signbit(in.x[r * in.k + c]));
        differ += qa[r * in.k + c] != qb[r * in.k + c];
      }
    }
    EXPECT_GT(differ, 0);
  }
}

TEST(QuantizeSr, DependsOnlyOnSeedOffsetAndIndex) {
  Input in = randomInput(SourceType::BF16, 32, 48, 52);
  Scheme sr = Scheme::nvfp4(false, true);
  QuantizeOptions o;
  o.seed = 7;
  o.offset = 9;
  QuantizedTensor a =
      quantize(in.ptr(), in.type, in.m, in.k, sr, kBothDirections, o);
  QuantizedTensor b =
      quantize(in.ptr(), in.type, in.m, in.k, sr, kBothDirections, o);
  EXPECT_EQ(a.rowwise->data.bytes, b.rowwise->data.bytes);
  EXPECT_EQ(a.columnwise->data.bytes, b.columnwise->data.bytes);
  QuantizeOptions other = o;
  other.seed = 8;
  QuantizedTensor c =
      quantize(in.ptr(), in.type, in.m, in.k, sr, kBothDirections, other);
  EXPECT_NE(a.rowwise->data.bytes, c.rowwise->data.bytes);
  EXPECT_NE(a.columnwise->data.bytes, c.columnwise->data.bytes);
  other = o;
  other.offset = 10;
  c = quantize(in.ptr(), in.type, in.m, in.k, sr, kBothDirections, other);
  EXPECT_NE(a.rowwise->data.bytes, c.rowwise->data.bytes);
  // Element (r, c) of the rowwise data uses byte index r*K + c: the code at
  // (3, 5) is the SR encoding with srRandomByte(7, 9, 3*48 + 5), and the
  // columnwise element (r, c) = (3, 5) uses index 5*32 + 3.
  float amax = naiveAmax(in.x);
  float sEnc = 2688.0f / amax;
  float sDec = static_cast<float>(1.0 / double(sEnc));
  auto codeAt = [&](const std::vector<float> &blockVals, float xv,
                    uint64_t index) {
    float bamax = naiveAmax(blockVals);
    uint8_t sb = encodeE4M3(bamax * (sEnc * static_cast<float>(1.0 / 6.0)));
    float enc = 1.0f / (decodeE4M3(sb) * sDec);
    return encodeE2M1Stochastic(xv * enc, srRandomByte(7, 9, index));
  };
  std::vector<float> rowBlock(in.x.begin() + 3 * 48,
                              in.x.begin() + 3 * 48 + 16);
  uint8_t want = codeAt(rowBlock, in.x[3 * 48 + 5], 3 * 48 + 5);
  EXPECT_EQ((a.rowwise->data.bytes[(3 * 48 + 5) / 2] >> 4) & 0xF, want);
  std::vector<float> colBlock;
  for (int r = 0; r < 16; ++r)
    colBlock.push_back(in.x[r * 48 + 5]);
  want = codeAt(colBlock, in.x[3 * 48 + 5], 5 * 32 + 3);
  EXPECT_EQ((a.columnwise->data.bytes[(5 * 32 + 3) / 2] >> 4) & 0xF, want);
}

TEST(QuantizeSr, MeanOfManyDrawsBeatsRoundToNearest) {
  // docs/Numerics.md §12: the mean of SR draws has a lower RMSE than RN.
  Input in = randomInput(SourceType::BF16, 16, 64, 53);
  int64_t n = in.m * in.k;
  Scheme rn = Scheme::nvfp4(), sr = Scheme::nvfp4(false, true);
  std::vector<float> rnq =
      dequantize(quantize(in.ptr(), in.type, in.m, in.k, rn, kRowwiseMask,
                          QuantizeOptions()),
                 Direction::Rowwise, rn, in.m, in.k);
  std::vector<double> mean(n, 0.0);
  const int draws = 64;
  for (int s = 0; s < draws; ++s) {
    QuantizeOptions o;
    o.seed = 1000 + s;
    std::vector<float> q =
        dequantize(quantize(in.ptr(), in.type, in.m, in.k, sr, kRowwiseMask, o),
                   Direction::Rowwise, sr, in.m, in.k);
    for (int64_t i = 0; i < n; ++i)
      mean[i] += q[i] / double(draws);
  }
  double rnErr = 0, srErr = 0;
  for (int64_t i = 0; i < n; ++i) {
    rnErr += (rnq[i] - in.x[i]) * double(rnq[i] - in.x[i]);
    srErr += (mean[i] - in.x[i]) * (mean[i] - in.x[i]);
  }
  EXPECT_LT(srErr, rnErr);
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

TEST(QuantizeErrors, RejectsBadRequestsAndLeavesStateAlone) {
  std::vector<float> x(64 * 64, 1.0f);
  QuantizeOptions o;
  Scheme mx = Scheme::mxfp8(DType::E4M3);
  EXPECT_FALSE(quantize(x.data(), SourceType::F32, 8, 8, mx, 0, o).ok());
  EXPECT_FALSE(quantize(x.data(), SourceType::F32, 8, 8, mx, 4, o).ok());
  EXPECT_FALSE(
      quantize(nullptr, SourceType::F32, 64, 64, mx, kRowwiseMask, o).ok());
  // MXFP8 rowwise needs K % 32 == 0, columnwise M % 32 == 0.
  QuantizedTensor t =
      quantize(x.data(), SourceType::F32, 32, 48, mx, kRowwiseMask, o);
  EXPECT_FALSE(t.ok());
  EXPECT_FALSE(t.rowwise);
  EXPECT_NE(t.error.find("rowwise"), std::string::npos);
  EXPECT_TRUE(
      quantize(x.data(), SourceType::F32, 32, 48, mx, kColumnwiseMask, o).ok());
  EXPECT_FALSE(
      quantize(x.data(), SourceType::F32, 48, 32, mx, kColumnwiseMask, o).ok());
  // NVFP4 K % 16; 2D needs both.
  EXPECT_FALSE(quantize(x.data(), SourceType::F32, 16, 24, Scheme::nvfp4(),
                        kRowwiseMask, o)
                   .ok());
  EXPECT_FALSE(quantize(x.data(), SourceType::F32, 24, 16,
                        Scheme::nvfp4(false, false, true), kRowwiseMask, o)
                   .ok());
  // Bad scheme options.
  Scheme bad = Scheme::fp8Current(DType::E2M1x2);
  EXPECT_FALSE(
      quantize(x.data(), SourceType::F32, 4, 4, bad, kRowwiseMask, o).ok());
  // Delayed scaling without a state, or with an empty history.
  Scheme del = Scheme::fp8Delayed(DType::E4M3);
  EXPECT_FALSE(
      quantize(x.data(), SourceType::F32, 4, 4, del, kRowwiseMask, o).ok());
  DelayedScalingState empty;
  o.delayed = &empty;
  EXPECT_FALSE(
      quantize(x.data(), SourceType::F32, 4, 4, del, kRowwiseMask, o).ok());
  // A failing columnwise direction leaves the rowwise state untouched.
  DelayedScalingState state;
  state.history = {0.0f};
  o.delayed = &state;
  t = quantize(x.data(), SourceType::F32, 48, 32, del, mx, kBothDirections, o);
  EXPECT_FALSE(t.ok());
  EXPECT_EQ(state.history[0], 0.0f);
  // dequantize of an absent direction or a mismatching scheme is empty.
  t = quantize(x.data(), SourceType::F32, 64, 64, mx, kRowwiseMask,
               QuantizeOptions());
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(dequantize(t, Direction::Columnwise, mx, 64, 64).empty());
  EXPECT_TRUE(
      dequantize(t, Direction::Rowwise, Scheme::nvfp4(), 64, 64).empty());
}

} // namespace
