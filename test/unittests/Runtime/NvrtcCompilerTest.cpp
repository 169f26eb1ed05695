//===- NvrtcCompilerTest.cpp - NVRTC to CUBIN without a GPU ---------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// NVRTC needs no GPU, so these run in CI: the device library compiles for
// sm_90a, a compile error carries NVRTC's log, and the real cache stores and
// reloads a CUBIN. Skipped only where libnvrtc.so.13 is missing.
//
//===----------------------------------------------------------------------===//

#include "te/runtime/NvrtcCompiler.h"
#include "te/runtime/KernelCache.h"

#include <gtest/gtest.h>

#include <cstdlib>

using namespace te::rt;

namespace {

const char *kScaleKernel = R"CUDA(
#include "te/device/Device.cuh"
extern "C" __global__ void scale_to_e4m3(const unsigned short *x,
                                         unsigned char *q, float scale,
                                         int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    q[i] = te::dev::encodeE4M3(te::dev::bf16ToFloat(x[i]) * scale);
}
)CUDA";

#define SKIP_WITHOUT_NVRTC()                                                   \
  if (Expected<std::string> v = nvrtcVersion(); !v)                            \
  GTEST_SKIP() << v.status().toString()

TEST(Nvrtc, CompilesTheDeviceLibraryForHopper) {
  SKIP_WITHOUT_NVRTC();
  Expected<CompiledKernel> k = compileCuda(kScaleKernel, "scale.cu", {});
  ASSERT_TRUE(k) << k.status().toString();
  ASSERT_GT(k->cubin.size(), 4u);
  EXPECT_EQ(std::string(k->cubin.data(), 4), "\x7f"
                                             "ELF");
  std::printf("[ info ] NVRTC %s: device-library kernel for sm_90a in %.1f ms, "
              "%zu-byte CUBIN\n",
              nvrtcVersion()->c_str(), k->compileMillis, k->cubin.size());
}

TEST(Nvrtc, CompileErrorsCarryTheLog) {
  SKIP_WITHOUT_NVRTC();
  Expected<CompiledKernel> k =
      compileCuda("extern \"C\" __global__ void f() { undeclared_name = 1; }",
                  "bad.cu", {});
  ASSERT_FALSE(k);
  EXPECT_EQ(k.status().code(), StatusCode::CompileError);
  EXPECT_NE(k.status().message().find("undeclared_name"), std::string::npos)
      << k.status().message();
  EXPECT_NE(k.status().message().find("bad.cu"), std::string::npos);
}

// The automatic precompiled header (the GEMM kernels use it): a second
// source with the same #include prefix reuses it; a source that does not
// compile still reports NVRTC's own error (the retry without the PCH fails
// the same way).
TEST(Nvrtc, AutomaticPrecompiledHeader) {
  SKIP_WITHOUT_NVRTC();
  CompileOptions opts;
  opts.flags = {"--pch"};
  std::string prefix = "#include \"te/device/Device.cuh\"\n";
  Expected<CompiledKernel> first = compileCuda(
      prefix + "extern \"C\" __global__ void f(float *x) { x[0] = 1; }",
      "pch_first.cu", opts);
  ASSERT_TRUE(first) << first.status().toString();
  Expected<CompiledKernel> second = compileCuda(
      prefix + "extern \"C\" __global__ void g(float *x) { x[0] = 2; }",
      "pch_second.cu", opts);
  ASSERT_TRUE(second) << second.status().toString();
  EXPECT_NE(second->log.find("using precompiled header"), std::string::npos)
      << second->log;
  Expected<CompiledKernel> bad = compileCuda(
      prefix + "extern \"C\" __global__ void h() { undeclared_name = 1; }",
      "pch_bad.cu", opts);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.status().code(), StatusCode::CompileError);
  EXPECT_NE(bad.status().message().find("undeclared_name"), std::string::npos);
}

TEST(Nvrtc, VirtualArchitectureIsRejected) {
  Expected<CompiledKernel> k =
      compileCuda(kScaleKernel, "x.cu", {"compute_90", {}});
  ASSERT_FALSE(k);
  EXPECT_EQ(k.status().code(), StatusCode::InvalidArgument);
}

TEST(Nvrtc, CacheStoresRealCubins) {
  SKIP_WITHOUT_NVRTC();
  char tmpl[] = "/tmp/tejit-nvrtc-cache-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  KernelCache cold(dir);
  auto a = cold.getOrCompile(kScaleKernel, {});
  ASSERT_TRUE(a) << a.status().toString();
  EXPECT_EQ(cold.stats().compiles, 1u);
  KernelCache warm(dir);
  auto b = warm.getOrCompile(kScaleKernel, {});
  ASSERT_TRUE(b);
  EXPECT_EQ(warm.stats().diskHits, 1u);
  EXPECT_EQ((*a)->cubin, (*b)->cubin);
}

} // namespace
