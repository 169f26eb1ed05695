//===- GroupedGemmEmitter.cpp - Hopper grouped GEMMs as CUDA C++ ----------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#include "te/codegen/GroupedGemmEmitter.h"

#include "te/runtime/Cutlass.h"

#include <algorithm>
#include <sstream>

namespace te::cg {

using rt::Status;
using rt::StatusCode;

namespace {
constexpr int64_t kBlockM = 128;
constexpr unsigned kMaxShared = 232448; // an H100 SM's opt-in maximum
int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t blockK(const GroupedGemmSpec &s) { return s.fp8() ? 128 : 64; }
int64_t stageBytes(const GroupedGemmSpec &s) {
  // x tile, w tile, x scales (kBlockM + 4 floats in a 128-byte slot).
  return kBlockM * 128 + int64_t(s.blockN) * 128 + (s.fp8() ? 640 : 0);
}
int64_t fixedBytes(const GroupedGemmSpec &s) {
  return 2 * 4 * (s.groups + 1) + 1024; // tables, alignment slack
}
} // namespace

GroupedGemmSpec GroupedGemmSpec::resolved() const {
  GroupedGemmSpec s = *this;
  // Measured on the H100 (docs/Performance.md): BF16 gains 50 % from the
  // 256-wide tile (fewer tile bytes per FLOP). FP8 keeps three 64x128
  // accumulators (two partial sums in flight, the total): 128 wide only.
  if (s.blockN == 0)
    s.blockN = s.fp8() ? 128 : 256;
  if (s.cluster == 0)
    s.cluster = (s.n > 0 && ceilDiv(s.n, s.blockN) % 2 == 0) ? 2 : 1;
  if (s.stages == 0)
    s.stages =
        static_cast<int>((kMaxShared - fixedBytes(s)) / (stageBytes(s) + 16));
  return s;
}

std::string GroupedGemmSpec::kernelName() const {
  GroupedGemmSpec r = resolved();
  std::ostringstream os;
  os << "te_grouped_gemm_" << (fp8() ? "fp8block" : "bf16") << "_g" << groups
     << "_n" << n << "_k" << k << "_t" << r.blockN << "_c" << r.cluster << "_s"
     << r.stages;
  return os.str();
}

unsigned groupedGemmSharedBytes(const GroupedGemmSpec &spec) {
  GroupedGemmSpec s = spec.resolved();
  // GroupedGemmConfig::kSharedBytes; the generated source asserts they agree.
  return static_cast<unsigned>(s.stages * stageBytes(s) + 2 * 8 * s.stages +
                               fixedBytes(s));
}

Status checkGroupedGemm(const GroupedGemmSpec &spec) {
  GroupedGemmSpec s = spec.resolved();
  auto bad = [&](const std::string &why) {
    return Status(StatusCode::InvalidArgument,
                  "grouped GEMM (" + s.kernelName() + "): " + why);
  };
  if (s.groups < 1 || s.groups > 4096)
    return bad("the number of experts must be 1..4096");
  if (s.n < 2 || s.n % 2 != 0)
    return bad("N must be even and positive");
  if (s.k < 1 || s.k % blockK(s) != 0)
    return bad("K must be a positive multiple of " + std::to_string(blockK(s)));
  if (s.groups * s.n >= (int64_t(1) << 31) || s.k >= (int64_t(1) << 31))
    return bad("G*N and K must be below 2^31");
  if (s.fp8() ? s.blockN != 128 : (s.blockN != 128 && s.blockN != 256))
    return bad(s.fp8() ? "the FP8 tile width must be 128"
                       : "the BF16 tile width must be 128 or 256");
  if (s.cluster != 1 && s.cluster != 2)
    return bad("a cluster is 1 or 2 CTAs");
  if (s.cluster == 2 && ceilDiv(s.n, s.blockN) % 2 != 0)
    return bad("a 2-CTA cluster needs an even number of column blocks");
  if (s.stages < 2 || groupedGemmSharedBytes(s) > kMaxShared)
    return bad("the stage ring (" + std::to_string(s.stages) +
               " stages) does not fit an SM's 227 KiB of shared memory");
  return Status::ok();
}

std::string emitGroupedGemm(const GroupedGemmSpec &spec) {
  GroupedGemmSpec s = spec.resolved();
  std::ostringstream os;
  // Only #includes before the first line of code: NVRTC's automatic
  // precompiled header then covers CUTLASS (groupedGemmCompileOptions).
  os << "#include \"te/device/gemm/GroupedGemmSm90.cuh\"\n\n"
     << "using Config = te::gemm::GroupedGemmConfig<"
     << (s.fp8() ? "true" : "false") << ", " << s.blockN << ", " << s.cluster
     << ", " << s.stages << ", " << s.n << ", " << s.k << ", " << s.groups
     << ">;\n"
     << "static_assert(Config::kSharedBytes == " << groupedGemmSharedBytes(s)
     << ", \"the launch's shared memory is the kernel's\");\n\n"
     << "extern \"C\" __global__ void __launch_bounds__(" << kGroupedGemmThreads
     << ", 1)\n"
     << s.kernelName() << "(const __grid_constant__ cute::TmaDescriptor tmX,\n"
     << "    const __grid_constant__ cute::TmaDescriptor tmW,\n"
     << "    const __grid_constant__ cute::TmaDescriptor tmSX,\n"
     << "    const float *sw, const long long *splits, unsigned short *y,\n"
     << "    int mTotal) {\n"
     << "  te::gemm::groupedGemmSm90<Config>(&tmX, &tmW, &tmSX, sw, splits, "
        "y, mTotal);\n"
     << "}\n";
  return os.str();
}

rt::Expected<rt::CompileOptions> groupedGemmCompileOptions() {
  rt::Expected<std::vector<std::string>> flags = rt::cutlassCompileFlags();
  if (!flags)
    return flags.status();
  rt::CompileOptions o;
  o.arch = "sm_90a";
  o.flags = *flags;
  // NVRTC's automatic precompiled header: every GEMM kernel after the first
  // in a process reuses the parsed CUTLASS headers (0.28 s instead of
  // 0.78 s a kernel on the development machine).
  o.flags.push_back("--pch");
  return o;
}

std::array<void *, 7> GroupedGemmLaunch::args() {
  return {&maps[0], &maps[1], &maps[2], &sw, &splits, &y, &mTotal};
}

rt::Expected<GroupedGemmLaunch> prepareGroupedGemm(const GroupedGemmSpec &spec,
                                                   const GroupedGemmBuffers &b,
                                                   const rt::Device &device,
                                                   const rt::Kernel &kernel,
                                                   int maxCtas) {
  GroupedGemmSpec s = spec.resolved();
  if (Status st = checkGroupedGemm(s); !st.isOk())
    return st;
  if (b.mTotal < 1 || b.mTotal >= (int64_t(1) << 31))
    return Status(StatusCode::InvalidArgument,
                  "grouped GEMM: M_total must be 1..2^31-1, got " +
                      std::to_string(b.mTotal));
  rt::DType elem = s.fp8() ? rt::DType::E4M3 : rt::DType::BF16;
  int64_t rowBytes = s.k * rt::dtypeSize(elem);
  int boxK = static_cast<int>(blockK(s));
  GroupedGemmLaunch l;
  rt::Expected<rt::TensorMap> x = rt::encodeTensorMap2D(
      elem, b.x, b.mTotal, s.k, rowBytes, static_cast<int>(kBlockM / s.cluster),
      boxK, rt::TensorMapSwizzle::B128);
  if (!x)
    return x.status();
  rt::Expected<rt::TensorMap> w =
      rt::encodeTensorMap2D(elem, b.w, s.groups * s.n, s.k, rowBytes, s.blockN,
                            boxK, rt::TensorMapSwizzle::B128);
  if (!w)
    return w.status();
  l.maps[0] = *x;
  l.maps[1] = *w;
  if (s.fp8()) {
    int64_t padded = (b.mTotal + 3) / 4 * 4;
    rt::Expected<rt::TensorMap> sx = rt::encodeTensorMap2D(
        rt::DType::F32, b.sx, ceilDiv(s.k, 128), padded, padded * 4, 1,
        kBlockM + 4, rt::TensorMapSwizzle::None);
    if (!sx)
      return sx.status();
    l.maps[2] = *sx;
  }
  l.sw = b.sw;
  l.splits = b.splits;
  l.y = b.y;
  l.mTotal = static_cast<int32_t>(b.mTotal);
  l.block = {kGroupedGemmThreads, 1, 1};
  l.cluster = {static_cast<unsigned>(s.cluster), 1, 1};
  l.sharedBytes = groupedGemmSharedBytes(s);
  int ctas = device.info().smCount;
  if (s.cluster > 1) {
    // Clusters need their CTAs on SMs of one GPC: fewer may fit than SMs.
    rt::Expected<int> clusters = kernel.maxActiveClusters(
        l.block, l.sharedBytes, l.cluster, static_cast<unsigned>(ctas));
    if (!clusters)
      return clusters.status();
    ctas = std::min(ctas, *clusters * s.cluster);
  }
  if (maxCtas > 0 && maxCtas < ctas)
    ctas = maxCtas;
  ctas = std::max(ctas / s.cluster, 1) * s.cluster;
  l.grid = {static_cast<unsigned>(ctas), 1, 1};
  return l;
}

rt::Status launchGroupedGemm(const rt::Kernel &kernel, GroupedGemmLaunch &l,
                             const rt::Stream &stream) {
  std::array<void *, 7> args = l.args();
  return kernel.launch(l.grid, l.block, l.sharedBytes, stream, args.data(),
                       l.cluster);
}

} // namespace te::cg
