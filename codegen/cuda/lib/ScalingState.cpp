//===- ScalingState.cpp - Delayed-scaling state of an entry ---------------===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//

#include "te/codegen/ScalingState.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace te::cg {

/// The stages of a kernel that casts (and so may record into a state): a
/// quantize, from one tensor or from master shards; null for others.
static const std::vector<Stage> *castStages(const Kernel &k) {
  if (const auto *q = std::get_if<QuantizeKernel>(&k))
    return &q->stages;
  if (const auto *q = std::get_if<ShardedQuantizeKernel>(&k))
    return &q->stages;
  return nullptr;
}

std::string groupedAmaxRecord(const std::string &kernel,
                              const std::string &operand) {
  return kernel + "." + operand + ".expert_amax_record";
}

std::vector<ExpertStateUse> expertStateUses(const Entry &e, const Kernel &k) {
  std::vector<ExpertStateUse> out;
  auto use = [&](const char *operand, int value,
                 const std::optional<rt::Scheme> &scheme,
                 const std::string &state, int64_t groups) {
    if (scheme && scheme->kind == rt::SchemeKind::Fp8Delayed)
      out.push_back({operand, value, *scheme, state, groups});
  };
  if (const auto *g = std::get_if<GroupedGemmKernel>(&k)) {
    int64_t groups = e.values[size_t(g->w)].shape[0];
    use("x", g->x, g->xScheme, g->xState, groups);
    use("w", g->w, g->wScheme, g->wState, groups);
  } else if (const auto *g = std::get_if<GroupedWgradKernel>(&k)) {
    int64_t groups = e.values[size_t(g->output)].shape[0];
    use("dy", g->dy, g->dyScheme, g->dyState, groups);
    use("x", g->x, g->xScheme, g->xState, groups);
  }
  return out;
}

std::vector<ScalingState> scalingStates(const Entry &e) {
  std::vector<ScalingState> out;
  auto state = [&](const std::string &name, const rt::Scheme &scheme) {
    auto it = std::find_if(out.begin(), out.end(), [&](const ScalingState &s) {
      return s.name == name;
    });
    if (it == out.end())
      it = out.insert(out.end(), ScalingState{name, scheme, {}, {}});
    return it;
  };
  for (const Kernel &k : e.kernels) {
    for (const ExpertStateUse &u : expertStateUses(e, k))
      for (int64_t g = 0; g < u.groups; ++g)
        state(rt::expertStateName(u.state, g), u.scheme)
            ->expertRecords.push_back(
                {groupedAmaxRecord(kernelName(k), u.operand), g, u.value});
    const std::vector<Stage> *stages = castStages(k);
    if (!stages)
      continue;
    for (const Stage &s : *stages)
      if (!s.state.empty())
        state(s.state, s.scheme)->records.push_back({s.value, s.dir});
  }
  return out;
}

std::string validateScalingStates(const Entry &e) {
  std::vector<std::pair<std::string, rt::Scheme>> seen;
  for (const Kernel &k : e.kernels) {
    if (const auto *a = std::get_if<AdamKernel>(&k)) {
      for (const Stage &s : a->stages)
        if (s.scheme.kind == rt::SchemeKind::Fp8Delayed || !s.state.empty())
          return "adam '" + a->name +
                 "' requantizes with fp8_delayed, whose state the optimizer "
                 "kernel does not update (te-fuse-optimizer leaves such "
                 "quantizes on their own)";
      continue;
    }
    for (const ExpertStateUse &u : expertStateUses(e, k)) {
      if (u.state.empty())
        return "grouped kernel '" + kernelName(k) + "': its " + u.operand +
               " is quantized per expert by fp8_delayed without a "
               "delayed-scaling state";
      for (int64_t g = 0; g < u.groups; ++g) {
        const std::string own = rt::expertStateName(u.state, g);
        for (const auto &[name, scheme] : seen)
          if (name == own && scheme != u.scheme)
            return "delayed-scaling state '" + own +
                   "' is used with two different fp8_delayed schemes";
        seen.push_back({own, u.scheme});
      }
    }
    const std::vector<Stage> *stages = castStages(k);
    if (!stages)
      continue;
    const std::string &name = kernelName(k);
    for (const Stage &s : *stages) {
      bool delayed = s.scheme.kind == rt::SchemeKind::Fp8Delayed;
      const std::optional<rt::Scheme> &source =
          e.values[size_t(s.value)].columnwiseSource;
      if (s.dir == rt::Direction::Columnwise && source &&
          (delayed || source->kind == rt::SchemeKind::Fp8Delayed))
        return "quantize '" + name +
               "': double quantization (columnwise_source = "
               "rowwise_dequantized) with fp8_delayed is not supported (the "
               "rowwise cast would record into its state twice)";
      if (delayed && s.state.empty())
        return "quantize '" + name +
               "': an fp8_delayed stage needs a delayed-scaling state "
               "(te.quantize's scaling_state)";
      if (!delayed && !s.state.empty())
        return "quantize '" + name + "': state '" + s.state + "' on a " +
               rt::schemeKindName(s.scheme.kind) +
               " stage (only fp8_delayed keeps a state)";
      if (s.state.empty())
        continue;
      for (const auto &[name, scheme] : seen)
        if (name == s.state && scheme != s.scheme)
          return "delayed-scaling state '" + s.state +
                 "' is used with two different fp8_delayed schemes";
      seen.push_back({s.state, s.scheme});
      for (const std::vector<std::string> *names :
           {&e.argPersistent, &e.resultPersistent})
        for (const std::string &n : *names)
          if (n == s.state)
            return "delayed-scaling state '" + s.state +
                   "' has the name of a persistent value";
    }
  }
  return "";
}

std::string validateScalingStates(const Program &p) {
  std::map<std::string, Value> persistent = persistentValues(p);
  std::map<std::string, std::pair<rt::Scheme, std::string>> seen;
  for (const Entry &e : p.entries)
    for (const ScalingState &s : scalingStates(e)) {
      if (persistent.count(s.name))
        return "delayed-scaling state '" + s.name + "' (function '" + e.name +
               "') has the name of a persistent value";
      auto [it, added] = seen.insert({s.name, {s.scheme, e.name}});
      if (!added && it->second.first != s.scheme)
        return "delayed-scaling state '" + s.name +
               "' is used with another fp8_delayed scheme in function '" +
               e.name + "' than in '" + it->second.second + "'";
    }
  return "";
}

std::vector<uint8_t> initialScale() {
  std::vector<uint8_t> bytes(4);
  float one = 1.0f;
  std::memcpy(bytes.data(), &one, 4);
  return bytes;
}

std::vector<uint8_t> initialHistory(const rt::Scheme &scheme) {
  return std::vector<uint8_t>(size_t(scheme.history) * 4, 0);
}

} // namespace te::cg
