//===- GpuStream.h - The GPU of a test, or why there is none ----*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TEST_UNITTESTS_SUPPORT_GPUSTREAM_H
#define TE_TEST_UNITTESTS_SUPPORT_GPUSTREAM_H

#include "te/runtime/Device.h"

#include <optional>
#include <string>

namespace te::test {

/// The GPU and a stream for backend comparisons, or why there is none (a
/// test skips with it): `auto gpu = GpuStream::open(); if (!gpu.stream)
/// GTEST_SKIP() << gpu.why;`.
struct GpuStream {
  std::optional<rt::Device> device;
  std::optional<rt::Stream> stream;
  std::string why;

  static GpuStream open() {
    GpuStream g;
    rt::Expected<rt::Device> d = rt::Device::open();
    if (!d) {
      g.why = d.status().toString();
      return g;
    }
    g.device.emplace(*d);
    rt::Expected<rt::Stream> s = rt::Stream::create(*g.device);
    if (!s) {
      g.why = s.status().toString();
      return g;
    }
    g.stream.emplace(std::move(*s));
    return g;
  }
};

} // namespace te::test

#endif // TE_TEST_UNITTESTS_SUPPORT_GPUSTREAM_H
