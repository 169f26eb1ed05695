//===- TensorMap.cpp - TMA descriptors through the driver -----------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#include "te/runtime/TensorMap.h"

#include "CudaApi.h"

#include <string>

namespace te::rt {

static_assert(sizeof(TensorMap) == sizeof(CUtensorMap) &&
                  alignof(TensorMap) >= alignof(CUtensorMap),
              "TensorMap must be a CUtensorMap");

Expected<TensorMap> encodeTensorMap2D(DType dtype, uint64_t ptr, int64_t rows,
                                      int64_t cols, int64_t rowStrideBytes,
                                      int boxRows, int boxCols,
                                      TensorMapSwizzle swizzle) {
  CUtensorMapDataType type;
  switch (dtype) {
  case DType::F32:
    type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    break;
  case DType::BF16:
    type = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    break;
  case DType::F16:
    type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    break;
  case DType::E4M3:
  case DType::E5M2:
  case DType::E8M0:
    type = CU_TENSOR_MAP_DATA_TYPE_UINT8;
    break;
  default:
    return Status(StatusCode::InvalidArgument,
                  std::string("no TMA descriptor for element type ") +
                      dtypeName(dtype));
  }
  auto bad = [&](const std::string &why) {
    return Status(StatusCode::InvalidArgument,
                  "TMA descriptor over [" + std::to_string(rows) + ", " +
                      std::to_string(cols) + "] " + dtypeName(dtype) + ": " +
                      why);
  };
  int64_t elem = dtypeSize(dtype);
  if (ptr % 16 != 0)
    return bad("the base address is not 16-byte aligned");
  if (rows < 1 || cols < 1)
    return bad("empty tensor");
  if (rows > 1 && (rowStrideBytes % 16 != 0 || rowStrideBytes < cols * elem))
    return bad("the row stride (" + std::to_string(rowStrideBytes) +
               " bytes) is not a multiple of 16 covering a row");
  if (boxRows < 1 || boxRows > 256 || boxCols < 1 || boxCols > 256)
    return bad("box sides must be 1..256");
  if ((boxCols * elem) % 16 != 0)
    return bad("a box row must be a multiple of 16 bytes");
  if (swizzle == TensorMapSwizzle::B128 && boxCols * elem > 128)
    return bad("a 128-byte swizzled box row holds at most 128 bytes");

  Expected<const detail::DriverApi *> api = detail::driverApi();
  if (!api)
    return api.status();
  TensorMap map;
  cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols),
                        static_cast<cuuint64_t>(rows)};
  cuuint64_t strides[1] = {static_cast<cuuint64_t>(
      rows > 1 ? rowStrideBytes : ((cols * elem + 15) / 16) * 16)};
  cuuint32_t box[2] = {static_cast<cuuint32_t>(boxCols),
                       static_cast<cuuint32_t>(boxRows)};
  cuuint32_t elementStrides[2] = {1, 1};
  CUresult r = (*api)->cuTensorMapEncodeTiled(
      reinterpret_cast<CUtensorMap *>(&map), type, 2,
      reinterpret_cast<void *>(ptr), dims, strides, box, elementStrides,
      CU_TENSOR_MAP_INTERLEAVE_NONE,
      swizzle == TensorMapSwizzle::B128 ? CU_TENSOR_MAP_SWIZZLE_128B
                                        : CU_TENSOR_MAP_SWIZZLE_NONE,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (Status s = detail::cuCheck(**api, r, "cuTensorMapEncodeTiled"); !s.isOk())
    return s;
  return map;
}

Expected<TensorMap> encodeTensorMap(const TensorMapShape &m, uint64_t ptr) {
  return encodeTensorMap2D(m.dtype, ptr, m.rows, m.cols, m.rowStrideBytes,
                           m.boxRows, m.boxCols, m.swizzle);
}

} // namespace te::rt
