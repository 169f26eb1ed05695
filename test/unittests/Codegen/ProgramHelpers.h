//===- ProgramHelpers.h - Building small programs in tests ------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// What the codegen tests that build a te::cg::Program by hand share: a
// tensor value and the bytes of a bf16 argument.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TEST_UNITTESTS_CODEGEN_PROGRAMHELPERS_H
#define TE_TEST_UNITTESTS_CODEGEN_PROGRAMHELPERS_H

#include "te/codegen/Program.h"
#include "te/runtime/reference/Codecs.h"

#include <cstdint>
#include <string>
#include <vector>

namespace te::test {

/// A (not quantized) tensor value of `shape` and element type `t`.
inline cg::Value tensor(std::string name, std::vector<int64_t> shape,
                        rt::DType t) {
  cg::Value v;
  v.name = std::move(name);
  v.shape = std::move(shape);
  v.dtype = t;
  return v;
}

/// The little-endian bf16 bytes (RNE) of `v`.
inline std::vector<uint8_t> bf16Bytes(const std::vector<float> &v) {
  std::vector<uint8_t> out(2 * v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t h = rt::ref::floatToBF16(v[i]);
    out[2 * i] = uint8_t(h);
    out[2 * i + 1] = uint8_t(h >> 8);
  }
  return out;
}

} // namespace te::test

#endif // TE_TEST_UNITTESTS_CODEGEN_PROGRAMHELPERS_H
