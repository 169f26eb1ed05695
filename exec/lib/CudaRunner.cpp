//===- CudaRunner.cpp - Run an entry on buffers it owns -------------------===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//

#include "te/exec/CudaRunner.h"

namespace te::exec {

using namespace cg;

rt::Expected<CudaRunner> CudaRunner::create(const Program &p, const Entry &e,
                                            const rt::Device &device,
                                            rt::KernelCache &cache,
                                            DeviceStore *store) {
  rt::Expected<EntryPlan> plan = buildEntryPlan(p, e);
  if (!plan)
    return plan.status();
  return create(p, e, std::move(*plan), device, cache, store);
}

rt::Expected<CudaRunner> CudaRunner::create(const Program &p, const Entry &e,
                                            EntryPlan plan,
                                            const rt::Device &device,
                                            rt::KernelCache &cache,
                                            DeviceStore *store) {
  rt::Expected<DeviceEntry> entry =
      DeviceEntry::create(p, e, std::move(plan), device, cache, store, {});
  if (!entry)
    return entry.status();
  return CudaRunner(std::move(*entry), store);
}

rt::Status CudaRunner::setArgument(size_t i, const std::vector<uint8_t> &bytes,
                                   const rt::Stream &s) {
  const Entry &e = entry_.entry();
  if (i >= e.args.size())
    return rt::Status(rt::StatusCode::InvalidArgument,
                      "argument " + std::to_string(i) + " out of range");
  int buffer = entry_.plan().values[e.args[i]].tensor;
  if (buffer < 0)
    return rt::Status(rt::StatusCode::InvalidArgument,
                      "argument " + std::to_string(i) +
                          " is quantized: a session's store provides it");
  rt::DeviceBuffer &b = *entry_.buffer(size_t(buffer));
  if (bytes.size() != b.size())
    return rt::Status(rt::StatusCode::InvalidArgument,
                      "argument " + std::to_string(i) + " needs " +
                          std::to_string(b.size()) + " bytes, got " +
                          std::to_string(bytes.size()));
  TE_RETURN_IF_ERROR(b.copyFromHost(bytes.data(), bytes.size(), s));
  if (store_ && !e.persistentArg(i).empty())
    store_->written.insert(e.persistentArg(i));
  return rt::Status::ok();
}

rt::Status CudaRunner::poison(uint8_t byte, const rt::Stream &s) {
  for (size_t b = 0; b < entry_.plan().buffers.size(); ++b)
    if (!entry_.holdsInput(b))
      TE_RETURN_IF_ERROR(entry_.buffer(b)->fill(byte, s));
  return rt::Status::ok();
}

rt::Status CudaRunner::carry(const std::vector<CarriedState> &state,
                             const rt::Stream &s) {
  const EntryPlan &plan = entry_.plan();
  for (const CarriedState &c : state) {
    rt::DeviceBuffer &from =
        *entry_.buffer(size_t(plan.values[c.value].tensor));
    rt::DeviceBuffer &to = *entry_.buffer(
        size_t(plan.values[entry_.entry().args[c.argument]].tensor));
    TE_RETURN_IF_ERROR(to.copyFrom(from, from.size(), s));
  }
  return rt::Status::ok();
}

rt::Expected<std::vector<ValueData>> CudaRunner::results(const rt::Stream &s) {
  std::vector<ValueData> out;
  for (int r : entry_.entry().results) {
    out.emplace_back();
    for (const ValueStorage &vs :
         valueStorage(entry_.entry(), entry_.plan(), r, entry_.target())) {
      rt::DeviceBuffer &buf = *entry_.buffer(size_t(vs.buffer));
      NamedBuffer nb;
      nb.name = vs.name;
      nb.desc = vs.desc;
      nb.bytes.resize(buf.size());
      TE_RETURN_IF_ERROR(buf.copyToHost(nb.bytes.data(), nb.bytes.size(), s));
      out.back().push_back(std::move(nb));
    }
  }
  TE_RETURN_IF_ERROR(s.synchronize());
  return out;
}

} // namespace te::exec
