//===- NvrtcCompileTest.cpp - Device library under NVRTC --------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Generated kernels get the device library from the strings embedded in
// TeDeviceLibrary, so these tests check that path end to end without a GPU
// (NVRTC needs none): the embedded texts are exactly the .cuh files, each
// header compiles on its own, and a kernel using every function compiles to
// an sm_90a CUBIN whose PTX uses the hardware FP8/BF16 conversions and the
// IEEE-rounded operations. libnvrtc is loaded with dlopen, so the test
// binary starts anywhere and skips (with the reason) where NVRTC is absent.
//
//===----------------------------------------------------------------------===//

#include "te/device/EmbeddedHeaders.h"

#include "gtest/gtest.h"

#include <chrono>
#include <cstdio>
#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#ifndef TE_DEVICE_SOURCE_DIR
#error "TE_DEVICE_SOURCE_DIR must name device/te/device"
#endif

namespace {

//===----------------------------------------------------------------------===//
// NVRTC through dlopen (nvrtc.h is not needed: handles are pointers and
// results are ints, 0 meaning NVRTC_SUCCESS)
//===----------------------------------------------------------------------===//

struct Nvrtc {
  using Program = void *;
  int (*version)(int *, int *) = nullptr;
  int (*createProgram)(Program *, const char *, const char *, int,
                       const char *const *, const char *const *) = nullptr;
  int (*compileProgram)(Program, int, const char *const *) = nullptr;
  int (*getProgramLogSize)(Program, size_t *) = nullptr;
  int (*getProgramLog)(Program, char *) = nullptr;
  int (*getCUBINSize)(Program, size_t *) = nullptr;
  int (*getCUBIN)(Program, char *) = nullptr;
  int (*getPTXSize)(Program, size_t *) = nullptr;
  int (*getPTX)(Program, char *) = nullptr;
  int (*destroyProgram)(Program *) = nullptr;
  std::string error; ///< why loading failed; empty when usable
};

template <typename Fn> bool resolve(void *lib, const char *name, Fn &fn) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  return fn != nullptr;
}

const Nvrtc &nvrtc() {
  static const Nvrtc api = [] {
    Nvrtc n;
    void *lib = nullptr;
    for (const char *path :
         {"libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.13"})
      if ((lib = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
        break;
    if (!lib) {
      const char *why = dlerror();
      n.error = std::string("cannot load libnvrtc.so.13 (tried the loader "
                            "path and /usr/local/cuda/lib64): ") +
                (why ? why : "unknown error");
      return n;
    }
    bool ok = resolve(lib, "nvrtcVersion", n.version) &&
              resolve(lib, "nvrtcCreateProgram", n.createProgram) &&
              resolve(lib, "nvrtcCompileProgram", n.compileProgram) &&
              resolve(lib, "nvrtcGetProgramLogSize", n.getProgramLogSize) &&
              resolve(lib, "nvrtcGetProgramLog", n.getProgramLog) &&
              resolve(lib, "nvrtcGetCUBINSize", n.getCUBINSize) &&
              resolve(lib, "nvrtcGetCUBIN", n.getCUBIN) &&
              resolve(lib, "nvrtcGetPTXSize", n.getPTXSize) &&
              resolve(lib, "nvrtcGetPTX", n.getPTX) &&
              resolve(lib, "nvrtcDestroyProgram", n.destroyProgram);
    if (!ok)
      n.error = "libnvrtc.so.13 lacks an expected nvrtc* symbol";
    return n;
  }();
  return api;
}

#define SKIP_WITHOUT_NVRTC()                                                   \
  if (!nvrtc().error.empty())                                                  \
  GTEST_SKIP() << nvrtc().error

struct Compiled {
  bool ok = false;
  std::string log;
  std::vector<char> cubin;
  std::string ptx;
  double millis = 0;
};

/// Compiles `source` with the embedded device headers.
Compiled compile(const std::string &source, const std::string &name,
                 std::vector<std::string> options = {
                     "--gpu-architecture=sm_90a", "-std=c++17"}) {
  const Nvrtc &api = nvrtc();
  std::vector<const char *> headers, names;
  for (size_t i = 0; i < te::rt::numDeviceHeaders(); ++i) {
    headers.push_back(te::rt::deviceHeaders()[i].contents);
    names.push_back(te::rt::deviceHeaders()[i].name);
  }
  Compiled out;
  Nvrtc::Program prog = nullptr;
  if (api.createProgram(&prog, source.c_str(), name.c_str(),
                        static_cast<int>(headers.size()), headers.data(),
                        names.data()) != 0) {
    out.log = "nvrtcCreateProgram failed";
    return out;
  }
  std::vector<const char *> argv;
  for (const std::string &o : options)
    argv.push_back(o.c_str());
  auto start = std::chrono::steady_clock::now();
  int rc = api.compileProgram(prog, static_cast<int>(argv.size()), argv.data());
  out.millis = std::chrono::duration<double, std::milli>(
                   std::chrono::steady_clock::now() - start)
                   .count();
  size_t size = 0;
  if (api.getProgramLogSize(prog, &size) == 0 && size > 1) {
    out.log.resize(size);
    api.getProgramLog(prog, out.log.data());
    out.log.resize(size - 1);
  }
  if (rc == 0) {
    out.ok = true;
    if (api.getCUBINSize(prog, &size) == 0 && size > 0) {
      out.cubin.resize(size);
      if (api.getCUBIN(prog, out.cubin.data()) != 0)
        out.cubin.clear();
    }
    if (api.getPTXSize(prog, &size) == 0 && size > 1) {
      out.ptx.resize(size);
      if (api.getPTX(prog, out.ptx.data()) == 0)
        out.ptx.resize(size - 1);
      else
        out.ptx.clear();
    }
  }
  api.destroyProgram(&prog);
  return out;
}

bool isElf(const std::vector<char> &image) {
  return image.size() > 4 && image[0] == 0x7F && image[1] == 'E' &&
         image[2] == 'L' && image[3] == 'F';
}

std::string readFile(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

//===----------------------------------------------------------------------===//
// A kernel that calls every public function of the library
//===----------------------------------------------------------------------===//

const char *kWholeLibraryKernel = R"CUDA(
#include "te/device/Device.cuh"

using namespace te::dev;

extern "C" __global__ void everyFunction(const u16 *bf16In, const float *f32In,
                                         u8 *codes, float *floats, u32 *words,
                                         u64 seed, u64 offset, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  u8 *c = codes + 16 * i;
  float *f = floats + 8 * i;
  float x = bf16ToFloat(bf16In[i]);
  float y = f32In[i];
  float scale = computeScaleFromAmax(y, fp8MaxNorm(Fp8Format::E4M3), true,
                                     0.0f, maxFiniteF32());
  float s = mulRn(x, scale);
  c[0] = encodeE4M3(s);
  c[1] = encodeE5M2(s);
  c[2] = encodeFp8<Fp8Format::E4M3>(s) ^ encodeFp8(Fp8Format::E5M2, y);
  u16 pair = encodeE4M3x2(s, y) ^ encodeE5M2x2(y, s);
  c[3] = u8(pair) ^ encodeE4M3Sw(y) ^ encodeE5M2Sw(s);
  c[4] = encodeE2M1x2(s, y);
  u8 r = srRandomByte(seed, offset, i);
  c[5] = packE2M1(encodeE2M1(s), encodeE2M1Stochastic(y, r));
  u32 w = srRandomWord(seed, offset, 4 * i);
  float eight[8] = {x, y, s, scale, x, y, s, scale};
  u32 sr8 = encodeE2M1x8Stochastic(eight, 1.0f, w, w) ^ encodeE2M1x8(eight, y);
  c[6] = u8(sr8) ^ unpackE2M1Low(u8(sr8 >> 8)) ^ unpackE2M1High(u8(sr8));
  c[7] = encodeE8M0(y);
  c[8] = mxfp8BlockExponent(y, Fp8Format::E5M2);
  float sEnc = nvfp4GlobalEncodeScale(y);
  float sDec = nvfp4GlobalDecodeScale(sEnc);
  u8 sB = nvfp4BlockScale(x, sEnc);
  c[9] = sB;
  f[0] = nvfp4BlockEncodeFactor(sB, sDec) + nvfp4DequantFactor(sB, y);
  f[1] = decodeE4M3(c[0]) + decodeE5M2(c[1]) +
         decodeFp8<Fp8Format::E5M2>(sB) + decodeFp8(Fp8Format::E4M3, sB);
  f[2] = decodeE2M1(c[4]) + decodeE8M0(sB) + e8m0ReciprocalScale(sB);
  f[3] = fp8BlockScale(y, Fp8Format::E4M3, false, 0.0f, SourceType::BF16) +
         fp8BlockScaleInv(scale) + scaleInvFromScale(scale);
  f[4] = f16ToFloat(floatToF16(y)) + bf16ToFloat(floatToBF16(s)) +
         f16ToFloat(floatToF16Sw(x)) + bf16ToFloat(floatToBF16Sw(y));
  f[5] = divRn(x, y) + rcpRn(y) + fmaRn(x, y, s);
  f[6] = amaxAccumulate(x, y) + sourceTypeMaxFinite(SourceType::F16);
  f[7] = isNaN(y) || isInf(x) || isZero(s) ? infinity() : absBitwise(y);
  Philox4x32 block = srRandomBlock(seed, offset, i);
  Philox4x32 raw = philox4x32<7>(block, u32(seed), 3u);
  words[2 * i] = floatToBF16x2(x, y) ^ philoxWord(raw, i & 3);
  words[2 * i + 1] = floatToBits(bitsToFloat(block.w0)) ^ u32(signBit(x));
}
)CUDA";

//===----------------------------------------------------------------------===//
// Tests
//===----------------------------------------------------------------------===//

TEST(NvrtcDeviceLib, EmbeddedHeadersAreTheSourceFiles) {
  std::map<std::string, std::string> embedded;
  for (size_t i = 0; i < te::rt::numDeviceHeaders(); ++i)
    embedded[te::rt::deviceHeaders()[i].name] =
        te::rt::deviceHeaders()[i].contents;
  size_t onDisk = 0;
  for (const auto &entry :
       std::filesystem::recursive_directory_iterator(TE_DEVICE_SOURCE_DIR)) {
    if (entry.path().extension() != ".cuh")
      continue;
    ++onDisk;
    std::string name = "te/device/" + std::filesystem::relative(
                                          entry.path(), TE_DEVICE_SOURCE_DIR)
                                          .generic_string();
    auto it = embedded.find(name);
    ASSERT_NE(it, embedded.end()) << name << " is not embedded";
    std::string file = readFile(entry.path());
    size_t at = 0;
    while (at < file.size() && at < it->second.size() &&
           file[at] == it->second[at])
      ++at;
    EXPECT_TRUE(file == it->second)
        << name << " differs from its embedded copy at byte " << at << " of "
        << file.size() << " (embedded: " << it->second.size()
        << " bytes); the embedding step did not re-run";
  }
  EXPECT_EQ(onDisk, embedded.size());
  EXPECT_GE(onDisk, 9u);
  for (const char *required :
       {"te/device/Device.cuh", "te/device/Common.cuh", "te/device/Fp8.cuh",
        "te/device/Fp4.cuh", "te/device/E8M0.cuh", "te/device/Bf16.cuh",
        "te/device/Scales.cuh", "te/device/Philox.cuh"})
    EXPECT_EQ(embedded.count(required), 1u) << required;
}

TEST(NvrtcDeviceLib, EveryHeaderCompilesAlone) {
  SKIP_WITHOUT_NVRTC();
  for (size_t i = 0; i < te::rt::numDeviceHeaders(); ++i) {
    std::string name = te::rt::deviceHeaders()[i].name;
    // The GEMM kernels need CUTLASS/CuTe: GroupedGemmTest compiles them.
    if (name.rfind("te/device/gemm/", 0) == 0)
      continue;
    // Twice, to check the include guard too.
    std::string source = "#include \"" + name + "\"\n#include \"" + name +
                         "\"\nextern \"C\" __global__ void k() {}\n";
    Compiled c = compile(source, "alone.cu");
    EXPECT_TRUE(c.ok) << name << " does not compile on its own:\n" << c.log;
  }
}

TEST(NvrtcDeviceLib, WholeLibraryCompilesForSm90a) {
  SKIP_WITHOUT_NVRTC();
  int major = 0, minor = 0;
  nvrtc().version(&major, &minor);
  Compiled cold = compile(kWholeLibraryKernel, "everyFunction.cu");
  ASSERT_TRUE(cold.ok) << "NVRTC log:\n" << cold.log;
  ASSERT_TRUE(isElf(cold.cubin))
      << "no CUBIN (" << cold.cubin.size() << " bytes); log:\n"
      << cold.log;
  Compiled warm = compile(kWholeLibraryKernel, "everyFunction.cu");
  ASSERT_TRUE(warm.ok) << warm.log;
  std::printf("[   info   ] NVRTC %d.%d, whole device library for sm_90a: "
              "%.1f ms (first in process), %.1f ms (again), %zu-byte CUBIN\n",
              major, minor, cold.millis, warm.millis, cold.cubin.size());
  // What the library costs a typical small kernel: the same one-line cast
  // with and without including Device.cuh.
  const char *cast = R"CUDA(
extern "C" __global__ void cast(const unsigned short *x, unsigned char *q,
                                float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    q[i] = CAST;
}
)CUDA";
  std::string withLib = std::string("#include \"te/device/Device.cuh\"\n"
                                    "#define CAST te::dev::encodeE4M3("
                                    "te::dev::bf16ToFloat(x[i]) * s)\n") +
                        cast;
  std::string without =
      std::string("#define CAST (unsigned char)(x[i] * s)\n") + cast;
  Compiled a = compile(withLib, "castWithLib.cu");
  Compiled b = compile(without, "castWithout.cu");
  ASSERT_TRUE(a.ok && b.ok) << a.log << b.log;
  std::printf("[   info   ] small cast kernel: %.1f ms with Device.cuh, "
              "%.1f ms without any include\n",
              a.millis, b.millis);
  if (!cold.log.empty())
    std::printf("[   info   ] NVRTC log:\n%s\n", cold.log.c_str());
}

TEST(NvrtcDeviceLib, UsesHardwareConversionsAndIeeeOperations) {
  SKIP_WITHOUT_NVRTC();
  // PTX for the same architecture; fast math on, to check that the rounding
  // helpers keep their exact, non-flushing forms regardless.
  for (bool fastMath : {false, true}) {
    std::vector<std::string> options = {"--gpu-architecture=compute_90a",
                                        "-std=c++17"};
    if (fastMath)
      options.push_back("--use_fast_math");
    Compiled c = compile(kWholeLibraryKernel, "everyFunction.cu", options);
    ASSERT_TRUE(c.ok) << c.log;
    ASSERT_FALSE(c.ptx.empty());
    for (const char *needed :
         {"cvt.rn.satfinite.e4m3x2.f32", "cvt.rn.satfinite.e5m2x2.f32",
          "cvt.rn.bf16.f32", "cvt.rn.bf16x2.f32", "cvt.rn.f16.f32",
          "mul.rn.f32", "div.rn.f32", "rcp.rn.f32", "fma.rn.f32"})
      EXPECT_NE(c.ptx.find(needed), std::string::npos)
          << needed << " missing from the PTX (fast math " << fastMath << ")";
    for (const char *banned :
         {"div.approx", "rcp.approx", "div.full", "mul.rn.ftz", "div.rn.ftz",
          "rcp.rn.ftz", "fma.rn.ftz"})
      EXPECT_EQ(c.ptx.find(banned), std::string::npos)
          << banned << " in the PTX (fast math " << fastMath << ")";
  }
}

} // namespace
