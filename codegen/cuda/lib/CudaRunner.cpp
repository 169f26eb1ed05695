//===- CudaRunner.cpp - Run an entry with generated kernels ---------------===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//

#include "te/codegen/Execute.h"

#include <algorithm>
#include <set>

namespace te::cg {

using rt::Direction;

struct CudaRunner::State {
  EntryPlan plan;
  Entry entry;
  rt::Target target;
  /// Per plan buffer: the runner's own, or a persistent value's in `store`.
  std::vector<std::shared_ptr<rt::DeviceBuffer>> buffers;
  std::vector<rt::PlanExecutor> executors;
  /// Buffers holding data the caller or the store owns (never poisoned).
  std::vector<bool> external;
  DeviceStore *store = nullptr;
  /// Persistent results written to a buffer of the runner (not in place):
  /// copied into the store's buffer after the kernels.
  std::vector<std::pair<int, std::shared_ptr<rt::DeviceBuffer>>> copyOut;
  std::unique_ptr<rt::Graph> graph;

  rt::Status enqueue(const rt::Stream &s);
  /// Re-uploads initial contents (delayed-scaling state), so each run
  /// starts from the same state.
  rt::Status uploadInitial(const rt::Stream &s);
};

rt::Status CudaRunner::State::uploadInitial(const rt::Stream &s) {
  for (size_t b = 0; b < buffers.size(); ++b)
    if (!plan.initial[b].empty())
      TE_RETURN_IF_ERROR(buffers[b]->copyFromHost(plan.initial[b].data(),
                                                  plan.initial[b].size(), s));
  return rt::Status::ok();
}

CudaRunner::CudaRunner() : state_(std::make_unique<State>()) {}
CudaRunner::CudaRunner(CudaRunner &&) noexcept = default;
CudaRunner &CudaRunner::operator=(CudaRunner &&) noexcept = default;
CudaRunner::~CudaRunner() = default;

rt::Expected<size_t> compileEntry(const Program &p, const Entry &e,
                                  rt::KernelCache &cache) {
  rt::Expected<EntryPlan> plan = buildEntryPlan(p, e);
  if (!plan)
    return plan.status();
  std::set<std::string> sources;
  for (const KernelPlan &kp : plan->kernels)
    for (const rt::KernelSpec &spec : kp.plan.kernels) {
      if (!sources.insert(spec.source).second)
        continue;
      auto compiled = cache.getOrCompile(spec.source, spec.options);
      if (!compiled)
        return compiled.status();
    }
  return sources.size();
}

rt::Expected<CudaRunner> CudaRunner::create(const Program &p, const Entry &e,
                                            const rt::Device &device,
                                            rt::KernelCache &cache,
                                            DeviceStore *store) {
  rt::Expected<EntryPlan> plan = buildEntryPlan(p, e);
  if (!plan)
    return plan.status();
  CudaRunner r;
  State &st = *r.state_;
  st.plan = std::move(*plan);
  st.entry = e;
  st.target = p.target;
  st.store = store;
  TE_RETURN_IF_ERROR(device.makeCurrent());
  size_t n = st.plan.buffers.size();
  st.buffers.resize(n);
  st.external.assign(n, false);
  for (int a : e.args)
    for (const ValueStorage &vs : valueStorage(e, st.plan, a, st.target))
      st.external[size_t(vs.buffer)] = true;

  if (store) {
    rt::Expected<StoreBinding> bound =
        bindToStore(e, st.plan, st.target, *store);
    if (!bound)
      return bound.status();
    st.buffers = std::move(bound->buffers);
    st.copyOut = std::move(bound->copyOut);
    for (size_t b = 0; b < n; ++b)
      if (st.buffers[b])
        st.external[b] = true;
  }
  for (size_t b = 0; b < n; ++b) {
    if (st.buffers[b])
      continue;
    auto buf = rt::DeviceBuffer::allocate(st.plan.buffers[b].bytes);
    if (!buf)
      return buf.status();
    st.buffers[b] = std::make_shared<rt::DeviceBuffer>(std::move(*buf));
  }
  for (const KernelPlan &kp : st.plan.kernels) {
    auto ex = rt::PlanExecutor::create(kp.plan, device, cache);
    if (!ex)
      return ex.status();
    for (size_t i = 0; i < n; ++i)
      TE_RETURN_IF_ERROR(ex->bind(uint32_t(i), st.buffers[i]->devicePtr(),
                                  st.buffers[i]->size()));
    st.executors.push_back(std::move(*ex));
  }
  return r;
}

rt::Status CudaRunner::setArgument(size_t i, const std::vector<uint8_t> &bytes,
                                   const rt::Stream &s) {
  State &st = *state_;
  if (i >= st.entry.args.size())
    return rt::Status(rt::StatusCode::InvalidArgument,
                      "argument " + std::to_string(i) + " out of range");
  int buffer = st.plan.values[st.entry.args[i]].tensor;
  if (buffer < 0)
    return rt::Status(rt::StatusCode::InvalidArgument,
                      "argument " + std::to_string(i) +
                          " is quantized: a session's store provides it");
  rt::DeviceBuffer &b = *st.buffers[size_t(buffer)];
  if (bytes.size() != b.size())
    return rt::Status(rt::StatusCode::InvalidArgument,
                      "argument " + std::to_string(i) + " needs " +
                          std::to_string(b.size()) + " bytes, got " +
                          std::to_string(bytes.size()));
  TE_RETURN_IF_ERROR(b.copyFromHost(bytes.data(), bytes.size(), s));
  if (st.store && !st.entry.persistentArg(i).empty())
    st.store->written.insert(st.entry.persistentArg(i));
  return rt::Status::ok();
}

rt::Status CudaRunner::poison(uint8_t byte, const rt::Stream &s) {
  State &st = *state_;
  for (size_t i = 0; i < st.buffers.size(); ++i)
    if (!st.external[i])
      TE_RETURN_IF_ERROR(st.buffers[i]->fill(byte, s));
  return rt::Status::ok();
}

rt::Status CudaRunner::runKernel(size_t i, const rt::Stream &s) {
  TE_RETURN_IF_ERROR(state_->uploadInitial(s));
  return state_->executors[i].run(s);
}

rt::Status CudaRunner::State::enqueue(const rt::Stream &s) {
  for (rt::PlanExecutor &ex : executors)
    TE_RETURN_IF_ERROR(ex.run(s));
  for (auto &[from, to] : copyOut)
    TE_RETURN_IF_ERROR(to->copyFrom(*buffers[size_t(from)], to->size(), s));
  return rt::Status::ok();
}

rt::Status CudaRunner::run(const rt::Stream &s) {
  State &st = *state_;
  if (st.store) {
    std::string why = unheldArgument(st.entry, *st.store);
    if (!why.empty())
      return rt::Status(rt::StatusCode::InvalidArgument, why);
  }
  TE_RETURN_IF_ERROR(st.uploadInitial(s));
  TE_RETURN_IF_ERROR(st.enqueue(s));
  if (st.store)
    markWritten(st.entry, *st.store);
  return rt::Status::ok();
}

rt::Status CudaRunner::carry(const std::vector<CarriedState> &state,
                             const rt::Stream &s) {
  State &st = *state_;
  for (const CarriedState &c : state) {
    rt::DeviceBuffer &from =
        *st.buffers[size_t(st.plan.values[c.value].tensor)];
    rt::DeviceBuffer &to =
        *st.buffers[size_t(st.plan.values[st.entry.args[c.argument]].tensor)];
    TE_RETURN_IF_ERROR(to.copyFrom(from, from.size(), s));
  }
  return rt::Status::ok();
}

rt::Status CudaRunner::capture(const rt::Stream &s) {
  for (size_t b = 0; b < state_->buffers.size(); ++b)
    if (!state_->plan.initial[b].empty())
      return rt::Status(rt::StatusCode::Unsupported,
                        "capturing an entry whose buffers are re-initialised "
                        "per run (delayed-scaling state) is not supported");
  State &st = *state_;
  rt::Expected<rt::Graph> g =
      rt::Graph::capture(s, [&]() -> rt::Status { return st.enqueue(s); });
  if (!g)
    return g.status();
  st.graph = std::make_unique<rt::Graph>(std::move(*g));
  return rt::Status::ok();
}

rt::Status CudaRunner::replay(const rt::Stream &s) {
  if (!state_->graph)
    return rt::Status(rt::StatusCode::InvalidArgument,
                      "replay() before a successful capture()");
  return state_->graph->launch(s);
}

size_t CudaRunner::numKernels() const { return state_->executors.size(); }

const KernelPlan &CudaRunner::kernelPlan(size_t i) const {
  return state_->plan.kernels[i];
}

rt::Expected<std::vector<ValueData>> CudaRunner::results(const rt::Stream &s) {
  State &st = *state_;
  std::vector<ValueData> out;
  auto fetch = [&](int buffer, std::string name,
                   const rt::BufferDesc &desc) -> rt::Status {
    NamedBuffer nb;
    nb.name = std::move(name);
    nb.desc = desc;
    nb.bytes.resize(st.buffers[size_t(buffer)]->size());
    TE_RETURN_IF_ERROR(st.buffers[size_t(buffer)]->copyToHost(
        nb.bytes.data(), nb.bytes.size(), s));
    out.back().push_back(std::move(nb));
    return rt::Status::ok();
  };
  for (int r : st.entry.results) {
    out.emplace_back();
    for (const ValueStorage &vs : valueStorage(st.entry, st.plan, r, st.target))
      TE_RETURN_IF_ERROR(fetch(vs.buffer, vs.name, vs.desc));
  }
  TE_RETURN_IF_ERROR(s.synchronize());
  return out;
}

} // namespace te::cg
