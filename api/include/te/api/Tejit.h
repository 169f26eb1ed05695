//===- te/api/Tejit.h - The host C++ API ------------------------*- C++ -*-===//
//
// Part of tejit. No MLIR types in this header.
//
//===----------------------------------------------------------------------===//
//
// In-process use of tejit from a C++ program:
//
//   auto module = te::api::CompiledModule::fromSource(text);   // te IR text
//   auto fn = module->load("quantize", device, cache);          // JIT, cached
//   for (const te::api::Slot &s : fn->arguments()) ...          // sizes
//   fn->run(argumentPointers, resultPointers, stream);          // enqueue
//
// A CompiledModule is the kernel-level program of every function of the
// module (the te-to-cuda pipeline has run). An Executable is one function
// on one device: its kernels compiled through the KernelCache (memory, then
// disk, then NVRTC) and its workspaces allocated; run() binds the caller's
// device buffers (one per argument, one per storage buffer of each result,
// laid out as NUMERICS.md 2 says) and enqueues every kernel on the stream.
//
//===----------------------------------------------------------------------===//

#ifndef TE_API_TEJIT_H
#define TE_API_TEJIT_H

#include "te/codegen/Program.h"
#include "te/runtime/Device.h"
#include "te/runtime/KernelCache.h"

#include <memory>
#include <string>
#include <vector>

namespace te::api {

struct CompileOptions {
  std::string arch = "sm_90a"; ///< target of the te-to-cuda pipeline
};

/// One device buffer a function reads or writes.
struct Slot {
  /// "arg0", "result0" (a tensor result) or "result0.rowwise.data",
  /// "result0.columnwise.scale_inv", ... (te-run's dump names).
  std::string name;
  size_t index = 0;    ///< position among the arguments / the results
  std::string part;    ///< "data", or "rowwise.data", "columnwise.amax", ...
  std::string value;   ///< the IR value it belongs to
  rt::BufferDesc desc; ///< element type and 2-D shape of the storage
  uint64_t bytes = 0;  ///< the least size the bound buffer must have
};

/// A caller-owned device allocation (CUdeviceptr and its size).
struct DeviceSpan {
  uint64_t ptr = 0;
  uint64_t bytes = 0;
};

class Executable;

class CompiledModule {
public:
  /// Parses `text` (te IR) and compiles every function for `opts.arch`. A
  /// parse or compile error is InvalidArgument / Unsupported whose message
  /// holds the diagnostics with their locations in `bufferName`.
  static rt::Expected<CompiledModule>
  fromSource(const std::string &text, const CompileOptions &opts = {},
             const std::string &bufferName = "<module>");
  /// Wraps a kernel-level program built directly in C++.
  explicit CompiledModule(cg::Program program);

  std::vector<std::string> functionNames() const;
  const cg::Program &program() const { return *program_; }

  /// Compiles (or fetches from `cache`) the kernels of `function` for
  /// `device` and allocates its workspaces.
  rt::Expected<Executable> load(const std::string &function,
                                const rt::Device &device,
                                rt::KernelCache &cache) const;

private:
  std::shared_ptr<const cg::Program> program_;
};

class Executable {
public:
  Executable(Executable &&) noexcept;
  Executable &operator=(Executable &&) noexcept;
  ~Executable();

  const std::string &name() const;
  const std::vector<Slot> &arguments() const;
  const std::vector<Slot> &results() const;
  size_t numKernels() const;

  /// Binds `args[i]` to arguments()[i] and `results[i]` to results()[i]
  /// (each at least the slot's size) and enqueues every kernel on `stream`.
  /// The buffers must stay alive until the stream has run the work.
  rt::Status run(const std::vector<DeviceSpan> &args,
                 const std::vector<DeviceSpan> &results,
                 const rt::Stream &stream);

private:
  friend class CompiledModule;
  Executable();
  struct State;
  std::unique_ptr<State> state_;
};

} // namespace te::api

#endif // TE_API_TEJIT_H
