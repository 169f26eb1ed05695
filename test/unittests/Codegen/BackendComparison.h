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

#include "Support/GpuStream.h"

#include "te/exec/Compare.h"
#include "te/exec/CudaRunner.h"

#include <functional>
#include <optional>
#include <string>

namespace te::test {

/// The comparison of both backends' results; a backend failure is reported
/// as the difference. `adjustPlan`, when given, changes the CUDA backend's
/// plan before it runs (e.g. shrinks a launch's grid).
inline exec::Comparison gpuVersusCpu(
    const cg::Program &p, const std::vector<std::vector<uint8_t>> &args,
    const rt::Device &dev, const rt::Stream &stream, rt::KernelCache &cache,
    const std::function<void(cg::EntryPlan &)> &adjustPlan = {}) {
  exec::Comparison failed;
  auto cpu = exec::runCpu(p, p.entries[0], args);
  if (!cpu) {
    failed.difference = "cpu: " + cpu.status().toString();
    return failed;
  }
  rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(p, p.entries[0]);
  if (!plan) {
    failed.difference = "plan: " + plan.status().toString();
    return failed;
  }
  if (adjustPlan)
    adjustPlan(*plan);
  auto runner =
      exec::CudaRunner::create(p, p.entries[0], std::move(*plan), dev, cache);
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
