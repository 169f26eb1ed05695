//===- runtime/src/reference/QuantizeInternal.h - Helpers -------*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR and no CUDA.
//
//===----------------------------------------------------------------------===//
//
// Private to the reference quantizer: the per-format quantize functions live
// in separate files (Quantize.cpp, QuantizeNvfp4.cpp) so that each stays
// readable, and share the input view and the direction builders declared
// here.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_SRC_REFERENCE_QUANTIZEINTERNAL_H
#define TE_RUNTIME_SRC_REFERENCE_QUANTIZEINTERNAL_H

#include "te/runtime/reference/Quantize.h"

#include <string>

namespace te {
namespace rt {
namespace ref {
namespace detail {

/// The tensor being quantized: the caller's bits and their fp32 widening.
struct SourceView {
  const void *raw = nullptr;
  SourceType type = SourceType::F32;
  const float *x = nullptr; ///< m * k widened values, row-major
  int64_t m = 0, k = 0;
};

/// Builds direction `d` of an NVFP4 tensor (QuantizeNvfp4.cpp).
QuantizedDirection quantizeNvfp4(const SourceView &src, const Scheme &scheme,
                                 Direction d, const QuantizeOptions &options);

/// Dequantizes an NVFP4 direction into the logical M x K matrix.
std::vector<float> dequantizeNvfp4(const QuantizedDirection &q, Direction d,
                                   int64_t m, int64_t k);

/// Position of block scale (i, j) of a byte scale matrix with `cols`
/// columns, compact or swizzled. For MXFP8 columnwise the swizzled matrix is
/// the transpose, so callers pass (j, i) and the transposed width then.
inline int64_t scaleIndex(bool swizzled, int64_t i, int64_t j, int64_t cols) {
  return swizzled ? gemmSwizzledScaleIndex(i, j, cols) : i * cols + j;
}

} // namespace detail
} // namespace ref
} // namespace rt
} // namespace te

#endif // TE_RUNTIME_SRC_REFERENCE_QUANTIZEINTERNAL_H
