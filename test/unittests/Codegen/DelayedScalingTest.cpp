//===- DelayedScalingTest.cpp - Delayed scaling across calls --------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// docs/Numerics.md §4: an fp8_delayed quantization casts with its state's
// scale and records its amax; when the entry ends the history rolls and the
// next scale is computed. Over many steps - amax 0, Inf, NaN elements,
// subnormal and huge amaxes included - the CPU backend's state must follow
// a model written here from the reference functions, and the GPU's state
// and quantized bytes must equal the CPU's bit for bit, run eagerly or
// replayed from a CUDA graph.
//
//===----------------------------------------------------------------------===//

#include "BackendComparison.h"
#include "ProgramHelpers.h"

#include "te/codegen/PlanBuilder.h"
#include "te/codegen/ScalingState.h"
#include "te/exec/CpuBackend.h"
#include "te/runtime/reference/Quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace te {
namespace {

using rt::Direction;
using rt::DType;
using rt::Scheme;

constexpr int64_t kRows = 64, kCols = 96;

struct Case {
  std::string label;
  Scheme rowwise, columnwise; ///< a hybrid where they differ
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.label; }

std::vector<Case> cases() {
  Scheme h4 = Scheme::fp8Delayed(DType::E4M3, 4);
  Scheme recent = Scheme::fp8Delayed(DType::E5M2, 1, rt::AmaxAlgo::MostRecent,
                                     /*margin=*/2);
  Scheme pow2 = Scheme::fp8Delayed(DType::E4M3, 1024, rt::AmaxAlgo::Max, 0,
                                   /*pow2=*/true);
  Scheme e5m2 = Scheme::fp8Delayed(DType::E5M2, 4, rt::AmaxAlgo::Max, 1);
  // Longer than one thread per entry rolls: 3000 (3 a thread, the last
  // partly) and the longest allowed.
  Scheme h3000 = Scheme::fp8Delayed(DType::E4M3, 3000);
  Scheme longest = Scheme::fp8Delayed(DType::E5M2, Scheme::kMaxHistory);
  return {{"max_history_4", h4, h4},
          {"most_recent_history_1_margin_2", recent, recent},
          {"max_history_1024_pow2", pow2, pow2},
          {"hybrid_two_quantizers", h4, e5m2},
          {"hybrid_histories_3000_and_65536", h3000, longest}};
}

/// step(x) -> q: x [64, 96] bf16 quantized in both directions with the
/// state "x.delayed_scaling" (two states for a hybrid of two schemes).
cg::Program program(const Case &c) {
  cg::Program p;
  cg::Entry e;
  e.name = "step";
  e.values.push_back(test::tensor("x", {kRows, kCols}, DType::BF16));
  cg::Value q = test::tensor("x", {kRows, kCols}, DType::BF16);
  q.kind = cg::Value::Kind::Quantized;
  q.rowwise = c.rowwise;
  q.columnwise = c.columnwise;
  e.values.push_back(q);
  cg::QuantizeKernel k;
  k.name = "quantize_x";
  k.input = 0;
  for (Direction d : {Direction::Rowwise, Direction::Columnwise})
    k.stages.push_back(test::stageOf(q, 1, d));
  e.kernels.push_back(k);
  e.args = {0};
  e.results = {1};
  p.entries.push_back(e);
  return p;
}

float bf16Max() { return rt::ref::bf16ToFloat(0x7F7F); }

/// The input of step `i`: every case of the update (docs/Numerics.md §4).
std::vector<float> stepInput(int i) {
  std::mt19937 gen(uint32_t(1000 + i));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(size_t(kRows * kCols));
  float gain[] = {1.0f, 64.0f, 0.0f, 1.0f / 1024, 1.0f,   1.0f, 0.0f,
                  0.0f, 3.0f,  1.0f, 0.0f,        200.0f, 1.0f, 0.5f};
  for (float &v : x)
    v = normal(gen) * gain[i % 14];
  switch (i % 14) {
  case 2: // amax 0: no roll, the scale stays
  case 10:
    break;
  case 4: // amax Inf: recorded, the scale stays (most_recent) or waits
    x[17] = std::numeric_limits<float>::infinity();
    break;
  case 5: // NaN elements are ignored by the amax
    x[3] = x[500] = std::numeric_limits<float>::quiet_NaN();
    break;
  case 6: // only NaN: amax 0
    for (float &v : x)
      v = std::numeric_limits<float>::quiet_NaN();
    break;
  case 7: // the smallest bf16 subnormal: fp8_max / amax overflows
    x[40] = -rt::ref::bf16ToFloat(0x0001);
    break;
  case 11: // the largest finite bf16
    x[41] = bf16Max();
    break;
  default:
    break;
  }
  return x;
}

/// The model: history[0] records the step's amax, then the reference update.
struct Model {
  std::vector<rt::ref::DelayedScalingState> states;
  std::vector<Scheme> schemes;

  explicit Model(const Case &c) {
    schemes = {c.rowwise};
    if (c.columnwise != c.rowwise)
      schemes.push_back(c.columnwise);
    for (const Scheme &s : schemes) {
      rt::ref::DelayedScalingState st;
      st.history.assign(size_t(s.history), 0.0f);
      states.push_back(st);
    }
  }
  void step(const std::vector<float> &x) {
    std::vector<float> rounded;
    for (float v : x)
      rounded.push_back(rt::ref::bf16ToFloat(rt::ref::floatToBF16(v)));
    float amax = rt::ref::amaxOf(rounded.data(), rounded.size());
    for (size_t i = 0; i < states.size(); ++i) {
      states[i].history[0] = std::fmax(states[i].history[0], amax);
      rt::ref::updateDelayedScaling(states[i], schemes[i]);
    }
  }
};

std::vector<std::string> stateNames(const cg::Program &p) {
  std::vector<std::string> names;
  for (const cg::ScalingState &s : cg::scalingStates(p.entries[0]))
    names.push_back(s.name);
  return names;
}

exec::ValueData modelData(const rt::ref::DelayedScalingState &s) {
  std::vector<uint8_t> history(s.history.size() * 4), scale(4);
  std::memcpy(history.data(), s.history.data(), history.size());
  std::memcpy(scale.data(), &s.scale, 4);
  return exec::stateValueData(std::move(history), std::move(scale));
}

class DelayedScaling : public ::testing::TestWithParam<Case> {};

} // namespace

TEST_P(DelayedScaling, CpuStateFollowsTheReferenceOverManySteps) {
  cg::Program p = program(GetParam());
  std::vector<std::string> names = stateNames(p);
  ASSERT_EQ(names.size(),
            GetParam().rowwise == GetParam().columnwise ? 1u : 2u);
  exec::HostStore store;
  Model model(GetParam());
  for (int i = 0; i < 30; ++i) {
    SCOPED_TRACE("step " + std::to_string(i));
    float scaleBefore = model.states[0].scale;
    auto out = exec::runCpu(p, p.entries[0], {test::bf16Bytes(stepInput(i))},
                            nullptr, nullptr, &store);
    ASSERT_TRUE(out) << out.status().toString();
    model.step(stepInput(i));
    for (size_t s = 0; s < names.size(); ++s)
      EXPECT_EQ(exec::firstDifference({store.read(names[s])},
                                      {modelData(model.states[s])}, "backend",
                                      "model"),
                "")
          << names[s];
    // The cast used the scale from before the step.
    float scaleInv;
    std::memcpy(&scaleInv, (*out)[0][1].bytes.data(), 4);
    EXPECT_EQ((*out)[0][1].name, "rowwise.scale_inv");
    EXPECT_EQ(scaleInv, rt::ref::scaleInvFromScale(scaleBefore));
  }
  // Without a store every call starts from a fresh state: scale 1.
  auto fresh = exec::runCpu(p, p.entries[0], {test::bf16Bytes(stepInput(0))});
  ASSERT_TRUE(fresh);
  float scaleInv;
  std::memcpy(&scaleInv, (*fresh)[0][1].bytes.data(), 4);
  EXPECT_EQ(scaleInv, 1.0f);
}

TEST(DelayedScalingCpu, AFailedCallLeavesTheStateAsItWas) {
  // The cast records into the state, then a gather over ranks the call was
  // not given fails: the stored state must not keep that record.
  cg::Program p = program(cases()[0]);
  cg::Entry &e = p.entries[0];
  e.values.push_back(test::tensor("g", {2 * kRows, kCols}, DType::BF16));
  e.kernels.push_back(cg::AllGatherKernel{"gather", 0, 2, 2});
  e.results.push_back(2);
  ASSERT_EQ(cg::validate(e), "");
  exec::HostStore store;
  store.declareStates(p);
  auto out = exec::runCpu(p, e, {test::bf16Bytes(stepInput(1))}, nullptr,
                          nullptr, &store);
  ASSERT_FALSE(out);
  Model fresh(cases()[0]);
  EXPECT_EQ(exec::firstDifference({store.read("x.delayed_scaling")},
                                  {modelData(fresh.states[0])}, "store",
                                  "fresh"),
            "");
}

TEST_P(DelayedScaling, CompilesWithNvrtc) {
  cg::Program p = program(GetParam());
  rt::KernelCache cache("");
  rt::Expected<size_t> n = exec::compileEntry(p, p.entries[0], cache);
  if (!n && n.status().code() == rt::StatusCode::LibraryMissing)
    GTEST_SKIP() << n.status().toString();
  ASSERT_TRUE(n) << n.status().toString();
  EXPECT_EQ(*n, 2u); // the quantize kernel and the update
}

TEST_P(DelayedScaling, GpuMatchesCpuBitForBitEagerAndReplayed) {
  test::GpuStream gpu = test::GpuStream::open();
  if (!gpu.stream)
    GTEST_SKIP() << gpu.why;
  cg::Program p = program(GetParam());
  std::vector<std::string> names = stateNames(p);
  rt::KernelCache cache("");
  for (bool graph : {false, true}) {
    SCOPED_TRACE(graph ? "graph replays" : "eager runs");
    exec::HostStore host;
    exec::DeviceStore device;
    auto runner =
        exec::CudaRunner::create(p, p.entries[0], *gpu.device, cache, &device);
    ASSERT_TRUE(runner) << runner.status().toString();
    ASSERT_TRUE(runner->poison(0xA5, *gpu.stream));
    // Both backends start from one restored state whose whole history is
    // filled - NaN, Inf, zeros and amaxes spanning the range - so the first
    // steps roll every entry of even the longest history.
    host.declareStates(p);
    for (const std::string &name : names) {
      size_t length = host.scaling.at(name).state.history.size();
      std::mt19937 gen{uint32_t(length)};
      std::vector<float> history(length);
      for (size_t i = 0; i < length; ++i)
        history[i] = i % 97 == 5   ? std::numeric_limits<float>::quiet_NaN()
                     : i % 89 == 7 ? std::numeric_limits<float>::infinity()
                     : i % 13 == 0 ? 0.0f
                                   : std::ldexp(float(gen() % 1000 + 1),
                                                int(gen() % 40) - 30);
      std::vector<uint8_t> bytes(4 * length), scale(4);
      std::memcpy(bytes.data(), history.data(), bytes.size());
      float s = 3.25f;
      std::memcpy(scale.data(), &s, 4);
      exec::ValueData parts = exec::stateValueData(bytes, scale);
      ASSERT_TRUE(host.writeState(name, parts));
      ASSERT_TRUE(device.upload(name, parts, *gpu.stream));
    }
    for (int i = 0; i < 30; ++i) {
      SCOPED_TRACE("step " + std::to_string(i));
      std::vector<uint8_t> x = test::bf16Bytes(stepInput(i));
      ASSERT_TRUE(runner->setArgument(0, x, *gpu.stream));
      // A graph is captured after one eager run and replayed from then on.
      rt::Status st = graph && i > 0 ? runner->replay(*gpu.stream)
                                     : runner->run(*gpu.stream);
      ASSERT_TRUE(st) << st.toString();
      if (graph && i == 0) {
        ASSERT_TRUE(runner->capture(*gpu.stream));
      }
      auto cuda = runner->results(*gpu.stream);
      ASSERT_TRUE(cuda) << cuda.status().toString();
      auto cpu = exec::runCpu(p, p.entries[0], {x}, nullptr, nullptr, &host);
      ASSERT_TRUE(cpu) << cpu.status().toString();
      EXPECT_EQ(exec::firstDifference(*cpu, *cuda, "cpu", "cuda"), "");
      for (const std::string &name : names) {
        auto state = exec::readState(device, name, *gpu.stream);
        ASSERT_TRUE(state) << state.status().toString();
        EXPECT_EQ(
            exec::firstDifference({host.read(name)}, {*state}, "cpu", "cuda"),
            "")
            << name;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Schemes, DelayedScaling, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case> &i) {
                           return i.param.label;
                         });

TEST(DelayedScalingPlan, StateBuffersAndOneUpdateLaunchAfterTheKernels) {
  Case c = cases()[3]; // two states
  cg::Program p = program(c);
  rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(p, p.entries[0]);
  ASSERT_TRUE(plan) << plan.status().toString();
  ASSERT_EQ(plan->states.size(), 2u);
  EXPECT_EQ(plan->states[0].name, "x.delayed_scaling.rowwise");
  EXPECT_EQ(plan->states[1].name, "x.delayed_scaling.columnwise");
  for (const cg::EntryPlan::StateBuffers &s : plan->states) {
    EXPECT_EQ(plan->initial[size_t(s.scale)], cg::initialScale());
    EXPECT_EQ(plan->initial[size_t(s.history)], std::vector<uint8_t>(4 * 4, 0));
  }
  // The quantize kernel, then the update: one launch, a CTA per state.
  ASSERT_EQ(plan->kernels.size(), 2u);
  const cg::KernelPlan &update = plan->kernels[1];
  EXPECT_EQ(update.name, "te_delayed_scaling_update");
  ASSERT_EQ(update.plan.kernels.size(), 1u);
  const rt::KernelSpec &k = update.plan.kernels[0];
  EXPECT_EQ(k.grid.x, 2u);
  // Histories of 4: one warp, one entry a thread.
  EXPECT_EQ(k.block.x, 32u);
  EXPECT_NE(k.source.find("updateDelayedScaling<17, 32, 1>"), std::string::npos)
      << k.source;
  ASSERT_EQ(k.args.size(), 1u);
  const std::vector<rt::ArgDesc> &w = k.args[0].items;
  // Count, two offsets, then each state: scale, history, length,
  // scaledMax bits, flags, one record, the record.
  ASSERT_EQ(w.size(), 3u + 2 * 7);
  EXPECT_EQ(w[0], rt::ArgDesc::i64(2));
  EXPECT_EQ(w[1], rt::ArgDesc::i64(3));
  EXPECT_EQ(w[2], rt::ArgDesc::i64(10));
  EXPECT_EQ(w[3], rt::ArgDesc::ptr(plan->states[0].scale));
  EXPECT_EQ(w[4], rt::ArgDesc::ptr(plan->states[0].history));
  EXPECT_EQ(w[5], rt::ArgDesc::i64(4));
  float scaledMax = 57344.0f / 2; // e5m2, margin 1
  uint32_t bits;
  std::memcpy(&bits, &scaledMax, 4);
  EXPECT_EQ(w[13], rt::ArgDesc::i64(int64_t(bits)));
  EXPECT_EQ(w[15], rt::ArgDesc::i64(1));
  EXPECT_EQ(w[16], rt::ArgDesc::ptr(plan->values[1].dir[1].amax));
}

TEST(DelayedScalingPlan, RejectsInconsistentStates) {
  Case c = cases()[0];
  auto check = [](cg::Program p, const std::string &want) {
    std::string why = cg::validate(p.entries[0]);
    EXPECT_NE(why.find(want), std::string::npos) << why;
  };
  cg::Program unnamed = program(c);
  std::get<cg::QuantizeKernel>(unnamed.entries[0].kernels[0]).stages[0].state =
      "";
  check(unnamed, "an fp8_delayed stage needs a delayed-scaling state");
  cg::Program mismatched = program(c);
  auto &k = std::get<cg::QuantizeKernel>(mismatched.entries[0].kernels[0]);
  k.stages[1].scheme.history = 8;
  mismatched.entries[0].values[1].columnwise = k.stages[1].scheme;
  check(mismatched, "is used with two different fp8_delayed schemes");
  cg::Program clash = program(c);
  clash.entries[0].argPersistent = {"x.delayed_scaling"};
  check(clash, "has the name of a persistent value");
  cg::Program stray = program(c);
  cg::Entry &e = stray.entries[0];
  e.values[1].rowwise = e.values[1].columnwise = Scheme::mxfp8(DType::E4M3);
  for (cg::Stage &s : std::get<cg::QuantizeKernel>(e.kernels[0]).stages)
    s.scheme = *e.values[1].rowwise;
  check(stray, "only fp8_delayed keeps a state");
  // Across functions: one state, one scheme, and no persistent value of
  // its name in any function.
  cg::Program two = program(c);
  two.entries.push_back(two.entries[0]);
  two.entries[1].name = "other";
  auto &k2 = std::get<cg::QuantizeKernel>(two.entries[1].kernels[0]);
  for (cg::Stage &s : k2.stages)
    s.scheme.margin = 3;
  two.entries[1].values[1].rowwise->margin = 3;
  two.entries[1].values[1].columnwise->margin = 3;
  EXPECT_EQ(cg::validate(two.entries[1]), "");
  std::string why = cg::validateScalingStates(two);
  EXPECT_NE(why.find("is used with another fp8_delayed scheme in function "
                     "'other' than in 'step'"),
            std::string::npos)
      << why;
  EXPECT_FALSE(cg::buildEntryPlan(two, two.entries[0]));
  EXPECT_FALSE(
      exec::runCpu(two, two.entries[0], {test::bf16Bytes(stepInput(0))}));
  cg::Program named = program(c);
  named.entries.push_back(named.entries[0]);
  named.entries[1].name = "other";
  std::get<cg::QuantizeKernel>(named.entries[1].kernels[0]).stages.clear();
  named.entries[1].kernels.clear();
  named.entries[1].resultPersistent = {"x.delayed_scaling"};
  why = cg::validateScalingStates(named);
  EXPECT_NE(why.find("has the name of a persistent value"), std::string::npos)
      << why;
}

} // namespace te
