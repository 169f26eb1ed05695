//===- te/device/Common.cuh - Device library basics -------------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Every device-library header is compiled three ways: by NVRTC for generated
// kernels (no system headers at all, so compiles stay fast), by nvcc for the
// GPU tests, and as plain host C++ for the host tests that pin the library
// against the reference numerics. This header holds what all three share:
// the TE_HD function qualifier, fixed-width integer aliases that need no
// <cstdint>, and the macros that select the hardware conversions.
//
// Compile kernels with -ftz=false (the NVRTC and nvcc default;
// --use_fast_math implies -ftz=true). The library's codecs work on bits and its
// rounding helpers (Arith.cuh) are immune to -ftz, but generated float
// arithmetic and comparisons are not, and TE keeps fp32 subnormals
// (docs/Numerics.md §1.2).
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_COMMON_CUH
#define TE_DEVICE_COMMON_CUH

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define TE_HD __host__ __device__ __forceinline__
#else
#define TE_HD inline
#endif

/// 1 in device code for sm_89 and newer, which have the
/// cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 conversions; 0 on the host and on
/// older devices, which take the exact software paths.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define TE_DEVICE_HW_FP8 1
#else
#define TE_DEVICE_HW_FP8 0
#endif

/// 1 in device code for sm_80 and newer (cvt.rn.bf16.f32, cvt.rn.f16.f32).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define TE_DEVICE_HW_16BIT 1
#else
#define TE_DEVICE_HW_16BIT 0
#endif

/// 1 in device code (CUDA intrinsics available), 0 on the host.
#if defined(__CUDA_ARCH__)
#define TE_DEVICE_CODE 1
#else
#define TE_DEVICE_CODE 0
#endif

/// Asks the device compiler to unroll the next loop (no-op on the host).
#if defined(__CUDA_ARCH__)
#define TE_UNROLL _Pragma("unroll")
#else
#define TE_UNROLL
#endif

namespace te {
namespace dev {

// Fixed-width aliases spelled with fundamental types, so that NVRTC needs no
// <cstdint>. The static_asserts below hold on every CUDA host and device.
using u8 = unsigned char;
using u16 = unsigned short;
using u32 = unsigned int;
using u64 = unsigned long long;
using i32 = int;
using i64 = long long;

static_assert(sizeof(u8) == 1 && sizeof(u16) == 2 && sizeof(u32) == 4 &&
                  sizeof(u64) == 8 && sizeof(float) == 4,
              "unexpected fundamental type sizes");

/// The two FP8 element formats (docs/Numerics.md §1.1).
enum class Fp8Format { E4M3, E5M2 };

/// High-precision dtype of a tensor being block-quantized; selects the
/// value_for_inf of the FP8 block scale (docs/Numerics.md §7.1).
enum class SourceType { BF16, F16, F32 };

} // namespace dev
} // namespace te

#endif // TE_DEVICE_COMMON_CUH
