//===- SessionTest.cpp - Persistent values across a module's functions ----===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// A training loop's state (FP32 master weight and moments, the block-FP8
// weight the GEMMs read, the weight gradient) kept between calls of four
// functions: init, train_step, optimizer_step and eval_step, called in an
// alternating order. On the CPU backend (HostStore): an eval step changes no
// stored byte, the training step before and after it agree bit for bit,
// and the optimizer writes both directions of the weight although it and
// the eval step declare rowwise only. On a GPU (api::Session, device
// buffers, in-place optimizer, a master-weight round trip copied into the
// store after its kernels): every call agrees with the CPU sequence -
// GEMM outputs within the stated bound, everything else bit for bit.
//
//===----------------------------------------------------------------------===//

#include "te/api/Tejit.h"
#include "te/exec/Compare.h"
#include "te/exec/CudaRunner.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

using namespace te;

namespace {

const char *kTrainLoop = R"mlir(
func.func @init(%master: tensor<384x256xf32> {te.persistent = "fc1.master"})
    -> (!te.qtensor<384x256xf32, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise> {te.persistent = "fc1.weight"}) {
  %q = te.quantize %master : tensor<384x256xf32> -> !te.qtensor<384x256xf32, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>
  return %q : !te.qtensor<384x256xf32, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>
}
func.func @train_step(%x: tensor<256x256xbf16>, %dy: tensor<256x384xbf16>,
    %w: !te.qtensor<384x256xf32, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise> {te.persistent = "fc1.weight"})
    -> (tensor<256x384xbf16>, tensor<256x256xbf16>, tensor<384x256xf32> {te.persistent = "fc1.grad"}) {
  %qx = te.quantize %x : tensor<256x256xbf16> -> !te.qtensor<256x256xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>
  %qdy = te.quantize %dy : tensor<256x384xbf16> -> !te.qtensor<256x384xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>
  %y = te.gemm %qx, %w {transpose_b}
      : !te.qtensor<256x256xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>,
        !te.qtensor<384x256xf32, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise> -> tensor<256x384xbf16>
  %dx = te.gemm %qdy, %w
      : !te.qtensor<256x384xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>,
        !te.qtensor<384x256xf32, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise> -> tensor<256x256xbf16>
  %dw = te.gemm %qdy, %qx {transpose_a}
      : !te.qtensor<256x384xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>,
        !te.qtensor<256x256xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise> -> tensor<384x256xf32>
  return %y, %dx, %dw : tensor<256x384xbf16>, tensor<256x256xbf16>, tensor<384x256xf32>
}
func.func @optimizer_step(%lr: tensor<f32>, %step: tensor<i64>,
    %p: tensor<384x256xf32> {te.persistent = "fc1.master"},
    %g: tensor<384x256xf32> {te.persistent = "fc1.grad"},
    %m: tensor<384x256xf32> {te.persistent = "fc1.exp_avg"},
    %v: tensor<384x256xf32> {te.persistent = "fc1.exp_avg_sq"})
    -> (tensor<384x256xf32> {te.persistent = "fc1.master"},
        tensor<384x256xf32> {te.persistent = "fc1.exp_avg"},
        tensor<384x256xf32> {te.persistent = "fc1.exp_avg_sq"},
        !te.qtensor<384x256xf32, #te.fp8_block<e4m3, 128x128>, rowwise> {te.persistent = "fc1.weight"}) {
  %p1, %m1, %v1 = te.adam_step %p, %g, %m, %v, %lr, %step
      {beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8, weight_decay = 0.1, mode = adamw}
      : tensor<384x256xf32>, tensor<384x256xf32>, tensor<384x256xf32>, tensor<384x256xf32>, tensor<f32>, tensor<i64>
      -> tensor<384x256xf32>, tensor<384x256xf32>, tensor<384x256xf32>
  %q = te.quantize %p1 : tensor<384x256xf32> -> !te.qtensor<384x256xf32, #te.fp8_block<e4m3, 128x128>, rowwise>
  return %p1, %m1, %v1, %q : tensor<384x256xf32>, tensor<384x256xf32>, tensor<384x256xf32>,
      !te.qtensor<384x256xf32, #te.fp8_block<e4m3, 128x128>, rowwise>
}
func.func @snap_master(%p: tensor<384x256xf32> {te.persistent = "fc1.master"})
    -> (tensor<384x256xf32> {te.persistent = "fc1.master"}) {
  %q = te.quantize %p : tensor<384x256xf32> -> !te.qtensor<384x256xf32, #te.mxfp8<e4m3>, rowwise>
  %d = te.dequantize %q rowwise : !te.qtensor<384x256xf32, #te.mxfp8<e4m3>, rowwise> -> tensor<384x256xf32>
  return %d : tensor<384x256xf32>
}
func.func @eval_step(%x: tensor<256x256xbf16>,
    %w: !te.qtensor<384x256xf32, #te.fp8_block<e4m3, 128x128>, rowwise> {te.persistent = "fc1.weight"})
    -> tensor<256x384xbf16> {
  %qx = te.quantize %x : tensor<256x256xbf16> -> !te.qtensor<256x256xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>
  %y = te.gemm %qx, %w {transpose_b}
      : !te.qtensor<256x256xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>,
        !te.qtensor<384x256xf32, #te.fp8_block<e4m3, 128x128>, rowwise> -> tensor<256x384xbf16>
  return %y : tensor<256x384xbf16>
}
)mlir";

const char *kPersistentNames[] = {"fc1.exp_avg", "fc1.exp_avg_sq", "fc1.grad",
                                  "fc1.master", "fc1.weight"};

/// Random finite bf16 (or f32 when `f32`) values of magnitude below 4.
std::vector<uint8_t> randomData(size_t n, bool f32, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  std::vector<uint8_t> out(n * (f32 ? 4 : 2));
  for (size_t i = 0; i < n; ++i) {
    float f = dist(rng);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    if (f32)
      std::memcpy(&out[4 * i], &bits, 4);
    else
      out[2 * i] = uint8_t(bits >> 16), out[2 * i + 1] = uint8_t(bits >> 24);
  }
  return out;
}

template <typename T> std::vector<uint8_t> scalarBytes(T v) {
  std::vector<uint8_t> b(sizeof(T));
  std::memcpy(b.data(), &v, sizeof(T));
  return b;
}

/// The training loop's inputs (non-persistent arguments) by function.
struct LoopInputs {
  std::vector<uint8_t> master = randomData(384 * 256, true, 1);
  std::vector<uint8_t> x = randomData(256 * 256, false, 2);
  std::vector<uint8_t> dy = randomData(256 * 384, false, 3);
  std::vector<uint8_t> xEval = randomData(256 * 256, false, 4);
  std::vector<uint8_t> zeros = std::vector<uint8_t>(384 * 256 * 4, 0);

  /// Every argument of call `fn` (persistent ones the store holds empty;
  /// the moments' initial zeros for the first optimizer step).
  std::vector<std::vector<uint8_t>> args(const std::string &fn,
                                         int64_t step) const {
    if (fn == "init")
      return {master};
    if (fn == "train_step")
      return {x, dy, {}};
    if (fn == "eval_step")
      return {xEval, {}};
    if (fn == "snap_master")
      return {{}};
    return {scalarBytes(1e-3f), scalarBytes(step), {}, {}, zeros, zeros};
  }
};

/// The CPU backend's side of the loop.
struct CpuLoop {
  const cg::Program &program;
  exec::HostStore store;

  std::vector<exec::ValueData> call(const std::string &fn,
                                  const std::vector<std::vector<uint8_t>> &a) {
    auto r =
        exec::runCpu(program, *program.find(fn), a, nullptr, nullptr, &store);
    EXPECT_TRUE(r) << fn << ": " << r.status().toString();
    return r ? *r : std::vector<exec::ValueData>();
  }
  std::map<std::string, exec::ValueData> snapshot() const {
    std::map<std::string, exec::ValueData> out;
    for (const char *n : kPersistentNames)
      out[n] = store.read(n);
    return out;
  }
};

std::vector<std::string> partNames(const exec::ValueData &d) {
  std::vector<std::string> out;
  for (const exec::NamedBuffer &b : d)
    out.push_back(b.name);
  return out;
}

} // namespace

TEST(Session, PersistentDeclarationsAreLowered) {
  auto m = api::CompiledModule::fromSource(kTrainLoop);
  ASSERT_TRUE(m) << m.status().toString();
  const cg::Entry *opt = m->program().find("optimizer_step");
  ASSERT_NE(opt, nullptr);
  EXPECT_EQ(opt->argPersistent,
            (std::vector<std::string>{"", "", "fc1.master", "fc1.grad",
                                      "fc1.exp_avg", "fc1.exp_avg_sq"}));
  EXPECT_EQ(opt->resultPersistent,
            (std::vector<std::string>{"fc1.master", "fc1.exp_avg",
                                      "fc1.exp_avg_sq", "fc1.weight"}));
  // The optimizer writes, and the eval step reads, both directions.
  EXPECT_TRUE(opt->values[opt->results[3]].columnwise.has_value());
  const cg::Entry *eval = m->program().find("eval_step");
  ASSERT_NE(eval, nullptr);
  EXPECT_TRUE(eval->values[eval->args[1]].columnwise.has_value());
  // The parameter and moments are updated in place; nothing else is.
  EXPECT_TRUE(cg::updatesInPlace(*opt, opt->args[2], opt->results[0]));
  EXPECT_TRUE(cg::updatesInPlace(*opt, opt->args[5], opt->results[2]));
  EXPECT_FALSE(cg::updatesInPlace(*opt, opt->args[2], opt->results[1]));
  const cg::Entry *train = m->program().find("train_step");
  EXPECT_FALSE(cg::updatesInPlace(*train, train->args[0], train->results[0]));
  // The store carries persistent state and steps, not te-run's --steps.
  EXPECT_TRUE(exec::carriedState(*opt).empty());
  // A round trip through a quantize kernel is not an in-place update.
  const cg::Entry *snap = m->program().find("snap_master");
  ASSERT_NE(snap, nullptr);
  EXPECT_FALSE(cg::updatesInPlace(*snap, snap->args[0], snap->results[0]));
}

TEST(Session, AnUpdateIsNotInPlaceWhenTheOldValueIsReturnedToo) {
  auto m = api::CompiledModule::fromSource(R"mlir(
func.func @step(%lr: tensor<f32>, %step: tensor<i64> {te.persistent = "step"},
    %p: tensor<64x64xf32> {te.persistent = "w"}, %g: tensor<64x64xbf16>,
    %m: tensor<64x64xf32>, %v: tensor<64x64xf32>)
    -> (tensor<64x64xf32> {te.persistent = "w"}, tensor<64x64xf32>) {
  %p1, %m1, %v1 = te.adam_step %p, %g, %m, %v, %lr, %step
      {beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8, weight_decay = 0.1, mode = adamw}
      : tensor<64x64xf32>, tensor<64x64xbf16>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<f32>, tensor<i64>
      -> tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
  return %p1, %p : tensor<64x64xf32>, tensor<64x64xf32>
}
)mlir");
  ASSERT_TRUE(m) << m.status().toString();
  const cg::Entry &e = m->program().entries[0];
  EXPECT_FALSE(cg::updatesInPlace(e, e.args[2], e.results[0]));
  // A persistent step belongs to the session: te-run does not count it up.
  EXPECT_EQ(exec::stepArgument(e), -1);
  // The moments are not persistent: --steps carries them.
  EXPECT_EQ(exec::carriedState(e).size(), 2u);
}

TEST(Session, CpuAlternatesTrainAndEvalWithoutLosingState) {
  auto m = api::CompiledModule::fromSource(kTrainLoop);
  ASSERT_TRUE(m) << m.status().toString();
  LoopInputs in;
  CpuLoop cpu{m->program(), {}};

  // Reading a quantized value no function wrote yet is an error.
  auto early =
      exec::runCpu(m->program(), *m->program().find("eval_step"),
                 in.args("eval_step", 1), nullptr, nullptr, &cpu.store);
  ASSERT_FALSE(early);
  EXPECT_NE(early.status().message().find(
                "eval_step reads persistent 'fc1.weight' before any entry "
                "wrote it"),
            std::string::npos)
      << early.status().message();

  cpu.call("init", in.args("init", 1));
  EXPECT_EQ(
      partNames(cpu.store.read("fc1.weight")),
      (std::vector<std::string>{"rowwise.data", "rowwise.scale_inv",
                                "columnwise.data", "columnwise.scale_inv"}));
  std::vector<exec::ValueData> first =
      cpu.call("train_step", in.args("train_step", 1));
  auto before = cpu.snapshot();
  cpu.call("eval_step", in.args("eval_step", 1));
  auto after = cpu.snapshot();
  for (const char *n : kPersistentNames)
    EXPECT_EQ(exec::firstDifference({before[n]}, {after[n]}, "before", "after"),
              "")
        << "an eval step changed " << n;
  std::vector<exec::ValueData> second =
      cpu.call("train_step", in.args("train_step", 1));
  EXPECT_EQ(exec::firstDifference(first, second, "first", "second"), "");

  // The optimizer (declared rowwise) rewrites both directions of the weight.
  cpu.call("optimizer_step", in.args("optimizer_step", 1));
  exec::ValueData weight = cpu.store.read("fc1.weight");
  ASSERT_EQ(weight.size(), 4u);
  EXPECT_EQ(weight[2].name, "columnwise.data");
  EXPECT_NE(weight[2].bytes, before["fc1.weight"][2].bytes)
      << "the columnwise data did not move with the new weight";
  cpu.call("eval_step", in.args("eval_step", 1));
  std::vector<exec::ValueData> third =
      cpu.call("train_step", in.args("train_step", 1));
  EXPECT_NE(third[1][0].bytes, first[1][0].bytes)
      << "dx = dy W did not see the new columnwise weight";
}

TEST(Session, GpuSessionMatchesTheCpuCallByCall) {
  auto device = rt::Device::open();
  if (!device)
    GTEST_SKIP() << "no GPU: " << device.status().message().substr(0, 40);
  auto stream = rt::Stream::create(*device);
  ASSERT_TRUE(stream);
  auto m = api::CompiledModule::fromSource(kTrainLoop);
  ASSERT_TRUE(m) << m.status().toString();
  rt::KernelCache cache("");
  auto session = api::Session::create(*m, *device, cache);
  ASSERT_TRUE(session) << session.status().toString();
  EXPECT_EQ(session->persistentNames(),
            std::vector<std::string>(std::begin(kPersistentNames),
                                     std::end(kPersistentNames)));
  LoopInputs in;
  CpuLoop cpu{m->program(), {}};

  // The non-persistent slots only: train_step takes x and dy, returns y, dx.
  api::Executable *train = session->function("train_step");
  ASSERT_NE(train, nullptr);
  EXPECT_EQ(train->arguments().size(), 2u);
  ASSERT_EQ(train->results().size(), 2u);
  EXPECT_EQ(train->results()[1].name, "result1");

  // One call on both backends; results compared, the gradient (a GEMM
  // output, equal only within a bound) then given to the GPU from the CPU
  // so the next calls compare bit for bit.
  int64_t step = 0;
  auto call = [&](const std::string &fn) {
    SCOPED_TRACE(fn);
    if (fn == "optimizer_step")
      ++step;
    std::vector<std::vector<uint8_t>> args = in.args(fn, step);
    const cg::Entry &e = *m->program().find(fn);
    std::vector<exec::ValueData> want = cpu.call(fn, args);

    api::Executable *exe = session->function(fn);
    ASSERT_NE(exe, nullptr);
    std::vector<rt::DeviceBuffer> owned;
    std::vector<api::DeviceSpan> argSpans, resultSpans;
    for (const api::Slot &s : exe->arguments()) {
      auto b = rt::DeviceBuffer::allocate(s.bytes);
      ASSERT_TRUE(b);
      ASSERT_TRUE(b->copyFromHost(args[s.index].data(), s.bytes, *stream));
      argSpans.push_back({b->devicePtr(), b->size()});
      owned.push_back(std::move(*b));
    }
    // Persistent tensors the session does not hold yet get their initial
    // value from the caller.
    for (size_t i = 0; i < e.args.size(); ++i) {
      if (!e.persistentArg(i).empty() && !session->holds(e.persistentArg(i)) &&
          !args[i].empty()) {
        ASSERT_TRUE(session->set(e.persistentArg(i), args[i].data(),
                                 args[i].size(), *stream));
      }
    }
    for (const api::Slot &s : exe->results()) {
      auto b = rt::DeviceBuffer::allocate(s.bytes);
      ASSERT_TRUE(b);
      resultSpans.push_back({b->devicePtr(), b->size()});
      owned.push_back(std::move(*b));
    }
    rt::Status st = exe->run(argSpans, resultSpans, *stream);
    ASSERT_TRUE(st) << st.toString();

    // The non-persistent results, grouped by result index.
    std::vector<exec::ValueData> got, expected;
    for (size_t r = 0; r < e.results.size(); ++r)
      if (e.persistentResult(r).empty())
        expected.push_back(want[r]), got.emplace_back();
    size_t slot = 0, group = 0, lastIndex = size_t(-1);
    for (const api::Slot &s : exe->results()) {
      if (lastIndex != size_t(-1) && s.index != lastIndex)
        ++group;
      lastIndex = s.index;
      exec::NamedBuffer nb{
          s.part, s.desc, std::vector<uint8_t>(s.bytes), {}, false};
      ASSERT_TRUE(owned[exe->arguments().size() + slot++].copyToHost(
          nb.bytes.data(), nb.bytes.size(), *stream));
      got[group].push_back(std::move(nb));
    }
    ASSERT_TRUE(stream->synchronize());
    exec::Comparison c = exec::compareResults(expected, got, "cpu", "gpu");
    EXPECT_EQ(c.difference, "");

    // Every persistent value the call wrote, bit for bit (the gradient
    // within its bound, then synchronised).
    for (size_t r = 0; r < e.results.size(); ++r) {
      const std::string &name = e.persistentResult(r);
      if (name.empty())
        continue;
      auto held = session->read(name, *stream);
      ASSERT_TRUE(held) << held.status().toString();
      exec::ValueData gpuValue;
      for (const exec::NamedBuffer &b : want[r])
        for (auto &[part, bytes] : *held)
          if (part == b.name)
            gpuValue.push_back({part, b.desc, bytes, {}, false});
      ASSERT_EQ(gpuValue.size(), want[r].size()) << name;
      exec::Comparison pc =
          exec::compareResults({want[r]}, {gpuValue}, "cpu", "gpu");
      EXPECT_EQ(pc.difference, "") << name;
      if (pc.boundedBuffers) {
        const std::vector<uint8_t> &bytes = want[r][0].bytes;
        ASSERT_TRUE(session->set(name, bytes.data(), bytes.size(), *stream));
        cpu.store.markExact(name);
      }
    }
  };

  // Reading the weight before any function wrote it is refused.
  api::Executable *eval = session->function("eval_step");
  ASSERT_NE(eval, nullptr);
  auto x = rt::DeviceBuffer::allocate(eval->arguments()[0].bytes);
  auto y = rt::DeviceBuffer::allocate(eval->results()[0].bytes);
  ASSERT_TRUE(x && y);
  rt::Status early = eval->run({{x->devicePtr(), x->size()}},
                               {{y->devicePtr(), y->size()}}, *stream);
  EXPECT_EQ(early.code(), rt::StatusCode::InvalidArgument);
  EXPECT_NE(early.message().find("before any entry wrote it"),
            std::string::npos);

  // snap_master rewrites the master weight through a copy after its kernels
  // (its quantize still reads the old value: no in-place update).
  for (const char *fn :
       {"init", "train_step", "eval_step", "train_step", "optimizer_step",
        "snap_master", "eval_step", "train_step", "optimizer_step",
        "train_step", "eval_step"})
    call(fn);
  auto weight = session->read("fc1.weight", *stream);
  ASSERT_TRUE(weight);
  EXPECT_EQ(weight->size(), 4u); // both directions' data and scales
}
