//===- te/runtime/Status.h - Errors as values -------------------*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR and no CUDA.
//
//===----------------------------------------------------------------------===//
//
// The runtime never aborts or exits: every fallible call returns a Status or
// an Expected<T>. A machine without a GPU driver is an ordinary error value
// ("no CUDA driver found ..."), so binaries start everywhere.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_STATUS_H
#define TE_RUNTIME_STATUS_H

#include <string>
#include <utility>
#include <variant>

namespace te::rt {

enum class StatusCode {
  Ok,
  NoDriver,          ///< libcuda could not be loaded
  NoDevice,          ///< a driver, but no usable GPU
  LibraryMissing,    ///< NVRTC or cuBLASLt could not be loaded
  CudaError,         ///< a driver call failed
  CompileError,      ///< NVRTC rejected the source (log in the message)
  BlasError,         ///< a cuBLASLt call failed or has no kernel
  InvalidArgument,   ///< the caller passed something wrong
  IoError,           ///< file system trouble (cache, inputs)
  Unsupported,       ///< valid, but not implemented for this target
  ResourceExhausted, ///< valid, but more memory than the machine has
};

const char *statusCodeName(StatusCode c);

class [[nodiscard]] Status {
public:
  Status() = default;
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}
  static Status ok() { return Status(); }

  bool isOk() const { return code_ == StatusCode::Ok; }
  explicit operator bool() const { return isOk(); }
  StatusCode code() const { return code_; }
  const std::string &message() const { return message_; }
  /// "<code name>: <message>", or "ok".
  std::string toString() const;

private:
  StatusCode code_ = StatusCode::Ok;
  std::string message_;
};

/// A value or the Status explaining why there is none.
template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T value) : v_(std::move(value)) {}
  Expected(Status status) : v_(std::move(status)) {}

  bool hasValue() const { return v_.index() == 0; }
  explicit operator bool() const { return hasValue(); }
  T &operator*() { return std::get<0>(v_); }
  const T &operator*() const { return std::get<0>(v_); }
  T *operator->() { return &std::get<0>(v_); }
  const T *operator->() const { return &std::get<0>(v_); }
  T &value() { return std::get<0>(v_); }
  /// The error; Status::ok() when a value is held.
  Status status() const { return hasValue() ? Status::ok() : std::get<1>(v_); }

private:
  std::variant<T, Status> v_;
};

} // namespace te::rt

/// Returns the Status of `expr` from the enclosing function if it failed.
#define TE_RETURN_IF_ERROR(expr)                                               \
  do {                                                                         \
    ::te::rt::Status _teStatus = (expr);                                       \
    if (!_teStatus.isOk())                                                     \
      return _teStatus;                                                        \
  } while (0)

#endif // TE_RUNTIME_STATUS_H
