//===- DistributedTest.cpp - the API running one rank of a job ------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// A host program that is one rank of a job (docs/HostApi.md "Several
// GPUs"): the ranks (threads here, processes in a real job) meet through an
// rt::FileCollective; on the CPU backend that is all they need, on GPUs
// each also forms an rt::Communicator (NCCL). Each rank's gathered weight
// must be the whole weight quantized at once, byte for byte.
//
//===----------------------------------------------------------------------===//

#include "Support/RankThreads.h"
#include "te/api/Tejit.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>

using namespace te;

namespace {

// NVFP4 scales by the tensor amax: the ranks reduce it before the cast.
const char *kModule = R"mlir(
func.func @gather(%w: tensor<128x256xbf16>)
    -> !te.qtensor<256x256xbf16, #te.nvfp4<>, rowwise> {
  %q = te.quantize %w {amax_ranks = 2} : tensor<128x256xbf16>
         -> !te.qtensor<128x256xbf16, #te.nvfp4<>, rowwise>
  %g = te.all_gather %q {ranks = 2}
         : !te.qtensor<128x256xbf16, #te.nvfp4<>, rowwise>
        -> !te.qtensor<256x256xbf16, #te.nvfp4<>, rowwise>
  return %g : !te.qtensor<256x256xbf16, #te.nvfp4<>, rowwise>
}
func.func @whole(%w: tensor<256x256xbf16>)
    -> !te.qtensor<256x256xbf16, #te.nvfp4<>, rowwise> {
  %q = te.quantize %w : tensor<256x256xbf16>
         -> !te.qtensor<256x256xbf16, #te.nvfp4<>, rowwise>
  return %q : !te.qtensor<256x256xbf16, #te.nvfp4<>, rowwise>
}
)mlir";

using Buffers = std::vector<api::HostBuffer>;

/// bf16 bit patterns of a weight whose rows grow down the tensor, so the
/// amax lies in rank 1's half.
std::vector<uint8_t> weight() {
  std::vector<uint8_t> w(256 * 256 * 2);
  for (size_t i = 0; i < 256 * 256; ++i) {
    float v = float(int(i * 37 % 101) - 50) * (1.0f + float(i / 256) / 16);
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    uint16_t h = uint16_t(bits >> 16);
    w[2 * i] = uint8_t(h);
    w[2 * i + 1] = uint8_t(h >> 8);
  }
  return w;
}

std::vector<uint8_t> half(const std::vector<uint8_t> &w, int rank) {
  size_t bytes = w.size() / 2;
  return std::vector<uint8_t>(w.begin() + rank * bytes,
                              w.begin() + (rank + 1) * bytes);
}

/// Runs `body` on two threads that meet in a fresh directory.
std::vector<Buffers>
twoRanks(const std::function<rt::Expected<Buffers>(int, rt::HostCollective &)>
             &body) {
  return test::onRanks<Buffers>(2, body);
}

void expectSame(const Buffers &want, const Buffers &got, int rank) {
  ASSERT_EQ(got.size(), want.size()) << "rank " << rank;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].name, want[i].name);
    EXPECT_TRUE(got[i].bytes == want[i].bytes)
        << "rank " << rank << " " << want[i].name;
  }
}

} // namespace

TEST(Distributed, HostSessionRanksGatherTheWholeQuantization) {
  auto m = api::CompiledModule::fromSource(kModule);
  ASSERT_TRUE(m) << m.status().toString();
  std::vector<uint8_t> w = weight();
  auto want = m->runOnCpu("whole", {w});
  ASSERT_TRUE(want) << want.status().toString();
  auto got = twoRanks([&](int r, rt::HostCollective &host) {
    auto session = api::HostSession::create(*m);
    if (!session)
      return rt::Expected<Buffers>(session.status());
    session->setCollective(&host);
    return session->call("gather", {half(w, r)});
  });
  for (int r = 0; r < 2; ++r)
    expectSame(*want, got[size_t(r)], r);
  // runOnCpu takes the collective too.
  auto direct = twoRanks([&](int r, rt::HostCollective &host) {
    return m->runOnCpu("gather", {half(w, r)}, &host);
  });
  for (int r = 0; r < 2; ++r)
    expectSame(*want, direct[size_t(r)], r);
}

TEST(Distributed, WithoutItsRanksAFunctionSaysHowToRun) {
  auto m = api::CompiledModule::fromSource(kModule);
  ASSERT_TRUE(m);
  auto session = api::HostSession::create(*m);
  ASSERT_TRUE(session);
  auto out = session->call("gather", {half(weight(), 0)});
  ASSERT_FALSE(out);
  EXPECT_NE(out.status().message().find("ranks"), std::string::npos)
      << out.status().message();
}

TEST(Distributed, SessionRanksGatherOnTwoGpus) {
  rt::Expected<int> gpus = rt::Device::count();
  if (!gpus || *gpus < 2)
    GTEST_SKIP() << "2 ranks need 2 GPUs";
  if (auto v = rt::Communicator::ncclVersion(); !v)
    GTEST_SKIP() << v.status().toString();
  auto m = api::CompiledModule::fromSource(kModule);
  ASSERT_TRUE(m);
  std::vector<uint8_t> w = weight();
  auto want = m->runOnCpu("whole", {w});
  ASSERT_TRUE(want);
  auto got = twoRanks([&](int r,
                          rt::HostCollective &host) -> rt::Expected<Buffers> {
    auto rank = test::GpuRank::open(r, &host);
    if (!rank)
      return rank.status();
    const rt::Stream *stream = &rank->stream;
    rt::KernelCache cache;
    auto session = api::Session::create(*m, rank->device, cache);
    if (!session)
      return session.status();
    session->setCommunicator(rank->comm.get());
    api::Executable *fn = session->function("gather");
    std::vector<rt::DeviceBuffer> owned;
    std::vector<api::DeviceSpan> args, results;
    for (const api::Slot &s : fn->arguments()) {
      auto b = rt::DeviceBuffer::allocate(s.bytes);
      if (!b)
        return b.status();
      TE_RETURN_IF_ERROR(b->copyFromHost(half(w, r).data(), s.bytes, *stream));
      args.push_back({b->devicePtr(), b->size()});
      owned.push_back(std::move(*b));
    }
    Buffers out;
    for (const api::Slot &s : fn->results()) {
      auto b = rt::DeviceBuffer::allocate(s.bytes);
      if (!b)
        return b.status();
      results.push_back({b->devicePtr(), b->size()});
      owned.push_back(std::move(*b));
      out.push_back({s.name, s.index, s.part, s.desc, {}});
    }
    TE_RETURN_IF_ERROR(fn->run(args, results, *stream));
    for (size_t i = 0; i < out.size(); ++i) {
      out[i].bytes.resize(fn->results()[i].bytes);
      TE_RETURN_IF_ERROR(owned[args.size() + i].copyToHost(
          out[i].bytes.data(), out[i].bytes.size(), *stream));
    }
    TE_RETURN_IF_ERROR(stream->synchronize());
    return out;
  });
  for (int r = 0; r < 2; ++r)
    expectSame(*want, got[size_t(r)], r);
}
