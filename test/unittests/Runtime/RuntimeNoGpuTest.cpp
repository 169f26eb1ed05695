//===- RuntimeNoGpuTest.cpp - the runtime without a GPU driver ------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Every runtime entry point must return a clear error value on a machine
// without libcuda (CI, developer machines) instead of failing to load or
// aborting. The explicit-path loader checks the message on any machine.
//
//===----------------------------------------------------------------------===//

#include "CudaApi.h"
#include "NcclApi.h"
#include "Sha256.h"
#include "te/runtime/Collective.h"
#include "te/runtime/Device.h"

#include <gtest/gtest.h>

using namespace te::rt;

namespace {

TEST(RuntimeNoDriver, MissingDriverIsAClearError) {
  Expected<detail::DriverApi> api =
      detail::loadDriverApi({"/nonexistent/libcuda.so.1"});
  ASSERT_FALSE(api);
  EXPECT_EQ(api.status().code(), StatusCode::NoDriver);
  EXPECT_NE(api.status().message().find("no CUDA driver found"),
            std::string::npos)
      << api.status().message();
  EXPECT_NE(api.status().message().find("/nonexistent/libcuda.so.1"),
            std::string::npos);
}

TEST(RuntimeNoDriver, MissingNcclIsAClearError) {
  Expected<detail::NcclApi> api =
      detail::loadNcclApi({"/nonexistent/libnccl.so.2"});
  ASSERT_FALSE(api);
  EXPECT_EQ(api.status().code(), StatusCode::LibraryMissing);
  EXPECT_NE(api.status().message().find("collectives cannot run"),
            std::string::npos)
      << api.status().message();
  EXPECT_NE(api.status().message().find("TE_NCCL_LIBRARY"), std::string::npos);
  EXPECT_NE(api.status().message().find("/nonexistent/libnccl.so.2"),
            std::string::npos);
}

TEST(RuntimeNoDriver, NcclLoadsWithoutAGpu) {
  // Loading NCCL and asking its version needs no GPU: where the library is
  // installed, the loader finds every entry point it resolves.
  Expected<std::string> v = Communicator::ncclVersion();
  if (!v)
    GTEST_SKIP() << v.status().toString();
  EXPECT_EQ(v->rfind("2.", 0), 0u) << *v;
}

TEST(RuntimeNoDriver, EveryEntryPointReturnsTheError) {
  if (detail::driverApi())
    GTEST_SKIP() << "a CUDA driver is present on this machine";
  Expected<Device> d = Device::open();
  ASSERT_FALSE(d);
  EXPECT_EQ(d.status().code(), StatusCode::NoDriver);
  EXPECT_FALSE(Device::count());
  Expected<DeviceBuffer> b = DeviceBuffer::allocate(1024);
  ASSERT_FALSE(b);
  EXPECT_EQ(b.status().code(), StatusCode::NoDriver);
  Expected<Kernel> k = Kernel::load({'x'}, "f");
  ASSERT_FALSE(k);
  EXPECT_EQ(k.status().code(), StatusCode::NoDriver);
  EXPECT_FALSE(EventTimer::create());
  EXPECT_NE(d.status().toString().find("no driver: no CUDA driver found"),
            std::string::npos)
      << d.status().toString();
}

TEST(RuntimeStatus, ExpectedHoldsValueOrStatus) {
  Expected<int> v = 3;
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, 3);
  EXPECT_TRUE(v.status().isOk());
  Expected<int> e = Status(StatusCode::IoError, "disk full");
  ASSERT_FALSE(e);
  EXPECT_EQ(e.status().toString(), "I/O error: disk full");
}

TEST(RuntimeTensorView, SizesAndFit) {
  DeviceBuffer empty; // no allocation: 0 bytes
  Expected<TensorView> v = TensorView::of(empty, {0, 8}, DType::BF16);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->bytes(), 0);
  EXPECT_FALSE(TensorView::of(empty, {2, 8}, DType::BF16));
  EXPECT_FALSE(TensorView::of(empty, {-1, 8}, DType::BF16));
  TensorView fp4{0, {3, 5}, DType::E2M1x2};
  EXPECT_EQ(fp4.numElements(), 15);
  EXPECT_EQ(fp4.bytes(), 8); // two codes per byte, rounded up
  TensorView f32{0, {4, 4}, DType::F32};
  EXPECT_EQ(f32.bytes(), 64);
}

TEST(RuntimeSha256, KnownVectors) {
  // FIPS 180-4 examples.
  EXPECT_EQ(detail::Sha256::hex(detail::Sha256::digest("", 0)),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(detail::Sha256::hex(detail::Sha256::digest("abc", 3)),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  std::string two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(detail::Sha256::hex(detail::Sha256::digest(two.data(), two.size())),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // Incremental updates across block boundaries give the same digest.
  std::string million(1000000, 'a');
  detail::Sha256 s;
  for (size_t i = 0; i < million.size(); i += 777)
    s.update(million.data() + i, std::min<size_t>(777, million.size() - i));
  EXPECT_EQ(detail::Sha256::hex(s.finish()),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

} // namespace
