//===- te/device/EmbeddedHeaders.h - Device headers for NVRTC ---*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The device library's .cuh files, embedded into TeDeviceLibrary at build
// time (EmbedHeaders.cmake), so NVRTC gets them as in-memory headers and a
// deployed binary needs no source tree. Generated kernels include them by
// these names, e.g. #include "te/device/Device.cuh".
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_EMBEDDEDHEADERS_H
#define TE_DEVICE_EMBEDDEDHEADERS_H

#include <cstddef>

namespace te::rt {

struct EmbeddedHeader {
  /// Include name, e.g. "te/device/Fp8.cuh".
  const char *name;
  /// The file's text, NUL-terminated.
  const char *contents;
};

/// All embedded headers, sorted by name; numDeviceHeaders() entries.
const EmbeddedHeader *deviceHeaders();
size_t numDeviceHeaders();

} // namespace te::rt

#endif // TE_DEVICE_EMBEDDEDHEADERS_H
