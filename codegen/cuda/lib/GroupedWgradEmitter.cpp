//===- GroupedWgradEmitter.cpp - Hopper K-grouped wgrad as CUDA C++ -------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#include "te/codegen/GroupedWgradEmitter.h"

#include <algorithm>
#include <sstream>

namespace te::cg {

using rt::Status;
using rt::StatusCode;

namespace {
constexpr unsigned kMaxShared = 232448; // an H100 SM's opt-in maximum
constexpr int64_t kTile = 128;
int64_t stageBytes(const GroupedWgradSpec &s) {
  return (kTile + s.blockN) * 128 + (s.fp8() ? 2 * 128 * 4 : 0);
}
int64_t fixedBytes(const GroupedWgradSpec &s) {
  // tables, alignment slack, the output boxes of TMA stores
  return 2 * 4 * s.groups + 1024 +
         (groupedWgradTmaStore(s) ? 2 * int64_t(s.outBoxes) * 64 * 128 : 0);
}
} // namespace

bool groupedWgradTmaStore(const GroupedWgradSpec &s) { return s.k % 4 == 0; }

GroupedWgradSpec GroupedWgradSpec::resolved() const {
  GroupedWgradSpec s = *this;
  // BF16 reads twice the bytes per MMA of FP8: its 256-wide tiles halve the
  // B tile traffic per FLOP, as the BF16 fprop's do (the BF16 wgrad 1.54x
  // faster, bench/moe_mxfp8_32768.mlir, docs/Performance.md).
  if (s.blockN == 0)
    s.blockN = s.fp8() ? 128 : 256;
  if (s.band == 0)
    s.band = 16;
  if (s.outBoxes == 0)
    s.outBoxes = 1;
  if (s.stages == 0)
    s.stages =
        static_cast<int>((kMaxShared - fixedBytes(s)) / (stageBytes(s) + 16));
  return s;
}

std::string GroupedWgradSpec::kernelName() const {
  const GroupedWgradSpec r = resolved();
  std::ostringstream os;
  os << "te_grouped_wgrad_" << (fp8() ? "fp8block" : "bf16")
     << (fp8() ? fp8Formats.nameSuffix() : "") << "_g" << groups << "_n" << n
     << "_k" << k << "_t" << r.blockN;
  if (r.band != 1)
    os << "_b" << r.band;
  if (groupedWgradTmaStore(r))
    os << "_o" << r.outBoxes;
  os << "_s" << r.stages;
  return os.str();
}

unsigned groupedWgradSharedBytes(const GroupedWgradSpec &spec) {
  GroupedWgradSpec s = spec.resolved();
  // GroupedWgradConfig::kSharedBytes; the generated source asserts it.
  return static_cast<unsigned>(s.stages * stageBytes(s) + 2 * 8 * s.stages +
                               fixedBytes(s));
}

Status checkGroupedWgrad(const GroupedWgradSpec &spec) {
  GroupedWgradSpec s = spec.resolved();
  auto bad = [&](const std::string &why) {
    return Status(StatusCode::InvalidArgument,
                  "grouped wgrad (" + s.kernelName() + "): " + why);
  };
  if (s.groups < 1 || s.groups > 4096)
    return bad("the number of experts must be 1..4096");
  if (s.fp8() && !s.fp8Formats.error().empty())
    return bad(s.fp8Formats.error());
  if (s.n < 2 || s.n % 2 || s.k < 2 || s.k % 2)
    return bad("N and K must be even and positive");
  if (s.groups * s.n * s.k >= (int64_t(1) << 40))
    return bad("dW is too large");
  if (groupedWgradTmaStore(s) && s.groups * s.n >= (int64_t(1) << 31))
    return bad("G*N must be below 2^31 (dW's rows are a TMA coordinate)");
  if (s.band < 1 || s.band > 1024)
    return bad("a band of the tile order holds 1..1024 row tiles");
  if (s.fp8() ? s.blockN != 128 : (s.blockN != 128 && s.blockN != 256))
    return bad(s.fp8() ? "the FP8 tile width must be 128"
                       : "the BF16 tile width must be 128 or 256");
  if (s.outBoxes != 1 && s.outBoxes != 2)
    return bad("a warpgroup stores through 1 or 2 output boxes");
  // After the tile width, which sizes the stages.
  if (s.stages < 2 || groupedWgradSharedBytes(s) > kMaxShared)
    return bad("the stage ring does not fit an SM's shared memory");
  return Status::ok();
}

std::string emitGroupedWgrad(const GroupedWgradSpec &spec) {
  GroupedWgradSpec s = spec.resolved();
  std::ostringstream os;
  // Only #includes before the first line of code (NVRTC's automatic PCH).
  os << "#include \"te/device/gemm/GroupedWgradSm90.cuh\"\n\n"
     << "using Config = te::gemm::GroupedWgradConfig<"
     << (s.fp8() ? "true" : "false") << ", " << s.stages << ", " << s.n << ", "
     << s.k << ", " << s.groups << ", "
     << (s.fp8() ? s.fp8Formats.templateFlags() : "false, false") << ", "
     << s.band << ", " << s.blockN << ", " << s.outBoxes << ">;\n"
     << "static_assert(Config::kSharedBytes == " << groupedWgradSharedBytes(s)
     << ", \"the launch's shared memory is the kernel's\");\n\n"
     << "extern \"C\" __global__ void __launch_bounds__(" << kGroupedGemmThreads
     << ", 1)\n"
     << s.kernelName() << "(const __grid_constant__ cute::TmaDescriptor tmA,\n"
     << "    const __grid_constant__ cute::TmaDescriptor tmB,\n"
     << "    const __grid_constant__ cute::TmaDescriptor tmSA,\n"
     << "    const __grid_constant__ cute::TmaDescriptor tmSB,\n"
     << "    const __grid_constant__ cute::TmaDescriptor tmD,\n"
     << "    const long long *splits, float *dw, int mTotal) {\n"
     << "  te::gemm::groupedWgradSm90<Config>(&tmA, &tmB, &tmSA, &tmSB, &tmD, "
        "splits, dw, mTotal);\n"
     << "}\n";
  return os.str();
}

int64_t groupedWgradCapacity(int64_t mTotal, int64_t groups) {
  return (mTotal + kTile - 1) / kTile * kTile + kTile * (groups - 1);
}

std::array<rt::TensorMapShape, 5> groupedWgradMaps(const GroupedWgradSpec &s,
                                                   int64_t capacity) {
  rt::DType elem = s.fp8() ? rt::DType::E4M3 : rt::DType::BF16;
  int64_t rowBytes = capacity * rt::dtypeSize(elem);
  int box = static_cast<int>(128 / rt::dtypeSize(elem));
  auto operand = [&](int64_t rows, int boxRows) {
    return rt::TensorMapShape{elem,
                              rows,
                              capacity,
                              rowBytes,
                              boxRows,
                              box,
                              rt::TensorMapSwizzle::B128};
  };
  rt::TensorMapShape a = operand(s.n, int(kTile)),
                     b = operand(s.k, s.resolved().blockN);
  rt::TensorMapShape d = groupedWgradTmaStore(s)
                             ? rt::TensorMapShape{rt::DType::F32,
                                                  s.groups * s.n,
                                                  s.k,
                                                  s.k * 4,
                                                  64,
                                                  32,
                                                  rt::TensorMapSwizzle::B128}
                             : a;
  if (!s.fp8())
    return {a, b, a, b, d};
  auto scales = [&](int64_t cols) {
    int64_t padded = (cols + 3) / 4 * 4;
    return rt::TensorMapShape{rt::DType::F32,
                              capacity / kTile,
                              padded,
                              padded * 4,
                              1,
                              128,
                              rt::TensorMapSwizzle::None};
  };
  return {a, b, scales(s.n), scales(s.k), d};
}

std::array<void *, 8> GroupedWgradLaunch::args() {
  return {&maps[0], &maps[1], &maps[2], &maps[3],
          &maps[4], &splits,  &dw,      &mTotal};
}

rt::Expected<GroupedWgradLaunch>
prepareGroupedWgrad(const GroupedWgradSpec &spec, const GroupedWgradBuffers &b,
                    const rt::Device &device, const rt::Kernel &kernel) {
  GroupedWgradSpec s = spec.resolved();
  if (Status st = checkGroupedWgrad(s); !st.isOk())
    return st;
  if (b.mTotal < 0 || b.mTotal >= (int64_t(1) << 31) ||
      b.capacity % kTile != 0 ||
      b.capacity < groupedWgradCapacity(b.mTotal, s.groups))
    return Status(StatusCode::InvalidArgument,
                  "grouped wgrad: the capacity must be a multiple of 128 and "
                  "at least groupedWgradCapacity(M_total, G)");
  std::array<rt::TensorMapShape, 5> shapes = groupedWgradMaps(s, b.capacity);
  uint64_t bases[5] = {b.a, b.b, s.fp8() ? b.sa : b.a, s.fp8() ? b.sb : b.b,
                       groupedWgradTmaStore(s) ? b.dw : b.a};
  GroupedWgradLaunch l;
  for (int i = 0; i < 5; ++i) {
    rt::Expected<rt::TensorMap> map = rt::encodeTensorMap(shapes[i], bases[i]);
    if (!map)
      return map.status();
    l.maps[i] = *map;
  }
  l.splits = b.splits;
  l.dw = b.dw;
  l.mTotal = static_cast<int32_t>(b.mTotal);
  l.block = {kGroupedGemmThreads, 1, 1};
  l.sharedBytes = groupedWgradSharedBytes(s);
  rt::Expected<rt::Dim3> grid =
      kernel.persistentGrid(device, l.block, l.sharedBytes, rt::Dim3{});
  if (!grid)
    return grid.status();
  l.grid = *grid;
  return l;
}

rt::Status launchGroupedWgrad(const rt::Kernel &kernel, GroupedWgradLaunch &l,
                              const rt::Stream &stream) {
  std::array<void *, 8> args = l.args();
  return kernel.launch(l.grid, l.block, l.sharedBytes, stream, args.data());
}

} // namespace te::cg
