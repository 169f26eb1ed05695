//===- Npy.h - NumPy .npy files for te-run ----------------------*- C++ -*-===//
//
// Part of tejit. Plain C++17.
//
//===----------------------------------------------------------------------===//
//
// Reads and writes version 1/2 .npy files of little-endian (or byte-sized)
// C-order arrays: '<f4', '<f2', '<u2' (bf16 bit patterns), '|u1'.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TOOLS_TE_RUN_NPY_H
#define TE_TOOLS_TE_RUN_NPY_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace te::npy {

struct Array {
  std::string descr; ///< e.g. "<f4"
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

/// Checks a header (descr and shape; no bytes yet) before the payload is
/// read: "" to go on, else the reason to stop.
using Accept = std::function<std::string(const Array &header)>;

/// Reads `path`, a regular file whose payload is exactly what its header
/// declares; `accept` (if given) vets the header first. On failure returns
/// false with a one-line reason in `error`.
bool read(const std::string &path, Array &out, std::string &error,
          const Accept &accept = {});
/// Writes `a`; false with a reason on failure.
bool write(const std::string &path, const Array &a, std::string &error);
/// Bytes per element of a supported descr, 0 if unsupported.
int itemSize(const std::string &descr);

} // namespace te::npy

#endif // TE_TOOLS_TE_RUN_NPY_H
