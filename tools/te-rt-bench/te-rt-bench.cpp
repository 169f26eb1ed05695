//===- te-rt-bench.cpp - runtime benchmarks -------------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Measures what docs/Performance.md records: NVRTC cold compile, in-memory
// and on-disk cache hits, launch overhead of Kernel::launch and of a plan
// against raw cuLaunchKernel, and cuBLASLt GEMM throughput. Prints one table;
// without a GPU it measures what it can (compile, cache) and says so.
//
//   te-rt-bench [--gemm-only] [--no-gemm] [--iters N]
//
//===----------------------------------------------------------------------===//

#include "CudaApi.h"
#include "te/runtime/BlasLt.h"
#include "te/runtime/KernelCache.h"
#include "te/runtime/Plan.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

using namespace te::rt;
using Clock = std::chrono::steady_clock;

static double usSince(Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t).count();
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

static const char *kQuantKernel = R"CUDA(
#include "te/device/Device.cuh"
extern "C" __global__ void quant_e4m3(const unsigned short *x,
                                      unsigned char *q, float scale, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    q[i] = te::dev::encodeE4M3(te::dev::bf16ToFloat(x[i]) * scale);
}
)CUDA";

static const char *kEmpty = "extern \"C\" __global__ void empty(int *p, int v) "
                            "{ if (v == 12345) *p = v; }";

static void benchCompileAndCache() {
  char tmpl[] = "/tmp/te-rt-bench-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  KernelCache cold(dir);
  auto t = Clock::now();
  auto k = cold.getOrCompile(kQuantKernel, {});
  double coldUs = usSince(t);
  if (!k) {
    std::printf("compile: %s\n", k.status().toString().c_str());
    return;
  }
  std::vector<double> mem, disk;
  for (int i = 0; i < 1000; ++i) {
    t = Clock::now();
    (void)cold.getOrCompile(kQuantKernel, {});
    mem.push_back(usSince(t));
  }
  for (int i = 0; i < 20; ++i) {
    KernelCache warm(dir);
    t = Clock::now();
    auto d = warm.getOrCompile(kQuantKernel, {});
    disk.push_back(usSince(t));
    if (!d || warm.stats().diskHits != 1)
      std::printf("disk cache miss!\n");
  }
  std::printf("%-44s %10.1f ms   (NVRTC %s, %zu-byte source, sm_90a)\n",
              "NVRTC cold compile (first in process)", coldUs / 1000,
              nvrtcVersion() ? nvrtcVersion()->c_str() : "?",
              std::strlen(kQuantKernel));
  // A second, different kernel: NVRTC is warm now.
  KernelCache other("");
  t = Clock::now();
  (void)other.getOrCompile(std::string(kQuantKernel) + "// v2\n", {});
  std::printf("%-44s %10.1f ms\n", "NVRTC compile (warm process)",
              usSince(t) / 1000);
  std::printf("%-44s %10.2f us   (median of 1000)\n",
              "kernel cache: memory hit", median(mem));
  std::printf("%-44s %10.1f us   (median of 20, fresh cache object)\n",
              "kernel cache: disk hit", median(disk));
}

static void benchLaunch(const Device &dev, int iters) {
  KernelCache cache("");
  auto compiled = cache.getOrCompile(kEmpty, {dev.info().arch(), {}});
  Expected<Kernel> k = Kernel::load((*compiled)->cubin, "empty");
  Expected<Stream> s = Stream::create(dev);
  Expected<DeviceBuffer> b = DeviceBuffer::allocate(4);
  if (!k || !s || !b)
    return;
  const detail::DriverApi &api = **detail::driverApi();
  uint64_t p = b->devicePtr();
  int v = 0;
  void *args[] = {&p, &v};
  CUfunction fn = static_cast<CUfunction>(k->functionHandle());
  CUstream st = static_cast<CUstream>(s->handle());

  Plan plan;
  plan.buffers = {{"p", 4, true}};
  KernelSpec ks;
  ks.name = ks.entry = "empty";
  ks.source = kEmpty;
  ks.options.arch = dev.info().arch();
  ks.args = {ArgDesc::ptr(0), ArgDesc::i32(0)};
  plan.kernels = {ks};
  plan.steps = {{Step::Kind::Launch, 0, 0}};
  Expected<PlanExecutor> ex = PlanExecutor::create(plan, dev, cache);
  (void)ex->bind(0, p, 4);

  auto measure = [&](auto &&launchOnce) {
    std::vector<double> host, total;
    for (int rep = 0; rep < 7; ++rep) {
      (void)s->synchronize();
      auto t = Clock::now();
      for (int i = 0; i < iters; ++i)
        launchOnce();
      double h = usSince(t);
      (void)s->synchronize();
      host.push_back(h / iters);
      total.push_back(usSince(t) / iters);
    }
    return std::make_pair(median(host), median(total));
  };
  auto raw = measure(
      [&] { api.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, st, args, nullptr); });
  auto ours = measure([&] { (void)k->launch({1}, {32}, 0, *s, args); });
  auto planned = measure([&] { (void)ex->run(*s); });
  std::printf("%-44s %7.2f us issue, %6.2f us end-to-end\n",
              "launch: raw cuLaunchKernel (empty kernel)", raw.first,
              raw.second);
  std::printf("%-44s %7.2f us issue, %6.2f us end-to-end (%+.2f us)\n",
              "launch: te::rt::Kernel::launch", ours.first, ours.second,
              ours.first - raw.first);
  std::printf("%-44s %7.2f us issue, %6.2f us end-to-end (%+.2f us)\n",
              "launch: PlanExecutor::run (1 kernel)", planned.first,
              planned.second, planned.first - raw.first);
}

struct GemmCase {
  const char *name;
  int64_t m, n, k;
  DType type;
  GemmScaling sa, sb;
};

static void benchGemm(const Device &dev, int iters) {
  Expected<Stream> s = Stream::create(dev);
  Expected<BlasLt> lt = BlasLt::create(dev);
  if (!s || !lt) {
    std::printf("gemm: %s\n",
                (!lt ? lt.status() : s.status()).toString().c_str());
    return;
  }
  std::printf("cuBLASLt version %d\n", lt->version());
  const GemmCase cases[] = {
      {"bf16", 8192, 8192, 8192, DType::BF16, GemmScaling::None,
       GemmScaling::None},
      {"bf16", 4096, 7168, 16384, DType::BF16, GemmScaling::None,
       GemmScaling::None},
      {"fp8 per-tensor (split acc)", 8192, 8192, 8192, DType::E4M3,
       GemmScaling::PerTensor, GemmScaling::PerTensor},
      {"fp8 per-tensor (split acc)", 4096, 7168, 16384, DType::E4M3,
       GemmScaling::PerTensor, GemmScaling::PerTensor},
      {"fp8 block 1x128 x 128x128", 8192, 8192, 8192, DType::E4M3,
       GemmScaling::Block1x128, GemmScaling::Block128x128},
      {"fp8 block 1x128 x 128x128", 4096, 7168, 16384, DType::E4M3,
       GemmScaling::Block1x128, GemmScaling::Block128x128},
      {"fp8 block 1x128 x 1x128", 8192, 8192, 8192, DType::E4M3,
       GemmScaling::Block1x128, GemmScaling::Block1x128},
      {"fp8 block 1x128 x 1x128", 4096, 7168, 16384, DType::E4M3,
       GemmScaling::Block1x128, GemmScaling::Block1x128},
  };
  std::mt19937 rng(7);
  for (const GemmCase &c : cases) {
    size_t es = c.type == DType::BF16 ? 2 : 1;
    auto alloc = [&](size_t bytes) {
      return std::move(*DeviceBuffer::allocate(bytes));
    };
    DeviceBuffer a = alloc(c.m * c.k * es), b = alloc(c.n * c.k * es),
                 d = alloc(c.m * c.n * 2);
    // Random bytes: bf16 patterns restricted to moderate exponents, FP8
    // codes avoiding NaN, so the GEMM sees realistic data.
    auto randomize = [&](DeviceBuffer &buf, bool bf16) {
      std::vector<uint8_t> host(buf.size());
      for (size_t i = 0; i < host.size(); ++i) {
        uint8_t r = uint8_t(rng());
        if (bf16)
          r = (i & 1) ? uint8_t(0x3c | (r & 0x81)) : r;
        else
          r = uint8_t(r & 0xbf) | 0x20; // |x| in a modest E4M3 range
        host[i] = r;
      }
      (void)buf.copyFromHost(host.data(), host.size(), *s);
    };
    randomize(a, es == 2);
    randomize(b, es == 2);
    int64_t kb = (c.k + 127) / 128;
    auto scaleBuf = [&](GemmScaling sc, int64_t rows) {
      size_t n = sc == GemmScaling::PerTensor    ? 1
                 : sc == GemmScaling::Block1x128 ? kb * roundUp(rows, 4)
                 : sc == GemmScaling::Block128x128
                     ? ceilDiv(rows, 128) * roundUp(kb, 4)
                     : 0;
      std::vector<float> ones(std::max<size_t>(n, 1), 1.0f);
      DeviceBuffer sb = alloc(ones.size() * 4);
      (void)sb.copyFromHost(ones.data(), ones.size() * 4, *s);
      return sb;
    };
    DeviceBuffer sa = scaleBuf(c.sa, c.m), sb = scaleBuf(c.sb, c.n);
    GemmProblem p;
    p.m = c.m, p.n = c.n, p.k = c.k;
    p.a = {c.type, c.sa, a.devicePtr(), sa.devicePtr()};
    p.b = {c.type, c.sb, b.devicePtr(), sb.devicePtr()};
    p.outType = DType::BF16;
    p.out = d.devicePtr();
    Status st = lt->gemm(p, *s);
    if (!st.isOk()) {
      std::printf("%-30s %5lldx%lldx%lld  %s\n", c.name, (long long)c.m,
                  (long long)c.n, (long long)c.k, st.toString().c_str());
      continue;
    }
    for (int i = 0; i < 5; ++i)
      (void)lt->gemm(p, *s);
    std::vector<double> ms;
    Expected<EventTimer> timer = EventTimer::create();
    for (int i = 0; i < iters; ++i) {
      (void)timer->start(*s);
      (void)lt->gemm(p, *s);
      (void)timer->stop(*s);
      ms.push_back(*timer->elapsedMillis());
    }
    double t = median(ms);
    std::printf("%-30s %5lldx%lldx%lld  %8.3f ms  %7.1f TFLOP/s\n", c.name,
                (long long)c.m, (long long)c.n, (long long)c.k, t,
                2.0 * c.m * c.n * c.k / (t * 1e-3) / 1e12);
  }
}

int main(int argc, char **argv) {
  bool gemm = true, others = true;
  int iters = 50;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--no-gemm"))
      gemm = false;
    else if (!std::strcmp(argv[i], "--gemm-only"))
      others = false;
    else if (!std::strcmp(argv[i], "--iters") && i + 1 < argc)
      iters = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: te-rt-bench [--no-gemm] [--gemm-only] "
                           "[--iters N]\n");
      return 1;
    }
  }
  if (others)
    benchCompileAndCache();
  Expected<Device> dev = Device::open();
  if (!dev) {
    std::printf("no GPU benchmarks: %s\n", dev.status().toString().c_str());
    return 0;
  }
  std::printf("device: %s (%s, %d SMs, driver %d)\n", dev->info().name.c_str(),
              dev->info().arch().c_str(), dev->info().smCount,
              dev->info().driverVersion);
  if (others)
    benchLaunch(*dev, 20000);
  if (gemm)
    benchGemm(*dev, iters);
  return 0;
}
