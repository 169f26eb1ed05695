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
//   auto session = te::api::Session::create(*module, device, cache);
//   session->set("fc1.master", hostBytes, size, stream);        // state
//   session->function("train_step")->run(args, results, stream);
//
//   auto cpu = te::api::HostSession::create(*module);           // no GPU
//   cpu->set("fc1.master", hostBytes, size);
//   auto out = cpu->call("train_step", hostArgs);               // bytes
//
// A CompiledModule is the kernel-level program of every function of the
// module (the te-to-cuda pipeline has run). An Executable is one function
// on one device: its kernels compiled through the KernelCache (memory, then
// disk, then NVRTC) and its workspaces allocated; run() binds the caller's
// device buffers (one per argument, one per storage buffer of each result,
// laid out as docs/Numerics.md §2 says) and enqueues every kernel on the
// stream.
//
//===----------------------------------------------------------------------===//

#ifndef TE_API_TEJIT_H
#define TE_API_TEJIT_H

#include "te/codegen/Program.h"
#include "te/runtime/Collective.h"
#include "te/runtime/Device.h"
#include "te/runtime/KernelCache.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace te::exec {
struct DeviceStore;
} // namespace te::exec

namespace te::api {

struct CompileOptions {
  std::string arch = "sm_90a"; ///< target of the te-to-cuda pipeline
  /// Layer name -> recipe symbol: the named layers (te.linear `layer`) use
  /// that recipe of the module instead of their own - a recipe switch
  /// (Session::switchModule; docs/Guide.md §7.2).
  std::map<std::string, std::string> layerRecipes;
  /// How a grouped MXFP8 x MXFP8 GEMM reads its operands: "auto" (the cost
  /// model of te-legalize-target), "direct" (the GEMM engine's MXFP8
  /// kernel) or "dequantize" (to bf16, then the bf16 kernel).
  std::string groupedMxfp8 = "auto";
  /// How a grouped GEMM reads operands it quantizes per expert by NVFP4:
  /// "auto", "direct" (their codes, the GEMM engine's NVFP4 kernel) or
  /// "dequantize" (their bf16 values, the bf16 kernel).
  std::string groupedNvfp4 = "auto";
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

/// A buffer in host memory: one result of the CPU backend.
struct HostBuffer {
  std::string name;    ///< as Slot::name: "result0", "result1.rowwise.data"
  size_t index = 0;    ///< the result's position among the results
  std::string part;    ///< "data", or "rowwise.data", "columnwise.amax", ...
  rt::BufferDesc desc; ///< element type and 2-D shape of the storage
  std::vector<uint8_t> bytes;
};

class Executable;
class Session;
class HostSession;

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

  /// Runs `function` once on the CPU backend (the reference numerics: no
  /// GPU, no driver needed). `args[i]` holds the bytes of argument i
  /// (row-major, little-endian, its element type; exactly its size; a
  /// bf16 argument as its bit patterns). Returns every result's storage
  /// buffers, byte for byte as the GPU writes them (docs/Numerics.md §2).
  /// Persistent markers are ignored: every argument is given.
  /// A function with `te.all_gather` or `te.quantize {amax_ranks}` runs as
  /// one rank of a job whose ranks meet through `collective` (each rank
  /// passes its own; docs/HostApi.md "Several GPUs").
  rt::Expected<std::vector<HostBuffer>>
  runOnCpu(const std::string &function,
           const std::vector<std::vector<uint8_t>> &args,
           rt::HostCollective *collective = nullptr) const;

private:
  friend class HostSession;
  friend class Session;
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
  /// The NCCL communicator of the job's ranks, for a function that gathers
  /// or reduces across them (not owned: it must outlive every run). Without
  /// one, such a function's run fails saying so.
  void setCommunicator(rt::Communicator *comm);

  /// Binds `args[i]` to arguments()[i] and `results[i]` to results()[i]
  /// (each at least the slot's size) and enqueues every kernel on `stream`.
  /// The buffers must stay alive until the stream has run the work.
  rt::Status run(const std::vector<DeviceSpan> &args,
                 const std::vector<DeviceSpan> &results,
                 const rt::Stream &stream);

private:
  friend class CompiledModule;
  friend class Session;
  Executable();
  /// Loads `function`; with `store`, its persistent arguments and results
  /// are bound to the store's buffers instead of slots.
  static rt::Expected<Executable> load(const cg::Program &program,
                                       const std::string &function,
                                       const rt::Device &device,
                                       rt::KernelCache &cache,
                                       exec::DeviceStore *store);
  struct State;
  std::unique_ptr<State> state_;
};

/// Every function of a module on one device, sharing the module's
/// persistent values (te.persistent on arguments and results: master
/// weights, optimizer moments, quantized weights, gradients). The session
/// owns their device buffers; a function's arguments() and results() list
/// only its other slots. Calls in any order (training step, optimizer step,
/// eval step) read and write the same buffers, an optimizer step updates its
/// parameters and moments in place, and a quantized weight holds every
/// direction any function reads of it.
class Session {
public:
  /// Loads every function of `module` (kernels through `cache`) and
  /// allocates the persistent values' buffers.
  static rt::Expected<Session> create(const CompiledModule &module,
                                      const rt::Device &device,
                                      rt::KernelCache &cache);
  Session(Session &&) noexcept;
  Session &operator=(Session &&) noexcept;
  ~Session();

  /// The function `name` (null if the module has none of that name).
  Executable *function(const std::string &name);
  /// Executable::setCommunicator for every function.
  void setCommunicator(rt::Communicator *comm);
  /// The persistent values' names.
  std::vector<std::string> persistentNames() const;
  /// The device buffers of persistent value `name`, by part ("data";
  /// "rowwise.data", "columnwise.scale_inv", ... for a quantized value);
  /// empty if there is no such value.
  std::vector<std::pair<std::string, DeviceSpan>>
  buffers(const std::string &name) const;
  /// Copies `bytes` (exactly the value's size) into persistent tensor
  /// `name`, its initial value (a master weight, zero moments).
  rt::Status set(const std::string &name, const void *bytes, size_t size,
                 const rt::Stream &stream);
  /// Copies every part of persistent value `name` (as buffers() names
  /// them; each of the part's size) from device memory the caller owns -
  /// a quantized weight loaded from a checkpoint, or quantized by another
  /// library in tejit's layout (docs/Numerics.md §2) - and marks it held.
  rt::Status
  setFromDevice(const std::string &name,
                const std::vector<std::pair<std::string, DeviceSpan>> &parts,
                const rt::Stream &stream);
  /// Copies persistent value `name` to the host, by part as buffers()
  /// (synchronises `stream`): a checkpoint, or a weight to inspect.
  rt::Expected<std::vector<std::pair<std::string, std::vector<uint8_t>>>>
  read(const std::string &name, const rt::Stream &stream) const;
  /// Whether `name` holds a value: set, or written by a function. A function
  /// reading a value not held yet fails with InvalidArgument.
  bool holds(const std::string &name) const;
  /// Goes on with `next`, the same module compiled with other recipes
  /// (CompileOptions::layerRecipes): its functions replace this session's
  /// (function() pointers from before are invalid), the persistent values
  /// stay, and each quantized value `next` stores in another format is
  /// re-quantized on `stream` from its FP32 master (the persistent tensor a
  /// function of `next` quantizes it from); a delayed-scaling state of
  /// another scheme starts afresh (docs/Guide.md §7.2). Fails, naming the
  /// value, where a changed value has no master; after a failure the
  /// session is not usable.
  rt::Status switchModule(const CompiledModule &next, const rt::Stream &stream);

private:
  Session();
  struct State;
  std::unique_ptr<State> state_;
};

/// Session's twin on the CPU backend (the reference numerics; no GPU): every
/// function of a module sharing its persistent values, which the session
/// holds in host memory. Calls take and return only the other arguments
/// and results, as a Session's functions do.
class HostSession {
public:
  static rt::Expected<HostSession> create(const CompiledModule &module);
  HostSession(HostSession &&) noexcept;
  HostSession &operator=(HostSession &&) noexcept;
  ~HostSession();

  /// Calls `function`: `args` are its non-persistent arguments in order
  /// (bytes as CompiledModule::runOnCpu takes them); returns its
  /// non-persistent results. A persistent value it reads must be held: set,
  /// or written by an earlier call.
  rt::Expected<std::vector<HostBuffer>>
  call(const std::string &function,
       const std::vector<std::vector<uint8_t>> &args);
  /// The host collective of the job's ranks, for functions that gather or
  /// reduce across them (not owned: it must outlive every call).
  void setCollective(rt::HostCollective *collective);
  /// The persistent values' names.
  std::vector<std::string> persistentNames() const;
  /// Gives persistent tensor `name` its value (exactly its size).
  rt::Status set(const std::string &name, const void *bytes, size_t size);
  /// Gives persistent value `name` - quantized or not - its storage
  /// buffers by part, as read() returns them (each exactly its size).
  rt::Status setParts(
      const std::string &name,
      const std::vector<std::pair<std::string, std::vector<uint8_t>>> &parts);
  /// Persistent value `name` by part, as Session::read.
  rt::Expected<std::vector<std::pair<std::string, std::vector<uint8_t>>>>
  read(const std::string &name) const;
  bool holds(const std::string &name) const;
  /// Session::switchModule on the CPU backend.
  rt::Status switchModule(const CompiledModule &next);

private:
  HostSession();
  struct State;
  std::unique_ptr<State> state_;
};

} // namespace te::api

#endif // TE_API_TEJIT_H
