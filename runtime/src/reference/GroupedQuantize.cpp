//===- GroupedQuantize.cpp - per-expert columnwise quantization -----------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#include "te/runtime/reference/GroupedQuantize.h"

#include "te/runtime/reference/Codecs.h"
#include "te/runtime/reference/Gemm.h"
#include "te/runtime/reference/Scales.h"

#include <algorithm>
#include <cfloat>
#include <cstring>

namespace te {
namespace rt {
namespace ref {

GroupedColumnwise groupedColumnwiseQuantize(
    const uint16_t *x, int64_t mTotal, int64_t cols,
    const std::vector<int64_t> &splits, const Scheme &scheme, int64_t capacity,
    uint64_t seed, uint64_t offset,
    const std::vector<DelayedScalingState *> *delayed, bool fp8Values) {
  QuantizeOptions options;
  options.seed = seed;
  options.offset = offset;
  const bool perTensor = scheme.kind == SchemeKind::Fp8Current ||
                         scheme.kind == SchemeKind::Fp8Delayed;
  const bool fp8 = scheme.kind == SchemeKind::Fp8Block || perTensor;
  const bool codes = fp8 && !fp8Values;
  const int64_t width = codes ? 1 : 2, colsPad = (cols + 3) / 4 * 4;
  GroupedColumnwise out;
  out.data.assign(static_cast<size_t>(cols * capacity * width), 0);
  if (codes)
    out.scaleInv.assign(static_cast<size_t>(capacity / 128 * colsPad), 0.0f);
  out.biasGrad.assign(splits.size() * static_cast<size_t>(cols), 0.0f);
  std::vector<int64_t> clamped = clampSplits(splits, mTotal);
  int64_t row = 0, block = 0;
  for (size_t g = 0; g < clamped.size(); ++g) {
    const int64_t m = clamped[g];
    out.segmentStart.push_back(block);
    if (m == 0)
      continue;
    const uint16_t *rows = x + row * cols;
    std::vector<float> db = biasGrad(rows, SourceType::BF16, m, cols, 128);
    std::copy(db.begin(), db.end(), out.biasGrad.begin() + g * cols);
    if (fp8) {
      // The expert alone: its own columnwise quantization - 1x128 blocks,
      // or per tensor (one amax, its scale_inv repeated over the expert's
      // 1x128 blocks).
      QuantizeOptions own = options;
      own.delayed = delayed ? (*delayed)[g] : nullptr;
      QuantizedTensor q = quantize(rows, SourceType::BF16, m, cols, scheme,
                                   unsigned(Direction::Columnwise), own);
      if (!q.ok()) {
        out.error = q.error;
        return out;
      }
      if (fp8Values) { // the values the codes and scales dequantize to
        std::vector<float> v =
            dequantize(q, Direction::Columnwise, scheme, m, cols);
        for (int64_t r = 0; r < m; ++r)
          for (int64_t c = 0; c < cols; ++c) {
            uint16_t b = floatToBF16(v[size_t(r * cols + c)]);
            std::memcpy(&out.data[2 * (c * capacity + block * 128 + r)], &b, 2);
          }
        row += m;
        block += (m + 127) / 128;
        continue;
      }
      const QuantizedDirection &d = *q.columnwise;
      const int64_t stride = d.scaleInv.desc.cols; // roundup(cols, 4)
      for (int64_t c = 0; c < cols; ++c)
        for (int64_t r = 0; r < m; ++r)
          out.data[c * capacity + block * 128 + r] =
              d.data.bytes[d.dataTransposed ? c * m + r : r * cols + c];
      for (int64_t b = 0; b < (m + 127) / 128; ++b)
        for (int64_t c = 0; c < cols; ++c)
          out.scaleInv[(block + b) * colsPad + c] =
              loadF32(d.scaleInv, perTensor ? 0 : b * stride + c);
    } else if (scheme.kind == SchemeKind::Mxfp8 ||
               scheme.kind == SchemeKind::Nvfp4) {
      // The expert alone, its rows zero-padded to whole 32 x 1 (MXFP8) or
      // 16 x 1 (NVFP4) blocks (the zeros change no block's amax, nor the
      // tensor amax): quantized columnwise, dequantized, rounded to bf16.
      // NVFP4's transform fills the padding rows, which are laid out too.
      const int64_t height = scheme.kind == SchemeKind::Mxfp8 ? 32 : 16;
      const int64_t padded = (m + height - 1) / height * height;
      std::vector<uint16_t> own(static_cast<size_t>(padded * cols), 0);
      std::memcpy(own.data(), rows, static_cast<size_t>(m * cols) * 2);
      QuantizedTensor q =
          quantize(own.data(), SourceType::BF16, padded, cols, scheme,
                   unsigned(Direction::Columnwise), options);
      if (!q.ok()) {
        out.error = q.error;
        return out;
      }
      std::vector<float> v =
          dequantize(q, Direction::Columnwise, scheme, padded, cols);
      for (int64_t r = 0; r < groupedColumnwiseRows(scheme, m); ++r)
        for (int64_t c = 0; c < cols; ++c) {
          uint16_t b = floatToBF16(v[size_t(r * cols + c)]);
          std::memcpy(&out.data[2 * (c * capacity + block * 128 + r)], &b, 2);
        }
    } else {
      for (int64_t r = 0; r < m; ++r)
        for (int64_t c = 0; c < cols; ++c)
          std::memcpy(&out.data[2 * (c * capacity + block * 128 + r)],
                      &rows[r * cols + c], 2);
    }
    row += m;
    block += (m + 127) / 128;
  }
  return out;
}

int64_t groupedColumnwiseRows(const Scheme &scheme, int64_t rows) {
  return scheme.kind == SchemeKind::Nvfp4 ? (rows + 15) / 16 * 16 : rows;
}

/// groupedTensorScaledQuantize's columnwise copy of the stack.
static GroupedTensorScaled
stackColumnwise(const uint16_t *x, int64_t rows, int64_t cols, int64_t groups,
                const Scheme &scheme,
                const std::vector<DelayedScalingState *> *delayed) {
  GroupedTensorScaled out;
  if (groups < 1 || rows % groups != 0 || (rows / groups) % 128 != 0) {
    out.error = "the stack's columnwise copy needs G experts of a multiple "
                "of 128 rows each";
    return out;
  }
  const int64_t n = rows / groups, kBlocks = (cols + 127) / 128;
  out.codes.assign(static_cast<size_t>(rows * cols), 0);
  out.amax.assign(static_cast<size_t>(groups), 0.0f);
  out.scaleInv.assign(static_cast<size_t>(groups), 0.0f);
  out.blockStride = (rows / 128 + 3) / 4 * 4;
  out.blockScaleInv.assign(static_cast<size_t>(kBlocks * out.blockStride),
                           0.0f);
  for (int64_t g = 0; g < groups; ++g) {
    QuantizeOptions options;
    options.delayed = delayed ? (*delayed)[size_t(g)] : nullptr;
    QuantizedTensor q = quantize(x + g * n * cols, SourceType::BF16, n, cols,
                                 scheme, kColumnwiseMask, options);
    if (!q.ok()) {
      GroupedTensorScaled failed;
      failed.error = q.error;
      return failed;
    }
    const QuantizedDirection &d = *q.columnwise;
    for (int64_t k = 0; k < cols; ++k)
      for (int64_t r = 0; r < n; ++r)
        out.codes[size_t(k * rows + g * n + r)] =
            d.data.bytes[size_t(d.dataTransposed ? k * n + r : r * cols + k)];
    out.amax[size_t(g)] = loadF32(d.amax, 0);
    out.scaleInv[size_t(g)] = loadF32(d.scaleInv, 0);
    for (int64_t kb = 0; kb < kBlocks; ++kb)
      for (int64_t t = 0; t < n / 128; ++t)
        out.blockScaleInv[size_t(kb * out.blockStride + g * (n / 128) + t)] =
            out.scaleInv[size_t(g)];
  }
  return out;
}

GroupedTensorScaled
groupedTensorScaledQuantize(const uint16_t *x, int64_t rows, int64_t cols,
                            const std::vector<int64_t> &splits, int64_t groups,
                            const Scheme &scheme, bool columnwise,
                            const std::vector<DelayedScalingState *> *delayed) {
  if (columnwise && !splits.empty()) {
    GroupedTensorScaled failed;
    failed.error = "only the stacked weight (no split sizes) has a "
                   "columnwise copy here";
    return failed;
  }
  if (columnwise)
    return stackColumnwise(x, rows, cols, groups, scheme, delayed);
  const bool tokens = !splits.empty();
  const int64_t kBlocks = (cols + 127) / 128;
  std::vector<int64_t> counts =
      tokens ? clampSplits(splits, rows)
             : std::vector<int64_t>(static_cast<size_t>(groups), rows / groups);
  GroupedTensorScaled out;
  out.codes.assign(static_cast<size_t>(rows * cols), 0);
  out.amax.assign(static_cast<size_t>(groups), 0.0f);
  out.scaleInv.assign(static_cast<size_t>(groups), 0.0f);
  int64_t tiles = (rows / groups + 127) / 128;
  out.blockStride = tokens ? (rows + 3) / 4 * 4 : (kBlocks + 3) / 4 * 4;
  out.blockScaleInv.assign(
      static_cast<size_t>(tokens ? kBlocks * out.blockStride
                                 : groups * tiles * out.blockStride),
      0.0f);
  const float fp8Max = fp8MaxNorm(
      scheme.element == DType::E5M2 ? Fp8Format::E5M2 : Fp8Format::E4M3);
  int64_t first = 0;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t m = counts[size_t(g)];
    DelayedScalingState *state = delayed ? (*delayed)[size_t(g)] : nullptr;
    // An expert without rows: the scale of amax 0, or its state's.
    float sInv = scaleInvFromScale(
        state ? state->scale
              : computeScaleFromAmax(0.0f, fp8Max, scheme.pow2,
                                     static_cast<float>(scheme.eps), FLT_MAX));
    if (m > 0) {
      // The expert's rows as their own tensor.
      QuantizeOptions options;
      options.delayed = state;
      QuantizedTensor q = quantize(x + first * cols, SourceType::BF16, m, cols,
                                   scheme, kRowwiseMask, options);
      if (!q.ok()) {
        GroupedTensorScaled failed;
        failed.error = q.error;
        return failed;
      }
      std::copy(q.rowwise->data.bytes.begin(), q.rowwise->data.bytes.end(),
                out.codes.begin() + first * cols);
      out.amax[size_t(g)] = loadF32(q.rowwise->amax, 0);
      sInv = loadF32(q.rowwise->scaleInv, 0);
    }
    out.scaleInv[size_t(g)] = sInv;
    for (int64_t r = first; r < first + m; ++r)
      for (int64_t kb = 0; kb < kBlocks; ++kb)
        if (tokens)
          out.blockScaleInv[size_t(kb * out.blockStride + r)] = sInv;
        else if ((r - first) % 128 == 0)
          out.blockScaleInv[size_t(
              (g * tiles + (r - first) / 128) * out.blockStride + kb)] = sInv;
    first += m;
  }
  return out;
}

std::vector<uint16_t>
groupedTensorScaledValues(const GroupedTensorScaled &q, int64_t rows,
                          int64_t cols, const std::vector<int64_t> &splits,
                          int64_t groups, const Scheme &scheme) {
  const Fp8Format format =
      scheme.element == DType::E5M2 ? Fp8Format::E5M2 : Fp8Format::E4M3;
  std::vector<int64_t> counts =
      !splits.empty()
          ? clampSplits(splits, rows)
          : std::vector<int64_t>(static_cast<size_t>(groups), rows / groups);
  std::vector<uint16_t> values(static_cast<size_t>(rows * cols), 0);
  int64_t first = 0;
  for (int64_t g = 0; g < groups; ++g) {
    const float sInv = q.scaleInv[size_t(g)];
    for (int64_t i = first * cols; i < (first + counts[size_t(g)]) * cols; ++i)
      values[size_t(i)] =
          floatToBF16(decodeFp8(format, q.codes[size_t(i)]) * sInv);
    first += counts[size_t(g)];
  }
  return values;
}

GroupedNvfp4Values groupedNvfp4Values(const uint16_t *x, int64_t rows,
                                      int64_t cols,
                                      const std::vector<int64_t> &splits,
                                      int64_t groups, const Scheme &scheme,
                                      uint64_t seed, uint64_t offset,
                                      bool columnwise) {
  if (columnwise && !splits.empty()) {
    GroupedNvfp4Values failed;
    failed.error = "only the stacked weight (no split sizes) has columnwise "
                   "values here";
    return failed;
  }
  const Direction dir = columnwise ? Direction::Columnwise : Direction::Rowwise;
  QuantizeOptions options;
  options.seed = seed;
  options.offset = offset;
  std::vector<int64_t> counts =
      !splits.empty()
          ? clampSplits(splits, rows)
          : std::vector<int64_t>(static_cast<size_t>(groups), rows / groups);
  GroupedNvfp4Values out;
  out.values.assign(static_cast<size_t>(rows * cols), 0);
  if (!columnwise) {
    out.codes.assign(static_cast<size_t>(rows * cols / 2), 0);
    out.scales.assign(static_cast<size_t>(rows * (cols / 16)), 0);
  }
  out.amax.assign(static_cast<size_t>(groups), 0.0f);
  int64_t first = 0;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t m = counts[size_t(g)];
    if (m > 0) {
      QuantizedTensor q = quantize(x + first * cols, SourceType::BF16, m, cols,
                                   scheme, unsigned(dir), options);
      if (!q.ok()) {
        GroupedNvfp4Values failed;
        failed.error = q.error;
        return failed;
      }
      std::vector<float> v = dequantize(q, dir, scheme, m, cols);
      for (int64_t i = 0; i < m * cols; ++i)
        out.values[size_t(first * cols + i)] = floatToBF16(v[size_t(i)]);
      out.amax[size_t(g)] = loadF32(q.get(dir)->amax, 0);
      if (!columnwise) {
        const QuantizedDirection &d = *q.rowwise;
        std::copy(d.data.bytes.begin(), d.data.bytes.begin() + m * cols / 2,
                  out.codes.begin() + first * cols / 2);
        const int64_t stride = d.scaleInv.desc.cols, blocks = cols / 16;
        for (int64_t r = 0; r < m; ++r)
          std::copy(d.scaleInv.bytes.begin() + r * stride,
                    d.scaleInv.bytes.begin() + r * stride + blocks,
                    out.scales.begin() + (first + r) * blocks);
      }
    }
    first += m;
  }
  return out;
}

} // namespace ref
} // namespace rt
} // namespace te
