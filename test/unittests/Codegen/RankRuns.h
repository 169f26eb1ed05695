//===- RankRuns.h - one entry run as every rank of a job --------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The distributed tests' runs (AllGatherTest, ShardedQuantizeTest): an
// entry as one rank of a job on the CPU backend or on GPU `rank` through
// NCCL, the ranks being threads of the test (Support/RankThreads.h), and
// the comparison of every rank's results with the whole tensor's.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TEST_CODEGEN_RANKRUNS_H
#define TE_TEST_CODEGEN_RANKRUNS_H

#include "Support/RankThreads.h"

#include "te/codegen/Program.h"
#include "te/exec/CpuBackend.h"
#include "te/exec/CudaRunner.h"
#include "te/runtime/Collective.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

namespace te::test {

using Results = std::vector<exec::ValueData>;
using Args = std::vector<std::vector<uint8_t>>;

/// Each rank's results (RankThreads.h).
inline std::vector<Results>
onRanks(int ranks,
        const std::function<rt::Expected<Results>(int, rt::HostCollective &)>
            &body) {
  return onRanks<Results>(ranks, body);
}

/// Entry 0 of `p` on the CPU backend, as a rank of `host`'s job.
inline rt::Expected<Results> onCpu(const cg::Program &p, const Args &args,
                            rt::HostCollective *host) {
  return exec::runCpu(p, p.entries[0], args, nullptr, nullptr, nullptr, {},
                      host);
}

/// Entry 0 of `p` on GPU `ordinal` (outputs poisoned first), once per
/// element of `calls` (its arguments); with `host`, as that rank of the
/// job, through NCCL. `captured`: the entry runs once, is captured into a
/// CUDA graph and replayed for each call (new argument bytes in the same
/// buffers before each replay), as a training loop does step after step.
inline rt::Expected<std::vector<Results>>
onGpuCalls(const cg::Program &p, const std::vector<Args> &calls, int ordinal,
           rt::HostCollective *host, bool captured = false) {
  auto rank = test::GpuRank::open(ordinal, host);
  if (!rank)
    return rank.status();
  const rt::Stream *stream = &rank->stream;
  rt::KernelCache cache;
  auto runner = exec::CudaRunner::create(p, p.entries[0], rank->device, cache);
  if (!runner)
    return runner.status();
  runner->setCommunicator(rank->comm.get());
  auto setArguments = [&](const Args &args) {
    for (size_t i = 0; i < args.size(); ++i)
      TE_RETURN_IF_ERROR(runner->setArgument(i, args[i], *stream));
    return rt::Status::ok();
  };
  TE_RETURN_IF_ERROR(runner->poison(0xA5, *stream));
  if (captured) {
    // One eager run first: NCCL sets up its connections on a
    // communicator's first collectives, which a capture may not do.
    TE_RETURN_IF_ERROR(setArguments(calls.front()));
    TE_RETURN_IF_ERROR(runner->run(*stream));
    TE_RETURN_IF_ERROR(runner->poison(0xA5, *stream));
    TE_RETURN_IF_ERROR(runner->capture(*stream));
  }
  std::vector<Results> out;
  for (const Args &args : calls) {
    TE_RETURN_IF_ERROR(setArguments(args));
    TE_RETURN_IF_ERROR(captured ? runner->replay(*stream)
                                : runner->run(*stream));
    auto r = runner->results(*stream);
    if (!r)
      return r.status();
    out.push_back(std::move(*r));
  }
  return out;
}

/// One call of onGpuCalls.
inline rt::Expected<Results> onGpu(const cg::Program &p, const Args &args, int ordinal,
                            rt::HostCollective *host) {
  auto out = onGpuCalls(p, {args}, ordinal, host);
  if (!out)
    return out.status();
  return std::move(out->front());
}

/// Why a test of `ranks` GPU ranks cannot run here, or "".
inline std::string gpuRanksMissing(int ranks) {
  rt::Expected<int> gpus = rt::Device::count();
  if (!gpus)
    return gpus.status().toString();
  if (*gpus < ranks)
    return std::to_string(ranks) + " ranks need " + std::to_string(ranks) +
           " GPUs, found " + std::to_string(*gpus);
  if (auto v = rt::Communicator::ncclVersion(); !v)
    return v.status().toString();
  return "";
}

inline void expectWhole(const exec::ValueData &whole, const exec::ValueData &got,
                 const std::string &who) {
  ASSERT_EQ(got.size(), whole.size()) << who;
  for (size_t i = 0; i < whole.size(); ++i) {
    EXPECT_EQ(got[i].name, whole[i].name) << who;
    EXPECT_TRUE(got[i].desc == whole[i].desc) << who << " " << whole[i].name;
    size_t differ = 0;
    for (size_t b = 0; b < std::min(got[i].bytes.size(), whole[i].bytes.size());
         ++b)
      differ += got[i].bytes[b] != whole[i].bytes[b];
    EXPECT_EQ(differ, 0u) << who << " " << whole[i].name << ": " << differ
                          << " of " << whole[i].bytes.size()
                          << " bytes differ from the whole tensor's";
  }
}

/// Every result buffer of `got` equals `want`'s, byte for byte.
inline void expectSameResults(const std::vector<exec::ValueData> &want,
                       const std::vector<exec::ValueData> &got,
                       const std::string &who) {
  ASSERT_EQ(got.size(), want.size()) << who;
  for (size_t r = 0; r < want.size(); ++r)
    expectWhole(want[r], got[r], who + " result " + std::to_string(r));
}

} // namespace te::test

#endif // TE_TEST_CODEGEN_RANKRUNS_H
