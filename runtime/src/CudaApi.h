//===- CudaApi.h - lazily loaded CUDA driver and NVRTC ----------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The runtime links no CUDA library. The driver (libcuda.so.1) and NVRTC
// (libnvrtc.so.13) are opened on first use; on a machine without them every
// call that needs them returns a Status saying so (IREE's dynamic symbol
// table pattern). Only runtime sources include this header.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_SRC_CUDAAPI_H
#define TE_RUNTIME_SRC_CUDAAPI_H

#include "te/runtime/Status.h"

#include <cuda.h>
#include <nvrtc.h>

#include <string>
#include <vector>

namespace te::rt::detail {

struct DriverApi {
#define TE_CU_FN(name) decltype(&::name) name = nullptr;
#include "DriverSymbols.def"
#undef TE_CU_FN
  std::string libraryPath;
  int driverVersion = 0;
};

/// Loads the driver from `candidates` and calls cuInit(0). Not cached: tests
/// use it to check the missing-driver path on any machine.
Expected<DriverApi> loadDriverApi(const std::vector<std::string> &candidates);

/// The process-wide driver, loaded once from the default locations.
Expected<const DriverApi *> driverApi();

/// Turns a driver result into a Status naming `what` and the CUDA error.
Status cuCheck(const DriverApi &api, CUresult r, const char *what);

struct NvrtcApi {
#define TE_NVRTC_FN(name) decltype(&::name) name = nullptr;
#include "NvrtcSymbols.def"
#undef TE_NVRTC_FN
  std::string libraryPath;
  int major = 0, minor = 0;
};

/// The process-wide NVRTC, loaded once.
Expected<const NvrtcApi *> nvrtcApi();

} // namespace te::rt::detail

#endif // TE_RUNTIME_SRC_CUDAAPI_H
