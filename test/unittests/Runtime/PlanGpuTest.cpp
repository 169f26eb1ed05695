//===- PlanGpuTest.cpp - plans on a GPU, CUDA-graph capture and replay ----===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// A plan whose kernel reads the learning rate from device memory is captured
// once into a CUDA graph and replayed after the inputs change: the replay
// must use the new values (nothing is baked into the graph but addresses).
//
//===----------------------------------------------------------------------===//

#include "te/runtime/Plan.h"
#include "te/runtime/reference/Codecs.h"

#include <gtest/gtest.h>

using namespace te::rt;
namespace ref = te::rt::ref;

namespace {

const char *kScale = R"CUDA(
extern "C" __global__ void scale(const float *x, const float *lr, float *y,
                                 int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = lr[0] * x[i] + y[i];
}
)CUDA";

TEST(PlanGpu, CaptureAndReplayWithChangedInputs) {
  Expected<Device> dev = Device::open();
  if (!dev)
    GTEST_SKIP() << dev.status().toString();
  const int n = 4096, m = 64, k = 128, nn = 32;
  Plan p;
  p.buffers = {{"x", n * 4, true},      {"lr", 4, true},
               {"y", n * 4, true},      {"a", m * k * 2, true},
               {"b", nn * k * 2, true}, {"d", m * nn * 4, true}};
  KernelSpec ks;
  ks.name = ks.entry = "scale";
  ks.source = kScale;
  ks.options.arch = dev->info().arch();
  ks.grid = {n / 256};
  ks.block = {256};
  ks.args = {ArgDesc::ptr(0), ArgDesc::ptr(1), ArgDesc::ptr(2),
             ArgDesc::i32(n)};
  p.kernels.push_back(ks);
  GemmCall g;
  g.problem.m = m, g.problem.n = nn, g.problem.k = k;
  g.problem.outType = DType::F32;
  g.a = {3, 0}, g.b = {4, 0}, g.out = {5, 0};
  p.gemms.push_back(g);
  p.steps = {{Step::Kind::Fill, 2, 0},
             {Step::Kind::Launch, 0, 0},
             {Step::Kind::Gemm, 0, 0}};
  // The serialised plan is what runs.
  Expected<Plan> loaded = Plan::deserialize(p.serialize());
  ASSERT_TRUE(loaded);

  KernelCache cache("");
  Expected<PlanExecutor> ex = PlanExecutor::create(*loaded, *dev, cache);
  ASSERT_TRUE(ex) << ex.status().toString();
  Expected<Stream> s = Stream::create(*dev);
  ASSERT_TRUE(s);

  std::vector<float> x(n);
  for (int i = 0; i < n; ++i)
    x[i] = float(i % 97) - 48.0f;
  std::vector<uint16_t> a(m * k), b(nn * k);
  for (int i = 0; i < m * k; ++i)
    a[i] = ref::floatToBF16(float(i % 5) - 2.0f);
  for (int i = 0; i < nn * k; ++i)
    b[i] = ref::floatToBF16(float(i % 3) - 1.0f);
  std::vector<DeviceBuffer> bufs;
  for (const BufferDecl &d : p.buffers) {
    Expected<DeviceBuffer> db = DeviceBuffer::allocate(d.bytes);
    ASSERT_TRUE(db);
    bufs.push_back(std::move(*db));
  }
  for (uint32_t i = 0; i < bufs.size(); ++i)
    ASSERT_TRUE(ex->bind(i, bufs[i].devicePtr(), bufs[i].size()));
  ASSERT_TRUE(bufs[0].copyFromHost(x.data(), n * 4, *s));
  ASSERT_TRUE(bufs[3].copyFromHost(a.data(), a.size() * 2, *s));
  ASSERT_TRUE(bufs[4].copyFromHost(b.data(), b.size() * 2, *s));

  auto check = [&](float lr) {
    std::vector<float> y(n), d(m * nn);
    ASSERT_TRUE(bufs[2].copyToHost(y.data(), n * 4, *s));
    ASSERT_TRUE(bufs[5].copyToHost(d.data(), d.size() * 4, *s));
    ASSERT_TRUE(s->synchronize());
    for (int i = 0; i < n; ++i)
      ASSERT_EQ(y[i], lr * x[i]) << "lr " << lr << " element " << i;
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < nn; ++j) {
        float acc = 0;
        for (int kk = 0; kk < k; ++kk)
          acc +=
              ref::bf16ToFloat(a[i * k + kk]) * ref::bf16ToFloat(b[j * k + kk]);
        ASSERT_EQ(d[i * nn + j], acc) << i << "," << j;
      }
  };

  float lr = 0.5f;
  ASSERT_TRUE(bufs[1].copyFromHost(&lr, 4, *s));
  ASSERT_TRUE(ex->run(*s));
  check(0.5f);
  // The same steps in two ranges (te-run --bench times launches this way).
  lr = 3.0f;
  ASSERT_TRUE(bufs[1].copyFromHost(&lr, 4, *s));
  ASSERT_TRUE(ex->runSteps(*s, 0, 1));
  ASSERT_TRUE(ex->runSteps(*s, 1, 3));
  check(3.0f);
  EXPECT_EQ(ex->runSteps(*s, 2, 4).code(), StatusCode::InvalidArgument);
  lr = 0.5f;
  ASSERT_TRUE(bufs[1].copyFromHost(&lr, 4, *s));

  ASSERT_TRUE(ex->capture(*s));
  for (float next : {2.0f, -0.25f}) {
    lr = next;
    ASSERT_TRUE(bufs[1].copyFromHost(&lr, 4, *s));
    // New GEMM inputs too: the graph reads whatever is in the buffers.
    for (auto &v : a)
      v = ref::floatToBF16(ref::bf16ToFloat(v) * -1.0f);
    ASSERT_TRUE(bufs[3].copyFromHost(a.data(), a.size() * 2, *s));
    ASSERT_TRUE(s->synchronize());
    ASSERT_TRUE(ex->replay(*s));
    check(next);
  }
}

TEST(PlanGpu, UnboundExternalBufferIsAnError) {
  Expected<Device> dev = Device::open();
  if (!dev)
    GTEST_SKIP() << dev.status().toString();
  Plan p;
  p.buffers = {{"x", 16, true}};
  p.steps = {{Step::Kind::Fill, 0, 0}};
  KernelCache cache("");
  Expected<PlanExecutor> ex = PlanExecutor::create(p, *dev, cache);
  ASSERT_TRUE(ex);
  Expected<Stream> s = Stream::create(*dev);
  Status st = ex->run(*s);
  EXPECT_EQ(st.code(), StatusCode::InvalidArgument);
  EXPECT_NE(st.message().find("'x' is not bound"), std::string::npos);
}

const char *kGather = R"CUDA(
struct Words { unsigned long long w[9]; };
// Three (source, destination, count) triples in one by-value table: each
// CTA copies one source into its destination, scaled by its index + 1.
extern "C" __global__ void gather(const __grid_constant__ Words t) {
  const float *src = reinterpret_cast<const float *>(t.w[3 * blockIdx.x]);
  float *dst = reinterpret_cast<float *>(t.w[3 * blockIdx.x + 1]);
  long long n = (long long)t.w[3 * blockIdx.x + 2];
  for (long long i = threadIdx.x; i < n; i += blockDim.x)
    dst[i] = src[i] * float(blockIdx.x + 1);
}
)CUDA";

TEST(PlanGpu, TableArgumentsCarryEveryTensorsBuffers) {
  Expected<Device> dev = Device::open();
  if (!dev)
    GTEST_SKIP() << dev.status().toString();
  const int64_t sizes[3] = {100, 1000, 7};
  Plan p;
  std::vector<ArgDesc> items;
  for (int t = 0; t < 3; ++t) {
    uint64_t bytes = uint64_t(sizes[t] * 4);
    p.buffers.push_back({"src" + std::to_string(t), bytes, true});
    p.buffers.push_back({"dst" + std::to_string(t), bytes, true});
    items.push_back(ArgDesc::ptr(2 * t));
    items.push_back(ArgDesc::ptr(2 * t + 1));
    items.push_back(ArgDesc::i64(sizes[t]));
  }
  KernelSpec ks;
  ks.name = ks.entry = "gather";
  ks.source = kGather;
  ks.options.arch = dev->info().arch();
  ks.grid = {3};
  ks.block = {128};
  ks.args = {ArgDesc::table(items)};
  p.kernels.push_back(ks);
  p.steps = {{Step::Kind::Launch, 0, 0}};
  Expected<Plan> loaded = Plan::deserialize(p.serialize());
  ASSERT_TRUE(loaded) << loaded.status().toString();
  KernelCache cache("");
  Expected<PlanExecutor> ex = PlanExecutor::create(*loaded, *dev, cache);
  ASSERT_TRUE(ex) << ex.status().toString();
  Expected<Stream> s = Stream::create(*dev);
  ASSERT_TRUE(s);
  std::vector<DeviceBuffer> bufs;
  for (int t = 0; t < 3; ++t) {
    std::vector<float> v(size_t(sizes[t]));
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = float(i) + 0.5f;
    for (int which = 0; which < 2; ++which) {
      Expected<DeviceBuffer> b = DeviceBuffer::allocate(v.size() * 4);
      ASSERT_TRUE(b);
      if (which == 0) {
        ASSERT_TRUE(b->copyFromHost(v.data(), v.size() * 4, *s));
      }
      ASSERT_TRUE(ex->bind(uint32_t(2 * t + which), b->devicePtr(), b->size()));
      bufs.push_back(std::move(*b));
    }
  }
  ASSERT_TRUE(ex->run(*s));
  for (int t = 0; t < 3; ++t) {
    std::vector<float> got(size_t(sizes[t]));
    ASSERT_TRUE(
        bufs[size_t(2 * t + 1)].copyToHost(got.data(), got.size() * 4, *s));
    ASSERT_TRUE(s->synchronize());
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(got[i], (float(i) + 0.5f) * float(t + 1)) << t << " " << i;
  }
}

} // namespace
