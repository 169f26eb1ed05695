//===- RecipeSwitchTest.cpp - A layer changing its recipe mid-training ----===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// docs/Guide.md §7.2: a session goes on with the module compiled with
// another recipe for a layer. Alternating NVFP4 -> MXFP8 -> NVFP4, after
// every switch and every optimizer step each stored buffer of the
// quantized weight must be the reference quantization of the stored FP32
// master in the format of the moment (never stale, never the old format),
// holding both directions the functions read; a GPU session must store the
// same bytes as the CPU one.
//
//===----------------------------------------------------------------------===//

#include "Support/GpuStream.h"

#include "te/api/Tejit.h"
#include "te/runtime/reference/Quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

using namespace te;

namespace {

const char *kModule = R"mlir(
te.recipe @nvfp4 {
  te.rule "*", "*" -> #te.nvfp4<>
}
te.recipe @mxfp8 {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}
func.func @init(%master: tensor<256x128xf32> {te.persistent = "fc1.master"})
    -> (!te.qtensor<256x128xf32, #te.nvfp4<>, rowwise> {te.persistent = "fc1.weight"}) {
  %q = te.quantize %master : tensor<256x128xf32> -> !te.qtensor<256x128xf32, #te.nvfp4<>, rowwise>
  return %q : !te.qtensor<256x128xf32, #te.nvfp4<>, rowwise>
}
func.func @train_step(%x: tensor<64x128xbf16>, %dy: tensor<64x256xbf16>,
    %w: !te.qtensor<256x128xf32, #te.nvfp4<>, rowwise|columnwise> {te.persistent = "fc1.weight"})
    -> (tensor<64x256xbf16>, tensor<64x128xbf16>) {
  %y = te.linear %x, %w {recipe = @nvfp4, layer = "fc1"}
      : tensor<64x128xbf16>, !te.qtensor<256x128xf32, #te.nvfp4<>, rowwise|columnwise> -> tensor<64x256xbf16>
  %dx, %dw = te.linear_grad %dy, %x, %w {recipe = @nvfp4, layer = "fc1"}
      : tensor<64x256xbf16>, tensor<64x128xbf16>, !te.qtensor<256x128xf32, #te.nvfp4<>, rowwise|columnwise>
      -> tensor<64x128xbf16>, tensor<256x128xf32>
  return %y, %dx : tensor<64x256xbf16>, tensor<64x128xbf16>
}
func.func @optimizer_step(%lr: tensor<f32>, %step: tensor<i64>,
    %p: tensor<256x128xf32> {te.persistent = "fc1.master"},
    %g: tensor<256x128xf32> {te.persistent = "fc1.grad"},
    %m: tensor<256x128xf32> {te.persistent = "fc1.exp_avg"},
    %v: tensor<256x128xf32> {te.persistent = "fc1.exp_avg_sq"})
    -> (tensor<256x128xf32> {te.persistent = "fc1.master"},
        tensor<256x128xf32> {te.persistent = "fc1.exp_avg"},
        tensor<256x128xf32> {te.persistent = "fc1.exp_avg_sq"},
        !te.qtensor<256x128xf32, #te.nvfp4<>, rowwise> {te.persistent = "fc1.weight"}) {
  %p1, %m1, %v1 = te.adam_step %p, %g, %m, %v, %lr, %step
      {beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8, weight_decay = 0.1, mode = adamw}
      : tensor<256x128xf32>, tensor<256x128xf32>, tensor<256x128xf32>, tensor<256x128xf32>, tensor<f32>, tensor<i64>
      -> tensor<256x128xf32>, tensor<256x128xf32>, tensor<256x128xf32>
  %q = te.quantize %p1 : tensor<256x128xf32> -> !te.qtensor<256x128xf32, #te.nvfp4<>, rowwise>
  return %p1, %m1, %v1, %q : tensor<256x128xf32>, tensor<256x128xf32>, tensor<256x128xf32>,
      !te.qtensor<256x128xf32, #te.nvfp4<>, rowwise>
}
)mlir";

using Parts = std::vector<std::pair<std::string, std::vector<uint8_t>>>;

std::vector<uint8_t> floats(size_t n, uint32_t seed, float scale,
                            bool positive = false) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<uint8_t> out(4 * n);
  for (size_t i = 0; i < n; ++i) {
    float v = normal(gen) * scale;
    v = positive ? std::fabs(v) : v;
    std::memcpy(&out[4 * i], &v, 4);
  }
  return out;
}

std::vector<uint8_t> scalar(float f) {
  std::vector<uint8_t> b(4);
  std::memcpy(b.data(), &f, 4);
  return b;
}

std::vector<uint8_t> step(int64_t s) {
  std::vector<uint8_t> b(8);
  std::memcpy(b.data(), &s, 8);
  return b;
}

/// The module with fc1 on `recipe` (its own, @nvfp4, when empty).
api::CompiledModule compile(const std::string &recipe) {
  api::CompileOptions o;
  if (!recipe.empty())
    o.layerRecipes["fc1"] = recipe;
  auto m = api::CompiledModule::fromSource(kModule, o);
  EXPECT_TRUE(m) << m.status().toString();
  return std::move(*m);
}

/// The stored weight must be the reference quantization of the stored
/// master by `scheme`, both directions (the union the functions read).
void expectWeightFromMaster(const Parts &master, const Parts &weight,
                            const rt::Scheme &scheme) {
  ASSERT_EQ(master.size(), 1u);
  rt::ref::QuantizeOptions o; // sm_90a, the program's random state
  o.seed = 0x7e5eed;
  rt::ref::QuantizedTensor want =
      rt::ref::quantize(master[0].second.data(), rt::ref::SourceType::F32, 256,
                        128, scheme, rt::ref::kBothDirections, o);
  ASSERT_TRUE(want.ok()) << want.error;
  Parts expected;
  for (rt::Direction d : {rt::Direction::Rowwise, rt::Direction::Columnwise}) {
    const rt::ref::QuantizedDirection *q = want.get(d);
    std::string prefix = std::string(rt::directionName(d)) + ".";
    for (auto [name, buf] :
         {std::pair<const char *, const rt::ref::HostBuffer *>{"data",
                                                               &q->data},
          {"scale_inv", &q->scaleInv},
          {"amax", &q->amax}})
      if (buf->present())
        expected.push_back({prefix + name, buf->bytes});
  }
  Parts got = weight;
  std::sort(got.begin(), got.end());
  std::sort(expected.begin(), expected.end());
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].first, expected[i].first);
    EXPECT_TRUE(got[i].second == expected[i].second) << got[i].first;
  }
}

const rt::Scheme kNvfp4 = rt::Scheme::nvfp4();
const rt::Scheme kMxfp8 = rt::Scheme::mxfp8(rt::DType::E4M3);

} // namespace

TEST(RecipeSwitch, LayerRecipesRetypeThePersistentWeight) {
  api::CompiledModule nv = compile(""), mx = compile("mxfp8");
  auto type = [](const api::CompiledModule &m) {
    const cg::Entry &e = *m.program().find("train_step");
    return e.values[size_t(e.args[2])];
  };
  EXPECT_EQ(type(nv).rowwise, kNvfp4);
  EXPECT_EQ(type(mx).rowwise, kMxfp8);
  EXPECT_EQ(type(mx).columnwise, kMxfp8);
  // Every declaration agrees, the optimizer's too.
  const cg::Entry &opt = *mx.program().find("optimizer_step");
  EXPECT_EQ(opt.values[size_t(opt.results[3])].rowwise, kMxfp8);
  EXPECT_EQ(opt.values[size_t(opt.results[3])].columnwise, kMxfp8);
  // A layer the module does not have is an error that names it.
  api::CompileOptions bad;
  bad.layerRecipes["fc9"] = "mxfp8";
  auto m = api::CompiledModule::fromSource(kModule, bad);
  ASSERT_FALSE(m);
  EXPECT_NE(m.status().message().find("names layer 'fc9'"), std::string::npos)
      << m.status().toString();
}

TEST(RecipeSwitch, ASwitchNeedsTheMasterHeld) {
  api::CompiledModule nv = compile(""), mx = compile("mxfp8");
  auto s = api::HostSession::create(nv);
  ASSERT_TRUE(s);
  rt::Status st = s->switchModule(mx);
  EXPECT_NE(st.message().find("re-quantized from 'fc1.master' at the switch, "
                              "but the session holds no value of "
                              "'fc1.master' yet"),
            std::string::npos)
      << st.toString();
  // Nothing was dropped: the session goes on as before.
  size_t n = 256 * 128;
  ASSERT_TRUE(s->set("fc1.master", floats(n, 1, 0.05f).data(), 4 * n));
  ASSERT_TRUE(s->call("init", {}));
  ASSERT_TRUE(s->switchModule(mx));
}

TEST(RecipeSwitch, CpuSessionRequantizesEveryStoredBufferAtEachSwitch) {
  api::CompiledModule nv = compile(""), mx = compile("mxfp8");
  auto s = api::HostSession::create(nv);
  ASSERT_TRUE(s);
  size_t n = 256 * 128;
  ASSERT_TRUE(s->set("fc1.master", floats(n, 1, 0.05f).data(), 4 * n));
  ASSERT_TRUE(s->call("init", {}));
  for (auto [name, bytes] : {std::pair<const char *, std::vector<uint8_t>>{
                                 "fc1.grad", floats(n, 2, 1e-2f)},
                             {"fc1.exp_avg", floats(n, 3, 1e-3f)},
                             {"fc1.exp_avg_sq", floats(n, 4, 1e-4f, true)}})
    ASSERT_TRUE(s->set(name, bytes.data(), bytes.size()));

  const api::CompiledModule *modules[] = {&mx, &nv, &mx};
  const rt::Scheme *schemes[] = {&kMxfp8, &kNvfp4, &kMxfp8};
  for (int phase = 0; phase < 3; ++phase) {
    SCOPED_TRACE("phase " + std::to_string(phase));
    ASSERT_TRUE(s->switchModule(*modules[phase]));
    expectWeightFromMaster(*s->read("fc1.master"), *s->read("fc1.weight"),
                           *schemes[phase]);
    auto out = s->call("optimizer_step", {scalar(1e-3f), step(phase + 1)});
    ASSERT_TRUE(out) << out.status().toString();
    expectWeightFromMaster(*s->read("fc1.master"), *s->read("fc1.weight"),
                           *schemes[phase]);
    std::vector<uint8_t> x(64 * 128 * 2, 0x3c), dy(64 * 256 * 2, 0x3c);
    auto train = s->call("train_step", {x, dy});
    ASSERT_TRUE(train) << train.status().toString();
  }
}

TEST(RecipeSwitch, GpuSessionStoresWhatTheCpuSessionStores) {
  test::GpuStream g = test::GpuStream::open();
  if (!g.stream)
    GTEST_SKIP() << g.why;
  const rt::Device *device = &*g.device;
  const rt::Stream *stream = &*g.stream;
  api::CompiledModule nv = compile(""), mx = compile("mxfp8");
  rt::KernelCache cache("");
  auto gpu = api::Session::create(nv, *device, cache);
  ASSERT_TRUE(gpu) << gpu.status().toString();
  auto cpu = api::HostSession::create(nv);
  ASSERT_TRUE(cpu);
  size_t n = 256 * 128;
  for (auto [name, bytes] : {std::pair<const char *, std::vector<uint8_t>>{
                                 "fc1.master", floats(n, 1, 0.05f)},
                             {"fc1.grad", floats(n, 2, 1e-2f)},
                             {"fc1.exp_avg", floats(n, 3, 1e-3f)},
                             {"fc1.exp_avg_sq", floats(n, 4, 1e-4f, true)}}) {
    ASSERT_TRUE(gpu->set(name, bytes.data(), bytes.size(), *stream));
    ASSERT_TRUE(cpu->set(name, bytes.data(), bytes.size()));
  }
  // init and optimizer_step take no non-persistent buffers but lr and step.
  auto run = [&](const std::string &fn, std::vector<std::vector<uint8_t>> a) {
    ASSERT_TRUE(cpu->call(fn, a));
    api::Executable *exe = gpu->function(fn);
    ASSERT_NE(exe, nullptr);
    std::vector<rt::DeviceBuffer> owned;
    std::vector<api::DeviceSpan> spans;
    for (const std::vector<uint8_t> &bytes : a) {
      auto b = rt::DeviceBuffer::allocate(bytes.size());
      ASSERT_TRUE(b);
      ASSERT_TRUE(b->copyFromHost(bytes.data(), bytes.size(), *stream));
      spans.push_back({b->devicePtr(), b->size()});
      owned.push_back(std::move(*b));
    }
    ASSERT_TRUE(exe->run(spans, {}, *stream));
    ASSERT_TRUE(stream->synchronize());
  };
  auto expectSameStores = [&] {
    for (const char *name :
         {"fc1.master", "fc1.exp_avg", "fc1.exp_avg_sq", "fc1.weight"}) {
      auto g = gpu->read(name, *stream);
      auto c = cpu->read(name);
      ASSERT_TRUE(g && c) << name;
      Parts gs = *g, cs = *c;
      std::sort(gs.begin(), gs.end());
      std::sort(cs.begin(), cs.end());
      EXPECT_TRUE(gs == cs) << name;
    }
  };
  run("init", {});
  expectSameStores();
  const api::CompiledModule *modules[] = {&mx, &nv, &mx};
  for (int phase = 0; phase < 3; ++phase) {
    SCOPED_TRACE("phase " + std::to_string(phase));
    ASSERT_TRUE(gpu->switchModule(*modules[phase], *stream));
    ASSERT_TRUE(cpu->switchModule(*modules[phase]));
    expectSameStores();
    run("optimizer_step", {scalar(1e-3f), step(phase + 1)});
    expectSameStores();
  }
}
