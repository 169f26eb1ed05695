//===- RecipeSwitch.cpp - A session changing recipes ----------------------===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//

#include "te/exec/RecipeSwitch.h"

#include "te/codegen/ScalingState.h"

#include <algorithm>
#include <cctype>

namespace te::exec {

using namespace cg;

namespace {

/// Where a quantized persistent value comes from: the persistent tensor it
/// is quantized from, and the stages writing it (value index 1 of a
/// requantize entry).
struct Source {
  std::string master;
  Value masterValue;
  std::vector<Stage> stages;
  /// A row shard's quantize reduces its amax over the ranks (amax_ranks).
  int amaxRanks = 1;
};

/// The persistent argument name of value `v` of `e`, or "".
std::string persistentArgOf(const Entry &e, int v) {
  for (size_t a = 0; a < e.args.size(); ++a)
    if (e.args[a] == v && !e.persistentArg(a).empty())
      return e.persistentArg(a);
  return "";
}

/// The persistent tensor value `v` of `e` stands for: a persistent
/// argument itself, or the new parameter an optimizer kernel makes of one.
std::string masterOf(const Entry &e, int v) {
  std::string name = persistentArgOf(e, v);
  if (!name.empty() || e.values[size_t(v)].isQuantized())
    return name;
  for (const Kernel &k : e.kernels)
    if (const auto *a = std::get_if<AdamKernel>(&k))
      for (const AdamTensor &t : a->tensors)
        if (t.newParam == v)
          return persistentArgOf(e, t.param);
  return "";
}

/// The source of the value `e` returns as persistent `name` (`v`), if a
/// kernel of `e` quantizes it from a persistent tensor.
std::optional<Source> sourceIn(const Entry &e, int v) {
  for (const Kernel &k : e.kernels) {
    if (const auto *q = std::get_if<QuantizeKernel>(&k)) {
      std::string master = masterOf(e, q->input);
      if (master.empty())
        continue;
      Source s{master, e.values[size_t(q->input)], {}, q->amaxRanks};
      for (Stage st : q->stages)
        if (st.value == v) {
          st.value = 1;
          s.stages.push_back(st);
        }
      if (!s.stages.empty())
        return s;
    } else if (const auto *a = std::get_if<AdamKernel>(&k)) {
      for (const AdamTensor &t : a->tensors)
        for (size_t slot = 0; slot < t.quantized.size(); ++slot) {
          std::string master = persistentArgOf(e, t.param);
          if (t.quantized[slot] != v || master.empty())
            continue;
          Source s{master, e.values[size_t(t.param)], {}, 1};
          for (Stage st : a->stages)
            if (st.value == int(slot)) {
              st.value = 1;
              s.stages.push_back(st);
            }
          return s;
        }
    }
  }
  return std::nullopt;
}

std::optional<Source> sourceOf(const Program &p, const std::string &name) {
  for (const Entry &e : p.entries)
    for (size_t r = 0; r < e.results.size(); ++r)
      if (e.persistentResult(r) == name)
        if (std::optional<Source> s = sourceIn(e, e.results[r]))
          return s;
  return std::nullopt;
}

std::string identifier(const std::string &name) {
  std::string out = "requantize_";
  for (char c : name)
    out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

} // namespace

std::string
missingMaster(const RecipeSwitch &s,
              const std::function<bool(const std::string &)> &holds) {
  for (const auto &[value, master] : s.requantized)
    if (!holds(master))
      return "persistent '" + value + "' is re-quantized from '" + master +
             "' at the switch, but the session holds no value of '" + master +
             "' yet: set it, or call a function that writes it, first";
  return "";
}

rt::Expected<RecipeSwitch> planRecipeSwitch(const Program &from,
                                            const Program &to) {
  RecipeSwitch out;
  out.requantize.arch = to.arch;
  out.requantize.target = to.target;
  out.requantize.random = to.random;
  std::map<std::string, Value> before = persistentValues(from);
  for (const auto &[name, after] : persistentValues(to)) {
    auto old = before.find(name);
    if (old == before.end() || sameType(old->second, after))
      continue;
    if (!after.isQuantized() || !old->second.isQuantized())
      return rt::Status(rt::StatusCode::InvalidArgument,
                        "the new recipes change the type of persistent '" +
                            name +
                            "'; only quantized values may change their "
                            "format with a recipe");
    std::optional<Source> src = sourceOf(to, name);
    if (!src)
      return rt::Status(
          rt::StatusCode::InvalidArgument,
          "persistent '" + name +
              "' changes its format with the new recipes, but no function "
              "quantizes it from a persistent tensor (its master), so it "
              "cannot be re-quantized: it would be left stale");
    Entry e;
    e.name = "requantize " + name;
    e.values = {src->masterValue, after};
    e.values[0].name = src->master;
    e.values[1].name = name;
    QuantizeKernel k;
    k.name = identifier(name);
    k.input = 0;
    k.stages = src->stages;
    k.amaxRanks = src->amaxRanks;
    e.kernels.push_back(k);
    e.args = {0};
    e.argPersistent = {src->master};
    e.results = {1};
    e.resultPersistent = {name};
    out.requantize.entries.push_back(std::move(e));
    out.requantized.push_back({name, src->master});
    out.dropped.push_back(name);
  }
  // A delayed-scaling state `from` does not use with the same scheme
  // starts afresh: one of another scheme, and one a program before `from`
  // left in the store.
  std::map<std::string, rt::Scheme> states;
  for (const Entry &e : from.entries)
    for (const ScalingState &s : scalingStates(e))
      states.emplace(s.name, s.scheme);
  for (const Entry &e : to.entries)
    for (const ScalingState &s : scalingStates(e)) {
      auto it = states.find(s.name);
      if ((it == states.end() || it->second != s.scheme) &&
          std::find(out.dropped.begin(), out.dropped.end(), s.name) ==
              out.dropped.end())
        out.dropped.push_back(s.name);
    }
  return out;
}

} // namespace te::exec
