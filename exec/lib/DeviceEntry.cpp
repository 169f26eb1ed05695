//===- DeviceEntry.cpp - One entry's plan on a device ---------------------===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//

#include "te/exec/DeviceEntry.h"

#include "te/runtime/Plan.h"

namespace te::exec {

using namespace cg;

/// Every kernel `plan` launches, as compile requests (appended to `out`).
static void addRequests(const EntryPlan &plan,
                        std::vector<rt::KernelRequest> &out) {
  for (const KernelPlan &kp : plan.kernels)
    for (const rt::KernelSpec &spec : kp.plan.kernels)
      out.push_back({spec.name, spec.source, spec.options});
}

rt::Expected<size_t> compileEntries(const Program &p,
                                    const std::vector<const Entry *> &entries,
                                    rt::KernelCache &cache,
                                    const rt::CompileProgressFn &progress) {
  std::vector<rt::KernelRequest> requests;
  for (const Entry *e : entries) {
    rt::Expected<EntryPlan> plan = buildEntryPlan(p, *e);
    if (!plan)
      return plan.status();
    addRequests(*plan, requests);
  }
  return cache.compileAll(requests, 0, progress);
}

rt::Expected<size_t> compileEntry(const Program &p, const Entry &e,
                                  rt::KernelCache &cache,
                                  const rt::CompileProgressFn &progress) {
  return compileEntries(p, {&e}, cache, progress);
}

struct DeviceEntry::State {
  Entry entry;
  EntryPlan plan;
  rt::Target target;
  /// Per plan buffer: the entry's own, a persistent value's in `store`, or
  /// null where the caller binds it.
  std::vector<std::shared_ptr<rt::DeviceBuffer>> buffers;
  /// Allocated by the entry (workspaces, values nobody else holds).
  std::vector<bool> owned;
  /// Holding data the entry reads: an argument's, the caller's, a store's.
  std::vector<bool> input;
  std::vector<rt::PlanExecutor> executors;
  DeviceStore *store = nullptr;
  /// Persistent results written to a buffer of the entry (not in place):
  /// copied into the store's buffer after the kernels.
  std::vector<std::pair<int, std::shared_ptr<rt::DeviceBuffer>>> copyOut;
  std::unique_ptr<rt::Graph> graph;

  rt::Status enqueue(const rt::Stream &s) {
    for (rt::PlanExecutor &ex : executors)
      TE_RETURN_IF_ERROR(ex.run(s));
    for (auto &[from, to] : copyOut)
      TE_RETURN_IF_ERROR(to->copyFrom(*buffers[size_t(from)], to->size(), s));
    return rt::Status::ok();
  }
};

DeviceEntry::DeviceEntry() : state_(std::make_unique<State>()) {}
DeviceEntry::DeviceEntry(DeviceEntry &&) noexcept = default;
DeviceEntry &DeviceEntry::operator=(DeviceEntry &&) noexcept = default;
DeviceEntry::~DeviceEntry() = default;

rt::Expected<DeviceEntry>
DeviceEntry::create(const Program &p, const Entry &e, EntryPlan plan,
                    const rt::Device &device, rt::KernelCache &cache,
                    DeviceStore *store, const std::vector<bool> &callerBound) {
  DeviceEntry d;
  State &st = *d.state_;
  st.entry = e;
  st.plan = std::move(plan);
  st.target = p.target;
  st.store = store;
  TE_RETURN_IF_ERROR(device.makeCurrent());
  size_t n = st.plan.buffers.size();
  st.buffers.resize(n);
  st.owned.assign(n, false);
  st.input.assign(n, false);
  for (int a : e.args)
    for (const ValueStorage &vs : valueStorage(e, st.plan, a, st.target))
      st.input[size_t(vs.buffer)] = true;
  // Delayed-scaling state is read before it is written.
  for (const EntryPlan::StateBuffers &s : st.plan.states)
    st.input[size_t(s.scale)] = st.input[size_t(s.history)] = true;
  if (store) {
    rt::Expected<StoreBinding> bound =
        bindToStore(e, st.plan, st.target, *store);
    if (!bound)
      return bound.status();
    st.buffers = std::move(bound->buffers);
    st.copyOut = std::move(bound->copyOut);
  }
  for (size_t b = 0; b < n; ++b) {
    bool byCaller = b < callerBound.size() && callerBound[b];
    if (st.buffers[b] || byCaller) {
      st.input[b] = true;
      continue;
    }
    auto buf = rt::DeviceBuffer::allocate(st.plan.buffers[b].bytes);
    if (!buf)
      return buf.status();
    st.buffers[b] = std::make_shared<rt::DeviceBuffer>(std::move(*buf));
    st.owned[b] = true;
    // Initial contents (delayed-scaling state) once: later runs, graph
    // replays included, carry on from what the previous one left.
    if (!st.plan.initial[b].empty())
      TE_RETURN_IF_ERROR(uploadNow(*st.buffers[b], st.plan.initial[b]));
  }
  // Every kernel compiled at once on the host's cores; the executors below
  // then load them from the cache's memory.
  {
    std::vector<rt::KernelRequest> requests;
    addRequests(st.plan, requests);
    rt::Expected<size_t> compiled = cache.compileAll(requests);
    if (!compiled)
      return compiled.status();
  }
  for (const KernelPlan &kp : st.plan.kernels) {
    auto ex = rt::PlanExecutor::create(kp.plan, device, cache);
    if (!ex)
      return ex.status();
    for (size_t b = 0; b < n; ++b)
      if (st.buffers[b])
        TE_RETURN_IF_ERROR(ex->bind(uint32_t(b), st.buffers[b]->devicePtr(),
                                    st.buffers[b]->size()));
    st.executors.push_back(std::move(*ex));
  }
  return d;
}

const Entry &DeviceEntry::entry() const { return state_->entry; }
const EntryPlan &DeviceEntry::plan() const { return state_->plan; }
const rt::Target &DeviceEntry::target() const { return state_->target; }
rt::DeviceBuffer *DeviceEntry::buffer(size_t b) const {
  return state_->buffers[b].get();
}
bool DeviceEntry::holdsInput(size_t b) const { return state_->input[b]; }
size_t DeviceEntry::numKernels() const { return state_->executors.size(); }

void DeviceEntry::setCommunicator(rt::Communicator *comm) {
  for (rt::PlanExecutor &ex : state_->executors)
    ex.setCommunicator(comm);
}

rt::Status DeviceEntry::bind(size_t b, uint64_t ptr, uint64_t bytes) {
  for (rt::PlanExecutor &ex : state_->executors)
    TE_RETURN_IF_ERROR(ex.bind(uint32_t(b), ptr, bytes));
  return rt::Status::ok();
}

rt::Status DeviceEntry::run(const rt::Stream &s) {
  State &st = *state_;
  if (st.store) {
    std::string why = unheldArgument(st.entry, *st.store);
    if (!why.empty())
      return rt::Status(rt::StatusCode::InvalidArgument, why);
  }
  TE_RETURN_IF_ERROR(st.enqueue(s));
  if (st.store)
    markWritten(st.entry, *st.store);
  return rt::Status::ok();
}

rt::Status DeviceEntry::runKernel(size_t i, const rt::Stream &s) {
  return state_->executors[i].run(s);
}

rt::Status DeviceEntry::runKernelSteps(size_t i, size_t first, size_t end,
                                       const rt::Stream &s) {
  return state_->executors[i].runSteps(s, first, end);
}

rt::Status DeviceEntry::capture(const rt::Stream &s) {
  State &st = *state_;
  rt::Expected<rt::Graph> g =
      rt::Graph::capture(s, [&]() -> rt::Status { return st.enqueue(s); });
  if (!g)
    return g.status();
  st.graph = std::make_unique<rt::Graph>(std::move(*g));
  return rt::Status::ok();
}

rt::Status DeviceEntry::replay(const rt::Stream &s) {
  if (!state_->graph)
    return rt::Status(rt::StatusCode::InvalidArgument,
                      "replay() before a successful capture()");
  return state_->graph->launch(s);
}

} // namespace te::exec
