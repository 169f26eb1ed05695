//===- grouped_gemm_bench.cpp - Generated grouped GEMMs against cuBLASLt --===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// te-grouped-gemm-bench [iters] [--sweep] [--bands] [--first] [--dense]
// [--backward] [--mxfp8] [--nvfp4]:
// the M-grouped GEMMs of an MoE layer (DeepSeek-V3-like experts: N=4096 K=7168
// and N=7168 K=2048; G = 8 and 32; 32768 tokens split unevenly, and 256 tokens
// per expert; last, G = 1 at 8192^3: the generated kernel as a dense GEMM)
// through tejit's generated kernels (block FP8 1x128 x 128x128, and BF16)
// against a loop of per-expert cuBLASLt block-FP8 GEMMs, all in one process.
// Also the cold NVRTC compile and the disk-cache hit of each generated kernel.
// Splits: expert g gets a share proportional to 1 + (7g mod 5) rounded down to
// a multiple of 16 (torch's grouped GEMMs want 16-row groups), the last expert
// the remainder (bench/grouped_gemm_torch.py uses the same rule).
// Then the backward's own kernels at the first shape: the grouped
// columnwise quantize of dy (with each expert's bias gradient) and of x
// against the copy ceiling, and the K-grouped FP8 wgrad GEMM; then the
// per-tensor FP8 quantizes with one amax per expert (tokens, stack, the
// stack's columnwise copy, the wgrad's dy) against the copy ceiling.
// --mxfp8 adds the generated MXFP8 x MXFP8 kernel on every shape, and at
// G = 1 a dense BF16 cuBLASLt GEMM (the bar an MXFP8 recipe on Hopper has
// to beat), on one more line per shape; --nvfp4 the generated NVFP4 x NVFP4
// kernel at both tile widths (256 and 128), on another.
// Times: median of `iters` CUDA-event-timed runs after 10 warm-up runs.
//
//===----------------------------------------------------------------------===//

#include "te/codegen/GroupedGemmEmitter.h"
#include "te/codegen/GroupedQuantizeEmitter.h"
#include "te/codegen/GroupedWgradEmitter.h"
#include "te/runtime/BlasLt.h"
#include "te/runtime/KernelCache.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <thread>
#include <vector>

using namespace te;
using cg::GroupedGemmSpec;

namespace {

[[noreturn]] void die(const rt::Status &s) {
  std::fprintf(stderr, "te-grouped-gemm-bench: %s\n", s.toString().c_str());
  std::exit(1);
}
template <typename T> T take(rt::Expected<T> e) {
  if (!e)
    die(e.status());
  return std::move(*e);
}
void check(const rt::Status &s) {
  if (!s.isOk())
    die(s);
}

std::vector<int64_t> unevenSplits(int64_t g, int64_t tokens) {
  std::vector<int64_t> w(g), s(g);
  int64_t total = 0, used = 0;
  for (int64_t i = 0; i < g; ++i)
    total += (w[i] = 1 + (7 * i) % 5);
  for (int64_t i = 0; i + 1 < g; ++i)
    used += (s[i] = tokens * w[i] / total / 16 * 16);
  s[g - 1] = tokens - used;
  return s;
}

/// Fills device memory with pseudo-random bytes that are finite small
/// E4M3 codes (or bf16 values) - the speed does not depend on them much.
rt::DeviceBuffer randomBuffer(size_t bytes, bool bf16, const rt::Stream &s,
                              uint32_t seed) {
  std::vector<uint8_t> host(bytes);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < bytes; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    // E4M3 codes 0x00-0x3F / 0x80-0xBF: |v| < 2. bf16 high bytes likewise.
    host[i] =
        bf16 ? (i % 2 ? uint8_t(0x3E + (x & 1)) | (x & 0x80) : uint8_t(x >> 8))
             : uint8_t((x >> 8) & 0xBF);
  }
  rt::DeviceBuffer b = take(rt::DeviceBuffer::allocate(bytes));
  check(b.copyFromHost(host.data(), bytes, s));
  return b;
}

rt::DeviceBuffer constantFloats(size_t n, float v, const rt::Stream &s) {
  std::vector<float> host(n, v);
  rt::DeviceBuffer b = take(rt::DeviceBuffer::allocate(n * 4));
  check(b.copyFromHost(host.data(), n * 4, s));
  return b;
}

double medianMicros(const rt::Stream &s, int iters,
                    const std::function<void()> &run) {
  for (int i = 0; i < 10; ++i)
    run();
  check(s.synchronize());
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    rt::EventTimer timer = take(rt::EventTimer::create());
    check(timer.start(s));
    run();
    check(timer.stop(s));
    t.push_back(take(timer.elapsedMillis()) * 1000.0);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Case {
  int64_t g, n, k, tokens;
  bool perExpert; ///< `tokens` per expert, else split unevenly
};

/// The warm-up of an MoE layer's generated GEMM set - the FP8 and BF16
/// kernels of both expert shapes at G = 8 and 32 - into empty caches: one
/// kernel at a time (each kernel's cold compile), then all at once on the
/// host's cores (KernelCache::compileAll, what a plan's warm-up does). No
/// GPU needed. Leaves `cache` holding them.
void warmUp(rt::KernelCache &cache, const rt::CompileOptions &opts) {
  std::vector<rt::KernelRequest> requests;
  for (int64_t g : {8, 32})
    for (auto [n, k] : {std::pair<int64_t, int64_t>{4096, 7168}, {7168, 2048}})
      for (auto op : {GroupedGemmSpec::Operands::Fp8Block,
                      GroupedGemmSpec::Operands::BF16}) {
        GroupedGemmSpec s;
        s.operands = op;
        s.groups = g;
        s.n = n;
        s.k = k;
        requests.push_back({s.kernelName(), cg::emitGroupedGemm(s), opts});
      }
  std::string serialDir = cache.diskDir() + "-serial";
  std::filesystem::remove_all(serialDir);
  rt::KernelCache serial(serialDir);
  double last = 0;
  take(serial.compileAll(requests, 1, [&](const rt::CompileProgress &p) {
    std::printf("cold compile %s: %.2f s\n", p.name.c_str(), p.elapsed - last);
    last = p.elapsed;
  }));
  std::filesystem::remove_all(serialDir);
  auto t0 = std::chrono::steady_clock::now();
  take(cache.compileAll(requests));
  double parallel =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  std::printf("warm-up of %zu grouped GEMM kernels: %.2f s one at a time, "
              "%.2f s on %u host threads\n",
              requests.size(), last, parallel,
              std::max(1u, std::thread::hardware_concurrency()));
}

/// The per-tensor FP8 quantizes with one amax per expert at the first shape
/// (G = 8, N = 4096, K = 7168, 32768 uneven tokens): the tokens x [M, K],
/// the stack W [G·N, K] and its columnwise copy (the dgrad's), each an
/// amax pass and a cast; and the wgrad's grouped columnwise pass of dy
/// after its amax pass. Traffic: the bf16 input read twice (4 bytes an
/// element), the codes (1) and scales written.
void perExpertScaling(rt::KernelCache &cache, const rt::Stream &stream,
                      int iters, double ceiling, const rt::DeviceBuffer &dy,
                      const rt::DeviceBuffer &x,
                      const rt::DeviceBuffer &splitBuf) {
  const int64_t g = 8, n = 4096, k = 7168, m = 32768;
  const rt::Scheme scheme = rt::Scheme::fp8Current(rt::DType::E4M3);
  rt::DeviceBuffer w = randomBuffer(g * n * k * 2, true, stream, 23);
  rt::DeviceBuffer amax = take(rt::DeviceBuffer::allocate(g * 4));
  rt::DeviceBuffer sInv = take(rt::DeviceBuffer::allocate(g * 4));
  auto report = [&](const char *name, double us, double bytes) {
    double gbs = bytes / us * 1e-3;
    std::printf("  per-expert FP8 %-26s %9.1f us  %7.0f GB/s  %5.1f%% of "
                "copy\n",
                name, us, gbs, 100.0 * gbs / ceiling);
  };
  // The amax pass and the cast of one GroupedRowsQuantizeSpec.
  auto rows = [&](const char *name, const rt::DeviceBuffer &in, int64_t r,
                  int64_t cols, bool stack, bool columnwise) {
    cg::GroupedRowsQuantizeSpec spec{scheme, g, cols, stack, columnwise};
    cg::EmittedGroupedRowsQuantize src = cg::emitGroupedRowsQuantize(spec);
    auto compiled = take(cache.getOrCompile(src.source, rt::CompileOptions{}));
    rt::Kernel pass = take(rt::Kernel::load(compiled->cubin, src.amaxEntry));
    rt::Kernel cast =
        take(rt::Kernel::load(compiled->cubin, src.quantizeEntry));
    const int64_t scales = cg::groupedRowsBlockScales(spec, r);
    rt::DeviceBuffer codes = take(rt::DeviceBuffer::allocate(r * cols));
    rt::DeviceBuffer block = take(rt::DeviceBuffer::allocate(scales * 4));
    cg::GroupedRowsBuffers buf;
    buf.in = in.devicePtr();
    buf.splits = stack ? 0 : splitBuf.devicePtr();
    buf.amax = amax.devicePtr();
    buf.codes = codes.devicePtr();
    buf.scaleInv = sInv.devicePtr();
    buf.blockScales = block.devicePtr();
    buf.rows = r;
    double us = medianMicros(stream, iters, [&] {
      check(amax.fill(0, stream));
      check(cg::launchGroupedRowsQuantize(spec, pass, cast, buf, stream));
    });
    report(name, us, 5.0 * double(r * cols) + double(scales * 4));
  };
  rows("x (tokens)", x, m, k, false, false);
  rows("W (stack)", w, g * n, k, true, false);
  rows("W columnwise (dgrad)", w, g * n, k, true, true);

  // The wgrad's dy: its amax pass, then the grouped columnwise pass.
  const int64_t cap = cg::groupedWgradCapacity(m, g);
  cg::EmittedGroupedAmax rsrc = cg::emitGroupedExpertAmax(g);
  auto rc = take(cache.getOrCompile(rsrc.source, rt::CompileOptions{}));
  rt::Kernel pass = take(rt::Kernel::load(rc->cubin, rsrc.entry));
  cg::GroupedQuantizeSpec spec{scheme, g, n, false};
  cg::EmittedGroupedQuantize src = cg::emitGroupedQuantize(spec);
  auto compiled = take(cache.getOrCompile(src.source, rt::CompileOptions{}));
  rt::Kernel main = take(rt::Kernel::load(compiled->cubin, src.mainEntry));
  rt::DeviceBuffer out = take(rt::DeviceBuffer::allocate(n * cap));
  rt::DeviceBuffer scales = take(rt::DeviceBuffer::allocate(cap / 128 * n * 4));
  uint64_t inP = dy.devicePtr(), spP = splitBuf.devicePtr(),
           amP = amax.devicePtr(), outP = out.devicePtr(),
           scP = scales.devicePtr(), paP = 0;
  long long mm = m, cc = n, capacity = cap, none = 0;
  float eps = 0.0f;
  void *amaxArgs[] = {&inP, &mm, &cc, &spP, &none, &amP};
  unsigned long long seed = 0, offset = 0; // no stochastic rounding here
  uint64_t noRecord = 0;                   // nor delayed scaling
  void *args[] = {&inP, &mm,  &cc,  &spP,  &capacity, &outP,    &scP,
                  &eps, &paP, &amP, &seed, &offset,   &noRecord};
  double us = medianMicros(stream, iters, [&] {
    check(amax.fill(0, stream));
    check(pass.launch(cg::groupedRowsGrid(m), {cg::kGroupedRowsThreads, 1, 1},
                      0, stream, amaxArgs));
    check(main.launch(cg::groupedQuantizeGrid(cap, n),
                      {cg::kGroupedQuantizeThreads, 1, 1},
                      cg::groupedQuantizeSharedBytes(spec), stream, args));
  });
  report("dy columnwise (wgrad)", us,
         5.0 * double(m * n) + double(m / 128 * n * 4));
}

/// The backward's kernels of the first shape (G = 8, N = 4096, K = 7168,
/// 32768 uneven tokens): grouped quantize of dy [M, N] with db and of x
/// [M, K] (block FP8 1x128, pow2), then the wgrad GEMM on their output.
/// With `bands`, the wgrad at every band height (1, 4, 8, 16, 32 row tiles)
/// before the default; with `outBoxes`, with two output boxes a warpgroup.
void backward(rt::KernelCache &cache, const rt::CompileOptions &gemmOpts,
              const rt::Device &device, const rt::Stream &stream, int iters,
              bool bands, bool outBoxes) {
  const int64_t g = 8, n = 4096, k = 7168;
  std::vector<int64_t> splits = unevenSplits(g, 32768);
  const int64_t m = 32768, cap = cg::groupedWgradCapacity(m, g);
  rt::DeviceBuffer dy = randomBuffer(m * n * 2, true, stream, 21);
  rt::DeviceBuffer x = randomBuffer(m * k * 2, true, stream, 22);
  rt::DeviceBuffer splitBuf = take(rt::DeviceBuffer::allocate(g * 8));
  check(splitBuf.copyFromHost(splits.data(), g * 8, stream));
  // The copy ceiling of this GPU, measured now.
  const size_t copyBytes = size_t(1) << 30;
  rt::DeviceBuffer from = take(rt::DeviceBuffer::allocate(copyBytes));
  rt::DeviceBuffer to = take(rt::DeviceBuffer::allocate(copyBytes));
  double copyUs = medianMicros(
      stream, iters, [&] { check(to.copyFrom(from, copyBytes, stream)); });
  double ceiling = 2.0 * double(copyBytes) / copyUs * 1e-3; // GB/s
  std::printf("backward at G 8, N 4096, K 7168, 32768 uneven tokens "
              "(copy ceiling %.0f GB/s):\n",
              ceiling);

  const rt::Scheme scheme = rt::Scheme::fp8Block(rt::DType::E4M3, 1, 128, true);
  struct Operand {
    rt::DeviceBuffer data, scales;
  };
  auto quantize = [&](const rt::DeviceBuffer &in, int64_t cols, bool db,
                      const char *name) {
    cg::GroupedQuantizeSpec spec{scheme, g, cols, db};
    cg::EmittedGroupedQuantize src = cg::emitGroupedQuantize(spec);
    auto compiled = take(cache.getOrCompile(src.source, rt::CompileOptions{}));
    rt::Kernel main = take(rt::Kernel::load(compiled->cubin, src.mainEntry));
    Operand o{take(rt::DeviceBuffer::allocate(cols * cap)),
              take(rt::DeviceBuffer::allocate(cap / 128 * cols * 4))};
    rt::DeviceBuffer partial =
        take(rt::DeviceBuffer::allocate(cap / 128 * cols * 4));
    rt::DeviceBuffer bias = take(rt::DeviceBuffer::allocate(g * cols * 4));
    uint64_t inP = in.devicePtr(), spP = splitBuf.devicePtr(),
             outP = o.data.devicePtr(), scP = o.scales.devicePtr(),
             paP = db ? partial.devicePtr() : 0, dbP = bias.devicePtr();
    long long mm = m, cc = cols, capacity = cap;
    float eps = 0.0f;
    uint64_t noAmax = 0; // block FP8 takes no per-expert amax
    unsigned long long seed = 0, offset = 0;
    uint64_t noRecord = 0;
    void *args[] = {&inP, &mm,  &cc,     &spP,  &capacity, &outP,    &scP,
                    &eps, &paP, &noAmax, &seed, &offset,   &noRecord};
    void *bargs[] = {&paP, &mm, &cc, &spP, &dbP};
    rt::Kernel reduce =
        db ? take(rt::Kernel::load(compiled->cubin, src.biasEntry)) : main;
    double us = medianMicros(stream, iters, [&] {
      check(main.launch(cg::groupedQuantizeGrid(cap, cols),
                        {cg::kGroupedQuantizeThreads, 1, 1},
                        cg::groupedQuantizeSharedBytes(spec), stream, args));
      if (db)
        check(reduce.launch(cg::groupedBiasGrid(g, cols),
                            {cg::kGroupedBiasThreads, 1, 1}, 0, stream, bargs,
                            {}, /*overlapsPredecessor=*/true));
    });
    // Traffic: the input read, the codes and scales written; with db the
    // block partials written and read back and db written.
    double bytes =
        double(m * cols * 2) + double(m * cols) + double(m / 128 * cols * 4) +
        (db ? 2.0 * double(m / 128 * cols * 4) + double(g * cols * 4) : 0.0);
    double gbs = bytes / us * 1e-3;
    std::printf("  grouped quantize %-10s %9.1f us  %7.0f GB/s  %5.1f%% of "
                "copy\n",
                name, us, gbs, 100.0 * gbs / ceiling);
    return o;
  };
  Operand a = quantize(dy, n, true, "dy (+db)");
  Operand b = quantize(x, k, false, "x");

  rt::DeviceBuffer dw = take(rt::DeviceBuffer::allocate(g * n * k * 4));
  cg::GroupedWgradBuffers buf{a.data.devicePtr(),
                              b.data.devicePtr(),
                              a.scales.devicePtr(),
                              b.scales.devicePtr(),
                              splitBuf.devicePtr(),
                              dw.devicePtr(),
                              m,
                              cap};
  auto wgrad = [&](int band, int outBoxes) {
    cg::GroupedWgradSpec spec;
    spec.operands = GroupedGemmSpec::Operands::Fp8Block;
    spec.groups = g;
    spec.n = n;
    spec.k = k;
    spec.band = band;
    spec.outBoxes = outBoxes;
    auto compiled =
        take(cache.getOrCompile(cg::emitGroupedWgrad(spec), gemmOpts));
    rt::Kernel kernel =
        take(rt::Kernel::load(compiled->cubin, spec.kernelName()));
    cg::GroupedWgradLaunch l =
        take(cg::prepareGroupedWgrad(spec, buf, device, kernel));
    double us = medianMicros(stream, iters, [&] {
      check(cg::launchGroupedWgrad(kernel, l, stream));
    });
    std::printf("  wgrad GEMM (fp8 1x128 x 1x128) %-44s %9.1f us  %7.1f "
                "TFLOP/s\n",
                spec.kernelName().c_str(), us,
                2.0 * double(m) * double(n) * double(k) / us / 1e6);
  };
  if (bands)
    for (int band : {1, 4, 8, 16, 32})
      wgrad(band, 0);
  if (outBoxes)
    wgrad(0, 2);
  wgrad(0, 0);
  perExpertScaling(cache, stream, iters, ceiling, dy, x, splitBuf);
}

} // namespace

int main(int argc, char **argv) {
  int iters = argc > 1 ? std::atoi(argv[1]) : 20;
  // --sweep: also every cluster shape (1 x 1, 2 x 1, 2 x 2) of the FP8 and
  // the BF16 kernel.
  // --bands: also the tile order's band heights (1, 4, 8, 16, 32 row units)
  // of the FP8 and the BF16 kernel at their default cluster; with
  // --backward, of the wgrad.
  // --first: only the first shape (e.g. under a profiler).
  // --dense: only G = 1 at 8192^3, the generated kernel as a dense block-FP8
  // GEMM against one cuBLASLt call (which te-legalize-target keeps).
  // --backward: only the backward's kernels.
  // --outboxes: also the FP8 kernel with two output boxes a warpgroup (a
  // stage less), and with a stage less again; the wgrad with two boxes.
  // --mxfp8: also the MXFP8 kernel (and at G = 1 a BF16 cuBLASLt GEMM).
  bool sweep = false, bands = false, first = false, dense = false,
       backwardOnly = false, outBoxes = false, mxfp8 = false, nvfp4 = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--sweep")
      sweep = true;
    else if (a == "--bands")
      bands = true;
    else if (a == "--first")
      first = true;
    else if (a == "--dense")
      dense = true;
    else if (a == "--backward")
      backwardOnly = true;
    else if (a == "--outboxes")
      outBoxes = true;
    else if (a == "--mxfp8")
      mxfp8 = true;
    else if (a == "--nvfp4")
      nvfp4 = true;
    else
      die(rt::Status(rt::StatusCode::InvalidArgument,
                     "unknown option '" + a +
                         "' (--sweep, --bands, --first, --dense, "
                         "--backward, --outboxes, --mxfp8, --nvfp4)"));
  }
  if (backwardOnly && (dense || first || sweep))
    die(rt::Status(rt::StatusCode::InvalidArgument,
                   "--backward runs the backward's kernels alone; it takes "
                   "none of --sweep, --first, --dense"));
  std::string cacheDir =
      (std::filesystem::temp_directory_path() / "te-grouped-gemm-bench")
          .string();
  std::filesystem::remove_all(cacheDir);
  rt::KernelCache cache(cacheDir);
  rt::CompileOptions opts = take(cg::groupedGemmCompileOptions());
  if (!backwardOnly)
    warmUp(cache, opts);

  rt::Device device = take(rt::Device::open());
  rt::Stream stream = take(rt::Stream::create(device));
  rt::BlasLt lt = take(rt::BlasLt::create(device));
  std::printf("device: %s, %d SMs, cuBLASLt %d\n", device.info().name.c_str(),
              device.info().smCount, lt.version());

  const Case cases[] = {
      {8, 4096, 7168, 32768, false},  {8, 7168, 2048, 32768, false},
      {32, 4096, 7168, 32768, false}, {32, 7168, 2048, 32768, false},
      {8, 4096, 7168, 256, true},     {8, 7168, 2048, 256, true},
      {32, 4096, 7168, 256, true},    {32, 7168, 2048, 256, true},
      {1, 8192, 8192, 8192, true}};
  if (backwardOnly) {
    backward(cache, opts, device, stream, iters, bands, outBoxes);
    return 0;
  }
  std::printf("%-4s %-6s %-6s %-22s %12s %12s %12s %9s\n", "G", "N", "K",
              "tokens", "tejit fp8", "cublas loop", "tejit bf16", "fp8/loop");
  for (const Case &c : cases) {
    if (first && &c != &cases[0])
      break;
    if (dense && c.g != 1)
      continue;
    std::vector<int64_t> splits = c.perExpert
                                      ? std::vector<int64_t>(c.g, c.tokens)
                                      : unevenSplits(c.g, c.tokens);
    int64_t m = 0;
    for (int64_t s : splits)
      m += s;
    double flops = 2.0 * double(m) * double(c.n) * double(c.k);
    int64_t kb = c.k / 128, mPad = (m + 3) / 4 * 4, nb = (c.n + 127) / 128,
            kbPad = (kb + 3) / 4 * 4;
    rt::DeviceBuffer x8 = randomBuffer(m * c.k, false, stream, 1);
    rt::DeviceBuffer w8 = randomBuffer(c.g * c.n * c.k, false, stream, 2);
    rt::DeviceBuffer sx = constantFloats(kb * mPad, 0.75f, stream);
    rt::DeviceBuffer sw = constantFloats(c.g * nb * kbPad, 1.25f, stream);
    rt::DeviceBuffer y = take(rt::DeviceBuffer::allocate(m * c.n * 2));
    rt::DeviceBuffer splitBuf = take(rt::DeviceBuffer::allocate(c.g * 8));
    check(splitBuf.copyFromHost(splits.data(), c.g * 8, stream));

    auto specOf = [&](GroupedGemmSpec::Operands op, int blockN, int cluster,
                      int clusterM, int band = 0, int outBoxes = 0,
                      int stages = 0) {
      GroupedGemmSpec spec;
      spec.operands = op;
      spec.groups = c.g;
      spec.n = c.n;
      spec.k = c.k;
      spec.blockN = blockN;
      spec.cluster = cluster;
      spec.clusterM = clusterM;
      spec.band = band;
      spec.outBoxes = outBoxes;
      spec.stages = stages;
      return spec.resolved();
    };
    // sxScales / swScales: other scale buffers than the block-FP8 ones
    // (MXFP8's E8M0 scales, NVFP4's E4M3 ones); amaxes: NVFP4's per-expert
    // global amaxes of x and of W.
    auto runGenerated = [&](GroupedGemmSpec::Operands op, uint64_t x,
                            uint64_t w, int blockN = 0, int cluster = 0,
                            int clusterM = 0, int band = 0, int outBoxes = 0,
                            int stages = 0, uint64_t sxScales = 0,
                            uint64_t swScales = 0, uint64_t amaxes = 0) {
      GroupedGemmSpec spec =
          specOf(op, blockN, cluster, clusterM, band, outBoxes, stages);
      std::string source = cg::emitGroupedGemm(spec);
      auto t0 = std::chrono::steady_clock::now();
      auto compiled = take(cache.getOrCompile(source, opts));
      double compileMs = std::chrono::duration<double, std::milli>(
                             std::chrono::steady_clock::now() - t0)
                             .count();
      rt::KernelCache fresh(cacheDir); // a new process: disk hit
      t0 = std::chrono::steady_clock::now();
      take(fresh.getOrCompile(source, opts));
      double diskMs = std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - t0)
                          .count();
      rt::Kernel kernel =
          take(rt::Kernel::load(compiled->cubin, spec.kernelName()));
      cg::GroupedGemmBuffers buffers{x,
                                     w,
                                     sxScales ? sxScales : sx.devicePtr(),
                                     swScales ? swScales : sw.devicePtr(),
                                     splitBuf.devicePtr(),
                                     y.devicePtr(),
                                     m};
      buffers.amaxX = buffers.amaxW = amaxes;
      cg::GroupedGemmLaunch l =
          take(cg::prepareGroupedGemm(spec, buffers, device, kernel));
      double us = medianMicros(stream, iters, [&] {
        check(cg::launchGroupedGemm(kernel, l, stream));
      });
      std::fprintf(stderr,
                   "  %s: compile %.0f ms (cold, or memory hit), "
                   "disk hit %.2f ms, %.1f us\n",
                   spec.kernelName().c_str(), compileMs, diskMs, us);
      return us;
    };
    // --sweep: every cluster shape (N x M: 1 x 1, 2 x 1, 2 x 2) the kernel
    // has at a tile width, on stderr.
    auto sweepClusters = [&](GroupedGemmSpec::Operands op, int width,
                             uint64_t x, uint64_t w) {
      for (auto [cluster, clusterM] :
           {std::pair{1, 1}, std::pair{2, 1}, std::pair{2, 2}}) {
        GroupedGemmSpec v = specOf(op, width, cluster, clusterM);
        if (!cg::checkGroupedGemm(v).isOk())
          continue;
        double us = runGenerated(op, x, w, width, cluster, clusterM);
        std::fprintf(stderr, "  sweep %s: %.1f TFLOP/s\n",
                     v.kernelName().c_str(), flops / us / 1e6);
      }
    };
    // --bands: the tile order's band heights at the default cluster.
    auto sweepBands = [&](GroupedGemmSpec::Operands op, uint64_t x,
                          uint64_t w) {
      for (int band : {1, 4, 8, 16, 32}) {
        double us = runGenerated(op, x, w, 0, 0, 0, band);
        std::fprintf(stderr, "  bands %s: %.1f TFLOP/s\n",
                     specOf(op, 0, 0, 0, band).kernelName().c_str(),
                     flops / us / 1e6);
      }
    };
    // --outboxes: the FP8 epilogue through one output box a warpgroup (a
    // stage more) and, for the ring's depth, two boxes with a stage less.
    auto sweepOutBoxes = [&] {
      GroupedGemmSpec two =
          specOf(GroupedGemmSpec::Operands::Fp8Block, 0, 0, 0, 0, 2);
      for (auto [boxes, stages] :
           {std::pair{1, 0}, std::pair{2, 0}, std::pair{2, two.stages - 1}}) {
        double us =
            runGenerated(GroupedGemmSpec::Operands::Fp8Block, x8.devicePtr(),
                         w8.devicePtr(), 0, 0, 0, 0, boxes, stages);
        std::fprintf(stderr, "  outboxes %s: %.1f TFLOP/s\n",
                     specOf(GroupedGemmSpec::Operands::Fp8Block, 0, 0, 0, 0,
                            boxes, stages)
                         .kernelName()
                         .c_str(),
                     flops / us / 1e6);
      }
    };
    if (outBoxes)
      sweepOutBoxes();
    if (sweep)
      sweepClusters(GroupedGemmSpec::Operands::Fp8Block, 128, x8.devicePtr(),
                    w8.devicePtr());
    if (bands)
      sweepBands(GroupedGemmSpec::Operands::Fp8Block, x8.devicePtr(),
                 w8.devicePtr());
    double fp8 = runGenerated(GroupedGemmSpec::Operands::Fp8Block,
                              x8.devicePtr(), w8.devicePtr());
    std::vector<uint16_t> generated(m * c.n), library(m * c.n);
    check(y.copyToHost(generated.data(), m * c.n * 2, stream));

    // Per-expert cuBLASLt block-FP8 GEMMs; each expert's x scales in their
    // own buffer, as cuBLASLt wants them ([K/128][roundup(m_g,4)]).
    std::vector<rt::DeviceBuffer> perExpertScales;
    for (int64_t s : splits)
      perExpertScales.push_back(constantFloats(
          std::max<int64_t>(1, kb * ((s + 3) / 4 * 4)), 0.75f, stream));
    double loop = medianMicros(stream, iters, [&] {
      int64_t row = 0;
      for (int64_t e = 0; e < c.g; ++e) {
        if (splits[e] == 0)
          continue;
        rt::GemmProblem p;
        p.m = splits[e];
        p.n = c.n;
        p.k = c.k;
        p.a = {rt::DType::E4M3, rt::GemmScaling::Block1x128,
               x8.devicePtr() + row * c.k, perExpertScales[e].devicePtr()};
        p.b = {rt::DType::E4M3, rt::GemmScaling::Block128x128,
               w8.devicePtr() + e * c.n * c.k,
               sw.devicePtr() + e * nb * kbPad * 4};
        p.out = y.devicePtr() + row * c.n * 2;
        check(lt.gemm(p, stream));
        row += splits[e];
      }
    });

    // The same products: the two results must agree to accumulation order.
    check(y.copyToHost(library.data(), m * c.n * 2, stream));
    check(stream.synchronize());
    double worst = 0, largest = 0;
    auto value = [](uint16_t b) {
      uint32_t bits = uint32_t(b) << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      return double(f);
    };
    for (size_t i = 0; i < generated.size(); ++i) {
      worst =
          std::max(worst, std::fabs(value(generated[i]) - value(library[i])));
      largest = std::max(largest, std::fabs(value(library[i])));
    }
    std::fprintf(stderr,
                 "  fp8: largest |tejit - cuBLASLt| %.3g, largest |y| %.3g\n",
                 worst, largest);

    rt::DeviceBuffer x16 = randomBuffer(m * c.k * 2, true, stream, 3);
    rt::DeviceBuffer w16 = randomBuffer(c.g * c.n * c.k * 2, true, stream, 4);
    if (sweep)
      sweepClusters(GroupedGemmSpec::Operands::BF16, 256, x16.devicePtr(),
                    w16.devicePtr());
    if (bands)
      sweepBands(GroupedGemmSpec::Operands::BF16, x16.devicePtr(),
                 w16.devicePtr());
    double bf16 = runGenerated(GroupedGemmSpec::Operands::BF16, x16.devicePtr(),
                               w16.devicePtr());
    auto tf = [&](double us) { return flops / us / 1e6; };
    char tokens[64];
    std::snprintf(tokens, sizeof(tokens), "%lld%s",
                  static_cast<long long>(c.tokens),
                  c.perExpert ? " per expert" : " uneven");
    std::printf("%-4lld %-6lld %-6lld %-22s %12.1f %12.1f %12.1f %8.2fx\n",
                static_cast<long long>(c.g), static_cast<long long>(c.n),
                static_cast<long long>(c.k), tokens, tf(fp8), tf(loop),
                tf(bf16), loop / fp8);
    if (mxfp8) {
      // E8M0 scales of x and of the stack, [roundup(rows,128)][K/32]:
      // 2^0 (the speed does not depend on them).
      auto ones = [&](int64_t rows) {
        std::vector<uint8_t> host((rows + 127) / 128 * 128 * (c.k / 32), 127);
        rt::DeviceBuffer b = take(rt::DeviceBuffer::allocate(host.size()));
        check(b.copyFromHost(host.data(), host.size(), stream));
        return b;
      };
      rt::DeviceBuffer mxSx = ones(m), mxSw = ones(c.g * c.n);
      GroupedGemmSpec spec = specOf(GroupedGemmSpec::Operands::Mxfp8, 0, 0, 0);
      double mx = runGenerated(GroupedGemmSpec::Operands::Mxfp8, x8.devicePtr(),
                               w8.devicePtr(), 0, 0, 0, 0, 0, 0,
                               mxSx.devicePtr(), mxSw.devicePtr());
      std::printf("     %-54s mxfp8 %8.1f  (%.2fx tejit bf16)",
                  spec.kernelName().c_str(), tf(mx), bf16 / mx);
      if (c.g == 1) {
        rt::GemmProblem p;
        p.m = m;
        p.n = c.n;
        p.k = c.k;
        p.a = {rt::DType::BF16, rt::GemmScaling::None, x16.devicePtr(), 0};
        p.b = {rt::DType::BF16, rt::GemmScaling::None, w16.devicePtr(), 0};
        p.out = y.devicePtr();
        double lib =
            medianMicros(stream, iters, [&] { check(lt.gemm(p, stream)); });
        std::printf("  cuBLASLt bf16 %8.1f (mxfp8 %.2fx)", tf(lib), lib / mx);
      }
      std::printf("\n");
    }
    if (nvfp4) {
      // Random packed codes (x8, w8), E4M3 block scales [roundup(rows,
      // 128)][K/16] of 1.0, amaxes 2688: the speed does not depend on them.
      auto bytes = [&](int64_t count, uint8_t value) {
        std::vector<uint8_t> host(count, value);
        rt::DeviceBuffer b = take(rt::DeviceBuffer::allocate(host.size()));
        check(b.copyFromHost(host.data(), host.size(), stream));
        return b;
      };
      rt::DeviceBuffer nvSx = bytes((m + 127) / 128 * 128 * (c.k / 16), 0x38);
      rt::DeviceBuffer nvSw =
          bytes((c.g * c.n + 127) / 128 * 128 * (c.k / 16), 0x38);
      rt::DeviceBuffer amax = constantFloats(c.g, 2688.0f, stream);
      std::printf("     nvfp4");
      for (int width : {256, 128}) {
        double us =
            runGenerated(GroupedGemmSpec::Operands::Nvfp4, x8.devicePtr(),
                         w8.devicePtr(), width, 0, 0, 0, 0, 0, nvSx.devicePtr(),
                         nvSw.devicePtr(), amax.devicePtr());
        std::printf("  t%d %8.1f (%.2fx tejit bf16)", width, tf(us), bf16 / us);
      }
      std::printf("\n");
    }
    std::fflush(stdout);
  }
  std::printf("(TFLOP/s; median of %d runs)\n", iters);
  if (!dense)
    backward(cache, opts, device, stream, iters, false, outBoxes);
  return 0;
}
