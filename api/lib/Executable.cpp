//===- Executable.cpp - One function on one device ------------------------===//
//
// Part of tejit. No MLIR.
//
//===----------------------------------------------------------------------===//

#include "te/api/Tejit.h"

#include "te/codegen/PlanBuilder.h"
#include "te/runtime/Plan.h"

namespace te::api {

struct Executable::State {
  std::string name;
  cg::EntryPlan plan;
  std::vector<Slot> arguments, results;
  std::vector<int> argumentBuffer, resultBuffer; ///< plan buffer per slot
  std::vector<rt::DeviceBuffer> workspaces;      ///< every other buffer
  std::vector<int> workspaceBuffer;
  std::vector<rt::PlanExecutor> executors;
};

Executable::Executable() : state_(std::make_unique<State>()) {}
Executable::Executable(Executable &&) noexcept = default;
Executable &Executable::operator=(Executable &&) noexcept = default;
Executable::~Executable() = default;

const std::string &Executable::name() const { return state_->name; }
const std::vector<Slot> &Executable::arguments() const {
  return state_->arguments;
}
const std::vector<Slot> &Executable::results() const { return state_->results; }
size_t Executable::numKernels() const { return state_->executors.size(); }

rt::Expected<Executable> CompiledModule::load(const std::string &function,
                                              const rt::Device &device,
                                              rt::KernelCache &cache) const {
  const cg::Entry *entry = program_->find(function);
  if (!entry) {
    std::string known;
    for (const std::string &n : functionNames())
      known += (known.empty() ? "" : ", ") + n;
    return rt::Status(rt::StatusCode::InvalidArgument,
                      "no function '" + function +
                          "' in the module (it has: " + known + ")");
  }
  rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(*program_, *entry);
  if (!plan)
    return plan.status();

  Executable exe;
  Executable::State &st = *exe.state_;
  st.name = entry->name;
  st.plan = std::move(*plan);
  std::vector<bool> bound(st.plan.buffers.size(), false);

  for (size_t i = 0; i < entry->args.size(); ++i) {
    const cg::Value &v = entry->values[entry->args[i]];
    int b = st.plan.values[entry->args[i]].tensor;
    st.arguments.push_back({"arg" + std::to_string(i),
                            i,
                            "data",
                            v.name,
                            {v.dtype, v.rows(), v.cols()},
                            st.plan.buffers[b].bytes});
    st.argumentBuffer.push_back(b);
    bound[b] = true;
  }
  auto addResult = [&](int buffer, size_t index, const std::string &part,
                       const std::string &value,
                       const rt::BufferDesc &desc) -> rt::Status {
    std::string name =
        "result" + std::to_string(index) + (part == "data" ? "" : "." + part);
    if (bound[buffer])
      return rt::Status(rt::StatusCode::Unsupported,
                        st.name + ": " + name +
                            " is also an argument or an earlier result; "
                            "return distinct values");
    bound[buffer] = true;
    st.results.push_back(
        {name, index, part, value, desc, st.plan.buffers[buffer].bytes});
    st.resultBuffer.push_back(buffer);
    return rt::Status::ok();
  };
  for (size_t i = 0; i < entry->results.size(); ++i) {
    int r = entry->results[i];
    const cg::Value &v = entry->values[r];
    const cg::ValueBuffers &vb = st.plan.values[r];
    if (!v.isQuantized()) {
      TE_RETURN_IF_ERROR(addResult(vb.tensor, i, "data", v.name,
                                   {v.dtype, v.rows(), v.cols()}));
      continue;
    }
    for (rt::Direction d :
         {rt::Direction::Rowwise, rt::Direction::Columnwise}) {
      if (!v.scheme(d))
        continue;
      rt::DirectionStorage ds = cg::directionStorage(v, d, program_->target);
      const cg::ValueBuffers::Direction &bd =
          vb.dir[d == rt::Direction::Rowwise ? 0 : 1];
      std::string p = std::string(rt::directionName(d)) + ".";
      if (bd.data >= 0)
        TE_RETURN_IF_ERROR(addResult(bd.data, i, p + "data", v.name, ds.data));
      if (bd.scale >= 0)
        TE_RETURN_IF_ERROR(
            addResult(bd.scale, i, p + "scale_inv", v.name, ds.scaleInv));
      if (bd.amax >= 0)
        TE_RETURN_IF_ERROR(addResult(bd.amax, i, p + "amax", v.name, ds.amax));
    }
  }

  // Workspaces (tensor amax, bias partial sums, delayed-scaling state,
  // values the function does not return) belong to the executable.
  TE_RETURN_IF_ERROR(device.makeCurrent());
  for (size_t b = 0; b < st.plan.buffers.size(); ++b) {
    if (bound[b])
      continue;
    auto buf = rt::DeviceBuffer::allocate(st.plan.buffers[b].bytes);
    if (!buf)
      return buf.status();
    st.workspaces.push_back(std::move(*buf));
    st.workspaceBuffer.push_back(int(b));
  }
  for (const cg::KernelPlan &kp : st.plan.kernels) {
    auto ex = rt::PlanExecutor::create(kp.plan, device, cache);
    if (!ex)
      return ex.status();
    for (size_t w = 0; w < st.workspaces.size(); ++w)
      TE_RETURN_IF_ERROR(ex->bind(uint32_t(st.workspaceBuffer[w]),
                                  st.workspaces[w].devicePtr(),
                                  st.workspaces[w].size()));
    st.executors.push_back(std::move(*ex));
  }
  return exe;
}

rt::Status Executable::run(const std::vector<DeviceSpan> &args,
                           const std::vector<DeviceSpan> &results,
                           const rt::Stream &stream) {
  State &st = *state_;
  auto check = [&](const std::vector<DeviceSpan> &given,
                   const std::vector<Slot> &slots,
                   const char *what) -> rt::Status {
    if (given.size() != slots.size())
      return rt::Status(rt::StatusCode::InvalidArgument,
                        st.name + " takes " + std::to_string(slots.size()) +
                            " " + what + " buffers, got " +
                            std::to_string(given.size()));
    for (size_t i = 0; i < slots.size(); ++i)
      if (given[i].ptr == 0 || given[i].bytes < slots[i].bytes)
        return rt::Status(rt::StatusCode::InvalidArgument,
                          st.name + ": " + slots[i].name +
                              " needs a buffer of " +
                              std::to_string(slots[i].bytes) + " bytes, got " +
                              std::to_string(given[i].bytes) +
                              (given[i].ptr ? "" : " at address 0"));
    return rt::Status::ok();
  };
  TE_RETURN_IF_ERROR(check(args, st.arguments, "argument"));
  TE_RETURN_IF_ERROR(check(results, st.results, "result"));
  // Initial workspace contents (a fresh delayed-scaling state) before every
  // run, so each run starts from the same state.
  for (size_t w = 0; w < st.workspaces.size(); ++w) {
    const std::vector<uint8_t> &init =
        st.plan.initial[size_t(st.workspaceBuffer[w])];
    if (!init.empty())
      TE_RETURN_IF_ERROR(
          st.workspaces[w].copyFromHost(init.data(), init.size(), stream));
  }
  for (rt::PlanExecutor &ex : st.executors) {
    for (size_t i = 0; i < args.size(); ++i)
      TE_RETURN_IF_ERROR(
          ex.bind(uint32_t(st.argumentBuffer[i]), args[i].ptr, args[i].bytes));
    for (size_t i = 0; i < results.size(); ++i)
      TE_RETURN_IF_ERROR(ex.bind(uint32_t(st.resultBuffer[i]), results[i].ptr,
                                 results[i].bytes));
    TE_RETURN_IF_ERROR(ex.run(stream));
  }
  return rt::Status::ok();
}

} // namespace te::api
