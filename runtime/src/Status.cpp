//===- Status.cpp - Errors as values --------------------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#include "te/runtime/Status.h"

namespace te::rt {

const char *statusCodeName(StatusCode c) {
  switch (c) {
  case StatusCode::Ok:
    return "ok";
  case StatusCode::NoDriver:
    return "no driver";
  case StatusCode::NoDevice:
    return "no device";
  case StatusCode::LibraryMissing:
    return "library missing";
  case StatusCode::CudaError:
    return "CUDA error";
  case StatusCode::CompileError:
    return "compile error";
  case StatusCode::BlasError:
    return "cuBLASLt error";
  case StatusCode::InvalidArgument:
    return "invalid argument";
  case StatusCode::IoError:
    return "I/O error";
  case StatusCode::Unsupported:
    return "unsupported";
  case StatusCode::ResourceExhausted:
    return "resource exhausted";
  }
  return "?";
}

std::string Status::toString() const {
  if (isOk())
    return "ok";
  return std::string(statusCodeName(code_)) + ": " + message_;
}

} // namespace te::rt
