//===- DynamicLibrary.h - dlopen/dlsym as values ----------------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_SRC_DYNAMICLIBRARY_H
#define TE_RUNTIME_SRC_DYNAMICLIBRARY_H

#include "te/runtime/Status.h"

#include <string>
#include <vector>

namespace te::rt::detail {

/// A library opened with dlopen and never closed (CUDA libraries must outlive
/// every handle created from them, including at process exit).
class DynamicLibrary {
public:
  /// Opens the first of `candidates` that loads. On failure the Status
  /// carries `code` and lists every dlerror().
  static Expected<DynamicLibrary> open(const std::vector<std::string> &names,
                                       StatusCode code,
                                       const std::string &what);
  void *symbol(const char *name) const;
  const std::string &path() const { return path_; }

private:
  void *handle_ = nullptr;
  std::string path_;
};

} // namespace te::rt::detail

#endif // TE_RUNTIME_SRC_DYNAMICLIBRARY_H
