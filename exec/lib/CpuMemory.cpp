//===- CpuMemory.cpp - What the CPU backend will hold ---------------------===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//
//
// The memory side of the CPU backend (te/exec/CpuBackend.h): an entry's
// storage, copies, GEMM bounds and the largest kernel's working copies,
// against the host's available memory (a cgroup limit included), so that
// te-run and runCpu refuse up front what cannot fit.
//
//===----------------------------------------------------------------------===//

#include "te/exec/CpuBackend.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <unistd.h>

namespace te::exec {

using namespace cg;
using rt::Direction;

/// a + b, saturating (a Program built in C++ skips the verifier's bounds).
static uint64_t addBytes(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t elementsOf(const Value &v) {
  return uint64_t(std::max<int64_t>(v.rows(), 0)) *
         uint64_t(std::max<int64_t>(v.cols(), 0));
}

/// The bytes of value `v`'s storage on the CPU backend.
static uint64_t storageBytes(const Program &p, const Value &v) {
  if (!v.isQuantized())
    return elementsOf(v) * uint64_t(rt::dtypeSize(v.dtype));
  uint64_t bytes = 0;
  for (Direction d : {Direction::Rowwise, Direction::Columnwise}) {
    if (!v.scheme(d))
      continue;
    rt::DirectionStorage s =
        rt::storageFor(*v.scheme(d), d, v.rows(), v.cols(), p.target);
    for (const rt::BufferDesc *b : {&s.data, &s.scaleInv, &s.amax})
      if (b->present())
        bytes = addBytes(bytes, uint64_t(b->bytes()));
  }
  return bytes;
}

/// The fp32 working copies a kernel allocates while it runs (widened
/// operands, sums, bounds), beyond the values it writes.
static uint64_t kernelScratchBytes(const Program &p, const Entry &e,
                                   const Kernel &k) {
  return std::visit(
      Overloaded{
          [&](const QuantizeKernel &q) {
            return 4 * elementsOf(e.values[q.input]);
          },
          [&](const DequantizeKernel &d) {
            return 4 * elementsOf(e.values[d.output]);
          },
          [&](const GemmKernel &g) {
            // Both operands widened, the result, its |a||b| sums and
            // bound.
            return 4 * (elementsOf(e.values[g.a]) + elementsOf(e.values[g.b]) +
                        3 * elementsOf(e.values[g.output]));
          },
          [&](const AdamKernel &a) {
            uint64_t largest = 0;
            for (const AdamTensor &t : a.tensors)
              largest = std::max(largest, elementsOf(e.values[t.param]));
            return 6 * 4 * largest; // param, m, v widened and narrowed
          },
          [&](const GroupedGemmKernel &g) {
            // Both operands dequantized and decoded, the result, its
            // |a||b| sums and bound. Quantized per expert: also each
            // operand's bf16 copy, codes, each expert's own quantization
            // and, for the dgrad, the stack's values transposed back.
            // The epilogue's quantization: y's values once more.
            uint64_t perOperand = g.quantizesPerExpert() ? 5 : 2;
            return 4 * (perOperand * elementsOf(e.values[g.x]) +
                        perOperand * elementsOf(e.values[g.w]) +
                        (g.quantizedOutput >= 0 ? 4 : 3) *
                            elementsOf(e.values[g.output]));
          },
          [&](const GroupedWgradKernel &g) {
            // Both operands in the grouped layout (with padding) and
            // decoded, the result, its |a||b| sums and bound.
            return 4 * (3 * elementsOf(e.values[g.dy]) +
                        3 * elementsOf(e.values[g.x]) +
                        3 * elementsOf(e.values[g.output]));
          },
          [&](const AllGatherKernel &g) {
            // The staging copy of every rank's shards.
            return storageBytes(p, e.values[g.output]);
          },
          [&](const ShardedQuantizeKernel &q) {
            // The concatenated master and its fp32 widening (one
            // process per rank: and every rank's shard buffer).
            const Value &v = e.values[q.stages.front().value];
            uint64_t gathered =
                q.perProcess()
                    ? q.ranks() * storageBytes(p, e.values[q.shards[0]])
                    : 0;
            return elementsOf(v) * (4 + rt::dtypeSize(v.dtype)) + gathered;
          }},
      k);
}

uint64_t cpuMemoryBytes(const Program &p, const Entry &e) {
  uint64_t bytes = 0;
  for (const Value &v : e.values)
    bytes = addBytes(bytes, storageBytes(p, v));
  // The caller's arguments and the results handed back are copies.
  for (int a : e.args)
    bytes = addBytes(bytes, storageBytes(p, e.values[size_t(a)]));
  for (int r : e.results)
    bytes = addBytes(bytes, storageBytes(p, e.values[size_t(r)]));
  uint64_t scratch = 0;
  for (const Kernel &k : e.kernels) {
    scratch = std::max(scratch, kernelScratchBytes(p, e, k));
    if (const auto *g = std::get_if<GemmKernel>(&k)) // its kept bound
      bytes = addBytes(bytes, 4 * elementsOf(e.values[g->output]));
    if (const auto *g = std::get_if<GroupedGemmKernel>(&k))
      bytes = addBytes(bytes, 4 * elementsOf(e.values[g->output]));
    if (const auto *g = std::get_if<GroupedWgradKernel>(&k))
      bytes = addBytes(bytes, 4 * elementsOf(e.values[g->output]));
  }
  return addBytes(bytes, scratch);
}

/// A number from a one-line file (a cgroup limit), or 0.
static uint64_t readLimit(const char *path) {
  std::ifstream in(path);
  uint64_t v = 0;
  if (!(in >> v)) // "max": no limit
    return 0;
  return v;
}

uint64_t availableHostMemory() {
  uint64_t available = 0;
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line))
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream fields(line.substr(13));
      uint64_t kib = 0;
      if (fields >> kib)
        available = kib * 1024;
      break;
    }
  if (!available) {
    long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0)
      available = uint64_t(pages) * uint64_t(page);
  }
  // A container's limit (cgroup v2) binds before the machine's memory.
  uint64_t limit = readLimit("/sys/fs/cgroup/memory.max");
  if (limit) {
    uint64_t used = readLimit("/sys/fs/cgroup/memory.current");
    uint64_t left = limit > used ? limit - used : 0;
    available = available ? std::min(available, left) : left;
  }
  return available;
}

std::string formatGiB(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f GiB",
                double(bytes) / double(1ull << 30));
  return text;
}

rt::Status checkCpuMemory(const Program &p, const Entry &e) {
  uint64_t need = cpuMemoryBytes(p, e), have = availableHostMemory();
  if (!have || need <= have)
    return rt::Status::ok();
  return rt::Status(rt::StatusCode::ResourceExhausted,
                    "the CPU backend needs " + formatGiB(need) + " for '" +
                        e.name + "' (" + formatGiB(have) + " available)");
}

} // namespace te::exec
