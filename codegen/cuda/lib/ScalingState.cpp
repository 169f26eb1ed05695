//===- ScalingState.cpp - Delayed-scaling state of an entry ---------------===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//

#include "te/codegen/ScalingState.h"

#include <algorithm>
#include <cstring>

namespace te::cg {

std::vector<ScalingState> scalingStates(const Entry &e) {
  std::vector<ScalingState> out;
  for (const Kernel &k : e.kernels) {
    const auto *q = std::get_if<QuantizeKernel>(&k);
    if (!q)
      continue;
    for (const Stage &s : q->stages) {
      if (s.state.empty())
        continue;
      auto it =
          std::find_if(out.begin(), out.end(), [&](const ScalingState &st) {
            return st.name == s.state;
          });
      if (it == out.end())
        it = out.insert(out.end(), ScalingState{s.state, s.scheme, {}});
      it->records.push_back({s.value, s.dir});
    }
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
    const auto *q = std::get_if<QuantizeKernel>(&k);
    if (!q)
      continue;
    for (const Stage &s : q->stages) {
      bool delayed = s.scheme.kind == rt::SchemeKind::Fp8Delayed;
      if (delayed && s.state.empty())
        return "quantize '" + q->name +
               "': an fp8_delayed stage needs a delayed-scaling state "
               "(te.quantize's scaling_state)";
      if (!delayed && !s.state.empty())
        return "quantize '" + q->name + "': state '" + s.state + "' on a " +
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
