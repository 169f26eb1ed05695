//===- Executable.cpp - One function on one device ------------------------===//
//
// Part of tejit. No MLIR.
//
//===----------------------------------------------------------------------===//

#include "te/api/Tejit.h"

#include "te/exec/DeviceEntry.h"
#include "te/exec/RecipeSwitch.h"

#include <map>
#include <optional>

namespace te::api {

struct Executable::State {
  std::string name;
  std::vector<Slot> arguments, results;
  std::vector<int> argumentBuffer, resultBuffer; ///< plan buffer per slot
  std::optional<exec::DeviceEntry> entry;
  /// The caller's buffers bound last: binding refills every launch's
  /// arguments (an optimizer's table: thousands of words), so a run with
  /// the same buffers as the last one skips it.
  std::vector<DeviceSpan> boundArgs, boundResults;
};

static bool sameSpans(const std::vector<DeviceSpan> &a,
                      const std::vector<DeviceSpan> &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].ptr != b[i].ptr || a[i].bytes != b[i].bytes)
      return false;
  return true;
}

Executable::Executable() : state_(std::make_unique<State>()) {}
Executable::Executable(Executable &&) noexcept = default;
Executable &Executable::operator=(Executable &&) noexcept = default;
Executable::~Executable() = default;

const std::string &Executable::name() const { return state_->name; }
const std::vector<Slot> &Executable::arguments() const {
  return state_->arguments;
}
const std::vector<Slot> &Executable::results() const { return state_->results; }
size_t Executable::numKernels() const { return state_->entry->numKernels(); }

void Executable::setCommunicator(rt::Communicator *comm) {
  state_->entry->setCommunicator(comm);
}

rt::Expected<Executable> CompiledModule::load(const std::string &function,
                                              const rt::Device &device,
                                              rt::KernelCache &cache) const {
  return Executable::load(*program_, function, device, cache, nullptr);
}

rt::Expected<Executable> Executable::load(const cg::Program &program,
                                          const std::string &function,
                                          const rt::Device &device,
                                          rt::KernelCache &cache,
                                          exec::DeviceStore *store) {
  const cg::Entry *entry = program.find(function);
  if (!entry) {
    std::string known;
    for (const cg::Entry &e : program.entries)
      known += (known.empty() ? "" : ", ") + e.name;
    return rt::Status(rt::StatusCode::InvalidArgument,
                      "no function '" + function +
                          "' in the module (it has: " + known + ")");
  }
  // The slots: every argument and result buffer but a session's persistent
  // values, which the store binds.
  rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(program, *entry);
  if (!plan)
    return plan.status();
  Executable exe;
  Executable::State &st = *exe.state_;
  st.name = entry->name;
  std::vector<bool> bound(plan->buffers.size(), false);
  auto persistent = [&](const std::string &name) {
    return store && !name.empty();
  };
  for (size_t i = 0; i < entry->args.size(); ++i) {
    if (persistent(entry->persistentArg(i)))
      continue;
    const cg::Value &v = entry->values[entry->args[i]];
    if (v.isQuantized())
      return rt::Status(rt::StatusCode::Unsupported,
                        st.name + ": argument " + std::to_string(i) +
                            " is quantized; only a session's persistent "
                            "values (te.persistent) may be");
    int b = plan->values[entry->args[i]].tensor;
    st.arguments.push_back({"arg" + std::to_string(i),
                            i,
                            "data",
                            v.name,
                            {v.dtype, v.rows(), v.cols()},
                            plan->buffers[b].bytes});
    st.argumentBuffer.push_back(b);
    bound[b] = true;
  }
  for (size_t i = 0; i < entry->results.size(); ++i) {
    if (persistent(entry->persistentResult(i)))
      continue;
    int r = entry->results[i];
    for (const cg::ValueStorage &vs :
         cg::valueStorage(*entry, *plan, r, program.target)) {
      std::string name = "result" + std::to_string(i) +
                         (vs.name == "data" ? "" : "." + vs.name);
      if (bound[vs.buffer])
        return rt::Status(rt::StatusCode::Unsupported,
                          st.name + ": " + name +
                              " is also an argument or an earlier result; "
                              "return distinct values");
      bound[vs.buffer] = true;
      st.results.push_back({name, i, vs.name, entry->values[r].name, vs.desc,
                            plan->buffers[vs.buffer].bytes});
      st.resultBuffer.push_back(vs.buffer);
    }
  }
  // The entry allocates its workspaces (tensor amax, bias partial sums,
  // delayed-scaling state, values the function does not return, results
  // copied into a session's values).
  rt::Expected<exec::DeviceEntry> de = exec::DeviceEntry::create(
      program, *entry, std::move(*plan), device, cache, store, bound);
  if (!de)
    return de.status();
  st.entry.emplace(std::move(*de));
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
  if (!sameSpans(args, st.boundArgs) || !sameSpans(results, st.boundResults)) {
    // A failed bind leaves them cleared: the next run rebinds.
    st.boundArgs.clear();
    st.boundResults.clear();
    for (size_t i = 0; i < args.size(); ++i)
      TE_RETURN_IF_ERROR(st.entry->bind(size_t(st.argumentBuffer[i]),
                                        args[i].ptr, args[i].bytes));
    for (size_t i = 0; i < results.size(); ++i)
      TE_RETURN_IF_ERROR(st.entry->bind(size_t(st.resultBuffer[i]),
                                        results[i].ptr, results[i].bytes));
    st.boundArgs = args;
    st.boundResults = results;
  }
  return st.entry->run(stream);
}

//===----------------------------------------------------------------------===//
// Session
//===----------------------------------------------------------------------===//

struct Session::State {
  /// Declared first: the executables' bindings point into it.
  std::unique_ptr<exec::DeviceStore> store;
  std::vector<std::string> names;
  std::vector<Executable> functions;
  std::shared_ptr<const cg::Program> program;
  const rt::Device *device = nullptr;
  rt::KernelCache *cache = nullptr;
  rt::Communicator *comm = nullptr;

  /// Loads every function of `p` on the store.
  rt::Status load(const cg::Program &p) {
    names.clear();
    functions.clear();
    for (const cg::Entry &e : p.entries) {
      auto exe = Executable::load(p, e.name, *device, *cache, store.get());
      if (!exe)
        return exe.status();
      exe->setCommunicator(comm);
      names.push_back(e.name);
      functions.push_back(std::move(*exe));
    }
    return rt::Status::ok();
  }
};

Session::Session() : state_(std::make_unique<State>()) {}

void Session::setCommunicator(rt::Communicator *comm) {
  state_->comm = comm;
  for (Executable &f : state_->functions)
    f.setCommunicator(comm);
}
Session::Session(Session &&) noexcept = default;
Session &Session::operator=(Session &&) noexcept = default;
Session::~Session() = default;

rt::Expected<Session> Session::create(const CompiledModule &module,
                                      const rt::Device &device,
                                      rt::KernelCache &cache) {
  Session s;
  State &st = *s.state_;
  st.store = std::make_unique<exec::DeviceStore>();
  st.program = module.program_;
  st.device = &device;
  st.cache = &cache;
  TE_RETURN_IF_ERROR(st.load(*st.program));
  return s;
}

rt::Status Session::switchModule(const CompiledModule &next,
                                 const rt::Stream &stream) {
  State &st = *state_;
  rt::Expected<exec::RecipeSwitch> plan =
      exec::planRecipeSwitch(*st.program, *next.program_);
  if (!plan)
    return plan.status();
  std::string missing = exec::missingMaster(
      *plan, [&](const std::string &name) { return st.store->holds(name); });
  if (!missing.empty())
    return rt::Status(rt::StatusCode::InvalidArgument, missing);
  // The old functions hold the dropped values' buffers: release them first.
  st.functions.clear();
  for (const std::string &name : plan->dropped) {
    st.store->values.erase(name);
    st.store->written.erase(name);
  }
  TE_RETURN_IF_ERROR(st.load(*next.program_));
  st.program = next.program_;
  for (const cg::Entry &e : plan->requantize.entries) {
    auto exe = Executable::load(plan->requantize, e.name, *st.device, *st.cache,
                                st.store.get());
    if (!exe)
      return exe.status();
    exe->setCommunicator(st.comm);
    TE_RETURN_IF_ERROR(exe->run({}, {}, stream));
  }
  return stream.synchronize();
}

Executable *Session::function(const std::string &name) {
  for (size_t i = 0; i < state_->names.size(); ++i)
    if (state_->names[i] == name)
      return &state_->functions[i];
  return nullptr;
}

std::vector<std::string> Session::persistentNames() const {
  std::vector<std::string> out;
  for (const auto &[name, parts] : state_->store->values)
    out.push_back(name);
  return out;
}

std::vector<std::pair<std::string, DeviceSpan>>
Session::buffers(const std::string &name) const {
  std::vector<std::pair<std::string, DeviceSpan>> out;
  auto it = state_->store->values.find(name);
  if (it != state_->store->values.end())
    for (const auto &[part, buf] : it->second)
      out.push_back({part, {buf->devicePtr(), buf->size()}});
  return out;
}

rt::Status Session::set(const std::string &name, const void *bytes, size_t size,
                        const rt::Stream &stream) {
  auto it = state_->store->values.find(name);
  if (it == state_->store->values.end() || it->second.size() != 1 ||
      !it->second.count("data"))
    return rt::Status(rt::StatusCode::InvalidArgument,
                      "no persistent tensor '" + name +
                          "' (quantized values are written by functions)");
  rt::DeviceBuffer &buf = *it->second.at("data");
  if (size != buf.size())
    return rt::Status(rt::StatusCode::InvalidArgument,
                      "persistent '" + name + "' has " +
                          std::to_string(buf.size()) + " bytes, got " +
                          std::to_string(size));
  TE_RETURN_IF_ERROR(buf.copyFromHost(bytes, size, stream));
  state_->store->written.insert(name);
  return rt::Status::ok();
}

rt::Status Session::setFromDevice(
    const std::string &name,
    const std::vector<std::pair<std::string, DeviceSpan>> &parts,
    const rt::Stream &stream) {
  auto it = state_->store->values.find(name);
  if (it == state_->store->values.end())
    return rt::Status(rt::StatusCode::InvalidArgument,
                      "no persistent value '" + name + "'");
  std::map<std::string, uint64_t> given;
  for (const auto &[part, span] : parts) {
    auto buf = it->second.find(part);
    if (buf == it->second.end())
      return rt::Status(rt::StatusCode::InvalidArgument,
                        "persistent '" + name + "' has no part '" + part + "'");
    if (span.ptr == 0 || span.bytes < buf->second->size())
      return rt::Status(rt::StatusCode::InvalidArgument,
                        "persistent '" + name + "' part '" + part + "' needs " +
                            std::to_string(buf->second->size()) +
                            " bytes, got " + std::to_string(span.bytes) +
                            (span.ptr ? "" : " at address 0"));
    given[part] = span.ptr;
  }
  for (const auto &[part, buf] : it->second)
    if (!given.count(part))
      return rt::Status(rt::StatusCode::InvalidArgument,
                        "persistent '" + name + "' needs part '" + part + "'");
  for (const auto &[part, buf] : it->second)
    TE_RETURN_IF_ERROR(buf->copyFromDevice(given[part], buf->size(), stream));
  state_->store->written.insert(name);
  return rt::Status::ok();
}

rt::Expected<std::vector<std::pair<std::string, std::vector<uint8_t>>>>
Session::read(const std::string &name, const rt::Stream &stream) const {
  auto it = state_->store->values.find(name);
  if (it == state_->store->values.end())
    return rt::Status(rt::StatusCode::InvalidArgument,
                      "no persistent value '" + name + "'");
  std::vector<std::pair<std::string, std::vector<uint8_t>>> out;
  for (const auto &[part, buf] : it->second) {
    out.push_back({part, std::vector<uint8_t>(buf->size())});
    TE_RETURN_IF_ERROR(
        buf->copyToHost(out.back().second.data(), buf->size(), stream));
  }
  TE_RETURN_IF_ERROR(stream.synchronize());
  return out;
}

bool Session::holds(const std::string &name) const {
  return state_->store->holds(name);
}

} // namespace te::api
