//===- te/device/Device.cuh - Device numerics library -----------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Umbrella header for generated kernels: everything in namespace te::dev.
// The library is header-only, uses no CUDA or C++ standard headers under
// NVRTC, and compiles unchanged as host C++ (the host tests pin it against
// the reference numerics in te/runtime/reference).
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_DEVICE_CUH
#define TE_DEVICE_DEVICE_CUH

#include "te/device/Arith.cuh"
#include "te/device/Bf16.cuh"
#include "te/device/Bits.cuh"
#include "te/device/Common.cuh"
#include "te/device/E8M0.cuh"
#include "te/device/Fp4.cuh"
#include "te/device/Fp8.cuh"
#include "te/device/Philox.cuh"
#include "te/device/Rounding.cuh"
#include "te/device/Scales.cuh"

#endif // TE_DEVICE_DEVICE_CUH
