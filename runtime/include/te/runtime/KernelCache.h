//===- te/runtime/KernelCache.h - compiled-kernel cache ---------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Two levels: a process-wide in-memory map and an optional directory of
// CUBIN files shared between processes. The disk key is a SHA-256 of
// everything that can change the binary: the source, the canonical NVRTC
// options (incl. the architecture) and a version tag (NVRTC and driver
// versions). A cache file carries a header with its key, payload size and a
// SHA-256 of the payload; a file that is truncated, corrupt or for another
// key is ignored and rewritten. Files are written to a unique temporary name
// and renamed into place, so concurrent processes never see a partial file.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_KERNELCACHE_H
#define TE_RUNTIME_KERNELCACHE_H

#include "te/runtime/NvrtcCompiler.h"

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace te::rt {

/// One kernel to have compiled: its source and options, and a name for
/// progress reports and errors.
struct KernelRequest {
  std::string name;
  std::string source;
  CompileOptions options;
};

/// compileAll's report after each kernel: `done` of `total` distinct
/// kernels are in the cache; `name` is the one just finished, `cold` when
/// NVRTC compiled it (not a memory or disk hit); seconds since the start.
struct CompileProgress {
  size_t done = 0, total = 0;
  std::string name;
  bool cold = false;
  double elapsed = 0;
};
using CompileProgressFn = std::function<void(const CompileProgress &)>;

struct CacheStats {
  uint64_t memoryHits = 0;
  uint64_t diskHits = 0;
  uint64_t compiles = 0;
  uint64_t diskRejects = 0; ///< files found but unusable (corrupt, foreign)
};

class KernelCache {
public:
  using CompileFn = std::function<Expected<CompiledKernel>(
      const std::string &source, const CompileOptions &opts)>;

  /// A cache compiling with NVRTC. `diskDir` empty = memory only. The
  /// version tag holds the NVRTC and driver versions.
  explicit KernelCache(std::string diskDir = defaultDiskDir());
  /// A cache with an injected compiler and version tag (tests).
  KernelCache(std::string diskDir, CompileFn compile, std::string versionTag);

  /// The compiled kernel for (source, opts): from memory, else from disk,
  /// else compiled (and then stored in both).
  Expected<std::shared_ptr<const CompiledKernel>>
  getOrCompile(const std::string &source, const CompileOptions &opts);

  /// Puts every distinct kernel of `requests` into the cache, compiling up
  /// to `threads` at a time (0: one per host core) - a plan's warm-up.
  /// Returns the number of distinct kernels, or the first failure (naming
  /// its kernel) once all have finished. `progress` (if set) is called
  /// after each kernel, from one thread at a time.
  Expected<size_t> compileAll(const std::vector<KernelRequest> &requests,
                              unsigned threads = 0,
                              const CompileProgressFn &progress = {});

  /// The disk key (64 hex digits) of (source, opts) under this cache.
  std::string diskKey(const std::string &source,
                      const CompileOptions &opts) const;
  /// The file a key is stored in.
  std::string diskPath(const std::string &key) const;
  const std::string &diskDir() const { return dir_; }
  CacheStats stats() const;
  /// Drops the in-memory level (the disk level stays).
  void clearMemory();

  /// $TE_CACHE_DIR, else $XDG_CACHE_HOME/tejit, else $HOME/.cache/tejit,
  /// else "" (memory only).
  static std::string defaultDiskDir();

private:
  struct Entry {
    std::string source;
    std::vector<std::string> options;
    std::shared_ptr<const CompiledKernel> kernel;
  };
  Expected<std::shared_ptr<const CompiledKernel>>
  loadFromDisk(const std::string &key);
  /// getOrCompile, also saying whether NVRTC ran (`cold`).
  Expected<std::shared_ptr<const CompiledKernel>>
  lookupOrCompile(const std::string &source, const CompileOptions &opts,
                  bool &cold);
  void storeToDisk(const std::string &key, const CompiledKernel &k);

  std::string dir_;
  CompileFn compile_;
  std::string versionTag_;
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, std::vector<Entry>> memory_;
  std::atomic<uint64_t> memoryHits_{0}, diskHits_{0}, compiles_{0},
      diskRejects_{0};
};

} // namespace te::rt

#endif // TE_RUNTIME_KERNELCACHE_H
