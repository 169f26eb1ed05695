//===- quantize_hybrid.cpp - The host C++ API, end to end -----------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Compiles a te module held in a string, loads its function on the GPU
// through the kernel cache, runs it on device buffers this program owns,
// and checks the results bit for bit against the CPU reference backend.
// Without a GPU it still compiles every kernel with NVRTC and says so.
//
//   te-example-host-api [rows cols]      (default 4096 4096)
//
//===----------------------------------------------------------------------===//

#include "te/api/Tejit.h"
#include "te/exec/Compare.h"
#include "te/exec/CudaRunner.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

namespace {

/// One gradient quantized for both GEMMs that read it - MXFP8 rowwise
/// (dgrad), NVFP4 columnwise (wgrad) - plus its bias gradient.
std::string moduleText(long rows, long cols) {
  std::string t =
      "tensor<" + std::to_string(rows) + "x" + std::to_string(cols) + "xbf16>";
  std::string q = "!te.qtensor<" + std::to_string(rows) + "x" +
                  std::to_string(cols) +
                  "xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = "
                  "#te.nvfp4<>>, rowwise|columnwise>";
  std::string db = "tensor<" + std::to_string(cols) + "xf32>";
  return "func.func @quantize_grad(%dy: " + t + ") -> (" + q + ", " + db +
         ") {\n  %q = te.quantize %dy : " + t + " -> " + q +
         "\n  %db = te.bias_grad %dy : " + t + " -> " + db +
         "\n  return %q, %db : " + q + ", " + db + "\n}\n";
}

int fail(const te::rt::Status &s) {
  std::fprintf(stderr, "te-example-host-api: %s\n", s.toString().c_str());
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  using namespace te;
  long rows = argc > 2 ? std::atol(argv[1]) : 4096;
  long cols = argc > 2 ? std::atol(argv[2]) : 4096;

  // 1. Compile: te IR text -> kernel-level program (te-to-cuda pipeline).
  auto module = api::CompiledModule::fromSource(moduleText(rows, cols), {},
                                                "quantize_grad.mlir");
  if (!module)
    return fail(module.status());
  const cg::Entry &entry = *module->program().find("quantize_grad");
  std::printf("compiled @quantize_grad: %zu kernel(s)\n", entry.kernels.size());

  // A random bf16 gradient (bit patterns of N(0, 1) samples).
  std::vector<uint8_t> dy(size_t(rows * cols) * 2);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (size_t i = 0; i < dy.size(); i += 2) {
    float f = normal(rng);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    bits += 0x7FFF + ((bits >> 16) & 1); // round to nearest even
    dy[i] = uint8_t(bits >> 16);
    dy[i + 1] = uint8_t(bits >> 24);
  }
  auto reference = exec::runCpu(module->program(), entry, {dy});
  if (!reference)
    return fail(reference.status());

  rt::KernelCache cache; // memory + the default disk cache
  auto device = rt::Device::open();
  if (!device) {
    auto n = exec::compileEntry(module->program(), entry, cache);
    if (!n)
      return fail(n.status());
    std::string why = device.status().message();
    why = why.substr(0, why.find_first_of(":\n"));
    std::printf("no GPU (%s): compiled %zu kernel source(s) with NVRTC and "
                "ran the CPU reference only\n",
                why.c_str(), *n);
    return 0;
  }
  auto stream = rt::Stream::create(*device);
  if (!stream)
    return fail(stream.status());

  // 2. Load: kernels from the cache (or NVRTC), workspaces allocated.
  auto t0 = std::chrono::steady_clock::now();
  auto fn = module->load("quantize_grad", *device, cache);
  if (!fn)
    return fail(fn.status());
  double loadMs = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - t0)
                      .count();
  rt::CacheStats stats = cache.stats();
  std::printf("loaded in %.1f ms (cache: %llu compiled, %llu from disk, %llu "
              "from memory)\n",
              loadMs, (unsigned long long)stats.compiles,
              (unsigned long long)stats.diskHits,
              (unsigned long long)stats.memoryHits);

  // 3. Our own device buffers, one per slot.
  std::vector<rt::DeviceBuffer> owned;
  auto allocate = [&](const std::vector<api::Slot> &slots,
                      std::vector<api::DeviceSpan> &spans) -> rt::Status {
    for (const api::Slot &s : slots) {
      auto b = rt::DeviceBuffer::allocate(s.bytes);
      if (!b)
        return b.status();
      spans.push_back({b->devicePtr(), b->size()});
      owned.push_back(std::move(*b));
    }
    return rt::Status::ok();
  };
  std::vector<api::DeviceSpan> args, results;
  if (rt::Status s = allocate(fn->arguments(), args); !s)
    return fail(s);
  size_t firstResult = owned.size();
  if (rt::Status s = allocate(fn->results(), results); !s)
    return fail(s);
  if (rt::Status s = owned[0].copyFromHost(dy.data(), dy.size(), *stream); !s)
    return fail(s);

  // 4. Run, read back, compare with the reference.
  if (rt::Status s = fn->run(args, results, *stream); !s)
    return fail(s);
  std::vector<exec::ValueData> gpu;
  for (size_t i = 0, r = 0; i < fn->results().size(); ++i) {
    const api::Slot &slot = fn->results()[i];
    if (gpu.size() <= slot.index)
      gpu.resize(slot.index + 1);
    exec::NamedBuffer nb;
    nb.name = slot.part;
    nb.desc = slot.desc;
    nb.bytes.resize(slot.bytes);
    if (rt::Status s = owned[firstResult + r++].copyToHost(
            nb.bytes.data(), nb.bytes.size(), *stream);
        !s)
      return fail(s);
    gpu[slot.index].push_back(std::move(nb));
  }
  if (rt::Status s = stream->synchronize(); !s)
    return fail(s);
  std::string diff = exec::firstDifference(*reference, gpu, "cpu", "gpu");
  if (!diff.empty()) {
    std::printf("MISMATCH %s\n", diff.c_str());
    return 2;
  }
  std::printf("%zu result buffers on the GPU == CPU reference bit for bit\n",
              fn->results().size());
  return 0;
}
