//===- HostSessionTest.cpp - The API's CPU backend ------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// CompiledModule::runOnCpu and HostSession: results byte for byte as the
// execution layer's CPU backend computes them, persistent values kept
// between calls, and the errors of each misuse. No GPU needed.
//
//===----------------------------------------------------------------------===//

#include "te/api/Tejit.h"
#include "te/exec/CpuBackend.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace te;

namespace {

const char *kModule = R"mlir(
func.func @quantize(%x: tensor<128x256xbf16>)
    -> (!te.qtensor<128x256xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>,
        tensor<256xf32>) {
  %q = te.quantize %x : tensor<128x256xbf16>
         -> !te.qtensor<128x256xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>
  %db = te.bias_grad %x : tensor<128x256xbf16> -> tensor<256xf32>
  return %q, %db : !te.qtensor<128x256xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>,
                   tensor<256xf32>
}
func.func @sums(%w: tensor<64x128xf32> {te.persistent = "w"},
                %x: tensor<64x128xf32>) -> (tensor<128xf32>, tensor<128xf32>) {
  %a = te.bias_grad %w : tensor<64x128xf32> -> tensor<128xf32>
  %b = te.bias_grad %x : tensor<64x128xf32> -> tensor<128xf32>
  return %a, %b : tensor<128xf32>, tensor<128xf32>
}
)mlir";

std::vector<uint8_t> floats(size_t n, float v) {
  std::vector<uint8_t> out(4 * n);
  for (size_t i = 0; i < n; ++i)
    std::memcpy(&out[4 * i], &v, 4);
  return out;
}

float first(const api::HostBuffer &b) {
  float f;
  std::memcpy(&f, b.bytes.data(), 4);
  return f;
}

} // namespace

TEST(HostSession, RunOnCpuMatchesTheCpuBackendByteForByte) {
  auto m = api::CompiledModule::fromSource(kModule);
  ASSERT_TRUE(m) << m.status().toString();
  std::vector<uint8_t> x(128 * 256 * 2);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = uint8_t(i * 37 + (i >> 9)) & (i % 2 ? 0x3F : 0xFF);
  auto out = m->runOnCpu("quantize", {x});
  ASSERT_TRUE(out) << out.status().toString();
  auto ref = exec::runCpu(m->program(), *m->program().find("quantize"), {x});
  ASSERT_TRUE(ref);
  std::vector<std::string> names;
  size_t n = 0;
  for (size_t r = 0; r < ref->size(); ++r)
    for (const exec::NamedBuffer &b : (*ref)[r]) {
      ASSERT_LT(n, out->size());
      EXPECT_EQ((*out)[n].index, r);
      EXPECT_EQ((*out)[n].part, b.name);
      EXPECT_EQ((*out)[n].bytes, b.bytes) << (*out)[n].name;
      names.push_back((*out)[n].name);
      ++n;
    }
  EXPECT_EQ(n, out->size());
  EXPECT_EQ(names.front(), "result0.rowwise.data");
  EXPECT_EQ(names.back(), "result1");
}

TEST(HostSession, KeepsPersistentValuesBetweenCalls) {
  auto m = api::CompiledModule::fromSource(kModule);
  ASSERT_TRUE(m) << m.status().toString();
  auto s = api::HostSession::create(*m);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->persistentNames(), std::vector<std::string>{"w"});
  EXPECT_FALSE(s->holds("w"));
  std::vector<uint8_t> w = floats(64 * 128, 0.25f), x = floats(64 * 128, 1);
  ASSERT_TRUE(s->set("w", w.data(), w.size()).isOk());
  EXPECT_TRUE(s->holds("w"));
  for (int call = 0; call < 2; ++call) { // the value stays after a call
    auto out = s->call("sums", {x});
    ASSERT_TRUE(out) << out.status().toString();
    ASSERT_EQ(out->size(), 2u);
    EXPECT_EQ(first((*out)[0]), 16.0f);
    EXPECT_EQ(first((*out)[1]), 64.0f);
  }
  auto held = s->read("w");
  ASSERT_TRUE(held);
  ASSERT_EQ(held->size(), 1u);
  EXPECT_EQ((*held)[0].first, "data");
  EXPECT_EQ((*held)[0].second, w);
  // A new value replaces the old one.
  std::vector<uint8_t> w2 = floats(64 * 128, 2);
  ASSERT_TRUE(s->set("w", w2.data(), w2.size()).isOk());
  auto out = s->call("sums", {x});
  ASSERT_TRUE(out);
  EXPECT_EQ(first((*out)[0]), 128.0f);
}

TEST(HostSession, MisuseIsAnError) {
  auto m = api::CompiledModule::fromSource(kModule);
  ASSERT_TRUE(m);
  auto s = api::HostSession::create(*m);
  ASSERT_TRUE(s);
  std::vector<uint8_t> x = floats(64 * 128, 1);
  auto unheld = s->call("sums", {x});
  ASSERT_FALSE(unheld);
  EXPECT_NE(unheld.status().message().find("persistent 'w'"),
            std::string::npos)
      << unheld.status().message();
  EXPECT_FALSE(s->set("w", x.data(), 12).isOk());
  EXPECT_FALSE(s->set("nope", x.data(), x.size()).isOk());
  EXPECT_FALSE(s->read("nope"));
  ASSERT_TRUE(s->set("w", x.data(), x.size()).isOk());
  EXPECT_FALSE(s->call("sums", {})); // one argument missing
  EXPECT_FALSE(s->call("sums", {x, x}));
  auto unknown = s->call("nope", {});
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.status().message().find("it has: quantize, sums"),
            std::string::npos);
}
