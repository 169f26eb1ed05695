//===- runtime/src/reference/Swizzle.cpp - Scale swizzle --------*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR and no CUDA.
//
//===----------------------------------------------------------------------===//
//
// cuBLAS block-scaled GEMMs read MXFP8 / NVFP4 scales in 128 x 4 tiles laid
// out as [R/128, C/4, 32, 4, 4] (docs/Numerics.md §5.3). The padded compact
// scale buffers are whole numbers of such tiles, so swizzling is a permutation
// of the same bytes: padding entries stay where the permutation takes them
// (zero in this reference).
//
//===----------------------------------------------------------------------===//

#include "te/runtime/reference/Quantize.h"

namespace te {
namespace rt {
namespace ref {

int64_t gemmSwizzledScaleIndex(int64_t i, int64_t j, int64_t cols) {
  return ((i / 128) * (cols / 4) + j / 4) * 512 + (i % 32) * 16 +
         ((i % 128) / 32) * 4 + j % 4;
}

static bool isTiled(size_t size, int64_t rows, int64_t cols) {
  return rows > 0 && cols > 0 && rows % 128 == 0 && cols % 4 == 0 &&
         size == static_cast<size_t>(rows * cols);
}

std::vector<uint8_t> swizzleScales(const std::vector<uint8_t> &compact,
                                   int64_t rows, int64_t cols) {
  if (!isTiled(compact.size(), rows, cols))
    return {};
  std::vector<uint8_t> out(compact.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      out[gemmSwizzledScaleIndex(i, j, cols)] = compact[i * cols + j];
  return out;
}

std::vector<uint8_t> unswizzleScales(const std::vector<uint8_t> &swizzled,
                                     int64_t rows, int64_t cols) {
  if (!isTiled(swizzled.size(), rows, cols))
    return {};
  std::vector<uint8_t> out(swizzled.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      out[i * cols + j] = swizzled[gemmSwizzledScaleIndex(i, j, cols)];
  return out;
}

static std::vector<uint8_t> transposeBytes(const std::vector<uint8_t> &in,
                                           int64_t rows, int64_t cols) {
  std::vector<uint8_t> out(in.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      out[j * rows + i] = in[i * cols + j];
  return out;
}

/// MXFP8 columnwise scales ([M/32 blocks][K]) are swizzled as their
/// transpose ([K rows][M/32 blocks]).
static bool swizzlesTransposed(const Scheme &scheme, Direction d) {
  return scheme.kind == SchemeKind::Mxfp8 && d == Direction::Columnwise;
}

static bool hasByteScales(const Scheme &scheme) {
  return scheme.kind == SchemeKind::Mxfp8 || scheme.kind == SchemeKind::Nvfp4;
}

std::vector<uint8_t> swizzleScalesFor(const Scheme &scheme, Direction d,
                                      const std::vector<uint8_t> &compact,
                                      const BufferDesc &desc) {
  if (!hasByteScales(scheme) ||
      compact.size() != static_cast<size_t>(desc.numElements()))
    return {};
  if (!swizzlesTransposed(scheme, d))
    return swizzleScales(compact, desc.rows, desc.cols);
  return swizzleScales(transposeBytes(compact, desc.rows, desc.cols), desc.cols,
                       desc.rows);
}

std::vector<uint8_t> unswizzleScalesFor(const Scheme &scheme, Direction d,
                                        const std::vector<uint8_t> &swizzled,
                                        const BufferDesc &desc) {
  if (!hasByteScales(scheme) ||
      swizzled.size() != static_cast<size_t>(desc.numElements()))
    return {};
  if (!swizzlesTransposed(scheme, d))
    return unswizzleScales(swizzled, desc.rows, desc.cols);
  std::vector<uint8_t> t = unswizzleScales(swizzled, desc.cols, desc.rows);
  if (t.empty())
    return t;
  return transposeBytes(t, desc.cols, desc.rows);
}

} // namespace ref
} // namespace rt
} // namespace te
