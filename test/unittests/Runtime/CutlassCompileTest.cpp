//===- CutlassCompileTest.cpp - CUTLASS/CuTe through NVRTC ----------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The ground the generated GEMMs stand on, checked without a GPU: the
// headers scripts/install-deps.sh unpacks are found, NVRTC compiles a
// CuTe kernel that uses Hopper's warpgroup MMA atom (the layout algebra,
// the GMMA traits, a tiled MMA partitioning its accumulator) into an sm_90a
// CUBIN, and a missing header directory is a clear error. Prints the cold
// compile time (docs/CodeGeneration.md records it).
//
//===----------------------------------------------------------------------===//

#include "te/runtime/Cutlass.h"
#include "te/runtime/NvrtcCompiler.h"

#include <gtest/gtest.h>

using namespace te::rt;

namespace {

const char *kProbe = R"CUDA(
#include <cute/tensor.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
using namespace cute;
// One warpgroup's 64x64 FP32 accumulator of a BF16 x BF16 GMMA (both
// operands K-major in shared memory), partitioned, cleared and stored.
extern "C" __global__ void gmma_probe(float *C) {
  auto mma = make_tiled_mma(
      SM90_64x64x16_F32BF16BF16_SS<GMMA::Major::K, GMMA::Major::K>{});
  Tensor gC = make_tensor(make_gmem_ptr(C), make_shape(Int<64>{}, Int<64>{}),
                          make_stride(Int<64>{}, Int<1>{}));
  auto thread = mma.get_thread_slice(threadIdx.x);
  Tensor tCgC = thread.partition_C(gC);
  Tensor acc = thread.make_fragment_C(tCgC);
  clear(acc);
  copy(acc, tCgC);
}
)CUDA";

bool isElf(const std::vector<char> &b) {
  return b.size() > 4 && b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' &&
         b[3] == 'F';
}

} // namespace

TEST(Cutlass, FindsTheHeaders) {
  Expected<std::string> dir = cutlassIncludeDir();
  ASSERT_TRUE(dir) << dir.status().message();
  EXPECT_FALSE(dir->empty());
}

TEST(Cutlass, MissingHeadersSayWhereTheyWereLookedForAndTheFix) {
  Expected<std::string> dir =
      detail::findCutlass("/nonexistent/cutlass", "/nonexistent/built");
  ASSERT_FALSE(dir);
  EXPECT_EQ(dir.status().code(), StatusCode::LibraryMissing);
  // status() returns a copy: keep the message, not a reference into it.
  const std::string m = dir.status().message();
  EXPECT_NE(m.find("$TE_CUTLASS_DIR=/nonexistent/cutlass"), std::string::npos)
      << m;
  EXPECT_NE(m.find("/nonexistent/built"), std::string::npos) << m;
  EXPECT_NE(m.find("scripts/install-deps.sh"), std::string::npos) << m;
}

TEST(Cutlass, TheEnvironmentOverridesTheBuildDefault) {
  Expected<std::string> found = cutlassIncludeDir();
  ASSERT_TRUE(found) << found.status().message();
  Expected<std::string> dir =
      detail::findCutlass(found->c_str(), "/nonexistent/built");
  ASSERT_TRUE(dir) << dir.status().message();
  EXPECT_EQ(*dir, *found);
}

TEST(Cutlass, NvrtcCompilesACuteGmmaKernelForSm90a) {
  if (!nvrtcVersion())
    GTEST_SKIP() << "NVRTC not available: "
                 << nvrtcVersion().status().message();
  Expected<std::vector<std::string>> flags = cutlassCompileFlags();
  ASSERT_TRUE(flags) << flags.status().message();
  CompileOptions opts;
  opts.arch = "sm_90a";
  opts.flags = *flags;
  Expected<CompiledKernel> k = compileCuda(
      std::string(cutlassPrelude()) + kProbe, "gmma_probe.cu", opts);
  ASSERT_TRUE(k) << k.status().message();
  EXPECT_TRUE(isElf(k->cubin));
  std::printf("[   info   ] NVRTC %s: CuTe GMMA probe for sm_90a in %.0f ms "
              "(cold), %zu-byte CUBIN\n",
              nvrtcVersion()->c_str(), k->compileMillis, k->cubin.size());
}
