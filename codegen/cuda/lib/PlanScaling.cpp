//===- PlanScaling.cpp - Delayed-scaling state in a plan ------------------===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//
//
// Each delayed-scaling state of an entry (ScalingState.h) gets two plan
// buffers with initial contents - the scale (1) and the amax history (0) -
// which a runner binds to its store's copy of the state; the quantize
// stages cast with the scale. After the entry's kernels one launch of
// te/device/DelayedScaling.cuh updates every state from the amaxes its
// stages recorded (more launches only where the states outgrow one
// parameter table).
//
//===----------------------------------------------------------------------===//

#include "PlanBuilderInternal.h"

#include "te/codegen/ScalingState.h"
#include "te/runtime/reference/Quantize.h"

#include <algorithm>
#include <cstring>
#include <sstream>

namespace te::cg::detail {

using rt::ArgDesc;

void addStateBuffers(const Entry &e, BufferTable &table, EntryPlan &out) {
  for (const ScalingState &s : scalingStates(e)) {
    EntryPlan::StateBuffers b;
    b.name = s.name;
    b.scale = table.add(s.name + "." + kStateScalePart, 4, initialScale());
    b.history =
        table.add(s.name + "." + kStateHistoryPart,
                  uint64_t(s.scheme.history) * 4, initialHistory(s.scheme));
    out.states.push_back(b);
  }
}

int stateScaleBuffer(const EntryPlan &out, const std::string &state) {
  for (const EntryPlan::StateBuffers &b : out.states)
    if (b.name == state)
      return b.scale;
  return -1;
}

/// The table words of one state (DelayedScaling.cuh's record): its
/// stages' amax buffers, and each grouped kernel's record of its expert.
static std::vector<ArgDesc> stateWords(const ScalingState &s,
                                       const EntryPlan::StateBuffers &b,
                                       const BufferTable &table,
                                       const EntryPlan &out) {
  float scaledMax = rt::ref::delayedScaledMax(s.scheme);
  uint32_t bits;
  std::memcpy(&bits, &scaledMax, 4);
  int64_t flags = (s.scheme.algo == rt::AmaxAlgo::MostRecent ? 1 : 0) |
                  (s.scheme.pow2 ? 2 : 0);
  std::vector<ArgDesc> w = {
      ArgDesc::ptr(b.scale),
      ArgDesc::ptr(b.history),
      ArgDesc::i64(s.scheme.history),
      ArgDesc::i64(int64_t(bits)),
      ArgDesc::i64(flags),
      ArgDesc::i64(int64_t(s.records.size() + s.expertRecords.size()))};
  for (auto [value, dir] : s.records)
    w.push_back(ArgDesc::ptr(out.values[size_t(value)]
                                 .dir[dir == rt::Direction::Rowwise ? 0 : 1]
                                 .amax));
  // The grouped kernels' plans made these buffers (planned before this).
  for (const ScalingState::ExpertRecord &r : s.expertRecords)
    w.push_back(ArgDesc::ptr(table.find(r.buffer), uint64_t(4 * r.expert)));
  return w;
}

/// Why the update cannot read every record of `s`: a grouped kernel whose
/// plan made no record buffer (a kernel left unplanned); "" otherwise.
static std::string missingRecord(const ScalingState &s,
                                 const BufferTable &table) {
  for (const ScalingState::ExpertRecord &r : s.expertRecords)
    if (table.find(r.buffer) < 0)
      return "the delayed-scaling update of state '" + s.name +
             "' reads the amax record '" + r.buffer +
             "', which no planned kernel writes";
  return "";
}

rt::Expected<std::optional<KernelPlan>>
planScalingUpdate(const Program &p, const Entry &e, const BufferTable &table,
                  const EntryPlan &out) {
  std::vector<ScalingState> states = scalingStates(e);
  if (states.empty())
    return std::optional<KernelPlan>();
  for (const ScalingState &s : states)
    if (std::string why = missingRecord(s, table); !why.empty())
      return rt::Status(rt::StatusCode::Unsupported, e.name + ": " + why);
  KernelPlan kp;
  kp.name = "te_delayed_scaling_update";
  // States in launches of at most kMaxTableWords words.
  size_t first = 0;
  while (first < states.size()) {
    std::vector<std::vector<ArgDesc>> records;
    size_t words = 1;
    size_t last = first;
    for (; last < states.size(); ++last) {
      std::vector<ArgDesc> w =
          stateWords(states[last], out.states[last], table, out);
      if (last > first && words + 1 + w.size() > rt::kMaxTableWords)
        break;
      words += 1 + w.size();
      records.push_back(std::move(w));
    }
    size_t count = records.size();
    // One thread per history entry up to 1024, then several each.
    int64_t longest = 1;
    for (size_t s = first; s < last; ++s)
      longest = std::max(longest, states[s].scheme.history);
    int64_t threads = std::min<int64_t>(rt::ceilDiv(longest, 32) * 32, 1024);
    int64_t per = rt::ceilDiv(longest, threads);
    std::vector<ArgDesc> params = {ArgDesc::i64(int64_t(count))};
    size_t offset = 1 + count;
    for (const std::vector<ArgDesc> &w : records) {
      params.push_back(ArgDesc::i64(int64_t(offset)));
      offset += w.size();
    }
    for (std::vector<ArgDesc> &w : records)
      for (ArgDesc &a : w)
        params.push_back(std::move(a));
    for (size_t s = first; s < last; ++s) {
      kp.bytesMoved +=
          table.bytes(out.states[s].scale) +
          2 * table.bytes(out.states[s].history) +
          4 * (states[s].records.size() + states[s].expertRecords.size());
    }

    std::string entry = kp.name + "_" + std::to_string(params.size()) + "_" +
                        std::to_string(threads) + "x" + std::to_string(per);
    std::ostringstream src;
    src << "// Generated by tejit: the delayed-scaling update of " << count
        << " state(s).\n#include \"te/device/DelayedScaling.cuh\"\n\n"
        << "extern \"C\" __global__ void __launch_bounds__(" << threads << ")\n"
        << entry << "(const __grid_constant__ te::dev::ScalingTable<"
        << params.size() << "> t) {\n"
        << "  te::dev::updateDelayedScaling<" << params.size() << ", "
        << threads << ", " << per << ">(t);\n}\n";
    rt::KernelSpec spec;
    spec.name = entry;
    spec.entry = entry;
    spec.source = src.str();
    spec.options.arch = p.arch;
    spec.grid = rt::Dim3{unsigned(count), 1, 1};
    spec.block = rt::Dim3{unsigned(threads), 1, 1};
    spec.args = {ArgDesc::table(std::move(params))};
    kp.addLaunch(std::move(spec));
    first = last;
  }
  return std::optional<KernelPlan>(std::move(kp));
}

} // namespace te::cg::detail
