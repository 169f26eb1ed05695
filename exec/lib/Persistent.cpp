//===- Persistent.cpp - A program's values kept between calls -------------===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//

#include "te/exec/Persistent.h"

#include "te/codegen/ScalingState.h"

#include <algorithm>

namespace te::exec {

using namespace cg;

rt::Status DeviceStore::upload(const std::string &name, const ValueData &data,
                               const rt::Stream &s) {
  auto it = values.find(name);
  if (it == values.end())
    return rt::Status(rt::StatusCode::InvalidArgument,
                      "no persistent value '" + name + "' on the device");
  for (const NamedBuffer &b : data) {
    auto part = it->second.find(b.name);
    if (part == it->second.end() || part->second->size() != b.bytes.size())
      return rt::Status(rt::StatusCode::InvalidArgument,
                        "persistent '" + name + "' has no " +
                            std::to_string(b.bytes.size()) + "-byte buffer '" +
                            b.name + "'");
    TE_RETURN_IF_ERROR(
        part->second->copyFromHost(b.bytes.data(), b.bytes.size(), s));
  }
  written.insert(name);
  return rt::Status::ok();
}

rt::Status uploadNow(rt::DeviceBuffer &buffer,
                     const std::vector<uint8_t> &bytes) {
  rt::Stream s = rt::Stream::borrow(nullptr);
  TE_RETURN_IF_ERROR(buffer.copyFromHost(bytes.data(), bytes.size(), s));
  return s.synchronize();
}

ValueData stateValueData(std::vector<uint8_t> history,
                         std::vector<uint8_t> scale, bool inexact) {
  int64_t length = int64_t(history.size() / 4);
  return {
      {kStateHistoryPart,
       {rt::DType::F32, length, 1},
       std::move(history),
       {},
       inexact},
      {kStateScalePart, {rt::DType::F32, 1, 1}, std::move(scale), {}, inexact}};
}

rt::Expected<ValueData> readState(const DeviceStore &store,
                                  const std::string &name,
                                  const rt::Stream &s) {
  auto it = store.values.find(name);
  if (it == store.values.end() || !it->second.count(kStateScalePart) ||
      !it->second.count(kStateHistoryPart))
    return rt::Status(rt::StatusCode::InvalidArgument,
                      "no delayed-scaling state '" + name + "' on the device");
  std::vector<uint8_t> parts[2];
  const char *names[2] = {kStateHistoryPart, kStateScalePart};
  for (int i = 0; i < 2; ++i) {
    const rt::DeviceBuffer &buf = *it->second.at(names[i]);
    parts[i].resize(buf.size());
    TE_RETURN_IF_ERROR(buf.copyToHost(parts[i].data(), buf.size(), s));
  }
  TE_RETURN_IF_ERROR(s.synchronize());
  return stateValueData(std::move(parts[0]), std::move(parts[1]));
}

namespace {
/// Fetches (allocating on first use) the store's buffers of one value.
class StoreBinder {
public:
  StoreBinder(const Entry &e, const EntryPlan &plan, const rt::Target &target,
              DeviceStore &store)
      : e_(e), plan_(plan), target_(target), store_(store) {}

  /// The store's buffer of `name`'s part `part`, of `bytes` bytes.
  rt::Expected<std::shared_ptr<rt::DeviceBuffer>>
  buffer(const std::string &name, const std::string &part, uint64_t bytes,
         const std::vector<uint8_t> &initial = {}) {
    std::shared_ptr<rt::DeviceBuffer> &buf = store_.values[name][part];
    if (!buf) {
      auto b = rt::DeviceBuffer::allocate(bytes);
      if (!b)
        return b.status();
      buf = std::make_shared<rt::DeviceBuffer>(std::move(*b));
      if (!initial.empty())
        TE_RETURN_IF_ERROR(uploadNow(*buf, initial));
    } else if (buf->size() != bytes) {
      return rt::Status(rt::StatusCode::InvalidArgument,
                        e_.name + ": persistent '" + name + "' " + part +
                            " has " + std::to_string(bytes) +
                            " bytes here but " + std::to_string(buf->size()) +
                            " in another entry");
    }
    return buf;
  }

  /// Value `v`'s plan buffers become the store's buffers of `name`, or
  /// (with `copy`) are copied into them after the entry.
  rt::Status bind(const std::string &name, int v, bool copy,
                  StoreBinding &out) {
    for (const ValueStorage &vs : valueStorage(e_, plan_, v, target_)) {
      auto buf = buffer(name, vs.name, plan_.buffers[size_t(vs.buffer)].bytes);
      if (!buf)
        return buf.status();
      if (copy)
        out.copyOut.push_back({vs.buffer, *buf});
      else
        out.buffers[size_t(vs.buffer)] = *buf;
    }
    return rt::Status::ok();
  }

  /// The buffers of delayed-scaling state `s` become the store's, which
  /// start from the plan's initial contents.
  rt::Status bindState(const EntryPlan::StateBuffers &s, StoreBinding &out) {
    for (auto [part, index] :
         {std::pair<const char *, int>{kStateScalePart, s.scale},
          {kStateHistoryPart, s.history}}) {
      auto buf = buffer(s.name, part, plan_.buffers[size_t(index)].bytes,
                        plan_.initial[size_t(index)]);
      if (!buf)
        return buf.status();
      out.buffers[size_t(index)] = *buf;
    }
    store_.written.insert(s.name);
    return rt::Status::ok();
  }

private:
  const Entry &e_;
  const EntryPlan &plan_;
  const rt::Target &target_;
  DeviceStore &store_;
};
} // namespace

rt::Expected<StoreBinding> bindToStore(const Entry &e, const EntryPlan &plan,
                                       const rt::Target &target,
                                       DeviceStore &store) {
  StoreBinding out;
  out.buffers.resize(plan.buffers.size());
  StoreBinder binder(e, plan, target, store);
  for (size_t i = 0; i < e.args.size(); ++i)
    if (!e.persistentArg(i).empty())
      TE_RETURN_IF_ERROR(
          binder.bind(e.persistentArg(i), e.args[i], false, out));
  for (size_t i = 0; i < e.results.size(); ++i) {
    const std::string &name = e.persistentResult(i);
    if (name.empty())
      continue;
    int v = e.results[i], arg = -1;
    for (size_t a = 0; a < e.args.size(); ++a)
      if (e.persistentArg(a) == name)
        arg = e.args[a];
    if (arg == v)
      continue; // returned unchanged
    if (std::count(e.args.begin(), e.args.end(), v) != 0)
      return rt::Status(rt::StatusCode::Unsupported,
                        e.name + ": result " + std::to_string(i) +
                            " returns an argument as persistent '" + name +
                            "'; only a persistent argument returned under "
                            "its own name may be returned unchanged");
    bool inPlace = arg < 0 || updatesInPlace(e, arg, v);
    TE_RETURN_IF_ERROR(binder.bind(name, v, !inPlace, out));
  }
  for (const EntryPlan::StateBuffers &s : plan.states)
    TE_RETURN_IF_ERROR(binder.bindState(s, out));
  return out;
}

std::string unheldArgument(const Entry &e, const DeviceStore &store) {
  for (size_t i = 0; i < e.args.size(); ++i) {
    const std::string &name = e.persistentArg(i);
    if (!name.empty() && !store.holds(name))
      return e.name + " reads persistent '" + name +
             "' before any entry wrote it";
  }
  return "";
}

void markWritten(const Entry &e, DeviceStore &store) {
  for (size_t i = 0; i < e.results.size(); ++i)
    if (!e.persistentResult(i).empty())
      store.written.insert(e.persistentResult(i));
}

} // namespace te::exec
