//===- NvrtcCompiler.cpp - CUDA C++ to CUBIN ------------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#include "te/runtime/NvrtcCompiler.h"

#include "CudaApi.h"
#include "te/device/EmbeddedHeaders.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

namespace te::rt {

std::vector<std::string> canonicalOptions(const CompileOptions &opts) {
  std::vector<std::string> extra = opts.flags;
  // Line tables for profiling (Nsight Compute, nvdisasm -g): SASS mapped to
  // the device library's lines. Part of the options, so of the cache key.
  if (const char *l = std::getenv("TE_NVRTC_LINEINFO"); l && *l && *l != '0')
    extra.push_back("-lineinfo");
  std::sort(extra.begin(), extra.end());
  extra.erase(std::unique(extra.begin(), extra.end()), extra.end());
  std::vector<std::string> out = {"-std=c++17",
                                  "--gpu-architecture=" + opts.arch};
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

Expected<std::string> nvrtcVersion() {
  Expected<const detail::NvrtcApi *> api = detail::nvrtcApi();
  if (!api)
    return api.status();
  return std::to_string((*api)->major) + "." + std::to_string((*api)->minor);
}

static Status nvrtcStatus(const detail::NvrtcApi &api, nvrtcResult r,
                          const char *what) {
  return Status(StatusCode::CompileError,
                std::string(what) + " failed: " + api.nvrtcGetErrorString(r));
}

Expected<CompiledKernel> compileCuda(const std::string &source,
                                     const std::string &programName,
                                     const CompileOptions &opts) {
  if (opts.arch.rfind("sm_", 0) != 0)
    return Status(StatusCode::InvalidArgument,
                  "architecture '" + opts.arch +
                      "' is not a real GPU architecture (sm_XX[a]); a CUBIN "
                      "needs one");
  Expected<const detail::NvrtcApi *> loaded = detail::nvrtcApi();
  if (!loaded)
    return loaded.status();
  const detail::NvrtcApi &api = **loaded;

  std::vector<const char *> headers, names;
  for (size_t i = 0; i < numDeviceHeaders(); ++i) {
    headers.push_back(deviceHeaders()[i].contents);
    names.push_back(deviceHeaders()[i].name);
  }
  nvrtcProgram prog;
  nvrtcResult r =
      api.nvrtcCreateProgram(&prog, source.c_str(), programName.c_str(),
                             int(headers.size()), headers.data(), names.data());
  if (r != NVRTC_SUCCESS)
    return nvrtcStatus(api, r, "nvrtcCreateProgram");

  std::vector<std::string> options = canonicalOptions(opts);
  std::vector<const char *> argv;
  for (const std::string &o : options)
    argv.push_back(o.c_str());
  auto start = std::chrono::steady_clock::now();
  r = api.nvrtcCompileProgram(prog, int(argv.size()), argv.data());
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count();

  CompiledKernel out;
  out.compileMillis = ms;
  size_t logSize = 0;
  if (api.nvrtcGetProgramLogSize(prog, &logSize) == NVRTC_SUCCESS &&
      logSize > 1) {
    out.log.resize(logSize);
    api.nvrtcGetProgramLog(prog, out.log.data());
    out.log.resize(logSize - 1); // drop the terminating NUL
  }
  if (r != NVRTC_SUCCESS) {
    api.nvrtcDestroyProgram(&prog);
    // The automatic precompiled header is only a speed-up: where it fails
    // (NVRTC has run out of its PCH heap: "unable to obtain mapped
    // memory"), the source compiles without it.
    auto pch = std::find(opts.flags.begin(), opts.flags.end(), "--pch");
    if (pch != opts.flags.end()) {
      CompileOptions plain = opts;
      plain.flags.erase(plain.flags.begin() + (pch - opts.flags.begin()));
      return compileCuda(source, programName, plain);
    }
    return Status(StatusCode::CompileError, "NVRTC could not compile '" +
                                                programName + "' for " +
                                                opts.arch + ":\n" + out.log);
  }
  size_t size = 0;
  r = api.nvrtcGetCUBINSize(prog, &size);
  if (r == NVRTC_SUCCESS) {
    out.cubin.resize(size);
    r = api.nvrtcGetCUBIN(prog, out.cubin.data());
  }
  api.nvrtcDestroyProgram(&prog);
  if (r != NVRTC_SUCCESS)
    return nvrtcStatus(api, r, "nvrtcGetCUBIN");
  return out;
}

} // namespace te::rt
