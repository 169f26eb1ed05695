//===- LaunchGpuTest.cpp - compile, load, launch on a GPU -----------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Needs a GPU: skipped cleanly without one. Compiles a kernel through the
// cache, launches it and checks every output element on the host.
//
//===----------------------------------------------------------------------===//

#include "te/runtime/Device.h"
#include "te/runtime/KernelCache.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace te::rt;

namespace {

const char *kAxpy = R"CUDA(
extern "C" __global__ void axpy(const float *x, float *y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = a * x[i] + y[i];
}
)CUDA";

class LaunchGpu : public ::testing::Test {
protected:
  void SetUp() override {
    Expected<Device> d = Device::open();
    if (!d)
      GTEST_SKIP() << d.status().toString();
    device_ = std::make_unique<Device>(*d);
  }
  std::unique_ptr<Device> device_;
};

TEST_F(LaunchGpu, AxpyMatchesTheHost) {
  KernelCache cache("");
  auto compiled = cache.getOrCompile(kAxpy, {device_->info().arch(), {}});
  ASSERT_TRUE(compiled) << compiled.status().toString();
  Expected<Kernel> k = Kernel::load((*compiled)->cubin, "axpy");
  ASSERT_TRUE(k) << k.status().toString();
  Expected<Stream> s = Stream::create(*device_);
  ASSERT_TRUE(s);

  const int n = 1 << 20;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = float(i % 1000) * 0.5f;
    y[i] = float(i % 7);
  }
  Expected<DeviceBuffer> dx = DeviceBuffer::allocate(n * 4);
  Expected<DeviceBuffer> dy = DeviceBuffer::allocate(n * 4);
  ASSERT_TRUE(dx && dy);
  ASSERT_TRUE(dx->copyFromHost(x.data(), n * 4, *s));
  ASSERT_TRUE(dy->copyFromHost(y.data(), n * 4, *s));
  uint64_t px = dx->devicePtr(), py = dy->devicePtr();
  float a = 3.0f;
  int nn = n;
  void *args[] = {&px, &py, &a, &nn};
  ASSERT_TRUE(k->launch({unsigned(n / 256)}, {256}, 0, *s, args));
  std::vector<float> out(n);
  ASSERT_TRUE(dy->copyToHost(out.data(), n * 4, *s));
  ASSERT_TRUE(s->synchronize());
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(out[i], a * x[i] + y[i]) << "element " << i;
}

// A programmatic dependent launch (overlapsPredecessor): the consumer may
// be scheduled while the producer still runs - the producer lets it start
// at once and then takes its time - and after te::dev::waitForPredecessor
// it sees every write of the producer. Eagerly and in a captured graph,
// many times over (a missing wait shows as stale values).
const char *kProducerConsumer = R"CUDA(
#include "te/device/LaunchOrder.cuh"
extern "C" __global__ void produce(float *y, int n, float v) {
  te::dev::releaseDependents();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float x = v;
  for (int r = 0; r < 2000; ++r) // a slow last wave
    x = x * 1.0000001f + 0.0f;
  if (i < n)
    y[i] = v + float(i % 251) + (x - x);
}
extern "C" __global__ void consume(const float *y, float *z, int n) {
  te::dev::waitForPredecessor();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    z[i] = 2.0f * y[i];
}
)CUDA";

TEST_F(LaunchGpu, AnOverlappingLaunchSeesItsPredecessorsWrites) {
  KernelCache cache("");
  auto compiled =
      cache.getOrCompile(kProducerConsumer, {device_->info().arch(), {}});
  ASSERT_TRUE(compiled) << compiled.status().toString();
  Expected<Kernel> produce = Kernel::load((*compiled)->cubin, "produce");
  Expected<Kernel> consume = Kernel::load((*compiled)->cubin, "consume");
  ASSERT_TRUE(produce && consume);
  Expected<Stream> s = Stream::create(*device_);
  ASSERT_TRUE(s);
  const int n = 1 << 22;
  Expected<DeviceBuffer> y = DeviceBuffer::allocate(n * 4);
  Expected<DeviceBuffer> z = DeviceBuffer::allocate(n * 4);
  ASSERT_TRUE(y && z);
  uint64_t py = y->devicePtr(), pz = z->devicePtr();
  int nn = n;
  float v = 0.0f;
  void *pargs[] = {&py, &nn, &v};
  void *cargs[] = {&py, &pz, &nn};
  auto step = [&]() -> Status {
    TE_RETURN_IF_ERROR(
        produce->launch({unsigned(n / 256)}, {256}, 0, *s, pargs));
    return consume->launch({unsigned(n / 256)}, {256}, 0, *s, cargs, {},
                           /*overlapsPredecessor=*/true);
  };
  auto expectStep = [&](float value) {
    std::vector<float> out(n);
    ASSERT_TRUE(z->copyToHost(out.data(), n * 4, *s));
    ASSERT_TRUE(s->synchronize());
    for (int i = 0; i < n; ++i)
      ASSERT_EQ(out[i], 2.0f * (value + float(i % 251))) << "element " << i;
  };
  for (int round = 1; round <= 20; ++round) {
    v = float(round * 1000);
    ASSERT_TRUE(step());
    expectStep(v);
  }
  // Captured: the graph keeps the programmatic edge; the value is read at
  // capture, so each replay writes the same.
  v = 7000.0f;
  Expected<Graph> g = Graph::capture(*s, step);
  ASSERT_TRUE(g) << g.status().toString();
  for (int round = 0; round < 5; ++round) {
    ASSERT_TRUE(z->fill(0, *s));
    ASSERT_TRUE(g->launch(*s));
    expectStep(7000.0f);
  }
}

TEST_F(LaunchGpu, MissingEntryIsAnError) {
  KernelCache cache("");
  auto compiled = cache.getOrCompile(kAxpy, {device_->info().arch(), {}});
  ASSERT_TRUE(compiled);
  Expected<Kernel> k = Kernel::load((*compiled)->cubin, "no_such_kernel");
  ASSERT_FALSE(k);
  EXPECT_EQ(k.status().code(), StatusCode::InvalidArgument);
}

TEST_F(LaunchGpu, CopyPastTheEndIsAnError) {
  Expected<Stream> s = Stream::create(*device_);
  Expected<DeviceBuffer> b = DeviceBuffer::allocate(16);
  ASSERT_TRUE(s && b);
  char host[32] = {};
  Status st = b->copyFromHost(host, 32, *s);
  EXPECT_EQ(st.code(), StatusCode::InvalidArgument);
}

} // namespace
