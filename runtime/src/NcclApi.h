//===- NcclApi.h - lazily loaded NCCL ---------------------------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The NCCL entry points Communicator uses, opened with dlopen on first use
// (the driver's pattern, CudaApi.h). Only runtime sources and the runtime's
// tests include this header.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_SRC_NCCLAPI_H
#define TE_RUNTIME_SRC_NCCLAPI_H

#include "DynamicLibrary.h"

#include "te/runtime/Status.h"

#include <nccl.h>

#include <string>
#include <vector>

namespace te::rt::detail {

struct NcclApi {
  decltype(&::ncclGetVersion) ncclGetVersion = nullptr;
  decltype(&::ncclGetUniqueId) ncclGetUniqueId = nullptr;
  decltype(&::ncclCommInitRank) ncclCommInitRank = nullptr;
  decltype(&::ncclCommDestroy) ncclCommDestroy = nullptr;
  decltype(&::ncclAllGather) ncclAllGather = nullptr;
  decltype(&::ncclAllReduce) ncclAllReduce = nullptr;
  decltype(&::ncclGetErrorString) ncclGetErrorString = nullptr;
  decltype(&::ncclGroupStart) ncclGroupStart = nullptr;
  decltype(&::ncclGroupEnd) ncclGroupEnd = nullptr;
  std::string path;
};

/// Opens the first of `candidates` that loads and resolves every entry
/// point. Not cached: tests use it to check the missing-library message.
Expected<NcclApi> loadNcclApi(const std::vector<std::string> &candidates);

} // namespace te::rt::detail

#endif // TE_RUNTIME_SRC_NCCLAPI_H
