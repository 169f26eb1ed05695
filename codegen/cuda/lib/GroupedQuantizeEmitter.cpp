//===- GroupedQuantizeEmitter.cpp - per-expert columnwise quantize --------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#include "te/codegen/GroupedQuantizeEmitter.h"

#include <algorithm>
#include <sstream>

namespace te::cg {

using rt::Status;
using rt::StatusCode;

/// Per-tensor FP8 with each expert's scale: current scaling (from its
/// amax) or delayed scaling (its state's scale).
static bool isPerTensor(const rt::Scheme &s) {
  return s.kind == rt::SchemeKind::Fp8Current ||
         s.kind == rt::SchemeKind::Fp8Delayed;
}
/// FP8 codes in the grouped layout: block FP8, or per-tensor FP8.
static bool isFp8(const rt::Scheme &s) {
  return s.kind == rt::SchemeKind::Fp8Block || isPerTensor(s);
}
static bool isDelayed(const rt::Scheme &s) {
  return s.kind == rt::SchemeKind::Fp8Delayed;
}
static bool isMxfp8(const rt::Scheme &s) {
  return s.kind == rt::SchemeKind::Mxfp8;
}
static bool isNvfp4(const rt::Scheme &s) {
  return s.kind == rt::SchemeKind::Nvfp4;
}
static const char *formatName(const rt::Scheme &s) {
  return s.element == rt::DType::E5M2 ? "e5m2" : "e4m3";
}

std::string GroupedQuantizeSpec::kernelName() const {
  std::ostringstream os;
  os << "te_grouped_quantize_";
  if (isFp8(scheme))
    os << formatName(scheme)
       << (scheme.kind == rt::SchemeKind::Fp8Current   ? "_tensor"
           : scheme.kind == rt::SchemeKind::Fp8Delayed ? "_delayed"
                                                       : "")
       << (scheme.pow2 && !isDelayed(scheme) ? "_pow2" : "")
       << (fp8Values ? "_values" : "");
  else if (isMxfp8(scheme))
    os << "mxfp8_" << formatName(scheme);
  else if (isNvfp4(scheme))
    os << "nvfp4" << (scheme.rht ? "_rht" : "")
       << (scheme.stochasticRounding ? "_sr" : "");
  else
    os << "bf16";
  os << "_g" << groups << "_c" << cols << (biasGrad ? "_db" : "");
  return os.str();
}

bool GroupedQuantizeSpec::needsExpertAmax() const {
  return scheme.kind == rt::SchemeKind::Fp8Current || isNvfp4(scheme);
}

bool GroupedQuantizeSpec::delayed() const { return isDelayed(scheme); }

Status checkGroupedQuantize(const GroupedQuantizeSpec &s) {
  auto bad = [&](const std::string &why) {
    return Status(StatusCode::InvalidArgument,
                  "grouped quantize (" + s.kernelName() + "): " + why);
  };
  bool blockFp8 = s.scheme.kind == rt::SchemeKind::Fp8Block &&
                  s.scheme.tileRows == 1 && s.scheme.tileCols == 128 &&
                  (s.scheme.element == rt::DType::E4M3 ||
                   s.scheme.element == rt::DType::E5M2);
  bool identity = s.scheme.kind == rt::SchemeKind::Identity &&
                  s.scheme.element == rt::DType::BF16;
  bool mxfp8 = isMxfp8(s.scheme) && (s.scheme.element == rt::DType::E4M3 ||
                                     s.scheme.element == rt::DType::E5M2);
  bool current =
      isPerTensor(s.scheme) && (s.scheme.element == rt::DType::E4M3 ||
                                s.scheme.element == rt::DType::E5M2);
  bool nvfp4 = isNvfp4(s.scheme) && !s.scheme.block2d;
  if (!blockFp8 && !identity && !mxfp8 && !current && !nvfp4)
    return bad("the scheme must be block FP8 1x128, per-tensor FP8 (current "
               "or delayed scaling), MXFP8, NVFP4 with 1x16 blocks or "
               "identity of bf16");
  if (s.fp8Values && !blockFp8 && !current)
    return bad("only FP8 codes are laid out as their values (MXFP8 and NVFP4 "
               "always are)");
  if (s.cols < 8 || s.cols % 8 != 0)
    return bad("C must be a positive multiple of 8");
  if (nvfp4 && s.cols % 16 != 0)
    return bad("C must be a multiple of 16 (NVFP4 quantizes each expert as "
               "a tensor of whole 16-element blocks in both dimensions)");
  if (s.groups < 1 || s.groups > 4096)
    return bad("the number of experts must be 1..4096");
  return Status::ok();
}

EmittedGroupedQuantize emitGroupedQuantize(const GroupedQuantizeSpec &s) {
  EmittedGroupedQuantize e;
  std::string name = s.kernelName();
  e.mainEntry = name;
  e.biasEntry = s.biasGrad ? name + "_bias" : "";
  // One byte a code, or two a bf16 value.
  bool fp8 = isFp8(s.scheme) && !s.fp8Values;
  std::ostringstream os;
  os << "#include \"te/device/GroupedQuantizeKernel.cuh\"\n\n"
     << "extern \"C\" __global__ void __launch_bounds__("
     << kGroupedQuantizeThreads << ")\n"
     << name << "(const unsigned short *in, long long mTotal, long long cols,\n"
     << "    const long long *splits, long long capacity, void *out,\n"
     << "    float *scaleInv, float eps, float *partial,\n"
     << "    const float *expertAmax, unsigned long long seed,\n"
     << "    unsigned long long offset, float *amaxRecord) {\n"
     // The bias gradient's launch overlaps this kernel's last wave.
     << (s.biasGrad ? "  te::dev::releaseDependents();\n" : "")
     << "  te::dev::groupedColumnQuantize<te::dev::GroupedColumns::"
     << (isPerTensor(s.scheme) ? (s.fp8Values ? "Fp8TensorValues" : "Fp8Tensor")
         : isFp8(s.scheme)     ? (s.fp8Values ? "Fp8BlockValues" : "Fp8Block")
         : isMxfp8(s.scheme)   ? "Mxfp8Values"
         : isNvfp4(s.scheme)   ? "Nvfp4Values"
                               : "Bf16")
     << ", te::dev::Fp8Format::"
     << (s.scheme.element == rt::DType::E5M2 ? "E5M2" : "E4M3") << ", "
     << (isFp8(s.scheme) && s.scheme.pow2 && !s.delayed() ? "true" : "false")
     << ", " << (isNvfp4(s.scheme) && s.scheme.rht ? "true" : "false") << ", "
     << (isNvfp4(s.scheme) && s.scheme.stochasticRounding ? "true" : "false")
     << ", " << (s.delayed() ? "true" : "false")
     << ">(\n      in, mTotal, cols, splits, " << s.groups
     << ", capacity, out, scaleInv, eps, partial,\n"
        "      expertAmax, seed, offset, amaxRecord);\n"
     << "}\n"
     << "static_assert(te::dev::GroupedQuantizeSmem<"
     << (fp8 ? "true" : "false")
     << ">::kBytes == " << groupedQuantizeSharedBytes(s)
     << ", \"the launch's shared memory is the kernel's\");\n";
  if (s.biasGrad)
    os << "\nextern \"C\" __global__ void " << e.biasEntry
       << "(const float *partial, long long mTotal, long long cols,\n"
       << "    const long long *splits, float *db) {\n"
       << "  te::dev::groupedBiasGrad(partial, mTotal, cols, splits, "
       << s.groups << ", db);\n"
       << "}\n";
  e.source = os.str();
  return e;
}

unsigned groupedQuantizeSharedBytes(const GroupedQuantizeSpec &s) {
  // GroupedQuantizeSmem<Fp8>::kBytes: the tile and the padded output rows.
  unsigned outRow = 128u * (isFp8(s.scheme) && !s.fp8Values ? 1u : 2u) + 4u;
  return 128u * 128u * 2u + 128u * outRow;
}

rt::Dim3 groupedBiasGrid(int64_t groups, int64_t cols) {
  return rt::Dim3{
      static_cast<unsigned>((groups * cols + kGroupedBiasThreads - 1) /
                            kGroupedBiasThreads),
      1, 1};
}

rt::Dim3 groupedQuantizeGrid(int64_t capacity, int64_t cols) {
  return rt::Dim3{static_cast<unsigned>(capacity / 128),
                  static_cast<unsigned>((cols + 127) / 128), 1};
}

bool GroupedRowsQuantizeSpec::nvfp4() const {
  return scheme.kind == rt::SchemeKind::Nvfp4;
}

bool GroupedRowsQuantizeSpec::delayed() const { return isDelayed(scheme); }

bool GroupedRowsQuantizeSpec::values() const {
  return (nvfp4() && !nvfp4Codes) || fp8Values;
}

std::string GroupedRowsQuantizeSpec::kernelName() const {
  std::ostringstream os;
  os << "te_grouped_rows_";
  if (nvfp4())
    os << "nvfp4" << (scheme.block2d ? "_2d" : "")
       << (scheme.stochasticRounding ? "_sr" : "");
  else if (delayed())
    os << formatName(scheme) << "_delayed";
  else
    os << formatName(scheme) << (scheme.pow2 ? "_pow2" : "");
  os << "_g" << groups << "_c" << cols << (weightStack ? "_weights" : "_tokens")
     << (columnwise ? "_t" : "") << (nvfp4Codes ? "_codes" : "")
     << (fp8Values ? "_values" : "");
  return os.str();
}

Status checkGroupedRowsQuantize(const GroupedRowsQuantizeSpec &s) {
  auto bad = [&](const std::string &why) {
    return Status(StatusCode::InvalidArgument, "grouped per-tensor quantize (" +
                                                   s.kernelName() +
                                                   "): " + why);
  };
  if (s.nvfp4()) {
    if (s.columnwise && s.scheme.block2d)
      return bad("16x16 NVFP4 blocks give the same values in both "
                 "directions: quantize the stack rowwise");
    if (s.columnwise && (s.scheme.stochasticRounding || s.scheme.rht))
      return bad("the stack's 16x1 NVFP4 column blocks are rounded to "
                 "nearest, without the random Hadamard transform");
    if (s.scheme.block2d && !s.weightStack)
      return bad("16x16 NVFP4 blocks need the stack (experts of whole "
                 "16-row bands)");
    if (s.cols < 16 || s.cols % 16 != 0)
      return bad("C must be a positive multiple of 16 (NVFP4 blocks)");
    if (s.nvfp4Codes && s.columnwise)
      return bad("NVFP4 codes are written rowwise (the NVFP4 GEMM reads "
                 "both operands rowwise)");
  } else if (s.nvfp4Codes) {
    return bad("codes instead of values are NVFP4's");
  } else if (!isPerTensor(s.scheme) || (s.scheme.element != rt::DType::E4M3 &&
                                        s.scheme.element != rt::DType::E5M2)) {
    return bad("the scheme must be per-tensor FP8, current or delayed "
               "scaling (e4m3 or e5m2), or NVFP4");
  }
  if (s.cols < 8 || s.cols % 8 != 0)
    return bad("C must be a positive multiple of 8");
  if (s.groups < 1 || s.groups > 4096)
    return bad("the number of experts must be 1..4096");
  if (s.columnwise && !s.weightStack)
    return bad("only the stacked weight has a columnwise copy here");
  if (s.fp8Values && (s.nvfp4() || s.columnwise))
    return bad("FP8 values are written rowwise (per-tensor values are the "
               "same in both directions); NVFP4 writes values anyway");
  return Status::ok();
}

/// The amax pass's entry of `groups` experts (it depends on nothing else).
static std::string expertAmaxEntry(int64_t groups) {
  return "te_grouped_amax_g" + std::to_string(groups);
}

static void writeExpertAmax(std::ostream &os, int64_t groups) {
  os << "#include \"te/device/GroupedTensorQuantize.cuh\"\n\n"
     << "extern \"C\" __global__ void __launch_bounds__(" << kGroupedRowsThreads
     << ")\n"
     << expertAmaxEntry(groups)
     << "(const unsigned short *in, long long rows, long long cols,\n"
     << "    const long long *splits, long long rowsPerExpert, float *amax) "
        "{\n"
     << "  te::dev::groupedRowsAmax<" << groups
     << ">(in, rows, cols, splits, rowsPerExpert, amax);\n"
     << "}\n";
}

EmittedGroupedAmax emitGroupedExpertAmax(int64_t groups) {
  std::ostringstream os;
  writeExpertAmax(os, groups);
  return {os.str(), expertAmaxEntry(groups)};
}

EmittedGroupedAmax emitGatherScales(int64_t groups) {
  std::string entry = "te_gather_scales_g" + std::to_string(groups);
  std::ostringstream os;
  os << "#include \"te/device/DelayedScaling.cuh\"\n\n"
     << "extern \"C\" __global__ void " << entry
     << "(const __grid_constant__ te::dev::ScalingTable<" << groups
     << "> t, float *out) {\n"
     << "  for (int g = threadIdx.x; g < " << groups << "; g += blockDim.x)\n"
     << "    out[g] = *reinterpret_cast<const float *>(t.w[g]);\n"
     << "}\n";
  return {os.str(), entry};
}

unsigned groupedGatherThreads(int64_t groups) {
  return static_cast<unsigned>(
      std::min<int64_t>((groups + 31) / 32 * 32, 1024));
}

EmittedGroupedAmax emitGroupedRhtAmax(int64_t groups) {
  std::string entry = "te_grouped_rht_amax_g" + std::to_string(groups);
  std::ostringstream os;
  os << "#include \"te/device/GroupedQuantizeKernel.cuh\"\n\n"
     << "extern \"C\" __global__ void __launch_bounds__("
     << kGroupedQuantizeThreads << ")\n"
     << entry
     << "(const unsigned short *in, long long mTotal, long long cols,\n"
     << "    const long long *splits, float *amax) {\n"
     << "  te::dev::groupedRhtColumnAmax(in, mTotal, cols, splits, " << groups
     << ", amax);\n"
     << "}\n";
  return {os.str(), entry};
}

EmittedGroupedRowsQuantize
emitGroupedRowsQuantize(const GroupedRowsQuantizeSpec &s) {
  EmittedGroupedRowsQuantize e;
  e.amaxEntry = expertAmaxEntry(s.groups);
  e.quantizeEntry = s.kernelName();
  std::ostringstream os;
  writeExpertAmax(os, s.groups);
  os << "\nextern \"C\" __global__ void __launch_bounds__("
     << kGroupedRowsThreads << ")\n"
     << e.quantizeEntry
     << "(const unsigned short *in, long long rows, long long cols,\n"
     << "    const long long *splits, long long rowsPerExpert,\n"
     << "    const float *amax, float eps, unsigned char *codes,\n"
     << "    float *scaleInv, float *blockScales, long long blockStride,\n"
     << "    unsigned long long seed, unsigned long long offset,\n"
     << "    float *amaxRecord) {\n";
  const char *format = s.scheme.element == rt::DType::E5M2 ? "E5M2" : "E4M3";
  // Delayed scaling casts with given scales: pow2 shapes only its update.
  const char *pow2 = s.scheme.pow2 && !s.delayed() ? "true" : "false";
  if (s.nvfp4())
    os << "  te::dev::groupedRowsNvfp4Values<" << s.groups
       << ", te::dev::Nvfp4Blocks::"
       << (s.scheme.block2d ? "Tiles"
           : s.columnwise   ? "Columns"
                            : "Rows")
       << ", " << (s.scheme.stochasticRounding ? "true" : "false") << ", "
       << (s.nvfp4Codes ? "true" : "false")
       << ">(\n      in, rows, cols, splits, rowsPerExpert, amax, codes, seed, "
          "offset,\n      reinterpret_cast<unsigned char *>(blockScales));\n";
  else if (s.columnwise)
    os << "  te::dev::groupedStackQuantizeTransposed<te::dev::Fp8Format::"
       << format << ", " << pow2 << ", " << (s.delayed() ? "true" : "false")
       << ">(\n      in, rows, cols, rowsPerExpert, amax, eps, codes, "
          "scaleInv, blockScales,\n      blockStride, amaxRecord);\n";
  else
    os << "  te::dev::groupedRowsQuantizeFp8<te::dev::Fp8Format::" << format
       << ", " << pow2 << ", te::dev::GroupedScaleLayout::"
       << (s.weightStack ? "WeightTiles" : "TokenBlocks") << ", " << s.groups
       << ", " << (s.delayed() ? "true" : "false") << ", "
       << (s.fp8Values ? "true" : "false")
       << ">(\n      in, rows, cols, splits, rowsPerExpert, amax, eps, codes, "
          "scaleInv,\n      blockScales, blockStride, amaxRecord);\n";
  os << "}\n";
  e.source = os.str();
  return e;
}

rt::Dim3 groupedRowsGrid(int64_t rows) {
  // A warp per run of rows: up to 8 CTAs of 8 warps per SM of an H100,
  // never more warps than rows.
  int64_t ctas = (rows + 7) / 8;
  return rt::Dim3{static_cast<unsigned>(
                      std::max<int64_t>(1, std::min<int64_t>(ctas, 132 * 8))),
                  1, 1};
}

rt::Dim3 groupedRowsCastGrid(const GroupedRowsQuantizeSpec &s, int64_t rows) {
  if (s.nvfp4() && (s.scheme.block2d || s.columnwise)) // a warp per band
    return groupedRowsGrid(rows / 16);
  if (!s.columnwise)
    return groupedRowsGrid(rows);
  return rt::Dim3{static_cast<unsigned>(rows / 128),
                  static_cast<unsigned>((s.cols + 127) / 128), 1};
}

int64_t groupedRowsBlockStride(const GroupedRowsQuantizeSpec &s, int64_t rows) {
  int64_t kBlocks = (s.cols + 127) / 128;
  if (s.columnwise)
    return (rows / 128 + 3) / 4 * 4;
  return s.weightStack ? (kBlocks + 3) / 4 * 4 : (rows + 3) / 4 * 4;
}

int64_t groupedRowsBlockScales(const GroupedRowsQuantizeSpec &s, int64_t rows) {
  if (s.nvfp4()) // E4M3 bytes [rows, C/16] as whole floats, or none
    return s.nvfp4Codes ? (rows * (s.cols / 16) + 3) / 4 : 0;
  if (s.fp8Values)
    return 0;
  int64_t stride = groupedRowsBlockStride(s, rows);
  if (!s.weightStack || s.columnwise)
    return (s.cols + 127) / 128 * stride;
  int64_t tiles = (rows / s.groups + 127) / 128;
  return s.groups * tiles * stride;
}

rt::Status launchGroupedRowsQuantize(const GroupedRowsQuantizeSpec &s,
                                     const rt::Kernel &amaxPass,
                                     const rt::Kernel &cast,
                                     const GroupedRowsBuffers &b,
                                     const rt::Stream &stream) {
  uint64_t in = b.in, splits = b.splits, amax = b.amax, codes = b.codes,
           scaleInv = b.scaleInv, blockScales = b.blockScales;
  long long rows = b.rows, cols = s.cols,
            perExpert = s.weightStack ? b.rows / s.groups : 0,
            stride = groupedRowsBlockStride(s, b.rows);
  float eps = static_cast<float>(s.scheme.eps);
  unsigned long long seed = b.seed, offset = b.offset;
  uint64_t record = b.amaxRecord;
  void *amaxArgs[] = {&in, &rows, &cols, &splits, &perExpert, &amax};
  if (!s.delayed()) // delayed scaling casts with the given scales
    if (rt::Status st =
            amaxPass.launch(groupedRowsGrid(b.rows),
                            {kGroupedRowsThreads, 1, 1}, 0, stream, amaxArgs);
        !st.isOk())
      return st;
  void *castArgs[] = {&in,     &rows, &cols,   &splits,   &perExpert,
                      &amax,   &eps,  &codes,  &scaleInv, &blockScales,
                      &stride, &seed, &offset, &record};
  return cast.launch(groupedRowsCastGrid(s, b.rows),
                     {kGroupedRowsThreads, 1, 1}, 0, stream, castArgs);
}

} // namespace te::cg
