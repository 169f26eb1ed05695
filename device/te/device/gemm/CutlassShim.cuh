//===- te/device/gemm/CutlassShim.cuh - CUTLASS under NVRTC -*- CUDA -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// What a source includes before its first CUTLASS/CuTe header. NVRTC's
// standard library is libcu++, which lacks two names a few CUTLASS headers
// spell with std::; they are aliased from cuda::std (the whole shim,
// docs/CodeGeneration.md). A header, not text pasted into each kernel, so
// that a generated source is #includes up to its first line of code and
// NVRTC's automatic precompiled header covers all of CUTLASS.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_GEMM_CUTLASSSHIM_CUH
#define TE_DEVICE_GEMM_CUTLASSSHIM_CUH

#include <cuda/std/type_traits>

namespace std {
using cuda::std::is_pointer_v;
using cuda::std::void_t;
} // namespace std

#endif // TE_DEVICE_GEMM_CUTLASSSHIM_CUH
