//===- te/device/DequantizeKernel.cuh - Dequantize kernel --------*- C++
//-*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The body of every generated dequantize kernel: the logical M x K values
// of one direction of a quantized tensor, from its storage as docs/Numerics.md
// §2 lays it out (compact scales; transposed data where the target stores it
// so), by each format's dequantization formula - the same expressions as
// te::rt::ref::dequantize - rounded once to the output type.
//
// Dequantization is a debugging / emulation path, not a training hot path:
// a grid-stride loop over output elements, one element per thread and step
// (coalesced output writes; transposed sources are read with a stride).
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_DEQUANTIZEKERNEL_CUH
#define TE_DEVICE_DEQUANTIZEKERNEL_CUH

#include "te/device/Fp4.cuh"
#include "te/device/QuantizeCommon.cuh"

namespace te {
namespace dev {

/// The buffers of the direction being read.
struct DequantArgs {
  const u8 *data;
  const void *scale; ///< scale_inv (FP32 or E8M0 / E4M3 bytes), compact
  const float *amax; ///< NVFP4: the tensor amax of the direction
  i64 m, k;
  i64 scaleCols; ///< columns of the scale_inv buffer
};

/// Per-tensor FP8: q * scale_inv; `Transposed`: data is K x M.
template <Fp8Format F, bool Transposed> struct Fp8PerTensorDecode {
  __device__ static float value(const DequantArgs &a, i64 r, i64 c) {
    u8 q = a.data[Transposed ? c * a.m + r : r * a.k + c];
    return mulRn(decodeFp8<F>(q), *static_cast<const float *>(a.scale));
  }
};

/// MXFP8: q * 2^(E - 127), one E8M0 per 1x32 (rowwise) / 32x1 block.
template <Fp8Format F, bool Rowwise> struct Mxfp8Decode {
  __device__ static float value(const DequantArgs &a, i64 r, i64 c) {
    const u8 *s = static_cast<const u8 *>(a.scale);
    u8 e =
        Rowwise ? s[r * a.scaleCols + c / 32] : s[(r / 32) * a.scaleCols + c];
    return mulRn(decodeFp8<F>(a.data[r * a.k + c]), decodeE8M0(e));
  }
};

/// NVFP4: e2m1 * fl(fl(e4m3(sB) * amax) * fl(1/2688)); the columnwise data
/// and scales are those of the K x M transpose. With RHT the columnwise
/// data, scales and amax are those of the transformed matrix, so this
/// yields the transformed values, as the reference's dequantize does.
template <bool Rowwise> struct Nvfp4Decode {
  __device__ static float value(const DequantArgs &a, i64 r, i64 c) {
    i64 i = Rowwise ? r : c, j = Rowwise ? c : r, cols = Rowwise ? a.k : a.m;
    u8 byte = a.data[(i * cols + j) / 2];
    u8 code = j % 2 ? unpackE2M1High(byte) : unpackE2M1Low(byte);
    u8 sB = static_cast<const u8 *>(a.scale)[i * a.scaleCols + j / 16];
    return mulRn(decodeE2M1(code), nvfp4DequantFactor(sB, *a.amax));
  }
};

/// FP8 block scaling (1x128 or 128x128 `Tile2d`): q * scale_inv of the
/// element's block; columnwise data is K x M.
template <Fp8Format F, bool Rowwise, bool Tile2d> struct Fp8BlockDecode {
  __device__ static float value(const DequantArgs &a, i64 r, i64 c) {
    const float *s = static_cast<const float *>(a.scale);
    i64 rb = r / 128, cb = c / 128, at;
    if (Tile2d)
      at = Rowwise ? rb * a.scaleCols + cb : cb * a.scaleCols + rb;
    else
      at = Rowwise ? cb * a.scaleCols + r : rb * a.scaleCols + c;
    u8 q = a.data[Rowwise ? r * a.k + c : c * a.m + r];
    return mulRn(decodeFp8<F>(q), s[at]);
  }
};

/// Identity: the stored element (0 bf16, 1 f16, 2 f32), widened.
template <int In> struct IdentityDecode {
  __device__ static float value(const DequantArgs &a, i64 r, i64 c) {
    i64 i = r * a.k + c;
    if (In == 2)
      return reinterpret_cast<const float *>(a.data)[i];
    u16 h = reinterpret_cast<const u16 *>(a.data)[i];
    return In == 1 ? f16ToFloat(h) : bitsToFloat(u32(h) << 16);
  }
};

/// Writes Decode's value of every element as `Out` (0 bf16, 1 f16, 2 f32,
/// rounded to nearest even) into the row-major M x K `out`.
template <class Decode, int Out>
__device__ __forceinline__ void dequantizeTensor(const DequantArgs &a,
                                                 void *out) {
  i64 n = a.m * a.k;
  i64 stride = i64(gridDim.x) * blockDim.x;
  for (i64 i = i64(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    float v = Decode::value(a, i / a.k, i % a.k);
    if (Out == 2)
      static_cast<float *>(out)[i] = v;
    else
      static_cast<u16 *>(out)[i] = Out == 1 ? floatToF16(v) : floatToBF16(v);
  }
}

} // namespace dev
} // namespace te

#endif // TE_DEVICE_DEQUANTIZEKERNEL_CUH
