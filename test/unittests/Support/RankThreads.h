//===- RankThreads.h - the ranks of a job as threads of a test --*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Tests of distributed programs run each rank on a thread of the test
// process; the ranks meet through an rt::FileCollective in a fresh
// directory, as te-run --ranks's processes do.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TEST_SUPPORT_RANKTHREADS_H
#define TE_TEST_SUPPORT_RANKTHREADS_H

#include "te/runtime/Collective.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace te::test {

/// A fresh directory, removed with everything in it at the end.
struct TempDir {
  std::string path;
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "te-ranks-XXXXXX").string();
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    path = mkdtemp(name.data()) ? name.data() : "";
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

/// Runs `body(rank, host)` on `ranks` threads that meet in one fresh
/// directory; each rank's result (a failed rank's error is a test failure).
template <typename T>
std::vector<T>
onRanks(int ranks,
        const std::function<rt::Expected<T>(int, rt::HostCollective &)> &body) {
  TempDir dir;
  std::vector<T> out(static_cast<size_t>(ranks));
  std::vector<std::string> errors(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      auto host = rt::FileCollective::create(dir.path, r, ranks, 120);
      if (!host) {
        errors[size_t(r)] = host.status().toString();
        return;
      }
      rt::Expected<T> result = body(r, **host);
      if (!result)
        errors[size_t(r)] = result.status().toString();
      else
        out[size_t(r)] = std::move(*result);
    });
  for (std::thread &t : threads)
    t.join();
  for (int r = 0; r < ranks; ++r)
    EXPECT_EQ(errors[size_t(r)], "") << "rank " << r;
  return out;
}

/// What a rank needs on GPU `ordinal`: the device, a stream and, with
/// `host`, the job's NCCL communicator (every rank must open one).
struct GpuRank {
  rt::Device device;
  rt::Stream stream;
  std::unique_ptr<rt::Communicator> comm;

  static rt::Expected<GpuRank> open(int ordinal, rt::HostCollective *host) {
    auto dev = rt::Device::open(ordinal);
    if (!dev)
      return dev.status();
    auto stream = rt::Stream::create(*dev);
    if (!stream)
      return stream.status();
    std::unique_ptr<rt::Communicator> comm;
    if (host) {
      auto c = rt::Communicator::create(*dev, *host);
      if (!c)
        return c.status();
      comm = std::move(*c);
    }
    return GpuRank{std::move(*dev), std::move(*stream), std::move(comm)};
  }
};

} // namespace te::test

#endif // TE_TEST_SUPPORT_RANKTHREADS_H
