//===- DelayedScalingSessionTest.cpp - Delayed scaling in a session -------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// A session keeps delayed-scaling states like persistent values: listed by
// name, readable by part ("amax_history", "scale"), and restorable from a
// checkpoint, after which the next call computes what an uninterrupted
// session computes. A GPU session (api::Session) matches the CPU one
// (api::HostSession) call by call, states included, bit for bit.
//
//===----------------------------------------------------------------------===//

#include "Support/GpuStream.h"

#include "te/api/Tejit.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>

using namespace te;

namespace {

const char *kModule = R"mlir(
func.func @cast(%x: tensor<64x128xbf16>)
    -> !te.qtensor<64x128xbf16, #te.fp8_delayed<e4m3, history = 8>, rowwise|columnwise> {
  %q = te.quantize %x {scaling_state = "x.delayed_scaling"} : tensor<64x128xbf16>
      -> !te.qtensor<64x128xbf16, #te.fp8_delayed<e4m3, history = 8>, rowwise|columnwise>
  return %q : !te.qtensor<64x128xbf16, #te.fp8_delayed<e4m3, history = 8>, rowwise|columnwise>
}
)mlir";

using Parts = std::vector<std::pair<std::string, std::vector<uint8_t>>>;

/// x of call `i`: a ramp whose amax is 0.5 * (i % 3 + 1), in bf16.
std::vector<uint8_t> input(int i) {
  std::vector<uint8_t> out(64 * 128 * 2);
  for (size_t e = 0; e < 64 * 128; ++e) {
    float v = float(e % 128) / 127.0f * 0.5f * float(i % 3 + 1);
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    uint16_t h = uint16_t(bits >> 16); // truncated to bf16; 0.5 k is exact
    out[2 * e] = uint8_t(h);
    out[2 * e + 1] = uint8_t(h >> 8);
  }
  return out;
}

float scaleOf(const Parts &parts) {
  for (const auto &[name, bytes] : parts)
    if (name == "scale") {
      float f;
      std::memcpy(&f, bytes.data(), 4);
      return f;
    }
  return -1;
}

std::vector<uint8_t> concat(const std::vector<api::HostBuffer> &buffers) {
  std::vector<uint8_t> out;
  for (const api::HostBuffer &b : buffers)
    out.insert(out.end(), b.bytes.begin(), b.bytes.end());
  return out;
}

} // namespace

TEST(DelayedScalingSession, HostSessionKeepsAndRestoresTheState) {
  auto m = api::CompiledModule::fromSource(kModule);
  ASSERT_TRUE(m) << m.status().toString();
  auto a = api::HostSession::create(*m);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->persistentNames(),
            std::vector<std::string>{"x.delayed_scaling"});
  EXPECT_TRUE(a->holds("x.delayed_scaling"));
  auto fresh = a->read("x.delayed_scaling");
  ASSERT_TRUE(fresh) << fresh.status().toString();
  ASSERT_EQ(fresh->size(), 2u);
  EXPECT_EQ((*fresh)[0].first, "amax_history");
  EXPECT_EQ((*fresh)[0].second, std::vector<uint8_t>(8 * 4, 0));
  EXPECT_EQ(scaleOf(*fresh), 1.0f);

  // Amaxes 0.5, 1, 1.5: the scale after each call is 448 / the window max.
  float want[] = {896.0f, 448.0f, 448.0f / 1.5f};
  Parts checkpoint;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(a->call("cast", {input(i)}));
    auto st = a->read("x.delayed_scaling");
    ASSERT_TRUE(st);
    EXPECT_EQ(scaleOf(*st), want[i]) << "call " << i;
    if (i == 1)
      checkpoint = *st;
  }

  // A session restored from the checkpoint of call 1 computes call 2 as
  // the first session did.
  auto b = api::HostSession::create(*m);
  ASSERT_TRUE(b);
  ASSERT_TRUE(b->setParts("x.delayed_scaling", checkpoint));
  auto again = b->call("cast", {input(2)});
  ASSERT_TRUE(again);
  auto st = b->read("x.delayed_scaling");
  ASSERT_TRUE(st);
  EXPECT_EQ(*st, *a->read("x.delayed_scaling"));

  // Checkpoints of the wrong shape are refused with the reason.
  rt::Status bad = b->setParts("x.delayed_scaling", {{"scale", {0, 0}}});
  EXPECT_NE(bad.message().find("part scale needs 4 bytes, got 2"),
            std::string::npos)
      << bad.toString();
  bad = b->setParts("x.delayed_scaling", {{"scale", checkpoint[1].second}});
  EXPECT_NE(bad.message().find("needs part amax_history"), std::string::npos)
      << bad.toString();
}

TEST(DelayedScalingSession, GpuSessionMatchesTheCpuCallByCall) {
  test::GpuStream g = test::GpuStream::open();
  if (!g.stream)
    GTEST_SKIP() << g.why;
  const rt::Device *device = &*g.device;
  const rt::Stream *stream = &*g.stream;
  auto m = api::CompiledModule::fromSource(kModule);
  ASSERT_TRUE(m) << m.status().toString();
  rt::KernelCache cache("");
  auto gpu = api::Session::create(*m, *device, cache);
  ASSERT_TRUE(gpu) << gpu.status().toString();
  auto cpu = api::HostSession::create(*m);
  ASSERT_TRUE(cpu);
  EXPECT_EQ(gpu->persistentNames(),
            std::vector<std::string>{"x.delayed_scaling"});
  api::Executable *cast = gpu->function("cast");
  ASSERT_NE(cast, nullptr);
  for (int i = 0; i < 6; ++i) {
    SCOPED_TRACE("call " + std::to_string(i));
    std::vector<uint8_t> x = input(i);
    auto want = cpu->call("cast", {x});
    ASSERT_TRUE(want);
    std::vector<rt::DeviceBuffer> owned;
    std::vector<api::DeviceSpan> args, results;
    auto in = rt::DeviceBuffer::allocate(x.size());
    ASSERT_TRUE(in);
    ASSERT_TRUE(in->copyFromHost(x.data(), x.size(), *stream));
    args.push_back({in->devicePtr(), in->size()});
    for (const api::Slot &s : cast->results()) {
      auto b = rt::DeviceBuffer::allocate(s.bytes);
      ASSERT_TRUE(b);
      results.push_back({b->devicePtr(), b->size()});
      owned.push_back(std::move(*b));
    }
    ASSERT_TRUE(cast->run(args, results, *stream));
    std::vector<uint8_t> got;
    for (size_t r = 0; r < owned.size(); ++r) {
      std::vector<uint8_t> part(cast->results()[r].bytes);
      ASSERT_TRUE(owned[r].copyToHost(part.data(), part.size(), *stream));
      got.insert(got.end(), part.begin(), part.end());
    }
    ASSERT_TRUE(stream->synchronize());
    EXPECT_EQ(got, concat(*want));
    auto gpuState = gpu->read("x.delayed_scaling", *stream);
    ASSERT_TRUE(gpuState) << gpuState.status().toString();
    EXPECT_EQ(*gpuState, *cpu->read("x.delayed_scaling"));
  }

  // A second session restored from the first one's state before it ever
  // ran holds that state, and its next call computes what the first's does.
  auto restored = api::Session::create(*m, *device, cache);
  ASSERT_TRUE(restored);
  auto checkpoint = gpu->read("x.delayed_scaling", *stream);
  ASSERT_TRUE(checkpoint);
  std::vector<rt::DeviceBuffer> parts;
  std::vector<std::pair<std::string, api::DeviceSpan>> spans;
  for (const auto &[part, bytes] : *checkpoint) {
    auto b = rt::DeviceBuffer::allocate(bytes.size());
    ASSERT_TRUE(b);
    ASSERT_TRUE(b->copyFromHost(bytes.data(), bytes.size(), *stream));
    spans.push_back({part, {b->devicePtr(), b->size()}});
    parts.push_back(std::move(*b));
  }
  ASSERT_TRUE(restored->setFromDevice("x.delayed_scaling", spans, *stream));
  EXPECT_EQ(*restored->read("x.delayed_scaling", *stream), *checkpoint);
  for (api::Session *s : {&*gpu, &*restored}) {
    std::vector<uint8_t> x = input(7);
    auto in = rt::DeviceBuffer::allocate(x.size());
    ASSERT_TRUE(in);
    ASSERT_TRUE(in->copyFromHost(x.data(), x.size(), *stream));
    api::Executable *f = s->function("cast");
    std::vector<rt::DeviceBuffer> owned;
    std::vector<api::DeviceSpan> results;
    for (const api::Slot &slot : f->results()) {
      auto b = rt::DeviceBuffer::allocate(slot.bytes);
      ASSERT_TRUE(b);
      results.push_back({b->devicePtr(), b->size()});
      owned.push_back(std::move(*b));
    }
    ASSERT_TRUE(f->run({{in->devicePtr(), in->size()}}, results, *stream));
    ASSERT_TRUE(stream->synchronize());
  }
  EXPECT_EQ(*restored->read("x.delayed_scaling", *stream),
            *gpu->read("x.delayed_scaling", *stream));
}
