//===- HostSession.cpp - Functions on the CPU backend ---------------------===//
//
// Part of tejit. No MLIR.
//
//===----------------------------------------------------------------------===//

#include "te/api/Tejit.h"

#include "te/exec/CpuBackend.h"
#include "te/exec/RecipeSwitch.h"

#include <map>

namespace te::api {

static rt::Status invalid(const std::string &why) {
  return rt::Status(rt::StatusCode::InvalidArgument, why);
}

static rt::Expected<const cg::Entry *> findEntry(const cg::Program &program,
                                                 const std::string &name) {
  if (const cg::Entry *e = program.find(name))
    return e;
  std::string known;
  for (const cg::Entry &e : program.entries)
    known += (known.empty() ? "" : ", ") + e.name;
  return invalid("no function '" + name + "' in the module (it has: " + known +
                 ")");
}

/// Runs `e` on the CPU. With `store`, persistent arguments come from it (or
/// from `initial`, a value set but not yet read) and persistent results go
/// to it; `given` then holds only the other arguments, and only the other
/// results are returned.
static rt::Expected<std::vector<HostBuffer>>
callOnCpu(const cg::Program &program, const cg::Entry &e,
          const std::vector<std::vector<uint8_t>> &given,
          exec::HostStore *store,
          const std::map<std::string, std::vector<uint8_t>> *initial,
          rt::HostCollective *collective) {
  auto persistent = [&](const std::string &name) {
    return store && !name.empty();
  };
  std::vector<std::vector<uint8_t>> args(e.args.size());
  size_t next = 0;
  for (size_t i = 0; i < e.args.size(); ++i) {
    const std::string &name = e.persistentArg(i);
    if (!persistent(name)) {
      if (next < given.size())
        args[i] = given[next];
      ++next;
      continue;
    }
    if (store->holds(name))
      continue;
    auto it = initial->find(name);
    if (it == initial->end())
      return invalid(e.name + " reads persistent '" + name +
                     "', which holds no value: set it, or call a function "
                     "that writes it first");
    args[i] = it->second;
  }
  if (next != given.size())
    return invalid(e.name + " takes " + std::to_string(next) +
                   " argument(s), got " + std::to_string(given.size()));
  rt::Expected<std::vector<exec::ValueData>> results =
      exec::runCpu(program, e, args, nullptr, nullptr, store, {}, collective);
  if (!results)
    return results.status();
  std::vector<HostBuffer> out;
  for (size_t i = 0; i < results->size(); ++i) {
    if (persistent(e.persistentResult(i)))
      continue;
    for (exec::NamedBuffer &b : (*results)[i])
      out.push_back({"result" + std::to_string(i) +
                         (b.name == "data" ? "" : "." + b.name),
                     i, b.name, b.desc, std::move(b.bytes)});
  }
  return out;
}

rt::Expected<std::vector<HostBuffer>>
CompiledModule::runOnCpu(const std::string &function,
                         const std::vector<std::vector<uint8_t>> &args,
                         rt::HostCollective *collective) const {
  rt::Expected<const cg::Entry *> e = findEntry(*program_, function);
  if (!e)
    return e.status();
  return callOnCpu(*program_, **e, args, nullptr, nullptr, collective);
}

struct HostSession::State {
  std::shared_ptr<const cg::Program> program;
  exec::HostStore store;
  /// Values set by the caller that no call has read yet.
  std::map<std::string, std::vector<uint8_t>> initial;
  /// Every persistent value's type, from the declarations.
  std::map<std::string, cg::Value> declared;
  rt::HostCollective *collective = nullptr;
};

HostSession::HostSession() : state_(std::make_unique<State>()) {}
HostSession::HostSession(HostSession &&) noexcept = default;
HostSession &HostSession::operator=(HostSession &&) noexcept = default;
HostSession::~HostSession() = default;

rt::Expected<HostSession> HostSession::create(const CompiledModule &module) {
  HostSession s;
  s.state_->program = module.program_;
  s.state_->declared = cg::persistentValues(*module.program_);
  s.state_->store.declareStates(*module.program_);
  return s;
}

void HostSession::setCollective(rt::HostCollective *collective) {
  state_->collective = collective;
}

rt::Expected<std::vector<HostBuffer>>
HostSession::call(const std::string &function,
                  const std::vector<std::vector<uint8_t>> &args) {
  State &st = *state_;
  rt::Expected<const cg::Entry *> e = findEntry(*st.program, function);
  if (!e)
    return e.status();
  auto out =
      callOnCpu(*st.program, **e, args, &st.store, &st.initial, st.collective);
  // What the call read or wrote, the store now holds.
  for (auto it = st.initial.begin(); it != st.initial.end();)
    it = st.store.holds(it->first) ? st.initial.erase(it) : std::next(it);
  return out;
}

std::vector<std::string> HostSession::persistentNames() const {
  std::vector<std::string> out;
  for (const auto &[name, value] : state_->declared)
    out.push_back(name);
  for (const auto &[name, state] : state_->store.scaling)
    out.push_back(name);
  return out;
}

rt::Status HostSession::set(const std::string &name, const void *bytes,
                            size_t size) {
  State &st = *state_;
  auto it = st.declared.find(name);
  if (it == st.declared.end() || it->second.isQuantized())
    return invalid("no persistent tensor '" + name +
                   "' (quantized values are written by functions)");
  const cg::Value &v = it->second;
  size_t want = size_t(v.rows() * v.cols() * rt::dtypeSize(v.dtype));
  if (size != want)
    return invalid("persistent '" + name + "' has " + std::to_string(want) +
                   " bytes, got " + std::to_string(size));
  st.store.values.erase(name); // the set value replaces what a call wrote
  const auto *p = static_cast<const uint8_t *>(bytes);
  st.initial[name].assign(p, p + size);
  return rt::Status::ok();
}

rt::Status HostSession::setParts(
    const std::string &name,
    const std::vector<std::pair<std::string, std::vector<uint8_t>>> &parts) {
  State &st = *state_;
  exec::ValueData data;
  for (const auto &[part, bytes] : parts)
    data.push_back({part, {}, bytes, {}, false});
  if (st.store.scaling.count(name))
    return st.store.writeState(name, data);
  auto it = st.declared.find(name);
  if (it == st.declared.end())
    return invalid("no persistent value '" + name + "'");
  st.initial.erase(name);
  return st.store.write(name, it->second, data, st.program->target);
}

rt::Expected<std::vector<std::pair<std::string, std::vector<uint8_t>>>>
HostSession::read(const std::string &name) const {
  const State &st = *state_;
  if (!st.declared.count(name) && !st.store.scaling.count(name))
    return invalid("no persistent value '" + name + "'");
  std::vector<std::pair<std::string, std::vector<uint8_t>>> out;
  auto it = st.initial.find(name);
  if (it != st.initial.end()) {
    out.push_back({"data", it->second});
    return out;
  }
  if (!st.store.holds(name))
    return invalid("persistent '" + name + "' holds no value yet");
  for (exec::NamedBuffer &b : st.store.read(name))
    out.push_back({b.name, std::move(b.bytes)});
  return out;
}

bool HostSession::holds(const std::string &name) const {
  return state_->initial.count(name) || state_->store.holds(name);
}

rt::Status HostSession::switchModule(const CompiledModule &next) {
  State &st = *state_;
  rt::Expected<exec::RecipeSwitch> plan =
      exec::planRecipeSwitch(*st.program, *next.program_);
  if (!plan)
    return plan.status();
  std::string missing =
      exec::missingMaster(*plan, [&](const std::string &name) {
        return st.store.holds(name) || st.initial.count(name);
      });
  if (!missing.empty())
    return invalid(missing);
  for (const std::string &name : plan->dropped) {
    st.store.values.erase(name);
    st.store.scaling.erase(name);
  }
  st.program = next.program_;
  st.declared = cg::persistentValues(*st.program);
  st.store.declareStates(*st.program);
  for (const cg::Entry &e : plan->requantize.entries) {
    auto out = callOnCpu(plan->requantize, e, {}, &st.store, &st.initial,
                         st.collective);
    if (!out)
      return out.status();
  }
  for (auto it = st.initial.begin(); it != st.initial.end();)
    it = st.store.holds(it->first) ? st.initial.erase(it) : std::next(it);
  return rt::Status::ok();
}

} // namespace te::api
