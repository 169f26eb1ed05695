//===- te/runtime/NvrtcCompiler.h - CUDA C++ to CUBIN -----------*- C++ -*-===//
//
// Part of tejit. Plain C++17 interface; NVRTC is loaded at run time.
//
//===----------------------------------------------------------------------===//
//
// Compiles generated CUDA C++ to a CUBIN for one exact architecture
// (sm_90a on Hopper). The device library headers (device) are passed
// to NVRTC as in-memory headers, so generated code includes
// "te/device/Device.cuh" without touching the file system. NVRTC needs no
// GPU: every kernel can be compile-checked in CI.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_NVRTCCOMPILER_H
#define TE_RUNTIME_NVRTCCOMPILER_H

#include "te/runtime/Status.h"

#include <string>
#include <vector>

namespace te::rt {

struct CompileOptions {
  /// Target architecture, e.g. "sm_90a" (Hopper with wgmma/setmaxnreg).
  std::string arch = "sm_90a";
  /// Extra NVRTC flags (e.g. "-lineinfo", "--maxrregcount=128").
  std::vector<std::string> flags;
};

/// The exact NVRTC option list for `opts`: fixed flags first (C++17, the
/// architecture), then the extra flags sorted and de-duplicated. Equal lists
/// mean equal compilations; the kernel cache keys on this list.
std::vector<std::string> canonicalOptions(const CompileOptions &opts);

struct CompiledKernel {
  std::vector<char> cubin;
  std::string log;          ///< NVRTC's log (warnings), possibly empty
  double compileMillis = 0; ///< wall time of nvrtcCompileProgram
};

/// Compiles `source` with the device library available as headers.
/// `programName` names the program in NVRTC's diagnostics. A compile error
/// returns StatusCode::CompileError with the log in the message.
Expected<CompiledKernel> compileCuda(const std::string &source,
                                     const std::string &programName,
                                     const CompileOptions &opts);

/// "13.0" etc., or the error saying NVRTC could not be loaded.
Expected<std::string> nvrtcVersion();

} // namespace te::rt

#endif // TE_RUNTIME_NVRTCCOMPILER_H
