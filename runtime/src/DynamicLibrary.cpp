//===- DynamicLibrary.cpp - dlopen/dlsym as values ------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#include "DynamicLibrary.h"

#include <dlfcn.h>

namespace te::rt::detail {

Expected<DynamicLibrary>
DynamicLibrary::open(const std::vector<std::string> &names, StatusCode code,
                     const std::string &what) {
  std::string errors;
  for (const std::string &name : names) {
    if (void *h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      DynamicLibrary lib;
      lib.handle_ = h;
      lib.path_ = name;
      return lib;
    }
    const char *err = dlerror();
    errors += "\n  " + name + ": " + (err ? err : "unknown error");
  }
  return Status(code, what + errors);
}

void *DynamicLibrary::symbol(const char *name) const {
  return handle_ ? dlsym(handle_, name) : nullptr;
}

} // namespace te::rt::detail
