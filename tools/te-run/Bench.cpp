//===- Bench.cpp - te-run --bench -----------------------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#include "Bench.h"

#include "Inputs.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace te::run {

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Device-to-device copy bandwidth (bytes read + written per second) of a
/// 1 GiB buffer: the ceiling quantize kernels are measured against.
static double copyCeiling(const rt::Stream &s) {
  const size_t bytes = size_t(1) << 30;
  auto a = rt::DeviceBuffer::allocate(bytes),
       b = rt::DeviceBuffer::allocate(bytes);
  auto timer = rt::EventTimer::create();
  if (!a || !b || !timer)
    return 0;
  std::vector<double> ms;
  for (int i = 0; i < 12; ++i) {
    if (!timer->start(s).isOk() || !b->copyFrom(*a, bytes, s).isOk() ||
        !timer->stop(s).isOk())
      return 0;
    auto t = timer->elapsedMillis();
    if (t && i >= 2)
      ms.push_back(*t);
  }
  return ms.empty() ? 0 : 2.0 * double(bytes) / (median(ms) * 1e-3);
}

/// Median milliseconds of `runs` CUDA-event-timed calls after 3 warm-ups.
template <typename Fn>
static double timeMedian(rt::EventTimer &timer, const rt::Stream &s, int runs,
                         Fn body) {
  std::vector<double> ms;
  for (int i = 0; i < runs + 3; ++i) {
    rt::Status st = timer.start(s);
    if (st.isOk())
      st = body();
    if (st.isOk())
      st = timer.stop(s);
    if (!st.isOk())
      die(st.toString());
    auto t = timer.elapsedMillis();
    if (!t)
      die(t.status().toString());
    if (i >= 3)
      ms.push_back(*t);
  }
  return median(ms);
}

/// An op of several launches (a grouped GEMM that quantizes its operands
/// first, a two-pass quantize, a sharded one): each launch timed alone.
/// Run alone, a launch reads what the previous run of the op left (an amax,
/// a cast operand), so its time is that of its place in the op.
static void benchSteps(exec::CudaRunner &runner, size_t k,
                       rt::EventTimer &timer, const rt::Stream &s, int runs) {
  const rt::Plan &plan = runner.kernelPlan(k).plan;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    if (plan.steps[i].kind != rt::Step::Kind::Launch)
      continue;
    double t = timeMedian(
        timer, s, runs, [&] { return runner.runKernelSteps(k, i, i + 1, s); });
    llvm::outs() << llvm::format("  launch %-54s %9.1f us\n",
                                 plan.kernels[plan.steps[i].index].name.c_str(),
                                 t * 1e3);
  }
}

void bench(exec::CudaRunner &runner, const rt::Stream &s, int runs,
           unsigned idleMs) {
  double ceiling = copyCeiling(s);
  llvm::outs() << llvm::format(
      "copy ceiling (1 GiB device-to-device): %.0f GB/s\n", ceiling * 1e-9);
  auto timer = rt::EventTimer::create();
  if (!timer)
    die(timer.status().toString());
  // Warm up with the whole entry first: the first few dozen runs after the
  // ceiling's copies measured 13 % slow on the H100 (MXFP8 16384x8192: 232.7
  // then 205.6 us), more than three warm-up runs absorb.
  for (int i = 0; i < std::max(30, runs); ++i)
    if (rt::Status st = runner.run(s); !st.isOk())
      die(st.toString());
  double gemmUs = 0, otherUs = 0;
  for (size_t k = 0; k < runner.numKernels(); ++k) {
    const cg::KernelPlan &kp = runner.kernelPlan(k);
    if (idleMs) {
      if (rt::Status st = s.synchronize(); !st.isOk())
        die(st.toString());
      std::this_thread::sleep_for(std::chrono::milliseconds(idleMs));
    }
    double t =
        timeMedian(*timer, s, runs, [&] { return runner.runKernel(k, s); });
    if (kp.flops) {
      gemmUs += t * 1e3;
      // A generated GEMM (the grouped kernel) counts all M_total rows.
      llvm::outs() << llvm::format(
          "bench %-28s GEMM %9.1f us  %8.1f TFLOP/s  (%s)\n", kp.name.c_str(),
          t * 1e3, double(kp.flops) / (t * 1e-3) * 1e-12, kp.engine.c_str());
      if (kp.launches > 1)
        benchSteps(runner, k, *timer, s, runs);
      continue;
    }
    otherUs += t * 1e3;
    if (kp.gatheredBytes) {
      // NCCL's bus bandwidth: what each rank receives from the others.
      double bus = double(kp.gatheredBytes) * (kp.ranks - 1) / kp.ranks /
                   (t * 1e-3) * 1e-9;
      llvm::outs() << llvm::format(
          "bench %-28s all-gather %9.1f us  %10.3f MB gathered from %d "
          "ranks  %7.0f GB/s bus\n",
          kp.name.c_str(), t * 1e3, double(kp.gatheredBytes) * 1e-6, kp.ranks,
          bus);
      continue;
    }
    double gbs = double(kp.bytesMoved) / (t * 1e-3) * 1e-9;
    llvm::outs() << llvm::format(
        "bench %-28s %u launch(es)  %9.1f us  %10.3f MB  %7.0f GB/s  %5.1f%% "
        "of copy\n",
        kp.name.c_str(), kp.launches, t * 1e3, double(kp.bytesMoved) * 1e-6,
        gbs, ceiling > 0 ? 100.0 * gbs * 1e9 / ceiling : 0.0);
    if (kp.launches > 1)
      benchSteps(runner, k, *timer, s, runs);
  }
  double whole =
      timeMedian(*timer, s, runs, [&] { return runner.run(s); }) * 1e3;
  llvm::outs() << llvm::format("bench entry (%zu kernels back to back) "
                               "%9.1f us",
                               runner.numKernels(), whole);
  if (gemmUs > 0)
    llvm::outs() << llvm::format(
        "; alone: GEMMs %.1f us, other kernels %.1f us (%.1f%% of their sum)",
        gemmUs, otherUs, 100.0 * otherUs / (gemmUs + otherUs));
  llvm::outs() << "\n";
}

} // namespace te::run
