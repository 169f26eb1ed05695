//===- Cutlass.cpp - The CUTLASS/CuTe headers for NVRTC -------------------===//
//
// Part of tejit. Plain C++17.
//
//===----------------------------------------------------------------------===//

#include "te/runtime/Cutlass.h"

#include <cstdlib>
#include <sys/stat.h>

#ifndef TE_CUTLASS_DEFAULT_DIR
#define TE_CUTLASS_DEFAULT_DIR ""
#endif

namespace te::rt {

static bool isFile(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

static bool holdsCutlass(const std::string &dir) {
  return !dir.empty() && isFile(dir + "/cute/tensor.hpp") &&
         isFile(dir + "/cutlass/cutlass.h");
}

Expected<std::string> cutlassIncludeDir() {
  return detail::findCutlass(std::getenv("TE_CUTLASS_DIR"),
                             TE_CUTLASS_DEFAULT_DIR);
}

Expected<std::string> detail::findCutlass(const char *env,
                                          const std::string &built) {
  std::string tried;
  if (env) {
    if (holdsCutlass(env))
      return std::string(env);
    tried += "\n  $TE_CUTLASS_DIR=" + std::string(env) +
             ": no cute/tensor.hpp and cutlass/cutlass.h there";
  }
  if (holdsCutlass(built))
    return built;
  if (!built.empty())
    tried += "\n  " + built + " (found by the build): not there any more";
  return Status(StatusCode::LibraryMissing,
                std::string("the CUTLASS/CuTe headers (nvidia-cutlass ") +
                    kCutlassVersion +
                    ") that generated GEMMs need were not found; run "
                    "scripts/install-deps.sh, or point TE_CUTLASS_DIR at the "
                    "directory holding cutlass/ and cute/" +
                    (tried.empty() ? "" : "; tried:" + tried));
}

Expected<std::vector<std::string>> cutlassCompileFlags() {
  Expected<std::string> dir = cutlassIncludeDir();
  if (!dir)
    return dir.status();
  const char *home = std::getenv("CUDA_HOME");
  std::string cuda =
      std::string(home && *home ? home : "/usr/local/cuda") + "/include";
  if (!isFile(cuda + "/cuda/std/type_traits") &&
      !isFile(cuda + "/cccl/cuda/std/type_traits"))
    return Status(StatusCode::LibraryMissing,
                  "the CUDA toolkit's libcu++ headers (cuda/std/) are not in " +
                      cuda + " or " + cuda +
                      "/cccl; generated GEMMs need them (set CUDA_HOME)");
  return std::vector<std::string>{"-I" + *dir, "-I" + cuda + "/cccl",
                                  "-I" + cuda, "-default-device", "-DNDEBUG"};
}

const char *cutlassPrelude() {
  return "#include \"te/device/gemm/CutlassShim.cuh\"\n";
}

} // namespace te::rt
