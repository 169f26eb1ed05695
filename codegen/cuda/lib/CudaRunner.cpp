//===- CudaRunner.cpp - Run an entry with generated kernels ---------------===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//

#include "te/codegen/Execute.h"

#include <set>

namespace te::cg {

using rt::Direction;

struct CudaRunner::State {
  EntryPlan plan;
  Entry entry;
  rt::Target target;
  std::vector<rt::DeviceBuffer> buffers;
  std::vector<rt::PlanExecutor> executors;
  std::vector<bool> isArgument;
  std::unique_ptr<rt::Graph> graph;
};

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
                                            rt::KernelCache &cache) {
  rt::Expected<EntryPlan> plan = buildEntryPlan(p, e);
  if (!plan)
    return plan.status();
  CudaRunner r;
  State &st = *r.state_;
  st.plan = std::move(*plan);
  st.entry = e;
  st.target = p.target;
  TE_RETURN_IF_ERROR(device.makeCurrent());
  st.isArgument.assign(st.plan.buffers.size(), false);
  for (int a : e.args)
    st.isArgument[size_t(st.plan.values[a].tensor)] = true;
  for (const rt::BufferDecl &b : st.plan.buffers) {
    auto buf = rt::DeviceBuffer::allocate(b.bytes);
    if (!buf)
      return buf.status();
    st.buffers.push_back(std::move(*buf));
  }
  for (const KernelPlan &kp : st.plan.kernels) {
    auto ex = rt::PlanExecutor::create(kp.plan, device, cache);
    if (!ex)
      return ex.status();
    for (size_t i = 0; i < st.buffers.size(); ++i)
      TE_RETURN_IF_ERROR(ex->bind(uint32_t(i), st.buffers[i].devicePtr(),
                                  st.buffers[i].size()));
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
  rt::DeviceBuffer &b =
      st.buffers[size_t(st.plan.values[st.entry.args[i]].tensor)];
  if (bytes.size() != b.size())
    return rt::Status(rt::StatusCode::InvalidArgument,
                      "argument " + std::to_string(i) + " needs " +
                          std::to_string(b.size()) + " bytes, got " +
                          std::to_string(bytes.size()));
  return b.copyFromHost(bytes.data(), bytes.size(), s);
}

rt::Status CudaRunner::poison(uint8_t byte, const rt::Stream &s) {
  State &st = *state_;
  for (size_t i = 0; i < st.buffers.size(); ++i)
    if (!st.isArgument[i])
      TE_RETURN_IF_ERROR(st.buffers[i].fill(byte, s));
  return rt::Status::ok();
}

rt::Status CudaRunner::runKernel(size_t i, const rt::Stream &s) {
  State &st = *state_;
  // Initial contents (delayed-scaling state) are re-uploaded before every
  // run so each run starts from the same state.
  for (size_t b = 0; b < st.buffers.size(); ++b)
    if (!st.plan.initial[b].empty())
      TE_RETURN_IF_ERROR(st.buffers[b].copyFromHost(
          st.plan.initial[b].data(), st.plan.initial[b].size(), s));
  return st.executors[i].run(s);
}

rt::Status CudaRunner::run(const rt::Stream &s) {
  for (size_t i = 0; i < state_->executors.size(); ++i)
    TE_RETURN_IF_ERROR(runKernel(i, s));
  return rt::Status::ok();
}

rt::Status CudaRunner::carry(const std::vector<CarriedState> &state,
                             const rt::Stream &s) {
  State &st = *state_;
  for (const CarriedState &c : state) {
    rt::DeviceBuffer &from = st.buffers[size_t(st.plan.values[c.value].tensor)];
    rt::DeviceBuffer &to =
        st.buffers[size_t(st.plan.values[st.entry.args[c.argument]].tensor)];
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
  rt::Expected<rt::Graph> g = rt::Graph::capture(s, [&]() -> rt::Status {
    for (rt::PlanExecutor &ex : st.executors)
      TE_RETURN_IF_ERROR(ex.run(s));
    return rt::Status::ok();
  });
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
    nb.bytes.resize(st.buffers[size_t(buffer)].size());
    TE_RETURN_IF_ERROR(st.buffers[size_t(buffer)].copyToHost(
        nb.bytes.data(), nb.bytes.size(), s));
    out.back().push_back(std::move(nb));
    return rt::Status::ok();
  };
  for (int r : st.entry.results) {
    const Value &v = st.entry.values[r];
    const ValueBuffers &vb = st.plan.values[r];
    out.emplace_back();
    if (!v.isQuantized()) {
      TE_RETURN_IF_ERROR(
          fetch(vb.tensor, "data", {v.dtype, v.rows(), v.cols()}));
      continue;
    }
    for (Direction d : {Direction::Rowwise, Direction::Columnwise}) {
      if (!v.scheme(d))
        continue;
      rt::DirectionStorage ds = directionStorage(v, d, st.target);
      const ValueBuffers::Direction &bd =
          vb.dir[d == Direction::Rowwise ? 0 : 1];
      std::string prefix = std::string(rt::directionName(d)) + ".";
      if (bd.data >= 0)
        TE_RETURN_IF_ERROR(fetch(bd.data, prefix + "data", ds.data));
      if (bd.scale >= 0)
        TE_RETURN_IF_ERROR(fetch(bd.scale, prefix + "scale_inv", ds.scaleInv));
      if (bd.amax >= 0)
        TE_RETURN_IF_ERROR(fetch(bd.amax, prefix + "amax", ds.amax));
    }
  }
  TE_RETURN_IF_ERROR(s.synchronize());
  return out;
}

} // namespace te::cg
