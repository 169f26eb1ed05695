//===- KernelCacheTest.cpp - memory and disk kernel cache -----------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Uses an injected "compiler" (the CUBIN is a function of the source and
// options) so the cache logic is tested without NVRTC: hits, keys, disk
// round trips, corrupt/truncated/foreign files, concurrent processes.
//
//===----------------------------------------------------------------------===//

#include "te/runtime/KernelCache.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <dirent.h>
#include <fstream>
#include <mutex>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace te::rt;

namespace {

/// A fresh, empty directory under /tmp.
std::string freshDir() {
  char tmpl[] = "/tmp/tejit-cache-test-XXXXXX";
  return mkdtemp(tmpl);
}

struct FakeCompiler {
  int calls = 0;
  Expected<CompiledKernel> operator()(const std::string &src,
                                      const CompileOptions &o) {
    ++calls;
    CompiledKernel k;
    std::string payload = "CUBIN[" + o.arch + "]";
    for (const std::string &f : canonicalOptions(o))
      payload += f + ";";
    payload += src;
    k.cubin.assign(payload.begin(), payload.end());
    return k;
  }
};

KernelCache makeCache(const std::string &dir, FakeCompiler &fc,
                      const std::string &tag = "nvrtc=13.0;driver=13000") {
  return KernelCache(
      dir,
      [&fc](const std::string &s, const CompileOptions &o) { return fc(s, o); },
      tag);
}

std::vector<std::string> listDir(const std::string &dir) {
  std::vector<std::string> out;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d))
      if (e->d_name[0] != '.' || std::string(e->d_name).size() > 2)
        if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
          out.push_back(e->d_name);
    closedir(d);
  }
  return out;
}

TEST(KernelCache, CanonicalOptionsAreSortedAndUnique) {
  CompileOptions a{"sm_90a", {"-lineinfo", "--maxrregcount=64", "-lineinfo"}};
  CompileOptions b{"sm_90a", {"--maxrregcount=64", "-lineinfo"}};
  EXPECT_EQ(canonicalOptions(a), canonicalOptions(b));
  std::vector<std::string> expected = {"-std=c++17",
                                       "--gpu-architecture=sm_90a",
                                       "--maxrregcount=64", "-lineinfo"};
  EXPECT_EQ(canonicalOptions(a), expected);
}

TEST(KernelCache, MemoryHitReturnsTheSameBinary) {
  FakeCompiler fc;
  KernelCache cache = makeCache("", fc);
  auto a = cache.getOrCompile("kernel A", {});
  auto b = cache.getOrCompile("kernel A", {});
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->get(), b->get());
  EXPECT_EQ(fc.calls, 1);
  EXPECT_EQ(cache.stats().memoryHits, 1u);
  // Another source, another arch, another flag: each compiles once.
  ASSERT_TRUE(cache.getOrCompile("kernel B", {}));
  ASSERT_TRUE(cache.getOrCompile("kernel A", {"sm_100a", {}}));
  ASSERT_TRUE(cache.getOrCompile("kernel A", {"sm_90a", {"-lineinfo"}}));
  EXPECT_EQ(fc.calls, 4);
  // Flag order does not matter.
  ASSERT_TRUE(
      cache.getOrCompile("kernel A", {"sm_90a", {"-lineinfo", "-lineinfo"}}));
  EXPECT_EQ(fc.calls, 4);
}

TEST(KernelCache, KeysCoverSourceOptionsAndVersions) {
  FakeCompiler fc;
  KernelCache c1 = makeCache("", fc, "nvrtc=13.0;driver=13000");
  KernelCache c2 = makeCache("", fc, "nvrtc=13.1;driver=13000");
  std::string k = c1.diskKey("src", {});
  EXPECT_EQ(k.size(), 64u);
  EXPECT_EQ(k, c1.diskKey("src", {}));
  EXPECT_NE(k, c1.diskKey("src2", {}));
  EXPECT_NE(k, c1.diskKey("src", {"sm_89", {}}));
  EXPECT_NE(k, c2.diskKey("src", {}));
  // Length-prefixed fields: moving bytes between fields changes the key.
  EXPECT_NE(c1.diskKey("ab", {"sm_90a", {"c"}}),
            c1.diskKey("abc", {"sm_90a", {}}));
}

TEST(KernelCache, DiskRoundTrip) {
  std::string dir = freshDir();
  FakeCompiler fc1, fc2;
  KernelCache writer = makeCache(dir, fc1);
  auto a = writer.getOrCompile("kernel", {});
  ASSERT_TRUE(a);
  KernelCache reader = makeCache(dir, fc2);
  auto b = reader.getOrCompile("kernel", {});
  ASSERT_TRUE(b);
  EXPECT_EQ(fc2.calls, 0);
  EXPECT_EQ(reader.stats().diskHits, 1u);
  EXPECT_EQ((*a)->cubin, (*b)->cubin);
  // No temporary files are left behind.
  for (const std::string &f : listDir(dir))
    EXPECT_EQ(f.find(".tmp"), std::string::npos) << f;
}

/// Damages the one cache file of (source, opts) with `damage`, then checks
/// that a fresh cache rejects it, recompiles, and rewrites a good file.
void expectRejectedAndRepaired(
    const std::function<void(const std::string &path)> &damage) {
  std::string dir = freshDir();
  FakeCompiler fc;
  KernelCache first = makeCache(dir, fc);
  ASSERT_TRUE(first.getOrCompile("kernel body", {}));
  std::string path = first.diskPath(first.diskKey("kernel body", {}));
  damage(path);

  FakeCompiler fc2;
  KernelCache second = makeCache(dir, fc2);
  auto k = second.getOrCompile("kernel body", {});
  ASSERT_TRUE(k);
  EXPECT_EQ(fc2.calls, 1) << "a damaged file must not be used";
  EXPECT_EQ(second.stats().diskRejects, 1u);
  FakeCompiler reference;
  EXPECT_EQ((*k)->cubin, reference("kernel body", {})->cubin);

  FakeCompiler fc3;
  KernelCache third = makeCache(dir, fc3);
  ASSERT_TRUE(third.getOrCompile("kernel body", {}));
  EXPECT_EQ(fc3.calls, 0) << "the rewritten file must be good";
  EXPECT_EQ(third.stats().diskHits, 1u);
}

TEST(KernelCache, CorruptPayloadIsRejected) {
  expectRejectedAndRepaired([](const std::string &path) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-3, std::ios::end);
    char c;
    f.get(c);
    f.seekp(-3, std::ios::end);
    f.put(char(c ^ 0x5a));
  });
}

TEST(KernelCache, TruncatedFileIsRejected) {
  expectRejectedAndRepaired([](const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    std::string all((std::istreambuf_iterator<char>(in)), {});
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(all.data(), all.size() / 2);
  });
}

TEST(KernelCache, EmptyAndGarbageFilesAreRejected) {
  expectRejectedAndRepaired([](const std::string &path) {
    std::ofstream(path, std::ios::binary | std::ios::trunc);
  });
  expectRejectedAndRepaired([](const std::string &path) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << "not a cubin";
  });
}

TEST(KernelCache, ForeignKeyIsRejected) {
  expectRejectedAndRepaired([](const std::string &path) {
    // Replace the file by a valid cache file written for another kernel.
    std::string dir = path.substr(0, path.rfind('/'));
    FakeCompiler fc;
    KernelCache other = makeCache(dir, fc);
    ASSERT_TRUE(other.getOrCompile("another kernel", {}));
    std::rename(other.diskPath(other.diskKey("another kernel", {})).c_str(),
                path.c_str());
  });
}

TEST(KernelCache, ConcurrentProcessesShareADirectory) {
  std::string dir = freshDir();
  const int kProcs = 6, kKernels = 12;
  std::vector<pid_t> pids;
  for (int p = 0; p < kProcs; ++p) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      FakeCompiler fc;
      KernelCache c = makeCache(dir, fc);
      bool ok = true;
      for (int round = 0; round < 20; ++round) {
        c.clearMemory();
        for (int k = 0; k < kKernels; ++k)
          ok &= bool(c.getOrCompile(
              "kernel " + std::to_string(k) + std::string(4000, 'x'), {}));
      }
      _exit(ok && c.stats().diskRejects == 0 ? 0 : 1);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "a process saw a partial or corrupt file";
  }
  FakeCompiler fc;
  KernelCache check = makeCache(dir, fc);
  for (int k = 0; k < kKernels; ++k)
    ASSERT_TRUE(check.getOrCompile(
        "kernel " + std::to_string(k) + std::string(4000, 'x'), {}));
  EXPECT_EQ(fc.calls, 0);
  EXPECT_EQ(check.stats().diskRejects, 0u);
  EXPECT_EQ(listDir(dir).size(), size_t(kKernels)) << "stray files";
}

TEST(KernelCache, UnwritableDirectoryOnlyCostsRecompiles) {
  FakeCompiler fc;
  KernelCache c = makeCache("/proc/tejit-cannot-write-here", fc);
  ASSERT_TRUE(c.getOrCompile("k", {}));
  c.clearMemory();
  ASSERT_TRUE(c.getOrCompile("k", {}));
  EXPECT_EQ(fc.calls, 2);
}

} // namespace

// A plan's warm-up: distinct kernels compile at the same time on several
// threads, each once, with a progress report per kernel.
TEST(KernelCache, CompileAllRunsKernelsConcurrentlyAndOnce) {
  std::mutex mu;
  int running = 0, mostAtOnce = 0, calls = 0;
  KernelCache cache(
      "",
      [&](const std::string &src, const CompileOptions &) {
        {
          std::lock_guard<std::mutex> lock(mu);
          ++calls;
          mostAtOnce = std::max(mostAtOnce, ++running);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        std::lock_guard<std::mutex> lock(mu);
        --running;
        CompiledKernel k;
        k.cubin.assign(src.begin(), src.end());
        return Expected<CompiledKernel>(std::move(k));
      },
      "tag");
  std::vector<KernelRequest> requests;
  for (int i = 0; i < 6; ++i)
    requests.push_back({"k" + std::to_string(i), "source " + std::to_string(i),
                        CompileOptions()});
  requests.push_back(requests[2]); // the same kernel twice: compiled once
  std::vector<CompileProgress> reports;
  Expected<size_t> n =
      cache.compileAll(requests, 4, [&](const CompileProgress &p) {
        reports.push_back(p); // compileAll serialises the calls
      });
  ASSERT_TRUE(n) << n.status().message();
  EXPECT_EQ(*n, 6u);
  EXPECT_EQ(calls, 6);
  EXPECT_EQ(mostAtOnce, 4);
  ASSERT_EQ(reports.size(), 6u);
  for (size_t i = 0; i < reports.size(); ++i) {
    EXPECT_EQ(reports[i].done, i + 1);
    EXPECT_EQ(reports[i].total, 6u);
    EXPECT_TRUE(reports[i].cold);
  }
  // Everything is in memory now: a second warm-up compiles nothing.
  reports.clear();
  ASSERT_TRUE(cache.compileAll(
      requests, 4, [&](const CompileProgress &p) { reports.push_back(p); }));
  EXPECT_EQ(calls, 6);
  ASSERT_EQ(reports.size(), 6u);
  EXPECT_FALSE(reports.back().cold);
}

TEST(KernelCache, CompileAllNamesTheKernelThatFailed) {
  KernelCache cache(
      "",
      [](const std::string &src, const CompileOptions &) {
        if (src == "bad")
          return Expected<CompiledKernel>(
              Status(StatusCode::CompileError, "NVRTC: syntax error"));
        return Expected<CompiledKernel>(CompiledKernel());
      },
      "tag");
  Expected<size_t> n =
      cache.compileAll({{"good_kernel", "good", CompileOptions()},
                        {"te_quantize_x", "bad", CompileOptions()},
                        {"other", "fine", CompileOptions()}});
  ASSERT_FALSE(n);
  const Status &s = n.status();
  EXPECT_EQ(s.code(), StatusCode::CompileError);
  EXPECT_NE(s.message().find("kernel 'te_quantize_x': NVRTC: syntax error"),
            std::string::npos)
      << s.message();
}
