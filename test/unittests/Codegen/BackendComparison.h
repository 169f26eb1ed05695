//===- BackendComparison.h - Run an entry on both backends -----*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The one GPU-versus-CPU helper of the codegen tests: entry 0 of a program
// on the CPU backend and on the CUDA backend (outputs poisoned first), the
// results compared as te-run --check does.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TEST_CODEGEN_BACKENDCOMPARISON_H
#define TE_TEST_CODEGEN_BACKENDCOMPARISON_H

#include "te/exec/Compare.h"
#include "te/exec/CudaRunner.h"

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

/// The comparison of both backends' results; a backend failure is reported
/// as the difference.
inline exec::Comparison gpuVersusCpu(
    const cg::Program &p, const std::vector<std::vector<uint8_t>> &args,
    const rt::Device &dev, const rt::Stream &stream, rt::KernelCache &cache) {
  exec::Comparison failed;
  auto cpu = exec::runCpu(p, p.entries[0], args);
  if (!cpu) {
    failed.difference = "cpu: " + cpu.status().toString();
    return failed;
  }
  auto runner = exec::CudaRunner::create(p, p.entries[0], dev, cache);
  if (!runner) {
    failed.difference = "cuda: " + runner.status().toString();
    return failed;
  }
  rt::Status st = rt::Status::ok();
  for (size_t i = 0; i < args.size() && st.isOk(); ++i)
    st = runner->setArgument(i, args[i], stream);
  if (st.isOk())
    st = runner->poison(0xA5, stream);
  if (st.isOk())
    st = runner->run(stream);
  if (!st.isOk()) {
    failed.difference = "cuda: " + st.toString();
    return failed;
  }
  auto gpu = runner->results(stream);
  if (!gpu) {
    failed.difference = "cuda: " + gpu.status().toString();
    return failed;
  }
  return exec::compareResults(*cpu, *gpu, "cpu", "cuda");
}

} // namespace te::test

#endif // TE_TEST_CODEGEN_BACKENDCOMPARISON_H
