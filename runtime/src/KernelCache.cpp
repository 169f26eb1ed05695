//===- KernelCache.cpp - compiled-kernel cache ----------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// File format (little-endian):
//   "TEJITKC1" | u32 key length | key bytes | u64 payload size |
//   32-byte SHA-256 of the payload | payload (the CUBIN)
//
//===----------------------------------------------------------------------===//

#include "te/runtime/KernelCache.h"

#include "te/device/EmbeddedHeaders.h"
#include "te/runtime/Cutlass.h"

#include "CudaApi.h"
#include "Sha256.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace te::rt {

static constexpr char kMagic[8] = {'T', 'E', 'J', 'I', 'T', 'K', 'C', '1'};

/// A fast 64-bit hash for the in-memory map (8 bytes per step); entries are
/// confirmed by comparing the full source and options.
static uint64_t fastHash(const std::string &s, uint64_t h) {
  const uint64_t mul = 0x9E3779B97F4A7C15ull;
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * mul;
    h ^= h >> 29;
  }
  for (; i < s.size(); ++i)
    h = (h ^ uint8_t(s[i])) * mul;
  return h ^ (h >> 32);
}

static std::string defaultVersionTag() {
  std::string tag = "nvrtc=";
  Expected<std::string> v = nvrtcVersion();
  tag += v ? *v : "none";
  tag += ";driver=";
  Expected<const detail::DriverApi *> d = detail::driverApi();
  tag += d ? std::to_string((*d)->driverVersion) : "none";
  // A kernel's source includes the device library and (GEMMs) CUTLASS by
  // name: a new tejit must not load CUBINs built from older headers.
  static const std::string library = [] {
    detail::Sha256 h;
    for (size_t i = 0; i < numDeviceHeaders(); ++i) {
      h.update(std::string(deviceHeaders()[i].name));
      h.update(std::string(deviceHeaders()[i].contents));
    }
    return detail::Sha256::hex(h.finish()).substr(0, 16);
  }();
  tag += ";devlib=" + library + ";cutlass=" + kCutlassVersion;
  return tag;
}

std::string KernelCache::defaultDiskDir() {
  if (const char *d = std::getenv("TE_CACHE_DIR"))
    return d;
  if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::string(x) + "/tejit";
  if (const char *h = std::getenv("HOME"); h && *h)
    return std::string(h) + "/.cache/tejit";
  return "";
}

KernelCache::KernelCache(std::string diskDir)
    : KernelCache(
          std::move(diskDir),
          [](const std::string &src, const CompileOptions &o) {
            return compileCuda(src, "tejit_kernel", o);
          },
          defaultVersionTag()) {}

KernelCache::KernelCache(std::string diskDir, CompileFn compile,
                         std::string versionTag)
    : dir_(std::move(diskDir)), compile_(std::move(compile)),
      versionTag_(std::move(versionTag)) {}

std::string KernelCache::diskKey(const std::string &source,
                                 const CompileOptions &opts) const {
  detail::Sha256 h;
  auto field = [&](const std::string &s) {
    uint64_t n = s.size();
    h.update(&n, sizeof(n)); // length-prefixed: no ambiguity between fields
    h.update(s);
  };
  field("tejit-kernel-cache-v1");
  field(versionTag_);
  for (const std::string &o : canonicalOptions(opts))
    field(o);
  field(source);
  return detail::Sha256::hex(h.finish());
}

std::string KernelCache::diskPath(const std::string &key) const {
  return dir_ + "/" + key + ".cubin";
}

CacheStats KernelCache::stats() const {
  CacheStats s;
  s.memoryHits = memoryHits_;
  s.diskHits = diskHits_;
  s.compiles = compiles_;
  s.diskRejects = diskRejects_;
  return s;
}

void KernelCache::clearMemory() {
  std::lock_guard<std::mutex> lock(mu_);
  memory_.clear();
}

static bool readAll(const std::string &path, std::vector<char> &out) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return false;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0)
    out.insert(out.end(), buf, buf + n);
  bool ok = !std::ferror(f);
  std::fclose(f);
  return ok;
}

Expected<std::shared_ptr<const CompiledKernel>>
KernelCache::loadFromDisk(const std::string &key) {
  std::vector<char> bytes;
  if (dir_.empty() || !readAll(diskPath(key), bytes))
    return Status(StatusCode::IoError, "not cached");
  auto reject = [&](const char *why) {
    ++diskRejects_;
    return Status(StatusCode::IoError,
                  std::string("cache file rejected: ") + why);
  };
  size_t pos = 0;
  auto take = [&](void *dst, size_t n) {
    if (bytes.size() - pos < n)
      return false;
    std::memcpy(dst, bytes.data() + pos, n);
    pos += n;
    return true;
  };
  char magic[8];
  uint32_t keyLen = 0;
  if (!take(magic, 8) || std::memcmp(magic, kMagic, 8) != 0)
    return reject("bad magic");
  if (!take(&keyLen, 4) || keyLen != key.size() ||
      bytes.size() - pos < keyLen ||
      std::memcmp(bytes.data() + pos, key.data(), keyLen) != 0)
    return reject("key mismatch");
  pos += keyLen;
  uint64_t size = 0;
  uint8_t sum[32];
  if (!take(&size, 8) || !take(sum, 32))
    return reject("truncated header");
  if (bytes.size() - pos != size)
    return reject("payload size mismatch (truncated or padded file)");
  std::array<uint8_t, 32> actual =
      detail::Sha256::digest(bytes.data() + pos, size);
  if (std::memcmp(actual.data(), sum, 32) != 0)
    return reject("payload checksum mismatch");
  auto k = std::make_shared<CompiledKernel>();
  k->cubin.assign(bytes.begin() + pos, bytes.end());
  return std::shared_ptr<const CompiledKernel>(std::move(k));
}

static void makeDirs(const std::string &dir) {
  for (size_t i = 1; i <= dir.size(); ++i)
    if (i == dir.size() || dir[i] == '/')
      ::mkdir(dir.substr(0, i).c_str(), 0755); // EEXIST is fine
}

void KernelCache::storeToDisk(const std::string &key, const CompiledKernel &k) {
  if (dir_.empty())
    return;
  makeDirs(dir_);
  static std::atomic<uint64_t> counter{0};
  std::string tmp = dir_ + "/." + key + "." + std::to_string(::getpid()) + "." +
                    std::to_string(counter++) + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0)
    return; // a read-only cache directory only costs recompiles
  std::vector<char> out(kMagic, kMagic + 8);
  auto put = [&](const void *p, size_t n) {
    const char *c = static_cast<const char *>(p);
    out.insert(out.end(), c, c + n);
  };
  uint32_t keyLen = key.size();
  uint64_t size = k.cubin.size();
  std::array<uint8_t, 32> sum =
      detail::Sha256::digest(k.cubin.data(), k.cubin.size());
  put(&keyLen, 4);
  put(key.data(), keyLen);
  put(&size, 8);
  put(sum.data(), 32);
  put(k.cubin.data(), k.cubin.size());
  size_t done = 0;
  while (done < out.size()) {
    ssize_t w = ::write(fd, out.data() + done, out.size() - done);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      break;
    done += size_t(w);
  }
  bool ok = done == out.size() && ::fsync(fd) == 0;
  ::close(fd);
  // rename() is atomic: readers see the old file or the whole new one.
  if (!ok || ::rename(tmp.c_str(), diskPath(key).c_str()) != 0)
    ::unlink(tmp.c_str());
}

Expected<size_t>
KernelCache::compileAll(const std::vector<KernelRequest> &requests,
                        unsigned threads, const CompileProgressFn &progress) {
  // Distinct (source, options) only: two threads compiling one kernel
  // would both miss the cache.
  std::vector<const KernelRequest *> work;
  {
    std::set<std::pair<std::string, std::vector<std::string>>> seen;
    for (const KernelRequest &r : requests)
      if (seen.insert({r.source, canonicalOptions(r.options)}).second)
        work.push_back(&r);
  }
  if (threads == 0)
    threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min<unsigned>(threads, static_cast<unsigned>(work.size()));
  auto start = std::chrono::steady_clock::now();
  std::atomic<size_t> next{0};
  std::mutex reportMu;
  size_t done = 0;
  Status firstError = Status::ok();
  auto worker = [&] {
    for (size_t i = next++; i < work.size(); i = next++) {
      bool cold = false;
      Expected<std::shared_ptr<const CompiledKernel>> k =
          lookupOrCompile(work[i]->source, work[i]->options, cold);
      std::lock_guard<std::mutex> lock(reportMu);
      if (!k && firstError.isOk())
        firstError =
            Status(k.status().code(),
                   "kernel '" + work[i]->name + "': " + k.status().message());
      ++done;
      if (progress) {
        CompileProgress p;
        p.done = done;
        p.total = work.size();
        p.name = work[i]->name;
        p.cold = cold;
        p.elapsed = std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start)
                        .count();
        progress(p);
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back(worker);
  worker();
  for (std::thread &t : pool)
    t.join();
  if (!firstError.isOk())
    return firstError;
  return work.size();
}

Expected<std::shared_ptr<const CompiledKernel>>
KernelCache::getOrCompile(const std::string &source,
                          const CompileOptions &opts) {
  bool cold = false;
  return lookupOrCompile(source, opts, cold);
}

Expected<std::shared_ptr<const CompiledKernel>>
KernelCache::lookupOrCompile(const std::string &source,
                             const CompileOptions &opts, bool &cold) {
  std::vector<std::string> options = canonicalOptions(opts);
  uint64_t h = fastHash(source, 0xcbf29ce484222325ull);
  for (const std::string &o : options)
    h = fastHash(o, h);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = memory_.find(h);
    if (it != memory_.end())
      for (const Entry &e : it->second)
        if (e.options == options && e.source == source) {
          ++memoryHits_;
          return e.kernel;
        }
  }
  std::string key = diskKey(source, opts);
  Expected<std::shared_ptr<const CompiledKernel>> kernel = loadFromDisk(key);
  if (kernel) {
    ++diskHits_;
  } else {
    Expected<CompiledKernel> compiled = compile_(source, opts);
    if (!compiled)
      return compiled.status();
    ++compiles_;
    cold = true;
    storeToDisk(key, *compiled);
    kernel = std::shared_ptr<const CompiledKernel>(
        std::make_shared<CompiledKernel>(std::move(*compiled)));
  }
  std::lock_guard<std::mutex> lock(mu_);
  memory_[h].push_back(Entry{source, options, *kernel});
  return *kernel;
}

} // namespace te::rt
