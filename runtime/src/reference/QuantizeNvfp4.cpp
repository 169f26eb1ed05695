//===- runtime/src/reference/QuantizeNvfp4.cpp - NVFP4 ----------*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR and no CUDA.
//
//===----------------------------------------------------------------------===//
//
// NVFP4 (docs/Numerics.md §6): two-level scaling with a per-direction global
// amax, E4M3 block scales per 16 elements (or per 16 x 16 tile), E2M1 codes by
// round-to-nearest or stochastic rounding, and the 16-point random Hadamard
// transform of the columnwise direction. Each direction is quantized from
// its own "source" matrix: the input itself (rowwise), or its transpose,
// possibly Hadamard-transformed and rounded to bf16 (columnwise); the stored
// data is that source matrix packed row by row, two codes per byte.
//
//===----------------------------------------------------------------------===//

#include "QuantizeInternal.h"

#include "te/runtime/reference/Codecs.h"
#include "te/runtime/reference/Philox.h"

#include <cfloat>
#include <cmath>

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "the reference quantizer needs float arithmetic evaluated in float"
#endif

namespace te {
namespace rt {
namespace ref {

//===----------------------------------------------------------------------===//
// Random Hadamard transform (docs/Numerics.md §6.4)
//===----------------------------------------------------------------------===//

static int parity(unsigned v) {
  int p = 0;
  for (; v; v &= v - 1)
    p ^= 1;
  return p;
}

float rhtMatrixEntry(int k, int j, uint16_t signMask) {
  int negative = ((signMask >> k) & 1) ^ parity(unsigned(k & j));
  return negative ? -0.25f : 0.25f;
}

void rht16(const float *v, float *y, uint16_t signMask) {
  for (int j = 0; j < 16; ++j) {
    float acc = 0.0f;
    for (int kk = 0; kk < 16; ++kk) {
      float product = v[kk] * rhtMatrixEntry(kk, j, signMask);
      acc = acc + product;
    }
    y[j] = acc;
  }
}

std::vector<float> rhtColumnwise(const float *x, int64_t m, int64_t k) {
  std::vector<float> t(static_cast<size_t>(m * k));
  float v[16], y[16];
  for (int64_t c = 0; c < k; ++c) {
    for (int64_t r0 = 0; r0 + 16 <= m; r0 += 16) {
      for (int kk = 0; kk < 16; ++kk)
        v[kk] = x[(r0 + kk) * k + c];
      rht16(v, y);
      for (int j = 0; j < 16; ++j)
        t[c * m + r0 + j] = bf16ToFloat(floatToBF16(y[j]));
    }
  }
  return t;
}

void inverseRhtColumns(std::vector<float> &mk, int64_t m, int64_t k) {
  if (static_cast<int64_t>(mk.size()) != m * k)
    return;
  double y[16];
  for (int64_t c = 0; c < k; ++c) {
    for (int64_t r0 = 0; r0 + 16 <= m; r0 += 16) {
      for (int j = 0; j < 16; ++j)
        y[j] = mk[(r0 + j) * k + c];
      // v = y * R^T: v_kk = sum_j y_j * R[kk][j].
      for (int kk = 0; kk < 16; ++kk) {
        double acc = 0.0;
        for (int j = 0; j < 16; ++j)
          acc += y[j] * static_cast<double>(rhtMatrixEntry(kk, j));
        mk[(r0 + kk) * k + c] = static_cast<float>(acc);
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Quantize
//===----------------------------------------------------------------------===//

namespace detail {

QuantizedDirection quantizeNvfp4(const SourceView &src, const Scheme &s,
                                 Direction d, const QuantizeOptions &options) {
  DirectionStorage st = storageFor(s, d, src.m, src.k, options.target);
  QuantizedDirection q;
  q.data = HostBuffer::zeros(st.data);
  q.scaleInv = HostBuffer::zeros(st.scaleInv);
  q.amax = HostBuffer::zeros(st.amax);
  q.dataTransposed = st.dataTransposed;

  // The source matrix S (rows x cols) whose rows the stored data packs.
  bool row = d == Direction::Rowwise;
  int64_t rows = row ? src.m : src.k, cols = row ? src.k : src.m;
  std::vector<float> transposed;
  const float *sm = src.x;
  if (!row) {
    if (s.rht) {
      transposed = rhtColumnwise(src.x, src.m, src.k);
    } else {
      transposed.resize(static_cast<size_t>(rows * cols));
      for (int64_t r = 0; r < src.m; ++r)
        for (int64_t c = 0; c < src.k; ++c)
          transposed[c * src.m + r] = src.x[r * src.k + c];
    }
    sm = transposed.data();
  }

  // Global scales of this direction (post-RHT amax for RHT columnwise; for
  // the plain transpose this equals the input amax, as TE copies it).
  const float *shared = !row && s.rht ? options.rhtTensorAmax
                                      : options.tensorAmax;
  float globalAmax =
      shared ? *shared : amaxOf(sm, static_cast<size_t>(rows * cols));
  float sEnc = nvfp4GlobalEncodeScale(globalAmax);
  float sDec = nvfp4GlobalDecodeScale(sEnc);
  storeF32(q.amax, 0, globalAmax);

  int64_t scaleCols = q.scaleInv.desc.cols;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t b = 0; b < cols / 16; ++b) {
      // Block amax: the 1x16 run of S, or the 16x16 tile of S holding it
      // (the transpose of the original tile, hence the same amax).
      float blockAmax = 0.0f;
      int64_t r0 = s.block2d ? i / 16 * 16 : i,
              r1 = s.block2d ? r0 + 16 : i + 1;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t j = b * 16; j < b * 16 + 16; ++j)
          blockAmax = std::fmax(blockAmax, std::fabs(sm[r * cols + j]));
      uint8_t scaleByte = nvfp4BlockScale(blockAmax, sEnc);
      float encode = nvfp4BlockEncodeFactor(scaleByte, sDec);
      q.scaleInv.bytes[i * scaleCols + b] = scaleByte;
      for (int64_t j = b * 16; j < b * 16 + 16; j += 2) {
        uint8_t codes[2];
        for (int e = 0; e < 2; ++e) {
          int64_t index = i * cols + j + e;
          float y = sm[index] * encode;
          codes[e] = s.stochasticRounding
                         ? encodeE2M1Stochastic(
                               y, srRandomByte(options.seed, options.offset,
                                               static_cast<uint64_t>(index)))
                         : encodeE2M1(y);
        }
        q.data.bytes[(i * cols + j) / 2] = packE2M1(codes[0], codes[1]);
      }
    }
  }
  return q;
}

std::vector<float> dequantizeNvfp4(const QuantizedDirection &q, Direction d,
                                   int64_t m, int64_t k) {
  if (!q.amax.present() || q.amax.bytes.size() < 4)
    return {};
  bool row = d == Direction::Rowwise;
  int64_t cols = row ? k : m, scaleCols = q.scaleInv.desc.cols;
  float globalAmax = loadF32(q.amax, 0);
  std::vector<float> out(static_cast<size_t>(m * k));
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < k; ++c) {
      // Position (i, j) in the stored source matrix.
      int64_t i = row ? r : c, j = row ? c : r;
      uint8_t byte = q.data.bytes[(i * cols + j) / 2];
      uint8_t code = j % 2 ? unpackE2M1High(byte) : unpackE2M1Low(byte);
      uint8_t scaleByte =
          q.scaleInv.bytes[scaleIndex(q.swizzledScales, i, j / 16, scaleCols)];
      out[r * k + c] =
          decodeE2M1(code) * nvfp4DequantFactor(scaleByte, globalAmax);
    }
  }
  return out;
}

} // namespace detail
} // namespace ref
} // namespace rt
} // namespace te
