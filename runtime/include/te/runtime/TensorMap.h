//===- te/runtime/TensorMap.h - TMA descriptors -----------------*- C++ -*-===//
//
// Part of tejit. Plain C++17: no CUDA headers.
//
//===----------------------------------------------------------------------===//
//
// A Hopper TMA descriptor (CUtensorMap) over a row-major 2-D tensor in
// device memory, encoded by the driver (cuTensorMapEncodeTiled, loaded
// lazily like every driver call). Generated kernels take it by value as a
// __grid_constant__ parameter.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_TENSORMAP_H
#define TE_RUNTIME_TENSORMAP_H

#include "te/formats/Scheme.h"
#include "te/runtime/Status.h"

#include <cstdint>

namespace te::rt {

/// The 128 opaque bytes of a CUtensorMap.
struct alignas(128) TensorMap {
  unsigned char bytes[128] = {};
};

enum class TensorMapSwizzle { None, B128 };

/// A row-major [rows, cols] tensor of `dtype` at `ptr` whose rows are
/// `rowStrideBytes` apart, read in boxes of [boxRows, boxCols] elements.
/// Elements outside the tensor read as zero. InvalidArgument when the
/// driver's rules are broken (16-byte aligned base and row stride, box
/// sides 1..256, a 128-byte swizzled box row of at most 128 bytes).
Expected<TensorMap> encodeTensorMap2D(DType dtype, uint64_t ptr, int64_t rows,
                                      int64_t cols, int64_t rowStrideBytes,
                                      int boxRows, int boxCols,
                                      TensorMapSwizzle swizzle);

/// The geometry of a TMA descriptor argument: a row-major [rows, cols]
/// view of `dtype` elements, rows `rowStrideBytes` apart, read in boxes of
/// [boxRows, boxCols] (encodeTensorMap2D's parameters less the address).
struct TensorMapShape {
  DType dtype = DType::BF16;
  int64_t rows = 0, cols = 0, rowStrideBytes = 0;
  int32_t boxRows = 0, boxCols = 0;
  TensorMapSwizzle swizzle = TensorMapSwizzle::None;
  /// Bytes of the buffer the view reaches (0 for an empty view).
  uint64_t bytesSpanned() const {
    return rows <= 0 || cols <= 0 ? 0
                                  : uint64_t((rows - 1) * rowStrideBytes +
                                             cols * dtypeSize(dtype));
  }
  bool operator==(const TensorMapShape &o) const {
    return dtype == o.dtype && rows == o.rows && cols == o.cols &&
           rowStrideBytes == o.rowStrideBytes && boxRows == o.boxRows &&
           boxCols == o.boxCols && swizzle == o.swizzle;
  }
};

/// encodeTensorMap2D of `shape` at `ptr`.
Expected<TensorMap> encodeTensorMap(const TensorMapShape &shape, uint64_t ptr);

} // namespace te::rt

#endif // TE_RUNTIME_TENSORMAP_H
