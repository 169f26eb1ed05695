//===- HopperGpuTest.h - Tests of the generated Hopper kernels --*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// What the GEMM engine's GPU tests share: a fixture that skips without a
// Hopper GPU and uploads host vectors, and exact E4M3 / E5M2 / bf16
// encodings of test values (small multiples of 1/2 up to 4, exact in each,
// so every partial sum is exact).
//
//===----------------------------------------------------------------------===//

#ifndef TE_TEST_UNITTESTS_CODEGEN_HOPPERGPUTEST_H
#define TE_TEST_UNITTESTS_CODEGEN_HOPPERGPUTEST_H

#include "te/codegen/GroupedGemmEmitter.h"
#include "te/formats/Scheme.h"
#include "te/runtime/Device.h"
#include "te/runtime/KernelCache.h"
#include "te/runtime/reference/Codecs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

namespace te::test {

class HopperGpuTest : public ::testing::Test {
protected:
  void SetUp() override {
    rt::Expected<rt::Device> d = rt::Device::open();
    if (!d)
      GTEST_SKIP() << d.status().toString();
    if (d->info().major != 9)
      GTEST_SKIP() << "the GEMM engine's kernels are for Hopper (sm_90a)";
    device_ = std::make_unique<rt::Device>(*d);
    rt::Expected<rt::Stream> s = rt::Stream::create(*device_);
    ASSERT_TRUE(s);
    stream_ = std::make_unique<rt::Stream>(std::move(*s));
  }

  template <typename T> rt::DeviceBuffer upload(const std::vector<T> &v) {
    rt::Expected<rt::DeviceBuffer> b =
        rt::DeviceBuffer::allocate(std::max<size_t>(16, v.size() * sizeof(T)));
    EXPECT_TRUE(b);
    EXPECT_TRUE(b->copyFromHost(v.data(), v.size() * sizeof(T), *stream_));
    return std::move(*b);
  }

  /// Compiles a GEMM engine kernel's `source` with the engine's options
  /// (CUTLASS/CuTe headers, sm_90a) and loads `entry`.
  static rt::Expected<rt::Kernel> loadEngineKernel(const std::string &source,
                                                   const std::string &entry) {
    rt::Expected<rt::CompileOptions> opts = cg::groupedGemmCompileOptions();
    if (!opts)
      return opts.status();
    rt::KernelCache cache;
    auto compiled = cache.getOrCompile(source, *opts);
    if (!compiled)
      return compiled.status();
    return rt::Kernel::load((*compiled)->cubin, entry);
  }

  static std::vector<uint8_t> e4m3Codes(const std::vector<float> &v) {
    return fp8Codes(v, rt::DType::E4M3);
  }
  /// E4M3 or E5M2 codes (`format`) of values exact in it.
  static std::vector<uint8_t> fp8Codes(const std::vector<float> &v,
                                       rt::DType format) {
    std::vector<uint8_t> c(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      c[i] = rt::ref::encodeFp8(fp8Format(format), v[i]);
    return c;
  }
  static rt::ref::Fp8Format fp8Format(rt::DType format) {
    return format == rt::DType::E5M2 ? rt::ref::Fp8Format::E5M2
                                     : rt::ref::Fp8Format::E4M3;
  }
  /// bf16 bit patterns of values exact in bf16.
  static std::vector<uint16_t> bf16Codes(const std::vector<float> &v) {
    std::vector<uint16_t> c(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      uint32_t b;
      std::memcpy(&b, &v[i], 4);
      c[i] = static_cast<uint16_t>(b >> 16);
    }
    return c;
  }

  std::unique_ptr<rt::Device> device_;
  std::unique_ptr<rt::Stream> stream_;
};

} // namespace te::test

#endif // TE_TEST_UNITTESTS_CODEGEN_HOPPERGPUTEST_H
