//===- te/runtime/Cutlass.h - The CUTLASS/CuTe headers for NVRTC -*- C++
//-*-===//
//
// Part of tejit. Plain C++17.
//
//===----------------------------------------------------------------------===//
//
// Generated GEMMs are CUDA C++ on CUTLASS/CuTe, compiled by NVRTC at run
// time, so the headers must be on the machine that runs tejit: the PyPI
// wheel nvidia-cutlass ships them, and scripts/install-deps.sh unpacks
// them. This file says where they are and how NVRTC must be called to use
// them.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_CUTLASS_H
#define TE_RUNTIME_CUTLASS_H

#include "te/runtime/Status.h"

#include <string>
#include <vector>

namespace te::rt {

/// The CUTLASS version the generated GEMMs are written against.
constexpr const char *kCutlassVersion = "4.2.0.0";

/// The directory holding cutlass/ and cute/: $TE_CUTLASS_DIR when set,
/// else the one the build found (scripts/install-deps.sh unpacks the
/// headers into ~/.cache/tejit/cutlass-<version>/include). LibraryMissing,
/// naming every place looked at and the fix, when none holds them.
Expected<std::string> cutlassIncludeDir();

/// NVRTC flags for a translation unit that includes CUTLASS/CuTe: its
/// header directories (CUTLASS, the toolkit's CCCL and include
/// directories, from $CUDA_HOME or /usr/local/cuda), -default-device and
/// -DNDEBUG.
Expected<std::vector<std::string>> cutlassCompileFlags();

/// What a source puts before its first CUTLASS/CuTe include: the include
/// of te/device/gemm/CutlassShim.cuh (NVRTC's standard library is libcu++,
/// which lacks two names a few CUTLASS headers spell with std::; the shim
/// aliases them from cuda::std). The GEMM kernels' headers include it
/// themselves.
const char *cutlassPrelude();

namespace detail {
/// cutlassIncludeDir's search: `env` (may be null) first, then `built`.
Expected<std::string> findCutlass(const char *env, const std::string &built);
} // namespace detail

} // namespace te::rt

#endif // TE_RUNTIME_CUTLASS_H
