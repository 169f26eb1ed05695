//===- BackendSession.cpp - Calls on one or both backends -----------------===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//

#include "te/exec/BackendSession.h"

#include "te/codegen/ScalingState.h"
#include "te/exec/RecipeSwitch.h"

#include <cstring>

namespace te::exec {

using namespace cg;

rt::Expected<BackendSession> BackendSession::create(const Program &program,
                                                    bool cpu,
                                                    const rt::Device *device,
                                                    rt::KernelCache *cache) {
  if (!cpu && !device)
    return rt::Status(rt::StatusCode::InvalidArgument,
                      "a session needs the CPU backend or a device");
  if (device && !cache)
    return rt::Status(rt::StatusCode::InvalidArgument,
                      "the CUDA backend needs a kernel cache");
  BackendSession s;
  s.program_ = &program;
  s.cpu_ = cpu;
  s.device_ = device;
  s.cache_ = cache;
  s.deviceStore_ = std::make_unique<DeviceStore>();
  if (device) {
    auto stream = rt::Stream::create(*device);
    if (!stream)
      return stream.status();
    s.stream_.emplace(std::move(*stream));
  }
  return s;
}

void BackendSession::setArguments(const Entry &e,
                                  std::vector<std::vector<uint8_t>> arguments) {
  PerEntry &pe = entries_[&e];
  pe.args = std::move(arguments);
  pe.inexact.assign(pe.args.size(), false);
}

CudaRunner *BackendSession::runner(const Entry &e) {
  auto it = entries_.find(&e);
  return it == entries_.end() || !it->second.runner ? nullptr
                                                    : &*it->second.runner;
}

rt::Expected<BackendSession::Call> BackendSession::call(const Entry &e) {
  PerEntry &pe = entries_[&e];
  if (pe.args.size() != e.args.size())
    return rt::Status(rt::StatusCode::InvalidArgument,
                      "'" + e.name + "' takes " +
                          std::to_string(e.args.size()) + " arguments, " +
                          std::to_string(pe.args.size()) + " given");
  std::vector<std::vector<uint8_t>> &args = pe.args;
  int stepArg = stepArgument(e);
  if (stepArg >= 0 && pe.calls > 0) { // the step counts up per call
    int64_t v;
    std::memcpy(&v, args[size_t(stepArg)].data(), 8);
    ++v;
    std::memcpy(args[size_t(stepArg)].data(), &v, 8);
  }
  ++pe.calls;
  std::vector<CarriedState> carried = carriedState(e);

  Call out;
  for (const ScalingState &s : scalingStates(e))
    out.states.push_back(s.name);
  CpuState state;
  if (cpu_) {
    auto r = runCpu(*program_, e, args, &state, &pe.inexact, &hostStore_,
                    cpuProgress_, host_);
    if (!r)
      return r.status();
    out.cpu = std::move(*r);
    for (const std::string &name : out.states)
      out.cpuStates.push_back(hostStore_.read(name));
  }
  if (device_) {
    const rt::Stream &s = *stream_;
    if (!pe.runner) {
      auto r = CudaRunner::create(*program_, e, *device_, *cache_,
                                  deviceStore_.get());
      if (!r)
        return r.status();
      pe.runner.emplace(std::move(*r));
      pe.runner->setCommunicator(comm_);
      TE_RETURN_IF_ERROR(pe.runner->poison(0xA5, s));
      for (size_t i = 0; i < args.size(); ++i)
        if (!e.values[e.args[i]].isQuantized() &&
            !deviceStore_->holds(e.persistentArg(i)))
          TE_RETURN_IF_ERROR(pe.runner->setArgument(i, args[i], s));
    } else if (stepArg >= 0) {
      TE_RETURN_IF_ERROR(
          pe.runner->setArgument(size_t(stepArg), args[size_t(stepArg)], s));
    }
    TE_RETURN_IF_ERROR(pe.runner->run(s));
    auto r = pe.runner->results(s);
    if (!r)
      return r.status();
    out.cuda = std::move(*r);
    out.ranCuda = true;
    for (const std::string &name : out.states) {
      auto st = readState(*deviceStore_, name, s);
      if (!st)
        return st.status();
      out.cudaStates.push_back(std::move(*st));
    }
    TE_RETURN_IF_ERROR(pe.runner->carry(carried, s));
  }
  // The CPU's carried state replaces the arguments only now: the CUDA
  // runner of a first call uploads them above.
  if (cpu_)
    for (const CarriedState &c : carried) {
      args[c.argument] = state.tensors[size_t(c.value)];
      // Computed from GEMM outputs, it differs between backends: what the
      // next call computes from it is not compared.
      pe.inexact[c.argument] = state.inexact[size_t(c.value)];
    }

  if (cpu_ && device_) {
    out.comparison = compareResults(out.cpu, out.cuda, "cpu", "cuda");
    if (!out.comparison->difference.empty())
      return out;
    for (size_t i = 0; i < out.states.size(); ++i) {
      Comparison state = compareResults({out.cpuStates[i]}, {out.cudaStates[i]},
                                        "cpu", "cuda");
      if (!state.difference.empty()) {
        out.comparison->difference = "delayed-scaling state '" + out.states[i] +
                                     "' (" + state.difference + ")";
        return out;
      }
      out.comparison->accumulate(state);
    }
    total_.accumulate(*out.comparison);
    // A state recorded from GEMM outputs likewise takes the CPU's bytes.
    for (size_t i = 0; i < out.states.size(); ++i) {
      HostStore::State &held = hostStore_.scaling.at(out.states[i]);
      if (!held.inexact)
        continue;
      TE_RETURN_IF_ERROR(
          deviceStore_->upload(out.states[i], out.cpuStates[i], *stream_));
      held.inexact = false;
    }
    // A persistent value only bounded against the CPU's (a GEMM output) is
    // replaced on the device by the CPU's bytes, so every later call starts
    // both backends from the same state and compares bit for bit.
    for (size_t i = 0; i < e.results.size(); ++i) {
      const std::string &n = e.persistentResult(i);
      bool inexact = false;
      for (const NamedBuffer &b : out.cpu[i])
        inexact |= b.unbounded || !b.tolerance.empty();
      if (n.empty() || !inexact)
        continue;
      TE_RETURN_IF_ERROR(deviceStore_->upload(n, out.cpu[i], *stream_));
      hostStore_.markExact(n);
    }
  }
  return out;
}

rt::Expected<BackendSession::Switch>
BackendSession::switchProgram(const Program &next) {
  rt::Expected<RecipeSwitch> plan = planRecipeSwitch(*program_, next);
  if (!plan)
    return plan.status();
  std::string missing = missingMaster(*plan, [&](const std::string &name) {
    return (!cpu_ || hostStore_.holds(name)) &&
           (!device_ || deviceStore_->holds(name));
  });
  if (!missing.empty())
    return rt::Status(rt::StatusCode::InvalidArgument, missing);
  for (const std::string &name : plan->dropped) {
    hostStore_.values.erase(name);
    hostStore_.scaling.erase(name);
    deviceStore_->values.erase(name);
    deviceStore_->written.erase(name);
  }
  // The runners bind the old program's buffers: new ones are made on the
  // next call of each entry; arguments and call counts carry over by name.
  std::map<const Entry *, PerEntry> carried;
  for (auto &[old, pe] : entries_) {
    pe.runner.reset();
    if (const Entry *e = next.find(old->name))
      carried[e] = std::move(pe);
  }
  entries_ = std::move(carried);
  program_ = &next;

  Switch out;
  out.requantized = plan->requantized;
  for (const Entry &e : plan->requantize.entries) {
    std::vector<ValueData> cpu, cuda;
    if (cpu_) {
      auto r = runCpu(plan->requantize, e, {{}}, nullptr, nullptr, &hostStore_,
                      {}, host_);
      if (!r)
        return r.status();
      cpu = std::move(*r);
    }
    if (device_) {
      auto runner = CudaRunner::create(plan->requantize, e, *device_, *cache_,
                                       deviceStore_.get());
      if (!runner)
        return runner.status();
      runner->setCommunicator(comm_);
      TE_RETURN_IF_ERROR(runner->run(*stream_));
      auto r = runner->results(*stream_);
      if (!r)
        return r.status();
      cuda = std::move(*r);
    }
    if (cpu_ && device_) {
      Comparison c = compareResults(cpu, cuda, "cpu", "cuda");
      if (!c.difference.empty()) {
        c.difference = e.name + ": " + c.difference;
        out.comparison = c;
        return out;
      }
      if (!out.comparison)
        out.comparison.emplace();
      out.comparison->accumulate(c);
      total_.accumulate(c);
    }
  }
  return out;
}

} // namespace te::exec
