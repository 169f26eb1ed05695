//===- CudaApi.cpp - lazily loaded CUDA driver and NVRTC ------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#include "CudaApi.h"

#include "DynamicLibrary.h"

#include <cstdlib>

namespace te::rt::detail {

static std::vector<std::string> cudaHomeCandidates(const char *lib) {
  std::vector<std::string> out;
  if (const char *home = std::getenv("CUDA_HOME"))
    out.push_back(std::string(home) + "/lib64/" + lib);
  out.push_back(std::string("/usr/local/cuda/lib64/") + lib);
  return out;
}

Expected<DriverApi> loadDriverApi(const std::vector<std::string> &candidates) {
  Expected<DynamicLibrary> lib = DynamicLibrary::open(
      candidates, StatusCode::NoDriver,
      "no CUDA driver found: tejit can compile kernels (NVRTC) and run the "
      "CPU backend here, but cannot run on a GPU; tried");
  if (!lib)
    return lib.status();
  using GetProc = decltype(&::cuGetProcAddress);
  auto getProc = reinterpret_cast<GetProc>(lib->symbol("cuGetProcAddress_v2"));
  if (!getProc)
    return Status(StatusCode::NoDriver,
                  "the CUDA driver at " + lib->path() +
                      " lacks cuGetProcAddress_v2 (driver older than CUDA 12)");
  DriverApi api;
  api.libraryPath = lib->path();
#define TE_CU_FN(name)                                                         \
  {                                                                            \
    void *fn = nullptr;                                                        \
    CUdriverProcAddressQueryResult found;                                      \
    if (getProc(#name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT,         \
                &found) != CUDA_SUCCESS ||                                     \
        found != CU_GET_PROC_ADDRESS_SUCCESS || !fn)                           \
      return Status(StatusCode::NoDriver,                                      \
                    "the CUDA driver at " + lib->path() +                      \
                        " lacks " #name " for CUDA " +                         \
                        std::to_string(CUDA_VERSION) + " (driver too old?)");  \
    api.name = reinterpret_cast<decltype(api.name)>(fn);                       \
  }
#include "DriverSymbols.def"
#undef TE_CU_FN
  CUresult r = api.cuInit(0);
  if (r == CUDA_ERROR_NO_DEVICE)
    return Status(
        StatusCode::NoDevice,
        "the CUDA driver found no GPU (cuInit: CUDA_ERROR_NO_DEVICE)");
  if (r != CUDA_SUCCESS)
    return cuCheck(api, r, "cuInit");
  api.cuDriverGetVersion(&api.driverVersion);
  return api;
}

Expected<const DriverApi *> driverApi() {
  static const Expected<DriverApi> api =
      loadDriverApi({"libcuda.so.1", "libcuda.so"});
  if (!api)
    return api.status();
  return &*api;
}

Status cuCheck(const DriverApi &api, CUresult r, const char *what) {
  if (r == CUDA_SUCCESS)
    return Status::ok();
  const char *name = nullptr, *text = nullptr;
  if (api.cuGetErrorName)
    api.cuGetErrorName(r, &name);
  if (api.cuGetErrorString)
    api.cuGetErrorString(r, &text);
  return Status(StatusCode::CudaError,
                std::string(what) + " failed: " + (name ? name : "?") + " (" +
                    (text ? text : "unknown") + ")");
}

static Expected<NvrtcApi> loadNvrtcApi() {
  std::vector<std::string> names = {"libnvrtc.so.13"};
  for (std::string &c : cudaHomeCandidates("libnvrtc.so.13"))
    names.push_back(std::move(c));
  Expected<DynamicLibrary> lib = DynamicLibrary::open(
      names, StatusCode::LibraryMissing,
      "NVRTC 13 (libnvrtc.so.13) not found, so kernels cannot be compiled; "
      "tried");
  if (!lib)
    return lib.status();
  NvrtcApi api;
  api.libraryPath = lib->path();
#define TE_NVRTC_FN(name)                                                      \
  api.name = reinterpret_cast<decltype(api.name)>(lib->symbol(#name));         \
  if (!api.name)                                                               \
    return Status(StatusCode::LibraryMissing, lib->path() + " lacks " #name);
#include "NvrtcSymbols.def"
#undef TE_NVRTC_FN
  api.nvrtcVersion(&api.major, &api.minor);
  return api;
}

Expected<const NvrtcApi *> nvrtcApi() {
  static const Expected<NvrtcApi> api = loadNvrtcApi();
  if (!api)
    return api.status();
  return &*api;
}

} // namespace te::rt::detail
