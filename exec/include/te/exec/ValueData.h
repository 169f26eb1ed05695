//===- te/exec/ValueData.h - A value's storage as host bytes -*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//
//
// What both backends return for a value: its storage buffers as host bytes,
// named as te-run dumps them, with how another backend's copy must agree.
//
//===----------------------------------------------------------------------===//

#ifndef TE_EXEC_VALUEDATA_H
#define TE_EXEC_VALUEDATA_H

#include "te/formats/Scheme.h"

#include <cstdint>
#include <string>
#include <vector>

namespace te::exec {

struct NamedBuffer {
  std::string name;
  rt::BufferDesc desc;
  std::vector<uint8_t> bytes;
  /// How another backend's result must agree with this one (the CPU backend
  /// sets it): empty means bit for bit; else element i within the absolute
  /// bound tolerance[i] - outputs of GEMMs whose summation order is the
  /// library's (docs/Numerics.md states the bound).
  std::vector<float> tolerance;
  /// Computed from such a GEMM output, so no bound is known: comparisons
  /// check its shape only and say so.
  bool unbounded = false;
};

/// The buffers of one value.
using ValueData = std::vector<NamedBuffer>;

} // namespace te::exec

#endif // TE_EXEC_VALUEDATA_H
