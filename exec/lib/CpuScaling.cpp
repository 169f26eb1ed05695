//===- CpuScaling.cpp - Delayed-scaling state on the CPU backend ----------===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//
//
// The CPU twin of the CUDA plan's state buffers and update launch
// (te/codegen/ScalingState.h): the reference quantize records each cast's
// amax into history[0] as TE's kernels do, and the call ends with
// ref::updateDelayedScaling on every state it used.
//
//===----------------------------------------------------------------------===//

#include "CpuBackendInternal.h"

#include "te/codegen/ScalingState.h"

#include <algorithm>
#include <cstring>

namespace te::exec {

using namespace cg;
namespace ref = rt::ref;

static HostStore::State freshState(const rt::Scheme &scheme) {
  HostStore::State s;
  s.state.history.assign(size_t(scheme.history), 0.0f);
  return s;
}

void HostStore::declareStates(const Program &p) {
  for (const Entry &e : p.entries)
    for (const ScalingState &s : scalingStates(e))
      scaling.emplace(s.name, freshState(s.scheme));
}

rt::Status HostStore::writeState(const std::string &name,
                                 const ValueData &parts) {
  auto it = scaling.find(name);
  if (it == scaling.end())
    return detail::fail("no delayed-scaling state '" + name + "'");
  ref::DelayedScalingState next = it->second.state;
  std::vector<std::string> missing = {kStateScalePart, kStateHistoryPart};
  for (const NamedBuffer &b : parts) {
    bool scale = b.name == kStateScalePart;
    if (!scale && b.name != kStateHistoryPart)
      return detail::fail("state '" + name + "' has no part '" + b.name +
                          "' (its parts are scale and amax_history)");
    size_t want = scale ? 4 : next.history.size() * 4;
    if (b.bytes.size() != want)
      return detail::fail("state '" + name + "' part " + b.name + " needs " +
                          std::to_string(want) + " bytes, got " +
                          std::to_string(b.bytes.size()));
    std::memcpy(scale ? static_cast<void *>(&next.scale)
                      : static_cast<void *>(next.history.data()),
                b.bytes.data(), want);
    missing.erase(std::find(missing.begin(), missing.end(), b.name));
  }
  if (!missing.empty())
    return detail::fail("state '" + name + "' needs part " + missing.front());
  it->second.state = std::move(next);
  it->second.inexact = false;
  return rt::Status::ok();
}

namespace detail {

ValueData stateData(const HostStore::State &s) {
  const ref::DelayedScalingState &st = s.state;
  std::vector<uint8_t> history(st.history.size() * 4), scale(4);
  std::memcpy(history.data(), st.history.data(), history.size());
  std::memcpy(scale.data(), &st.scale, 4);
  return stateValueData(std::move(history), std::move(scale), s.inexact);
}

rt::Status CallStates::bind(const Entry &e, HostStore *store) {
  store_ = store;
  for (const ScalingState &s : scalingStates(e)) {
    HostStore::State fresh = freshState(s.scheme);
    if (store)
      if (auto it = store->scaling.find(s.name); it != store->scaling.end())
        fresh = it->second;
    HostStore::State &held = own_.emplace(s.name, fresh).first->second;
    if (held.state.history.size() != size_t(s.scheme.history))
      return fail(e.name + ": delayed-scaling state '" + s.name + "' has " +
                  std::to_string(held.state.history.size()) +
                  " history entries, its scheme " +
                  std::to_string(s.scheme.history));
    bound_[s.name] = &held;
  }
  return rt::Status::ok();
}

ref::DelayedScalingState *CallStates::get(const std::string &name) {
  auto it = bound_.find(name);
  return it == bound_.end() ? nullptr : &it->second->state;
}

bool CallStates::inexact(const std::string &name) const {
  auto it = bound_.find(name);
  return it != bound_.end() && it->second->inexact;
}

void CallStates::finish(const Entry &e, const std::vector<HostValue> &values) {
  for (const ScalingState &s : scalingStates(e)) {
    HostStore::State &held = *bound_.at(s.name);
    ref::updateDelayedScaling(held.state, s.scheme);
    for (auto [value, dir] : s.records)
      held.inexact |= values[size_t(value)].inexact();
    for (const ScalingState::ExpertRecord &r : s.expertRecords)
      held.inexact |= values[size_t(r.value)].inexact();
    if (store_)
      store_->scaling[s.name] = held;
  }
}

} // namespace detail
} // namespace te::exec
