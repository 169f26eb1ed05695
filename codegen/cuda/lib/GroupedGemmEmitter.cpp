//===- GroupedGemmEmitter.cpp - Hopper grouped GEMMs as CUDA C++ ----------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#include "te/codegen/GroupedGemmEmitter.h"

#include "te/formats/GemmRules.h"
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
  // x tile, w tile, and the scales: block FP8 kBlockM + 4 x scales in a
  // 128-byte slot; MXFP8 fp32 [4][128] of x and of w.
  return kBlockM * 128 + int64_t(s.blockN) * 128 +
         (s.mxfp8() ? 4096
          : s.fp8() ? 640
                    : 0);
}
// NVFP4: a stage of the packed-code ring (32 bytes a row of both tiles).
int64_t rawStageBytes(const GroupedGemmSpec &s) {
  return (kBlockM + s.blockN) * 32;
}
int64_t fixedBytes(const GroupedGemmSpec &s) {
  // tables, alignment slack, the output boxes of TMA stores
  return 2 * 4 * (s.groups + 1) + 1024 +
         (groupedGemmTmaStore(s) ? 2 * int64_t(s.outBoxes) * 64 * 128 : 0);
}
} // namespace

bool groupedGemmTmaStore(const GroupedGemmSpec &s) { return s.n % 8 == 0; }

std::string Fp8Operands::nameSuffix() const {
  if (a == rt::DType::E4M3 && b == rt::DType::E4M3)
    return "";
  return std::string("_") + rt::dtypeName(a) + "x" + rt::dtypeName(b);
}

std::string Fp8Operands::templateFlags() const {
  return std::string(a == rt::DType::E5M2 ? "true" : "false") + ", " +
         (b == rt::DType::E5M2 ? "true" : "false");
}

std::string Fp8Operands::error() const {
  if (!rt::isFp8(a) || !rt::isFp8(b))
    return std::string("FP8 operands are e4m3 or e5m2, got ") +
           rt::dtypeName(a) + " and " + rt::dtypeName(b);
  if (!rt::fp8ElementsPair(a, b))
    return "no FP8 GEMM multiplies e5m2 by e5m2";
  return "";
}

GroupedGemmSpec GroupedGemmSpec::resolved() const {
  GroupedGemmSpec s = *this;
  // Measured on the H100 (docs/Performance.md): BF16 gains 50 % from the
  // 256-wide tile (fewer tile bytes per FLOP). FP8 keeps three 64x128
  // accumulators (two partial sums in flight, the total): 128 wide only.
  if (s.blockN == 0)
    s.blockN = s.fp8() ? 128 : 256;
  // One CTA per cluster. A 2-CTA cluster sharing the x tile (TMA multicast)
  // had been 5-6 % faster for FP8 from 1024 rows per expert; since the
  // sixth stage (one output box a warpgroup) one CTA is 3-11 % faster on
  // all nine benchmark shapes, as it was for BF16's 256-wide tiles with the
  // banded tile order (te-grouped-gemm-bench --sweep, docs/Performance.md).
  if (s.cluster == 0)
    s.cluster = 1;
  if (s.clusterM == 0)
    s.clusterM = 1;
  // Bands of the tile order (te-grouped-gemm-bench --bands, one H100 run,
  // docs/Performance.md): FP8 with bands of 16 row units +11 % on a dense
  // 8192^3 GEMM, up to +5 % on the grouped shapes, within 2 % of row by row
  // on the rest; BF16 (256-wide tiles, half the items a row) with bands of
  // 32 up to +26 %, but -10 % at G = 8 with 256 tokens per expert.
  if (s.band == 0)
    s.band = s.fp8() ? 16 : 32;
  // One output box a warpgroup: the 16 KB it frees make a sixth stage at
  // 128x128 FP8 tiles, +2-4 % on eight of the nine benchmark shapes, while
  // four stages lose 4-9 % against five (te-grouped-gemm-bench --outboxes,
  // docs/Performance.md).
  if (s.outBoxes == 0)
    s.outBoxes = 1;
  if (s.nvfp4()) {
    // Three f16 stages (the math warpgroups hold two), then as many
    // packed-code stages as fit, up to eight.
    if (s.stages == 0)
      s.stages = 3;
    if (s.rawStages == 0)
      s.rawStages = static_cast<int>(
          std::clamp<int64_t>((int64_t(kMaxShared) - fixedBytes(s) -
                               s.stages * (stageBytes(s) + 16)) /
                                  (rawStageBytes(s) + 16),
                              0, 8));
    return s;
  }
  s.rawStages = 0;
  if (s.stages == 0)
    s.stages =
        static_cast<int>((kMaxShared - fixedBytes(s)) / (stageBytes(s) + 16));
  return s;
}

std::string GroupedGemmSpec::kernelName() const {
  GroupedGemmSpec r = resolved();
  std::ostringstream os;
  os << "te_grouped_gemm_"
     << (mxfp8()   ? "mxfp8"
         : nvfp4() ? "nvfp4"
         : fp8()   ? "fp8block"
                   : "bf16")
     << (weightColumnwise ? "_wcol" : "")
     << (fp8() ? fp8Formats.nameSuffix() : "") << "_g" << groups << "_n" << n
     << "_k" << k << "_t" << r.blockN << "_c" << r.cluster;
  if (r.clusterM != 1)
    os << "x" << r.clusterM;
  if (r.band != 1)
    os << "_b" << r.band;
  if (groupedGemmTmaStore(r) && r.outBoxes == 1)
    os << "_o1";
  os << "_s" << r.stages;
  if (r.nvfp4())
    os << "r" << r.rawStages;
  if (outputAmax)
    os << "_amax";
  if (quantizeOutput)
    os << "_q" << rt::dtypeName(quantizeOutput->element)
       << (quantizesPerExpert()   ? "d"
           : quantizeOutput->pow2 ? "p2"
                                  : "");
  return os.str();
}

unsigned groupedGemmSharedBytes(const GroupedGemmSpec &spec) {
  GroupedGemmSpec s = spec.resolved();
  // GroupedGemmConfig::kSharedBytes; the generated source asserts they agree.
  return static_cast<unsigned>(s.stages * (stageBytes(s) + 16) +
                               s.rawStages * (rawStageBytes(s) + 16) +
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
  if (s.fp8() && !s.fp8Formats.error().empty())
    return bad(s.fp8Formats.error());
  if (s.n < 2 || s.n % 2 != 0)
    return bad("N must be even and positive");
  if (s.k < 1 || s.k % blockK(s) != 0)
    return bad("K must be a positive multiple of " + std::to_string(blockK(s)));
  if (s.groups * s.n >= (int64_t(1) << 31) ||
      (s.weightColumnwise ? s.groups : 1) * s.k >= (int64_t(1) << 31))
    return bad("G*N and K (G*K for a columnwise weight) must be below 2^31");
  if (s.fp8() ? s.blockN != 128 : (s.blockN != 128 && s.blockN != 256))
    return bad(s.fp8() ? "the FP8 tile width must be 128"
                       : "the BF16 tile width must be 128 or 256");
  if (s.weightColumnwise && !s.fp8() && s.n % 8 != 0)
    return bad("a BF16 weight read columnwise needs N (its row length) a "
               "multiple of 8: the TMA's 16-byte row stride");
  if (s.cluster != 1 && s.cluster != 2)
    return bad("a cluster is 1 or 2 CTAs");
  if (s.cluster == 2 && ceilDiv(s.n, s.blockN) % 2 != 0)
    return bad("a 2-CTA cluster needs an even number of column blocks");
  if (s.clusterM != 1 && s.clusterM != 2)
    return bad("a cluster has 1 or 2 CTAs along M");
  if (s.band < 1 || s.band > 1024)
    return bad("a band of the tile order holds 1..1024 row units");
  if (s.clusterM == 2 && s.weightColumnwise && !s.fp8())
    return bad("row-tile pairs share a K-major W tile, not the BF16 stack "
               "read along N");
  // The micro-scaled kernels (their scales along K on both operands).
  if (s.mxfp8() || s.nvfp4()) {
    const std::string kernel = s.mxfp8() ? "MXFP8" : "NVFP4";
    if (s.weightColumnwise)
      return bad("the " + kernel +
                 " kernel reads both operands rowwise (the fprop)");
    if (s.clusterSize() != 1)
      return bad("the " + kernel + " kernel runs one CTA a cluster");
  }
  if (s.nvfp4() && (s.stages < 3 || s.rawStages < 2))
    return bad("the NVFP4 kernel needs three f16 stages or more (the math "
               "warpgroups hold two) and two packed-code stages or more");
  if (s.mxfp8() && s.stages < 3)
    return bad("the MXFP8 kernel needs three stages or more: a scale warp "
               "publishes every third stage and tells a stage's phases apart "
               "by parity");
  if (s.outBoxes != 1 && s.outBoxes != 2)
    return bad("a warpgroup stores through 1 or 2 output boxes");
  if (s.quantizeOutput) {
    // Each expert by its given scale (the next grouped GEMM's per-expert
    // cast), or the 1x128 blocks of a quantize kernel over y.
    if (std::string why = s.quantizesPerExpert()
                              ? ""
                              : rt::groupedEpilogueQuantizeError(
                                    *s.quantizeOutput, rt::Direction::Rowwise);
        !why.empty())
      return bad(why);
    if (std::string why = s.quantizeOutput->validate(); !why.empty())
      return bad(why);
  }
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
     << ", " << (s.weightColumnwise ? "true" : "false") << ", "
     << (s.fp8() ? s.fp8Formats.templateFlags() : "false, false") << ", "
     << s.clusterM << ", " << s.band << ", " << s.outBoxes << ", "
     << (s.mxfp8() ? "true" : "false") << ", " << (s.nvfp4() ? "true" : "false")
     << ", " << s.rawStages << ">;\n"
     << "static_assert(Config::kSharedBytes == " << groupedGemmSharedBytes(s)
     << ", \"the launch's shared memory is the kernel's\");\n\n"
     << "extern \"C\" __global__ void __launch_bounds__(" << kGroupedGemmThreads
     << ", 1)\n"
     << s.kernelName() << "(const __grid_constant__ cute::TmaDescriptor tmX,\n"
     << "    const __grid_constant__ cute::TmaDescriptor tmW,\n"
     << "    const __grid_constant__ cute::TmaDescriptor tmSX,\n"
     << "    const __grid_constant__ cute::TmaDescriptor tmY,\n"
     << "    const void *sw, const void *sx, const long long *splits,\n"
     << "    const unsigned short *bias, unsigned short *y, int mTotal,\n"
     << "    const float *amaxX, const float *amaxW, float *amaxY,\n"
     << "    unsigned char *yCodes, float *yScaleInv, float yEps,\n"
     << "    const __grid_constant__ cute::TmaDescriptor tmYCodes,\n"
     << "    const float *yScale) {\n"
     << "  te::gemm::groupedGemmSm90<Config, te::gemm::Epilogue<"
     << (s.outputAmax ? "true" : "false") << ", "
     << (s.quantizeOutput ? "true" : "false") << ", "
     << (s.quantizeOutput && s.quantizeOutput->element == rt::DType::E5M2
             ? "true"
             : "false")
     << ", "
     << (s.quantizeOutput && s.quantizeOutput->pow2 && !s.quantizesPerExpert()
             ? "true"
             : "false")
     << ", " << (s.quantizesPerExpert() ? "true" : "false")
     << ">>(&tmX, &tmW, &tmSX, &tmY, sw, sx, splits, bias, y, mTotal, amaxX, "
        "amaxW, amaxY, yCodes, yScaleInv, yEps, &tmYCodes, yScale);\n"
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

std::array<void *, 18> GroupedGemmLaunch::args() {
  return {&maps[0], &maps[1], &maps[2],   &maps[3], &sw,       &sx,
          &splits,  &bias,    &y,         &mTotal,  &amaxX,    &amaxW,
          &amaxY,   &yCodes,  &yScaleInv, &yEps,    &codesMap, &yScale};
}

bool groupedGemmTmaCodes(const GroupedGemmSpec &s) {
  return groupedGemmTmaStore(s) && s.n % 16 == 0;
}

rt::TensorMapShape groupedGemmCodesMap(const GroupedGemmSpec &s,
                                       int64_t mTotal) {
  return rt::TensorMapShape{
      rt::DType::E4M3, mTotal, s.n, s.n, 64, 128, rt::TensorMapSwizzle::B128};
}

std::array<rt::TensorMapShape, 4> groupedGemmMaps(const GroupedGemmSpec &spec,
                                                  int64_t mTotal) {
  GroupedGemmSpec s = spec.resolved();
  rt::DType elem = s.fp8() ? rt::DType::E4M3 : rt::DType::BF16;
  int64_t rowBytes = s.k * rt::dtypeSize(elem);
  int boxK = static_cast<int>(blockK(s));
  auto swizzled = [&](int64_t rows, int boxRows) {
    return rt::TensorMapShape{
        elem, rows, s.k, rowBytes, boxRows, boxK, rt::TensorMapSwizzle::B128};
  };
  rt::TensorMapShape x =
      swizzled(mTotal, static_cast<int>(kBlockM / s.cluster));
  const int wBoxRows = static_cast<int>(s.blockN / s.clusterM);
  rt::TensorMapShape w = swizzled(s.groups * s.n, wBoxRows);
  if (s.weightColumnwise && s.fp8()) // [n, G*k]: the columnwise storage
    w = rt::TensorMapShape{elem,
                           s.n,
                           s.groups * s.k,
                           s.groups * s.k,
                           wBoxRows,
                           boxK,
                           rt::TensorMapSwizzle::B128};
  if (s.weightColumnwise && !s.fp8()) // [G*k, n]: the stack, read N-major
    w = rt::TensorMapShape{elem,
                           s.groups * s.k,
                           s.n,
                           s.n * rt::dtypeSize(elem),
                           boxK,
                           64,
                           rt::TensorMapSwizzle::B128};
  rt::TensorMapShape y = groupedGemmTmaStore(s)
                             ? rt::TensorMapShape{rt::DType::BF16,
                                                  mTotal,
                                                  s.n,
                                                  s.n * 2,
                                                  64,
                                                  64,
                                                  rt::TensorMapSwizzle::B128}
                             : x;
  if (s.nvfp4()) {
    // The packed codes, K / 2 bytes a row: boxes of 32 bytes (a stage's 64
    // codes) by the tile's rows, unswizzled (the convert warps read them).
    auto packed = [&](int64_t rows, int boxRows) {
      return rt::TensorMapShape{
          rt::DType::E4M3,           rows, s.k / 2, s.k / 2, boxRows, 32,
          rt::TensorMapSwizzle::None};
    };
    rt::TensorMapShape px = packed(mTotal, static_cast<int>(kBlockM));
    return {px, packed(s.groups * s.n, s.blockN), px,
            groupedGemmTmaStore(s) ? y : px};
  }
  if (!s.fp8() || s.mxfp8())
    return {x, w, x, y};
  // A box of kBlockM + 4 scales from a 16-byte aligned start (the TMA's
  // rule), so the tile's rows are inside whatever their first row's offset.
  int64_t padded = (mTotal + 3) / 4 * 4;
  rt::TensorMapShape sx{rt::DType::F32,
                        ceilDiv(s.k, 128),
                        padded,
                        padded * 4,
                        1,
                        static_cast<int>(kBlockM + 4),
                        rt::TensorMapSwizzle::None};
  return {x, w, sx, y};
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
  if (s.outputAmax && b.amaxY == 0)
    return Status(StatusCode::InvalidArgument,
                  "grouped GEMM (" + s.kernelName() +
                      "): the output's amax needs its [G] f32 buffer");
  if (s.quantizeOutput && (b.yCodes == 0 || b.yScaleInv == 0 ||
                           (s.quantizesPerExpert() && b.yScale == 0)))
    return Status(
        StatusCode::InvalidArgument,
        "grouped GEMM (" + s.kernelName() +
            "): the output's quantization needs its codes and "
            "scale buffers" +
            (s.quantizesPerExpert() ? " and each expert's scale" : ""));
  std::array<rt::TensorMapShape, 4> shapes = groupedGemmMaps(s, b.mTotal);
  const bool scaleMap = s.fp8() && !s.mxfp8();
  uint64_t bases[4] = {b.x, b.w, scaleMap ? b.sx : b.x,
                       groupedGemmTmaStore(s) ? b.y : b.x};
  GroupedGemmLaunch l;
  for (int i = 0; i < 4; ++i) {
    rt::Expected<rt::TensorMap> map = rt::encodeTensorMap(shapes[i], bases[i]);
    if (!map)
      return map.status();
    l.maps[i] = *map;
  }
  l.sw = b.sw;
  l.sx = s.mxfp8() || s.nvfp4() ? b.sx : 0;
  l.amaxX = s.nvfp4() ? b.amaxX : 0;
  l.amaxW = s.nvfp4() ? b.amaxW : 0;
  l.amaxY = s.outputAmax ? b.amaxY : 0;
  l.yCodes = s.quantizeOutput ? b.yCodes : 0;
  l.yScaleInv = s.quantizeOutput ? b.yScaleInv : 0;
  l.yEps = s.quantizeOutput ? static_cast<float>(s.quantizeOutput->eps) : 0.f;
  l.yScale = s.quantizesPerExpert() ? b.yScale : 0;
  {
    // The codes' map (or x's again where the kernel reads none).
    const bool codes = s.quantizeOutput && groupedGemmTmaCodes(s);
    rt::Expected<rt::TensorMap> map = rt::encodeTensorMap(
        codes ? groupedGemmCodesMap(s, b.mTotal) : shapes[0],
        codes ? b.yCodes : b.x);
    if (!map)
      return map.status();
    l.codesMap = *map;
  }
  l.splits = b.splits;
  l.bias = b.bias;
  l.y = b.y;
  l.mTotal = static_cast<int32_t>(b.mTotal);
  l.block = {kGroupedGemmThreads, 1, 1};
  const unsigned clusterSize = s.clusterSize();
  l.cluster = {clusterSize, 1, 1};
  l.sharedBytes = groupedGemmSharedBytes(s);
  rt::Expected<rt::Dim3> grid =
      kernel.persistentGrid(device, l.block, l.sharedBytes, l.cluster);
  if (!grid)
    return grid.status();
  l.grid = *grid;
  if (maxCtas > 0 && unsigned(maxCtas) < l.grid.x)
    l.grid.x = std::max(unsigned(maxCtas) / clusterSize, 1u) * clusterSize;
  return l;
}

rt::Status launchGroupedGemm(const rt::Kernel &kernel, GroupedGemmLaunch &l,
                             const rt::Stream &stream) {
  std::array<void *, 18> args = l.args();
  return kernel.launch(l.grid, l.block, l.sharedBytes, stream, args.data(),
                       l.cluster);
}

} // namespace te::cg
