//===- ApiTest.cpp - The host C++ API
//--------------------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Compiling from text and from a ModuleOp, located errors, and (on a GPU)
// running a function on caller-owned device buffers through the kernel
// cache, bit-exact against the CPU backend. GPU cases skip without one.
//
//===----------------------------------------------------------------------===//

#include "te/api/FromMlir.h"
#include "te/exec/Compare.h"
#include "te/exec/CudaRunner.h"

#include "dialect/te/TeDialect.h"

#include "dialect/te/TeOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <random>

using namespace te;

namespace {

const char *kModule = R"mlir(
func.func @both(%x: tensor<256x192xbf16>)
    -> !te.qtensor<256x192xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<256x192xbf16>
         -> !te.qtensor<256x192xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>
  return %q : !te.qtensor<256x192xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>
}
func.func @dbias(%x: tensor<256x192xbf16>) -> tensor<192xf32> {
  %db = te.bias_grad %x : tensor<256x192xbf16> -> tensor<192xf32>
  return %db : tensor<192xf32>
}
)mlir";

std::vector<uint8_t> randomBf16(size_t n, unsigned seed) {
  std::vector<uint8_t> out(2 * n);
  std::mt19937 rng(seed);
  for (size_t i = 0; i < n; ++i) {
    uint16_t v = uint16_t(rng()) & 0x7F7F; // finite, both magnitudes
    v |= uint16_t(rng() & 1) << 15;
    out[2 * i] = uint8_t(v);
    out[2 * i + 1] = uint8_t(v >> 8);
  }
  return out;
}

} // namespace

TEST(HostApi, CompilesTextAndListsFunctions) {
  auto m = api::CompiledModule::fromSource(kModule);
  ASSERT_TRUE(m) << m.status().toString();
  EXPECT_EQ(m->functionNames(), (std::vector<std::string>{"both", "dbias"}));
  const cg::Entry *both = m->program().find("both");
  ASSERT_NE(both, nullptr);
  EXPECT_EQ(both->kernels.size(), 1u);
  EXPECT_EQ(m->program().arch, "sm_90a");
}

TEST(HostApi, ParseErrorNamesTheLocation) {
  auto m = api::CompiledModule::fromSource(
      "func.func @f(%x: tensor<4x4xbf16>) {\n  te.nonsense %x\n}\n", {},
      "bad.mlir");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.status().code(), rt::StatusCode::InvalidArgument);
  EXPECT_NE(m.status().message().find("bad.mlir:2:"), std::string::npos)
      << m.status().message();
}

TEST(HostApi, CompileErrorNamesTheLocation) {
  // Verifier error: the result shape differs from the input's.
  auto m = api::CompiledModule::fromSource(R"mlir(
func.func @f(%x: tensor<64x64xbf16>) -> tensor<32xf32> {
  %db = te.bias_grad %x : tensor<64x64xbf16> -> tensor<32xf32>
  return %db : tensor<32xf32>
})mlir",
                                           {}, "shape.mlir");
  ASSERT_FALSE(m);
  EXPECT_NE(m.status().message().find("shape.mlir:3:"), std::string::npos)
      << m.status().message();
}

TEST(HostApi, CompilesAModuleOpBuiltInCxx) {
  // func.func @dbias(%x: tensor<128x96xbf16>) -> tensor<96xf32>, built with
  // MLIR's builders instead of parsed.
  mlir::MLIRContext context;
  context.getOrLoadDialect<mlir::te::TeDialect>();
  context.getOrLoadDialect<mlir::func::FuncDialect>();
  mlir::OpBuilder b(&context);
  mlir::Location loc = mlir::FileLineColLoc::get(&context, "built.cpp", 1, 1);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(loc);
  auto x = mlir::RankedTensorType::get({128, 96}, b.getBF16Type());
  auto db = mlir::RankedTensorType::get({96}, b.getF32Type());
  b.setInsertionPointToEnd(module->getBody());
  auto fn =
      mlir::func::FuncOp::create(b, loc, "dbias", b.getFunctionType({x}, {db}));
  b.setInsertionPointToStart(fn.addEntryBlock());
  auto grad = mlir::te::BiasGradOp::create(b, loc, db, fn.getArgument(0));
  mlir::func::ReturnOp::create(b, loc, grad.getResult());

  auto m = api::compileModule(*module, {"sm_90a"});
  ASSERT_TRUE(m) << m.status().toString();
  ASSERT_EQ(m->functionNames(), std::vector<std::string>{"dbias"});
  std::vector<uint8_t> in = randomBf16(128 * 96, 5);
  auto out = exec::runCpu(m->program(), *m->program().find("dbias"), {in});
  ASSERT_TRUE(out) << out.status().toString();
  EXPECT_EQ((*out)[0][0].bytes.size(), 96u * 4);

  // A located error from a module built in C++: a shape the op rejects.
  auto bad = mlir::RankedTensorType::get({95}, b.getF32Type());
  b.setInsertionPointToEnd(module->getBody());
  auto fn2 =
      mlir::func::FuncOp::create(b, loc, "bad", b.getFunctionType({x}, {bad}));
  b.setInsertionPointToStart(fn2.addEntryBlock());
  auto g2 = mlir::te::BiasGradOp::create(
      b, mlir::FileLineColLoc::get(&context, "built.cpp", 42, 7), bad,
      fn2.getArgument(0));
  mlir::func::ReturnOp::create(b, loc, g2.getResult());
  context.getDiagEngine().registerHandler(
      [](mlir::Diagnostic &) { return mlir::success(); }); // keep stderr quiet
  auto failed = api::compileModule(*module, {"sm_90a"});
  ASSERT_FALSE(failed) << "compiled a module that does not verify";
  EXPECT_NE(failed.status().message().find("built.cpp:42:7"), std::string::npos)
      << failed.status().message();
}

TEST(HostApi, RunsOnCallerBuffersBitExactOnGpu) {
  auto device = rt::Device::open();
  if (!device)
    GTEST_SKIP() << "no GPU: " << device.status().message().substr(0, 40);
  auto stream = rt::Stream::create(*device);
  ASSERT_TRUE(stream);
  auto m = api::CompiledModule::fromSource(kModule);
  ASSERT_TRUE(m) << m.status().toString();
  rt::KernelCache cache("");

  auto unknown = m->load("nope", *device, cache);
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.status().message().find("it has: both, dbias"),
            std::string::npos);

  auto fn = m->load("both", *device, cache);
  ASSERT_TRUE(fn) << fn.status().toString();
  ASSERT_EQ(fn->arguments().size(), 1u);
  // Rowwise and columnwise data + scale_inv.
  ASSERT_EQ(fn->results().size(), 4u);
  EXPECT_EQ(fn->results()[0].name, "result0.rowwise.data");
  EXPECT_EQ(fn->results()[3].name, "result0.columnwise.scale_inv");

  std::vector<uint8_t> x = randomBf16(256 * 192, 3);
  std::vector<rt::DeviceBuffer> owned;
  std::vector<api::DeviceSpan> args, results;
  for (const api::Slot &s : fn->arguments()) {
    auto b = rt::DeviceBuffer::allocate(s.bytes);
    ASSERT_TRUE(b);
    args.push_back({b->devicePtr(), b->size()});
    owned.push_back(std::move(*b));
  }
  for (const api::Slot &s : fn->results()) {
    auto b = rt::DeviceBuffer::allocate(s.bytes);
    ASSERT_TRUE(b);
    ASSERT_TRUE(b->fill(0xA5, *stream));
    results.push_back({b->devicePtr(), b->size()});
    owned.push_back(std::move(*b));
  }
  ASSERT_TRUE(owned[0].copyFromHost(x.data(), x.size(), *stream));

  // Too small a buffer is refused with the slot's name.
  std::vector<api::DeviceSpan> small = results;
  small[1].bytes -= 1;
  rt::Status bad = fn->run(args, small, *stream);
  EXPECT_EQ(bad.code(), rt::StatusCode::InvalidArgument);
  EXPECT_NE(bad.message().find("result0.rowwise.scale_inv"), std::string::npos);

  ASSERT_TRUE(fn->run(args, results, *stream));
  std::vector<exec::ValueData> gpu(1);
  for (size_t i = 0; i < results.size(); ++i) {
    exec::NamedBuffer nb;
    nb.name = fn->results()[i].part;
    nb.desc = fn->results()[i].desc;
    nb.bytes.resize(fn->results()[i].bytes);
    ASSERT_TRUE(
        owned[1 + i].copyToHost(nb.bytes.data(), nb.bytes.size(), *stream));
    gpu[0].push_back(std::move(nb));
  }
  ASSERT_TRUE(stream->synchronize());
  auto cpu = exec::runCpu(m->program(), *m->program().find("both"), {x});
  ASSERT_TRUE(cpu);
  EXPECT_EQ(exec::firstDifference(*cpu, gpu, "cpu", "gpu"), "");

  // A second load of the same function compiles nothing.
  uint64_t compiles = cache.stats().compiles;
  auto again = m->load("both", *device, cache);
  ASSERT_TRUE(again);
  EXPECT_EQ(cache.stats().compiles, compiles);
  EXPECT_GT(cache.stats().memoryHits, 0u);
}

// The grouped GEMMs' path options act on te-level IR only: a module that is
// already kernel-level is refused with the option's name.
TEST(HostApi, GroupedPathOptionsNeedTeLevelIr) {
  const char *lowered = "func.func @f() {\n  return\n}\n";
  for (int which = 0; which < 2; ++which) {
    api::CompileOptions opts;
    (which == 0 ? opts.groupedMxfp8 : opts.groupedNvfp4) = "direct";
    auto m = api::CompiledModule::fromSource(lowered, opts, "lowered.mlir");
    ASSERT_FALSE(m);
    EXPECT_NE(m.status().message().find(
                  std::string(which == 0 ? "grouped-mxfp8" : "grouped-nvfp4") +
                  " applies to te-level IR"),
              std::string::npos)
        << m.status().message();
  }
  EXPECT_TRUE(api::CompiledModule::fromSource(lowered));
}
