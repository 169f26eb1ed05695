//===- PlanExecutor.cpp - run a Plan on a GPU -----------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Everything that can be done before the first run is done at create/bind
// time: kernels compiled (through the cache) and loaded, internal buffers
// allocated, each launch's argument array built. run() then only issues
// cuLaunchKernel / cublasLtMatmul calls, which is what keeps the per-launch
// overhead at the driver's, and what a CUDA graph records. Argument values
// are rebuilt on the first run after a bind (once per call, not once per
// bound buffer): TMA descriptors are encoded then.
//
//===----------------------------------------------------------------------===//

#include "te/runtime/Plan.h"

#include "CudaApi.h"

#include <cstring>

namespace te::rt {

struct PlanExecutor::State {
  Plan plan;
  Device device;
  std::vector<Kernel> kernels;
  std::vector<DeviceBuffer> owned; ///< internal buffers (index-aligned)
  std::vector<uint64_t> ptrs;      ///< every buffer's device address
  std::vector<std::vector<uint64_t>> argSlots; ///< 8 bytes per argument
  /// The words of Table arguments, [kernel][argument] (empty otherwise).
  std::vector<std::vector<std::vector<uint64_t>>> tables;
  /// The TMA descriptors of TensorMap arguments, [kernel][argument] (one
  /// per argument, unused for other kinds; 128-byte aligned as the driver
  /// needs).
  std::vector<std::vector<TensorMap>> maps;
  std::vector<std::vector<void *>> argv;
  /// Each kernel's grid where it runs (a persistent kernel's is sized to
  /// the device).
  std::vector<Dim3> grids;
  /// A buffer was bound since the argument values were last built.
  bool stale = true;
  std::unique_ptr<BlasLt> blas;
  std::unique_ptr<Graph> graph;
  Communicator *comm = nullptr;

  explicit State(const Device &d) : device(d) {}

  uint64_t resolve(const BufferRef &r) const {
    return r.buffer < 0 ? 0 : ptrs[r.buffer] + r.offset;
  }

  /// The 8-byte value of a scalar argument.
  uint64_t valueOf(const ArgDesc &arg) const {
    uint64_t slot = 0;
    switch (arg.kind) {
    case ArgDesc::Kind::Pointer:
      slot = resolve(arg.pointer);
      break;
    case ArgDesc::Kind::I32: {
      int32_t v = int32_t(arg.i);
      std::memcpy(&slot, &v, 4);
      break;
    }
    case ArgDesc::Kind::I64:
      std::memcpy(&slot, &arg.i, 8);
      break;
    case ArgDesc::Kind::F32:
      std::memcpy(&slot, &arg.f, 4);
      break;
    case ArgDesc::Kind::Rank: {
      int32_t v = comm ? int32_t(comm->rank()) : 0;
      std::memcpy(&slot, &v, 4);
      break;
    }
    case ArgDesc::Kind::Table:
    case ArgDesc::Kind::TensorMap:
      break;
    }
    return slot;
  }

  /// Writes each argument's value into its slot (a Table's into its words,
  /// a TensorMap's descriptor into its map).
  Status fillArgs() {
    for (size_t k = 0; k < plan.kernels.size(); ++k) {
      const std::vector<ArgDesc> &args = plan.kernels[k].args;
      for (size_t a = 0; a < args.size(); ++a) {
        argSlots[k][a] = valueOf(args[a]);
        for (size_t w = 0; w < args[a].items.size(); ++w)
          tables[k][a][w] = valueOf(args[a].items[w]);
        if (args[a].kind != ArgDesc::Kind::TensorMap)
          continue;
        Expected<TensorMap> map =
            encodeTensorMap(args[a].map, resolve(args[a].pointer));
        if (!map)
          return Status(map.status().code(),
                        "kernel '" + plan.kernels[k].name + "' argument " +
                            std::to_string(a) + ": " + map.status().message());
        maps[k][a] = *map;
      }
    }
    stale = false;
    return Status::ok();
  }
};

Expected<PlanExecutor> PlanExecutor::create(const Plan &plan,
                                            const Device &device,
                                            KernelCache &cache) {
  std::string invalid = plan.validate();
  if (!invalid.empty())
    return Status(StatusCode::InvalidArgument, "invalid plan: " + invalid);
  TE_RETURN_IF_ERROR(device.makeCurrent());
  auto st = std::make_unique<State>(device);
  st->plan = plan;
  for (const KernelSpec &ks : plan.kernels) {
    auto compiled = cache.getOrCompile(ks.source, ks.options);
    if (!compiled)
      return Status(compiled.status().code(),
                    "kernel '" + ks.name + "': " + compiled.status().message());
    Expected<Kernel> k = Kernel::load((*compiled)->cubin, ks.entry);
    if (!k)
      return Status(k.status().code(),
                    "kernel '" + ks.name + "': " + k.status().message());
    Dim3 grid = ks.grid;
    if (ks.persistent) {
      Expected<Dim3> g =
          k->persistentGrid(device, ks.block, ks.sharedBytes, ks.cluster);
      if (!g)
        return Status(g.status().code(),
                      "kernel '" + ks.name + "': " + g.status().message());
      grid = *g;
    }
    st->grids.push_back(grid);
    st->kernels.push_back(std::move(*k));
  }
  st->owned.resize(plan.buffers.size());
  st->ptrs.assign(plan.buffers.size(), 0);
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    if (plan.buffers[i].external)
      continue;
    Expected<DeviceBuffer> b = DeviceBuffer::allocate(plan.buffers[i].bytes);
    if (!b)
      return b.status();
    st->ptrs[i] = b->devicePtr();
    st->owned[i] = std::move(*b);
  }
  st->argSlots.resize(plan.kernels.size());
  st->argv.resize(plan.kernels.size());
  st->tables.resize(plan.kernels.size());
  st->maps.resize(plan.kernels.size());
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    const std::vector<ArgDesc> &args = plan.kernels[k].args;
    st->argSlots[k].assign(args.size(), 0);
    st->tables[k].resize(args.size());
    st->maps[k].resize(args.size());
    for (size_t a = 0; a < args.size(); ++a) {
      st->tables[k][a].assign(args[a].items.size(), 0);
      void *slot = &st->argSlots[k][a];
      if (args[a].kind == ArgDesc::Kind::Table)
        slot = st->tables[k][a].data();
      else if (args[a].kind == ArgDesc::Kind::TensorMap)
        slot = &st->maps[k][a];
      st->argv[k].push_back(slot);
    }
  }
  if (!plan.gemms.empty()) {
    Expected<BlasLt> blas = BlasLt::create(device);
    if (!blas)
      return blas.status();
    st->blas = std::make_unique<BlasLt>(std::move(*blas));
  }
  PlanExecutor e;
  e.state_ = std::move(st);
  return e;
}

PlanExecutor::PlanExecutor(PlanExecutor &&) noexcept = default;
PlanExecutor::~PlanExecutor() = default;

void PlanExecutor::setCommunicator(Communicator *comm) {
  state_->comm = comm;
  state_->stale = true; // Rank arguments take the communicator's rank
}

Status PlanExecutor::bind(uint32_t index, uint64_t devicePtr, uint64_t bytes) {
  const Plan &p = state_->plan;
  if (index >= p.buffers.size() || !p.buffers[index].external)
    return Status(StatusCode::InvalidArgument,
                  "buffer " + std::to_string(index) +
                      " is not an external buffer of the plan");
  if (bytes < p.buffers[index].bytes)
    return Status(StatusCode::InvalidArgument,
                  "buffer '" + p.buffers[index].name + "' needs " +
                      std::to_string(p.buffers[index].bytes) + " bytes, got " +
                      std::to_string(bytes));
  state_->ptrs[index] = devicePtr;
  state_->stale = true;
  return Status::ok();
}

Status PlanExecutor::run(const Stream &s) {
  return runSteps(s, 0, state_->plan.steps.size());
}

Status PlanExecutor::runSteps(const Stream &s, size_t first, size_t end) {
  State &st = *state_;
  for (size_t i = 0; i < st.plan.buffers.size(); ++i)
    if (st.plan.buffers[i].external && st.ptrs[i] == 0)
      return Status(StatusCode::InvalidArgument, "external buffer '" +
                                                     st.plan.buffers[i].name +
                                                     "' is not bound");
  Expected<const detail::DriverApi *> api = detail::driverApi();
  if (!api)
    return api.status();
  if (st.stale)
    TE_RETURN_IF_ERROR(st.fillArgs());
  const std::vector<Step> &steps = st.plan.steps;
  if (first > end || end > steps.size())
    return Status(StatusCode::InvalidArgument,
                  "steps [" + std::to_string(first) + ", " +
                      std::to_string(end) + ") of a plan of " +
                      std::to_string(steps.size()));
  for (size_t i = first; i < end; ++i) {
    const Step &step = steps[i];
    switch (step.kind) {
    case Step::Kind::Launch: {
      const KernelSpec &ks = st.plan.kernels[step.index];
      TE_RETURN_IF_ERROR(st.kernels[step.index].launch(
          st.grids[step.index], ks.block, ks.sharedBytes, s,
          st.argv[step.index].data(), ks.cluster, ks.overlapsPredecessor));
      break;
    }
    case Step::Kind::Gemm: {
      const GemmCall &c = st.plan.gemms[step.index];
      GemmProblem p = c.problem;
      p.a.data = st.resolve(c.a);
      p.a.scaleInv = st.resolve(c.aScale);
      p.b.data = st.resolve(c.b);
      p.b.scaleInv = st.resolve(c.bScale);
      p.out = st.resolve(c.out);
      p.bias = st.resolve(c.bias);
      TE_RETURN_IF_ERROR(st.blas->gemm(p, s));
      break;
    }
    case Step::Kind::Fill:
      TE_RETURN_IF_ERROR(detail::cuCheck(
          **api,
          (*api)->cuMemsetD8Async(st.ptrs[step.index], step.fillByte,
                                  st.plan.buffers[step.index].bytes,
                                  static_cast<CUstream>(s.handle())),
          "cuMemsetD8Async"));
      break;
    case Step::Kind::Collective: {
      const CollectiveCall &c = st.plan.collectives[step.index];
      if (!st.comm || st.comm->ranks() != c.ranks)
        return Status(
            StatusCode::InvalidArgument,
            "the plan gathers or reduces over " + std::to_string(c.ranks) +
                " ranks, but " +
                (st.comm ? "the communicator has " +
                               std::to_string(st.comm->ranks())
                         : std::string("no communicator was set (run one "
                                       "process per rank: te-run --ranks ") +
                               std::to_string(c.ranks) + ")"));
      // Consecutive collectives form one NCCL group.
      auto collective = [&](size_t j) {
        return j >= first && j < end && steps[j].kind == Step::Kind::Collective;
      };
      bool opens = !(i > 0 && collective(i - 1)), last = !collective(i + 1);
      if (opens && !last)
        TE_RETURN_IF_ERROR(st.comm->groupStart());
      Status done = Status::ok();
      switch (c.kind) {
      case CollectiveCall::Kind::AllGather:
        done = st.comm->allGather(st.resolve(c.send), st.resolve(c.recv),
                                  c.bytes, s);
        break;
      case CollectiveCall::Kind::AllReduceMax:
        done = st.comm->allReduceMax(st.resolve(c.send), c.bytes / 4, s);
        break;
      case CollectiveCall::Kind::AllReduceBytesSum:
      case CollectiveCall::Kind::AllReduceBytesMax:
        done = st.comm->allReduceBytes(
            st.resolve(c.send), c.bytes,
            c.kind == CollectiveCall::Kind::AllReduceBytesMax, s);
        break;
      }
      // A group is closed on success and on failure.
      bool grouped = !(opens && last);
      if (grouped && (last || !done.isOk())) {
        Status closed = st.comm->groupEnd();
        if (done.isOk())
          done = closed;
      }
      TE_RETURN_IF_ERROR(done);
      break;
    }
    }
  }
  return Status::ok();
}

Status PlanExecutor::capture(const Stream &s) {
  Expected<Graph> g = Graph::capture(s, [&] { return run(s); });
  if (!g)
    return g.status();
  state_->graph = std::make_unique<Graph>(std::move(*g));
  return Status::ok();
}

Status PlanExecutor::replay(const Stream &s) {
  if (!state_->graph)
    return Status(StatusCode::InvalidArgument,
                  "replay() before a successful capture()");
  return state_->graph->launch(s);
}

} // namespace te::rt
