//===- te/codegen/ScalingState.h - Delayed-scaling state --------*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//
//
// FP8 delayed scaling casts with a scale computed from the amaxes of earlier
// steps (docs/Numerics.md §4). Its state - the scale and an amax history of
// the scheme's length - is named in the IR (te.quantize's scaling_state; a
// layer's `layer` name gives "<layer>.<role>.delayed_scaling") and lives
// between calls like a persistent value, under that name, in two parts:
// "scale" (fp32 [1], initially 1) and "amax_history" (fp32 [history],
// initially 0, TE's layout: row 0 is the current step's slot).
//
// A grouped (MoE) layer keeps one state per expert (rt::expertStateName):
// its grouped kernels cast each expert with that expert's scale and record
// each expert's amax into element g of a [G] buffer of their plan
// (groupedAmaxRecord).
//
// Every quantize stage naming a state casts with its scale and writes its
// tensor's amax into its own amax buffer; when the entry ends, those amaxes
// are max-folded into history[0], and the history is rolled and turned into
// the next scale by TE's fused update (ref::updateDelayedScaling; on the
// GPU one launch for all states, so the step captures into a CUDA graph).
//
//===----------------------------------------------------------------------===//

#ifndef TE_CODEGEN_SCALINGSTATE_H
#define TE_CODEGEN_SCALINGSTATE_H

#include "te/codegen/Program.h"

#include <utility>

namespace te::cg {

/// The parts of a state, as persistent values name their buffers.
inline constexpr const char *kStateScalePart = "scale";
inline constexpr const char *kStateHistoryPart = "amax_history";

/// One delayed-scaling state an entry uses.
struct ScalingState {
  std::string name;
  rt::Scheme scheme; ///< fp8_delayed: history, algo, margin, pow2, format
  /// The quantized directions whose amax buffers hold this call's record.
  std::vector<std::pair<int, rt::Direction>> records;
  /// One expert's record of a grouped kernel: element `expert` of the plan
  /// buffer `buffer` (groupedAmaxRecord), the amax of value `value`'s rows
  /// of that expert.
  struct ExpertRecord {
    std::string buffer;
    int64_t expert = 0;
    int value = -1;
  };
  std::vector<ExpertRecord> expertRecords;
};

/// The plan buffer [G] f32 into which grouped kernel `kernel` records each
/// expert's amax of its operand `operand` ("x", "w", "dy").
std::string groupedAmaxRecord(const std::string &kernel,
                              const std::string &operand);

/// An operand of a grouped kernel quantized per expert by fp8_delayed.
struct ExpertStateUse {
  std::string operand; ///< "x", "w" (GroupedGemmKernel), "dy", "x" (wgrad)
  int value = -1;
  rt::Scheme scheme;
  std::string state; ///< each expert's is rt::expertStateName(state, g)
  int64_t groups = 0;
};
/// The fp8_delayed operands of kernel `k` of `e` (none for other kernels).
std::vector<ExpertStateUse> expertStateUses(const Entry &e, const Kernel &k);

/// The states `e`'s quantize stages name, in the order they first appear.
std::vector<ScalingState> scalingStates(const Entry &e);

/// Why the states of `e` are inconsistent, or "": every fp8_delayed
/// stage names a state and no other stage does, the stages of one state
/// agree on its scheme, no state is named like a persistent value of `e`,
/// and optimizer kernels requantize into no delayed-scaling direction.
std::string validateScalingStates(const Entry &e);

/// The program-wide rules: every entry that names a state uses it with one
/// scheme, and no state is named like a persistent value of any entry (the
/// stores keep both under their names). "" when they hold.
std::string validateScalingStates(const Program &p);

/// A state's initial bytes: scale 1, history zeros.
std::vector<uint8_t> initialScale();
std::vector<uint8_t> initialHistory(const rt::Scheme &scheme);

} // namespace te::cg

#endif // TE_CODEGEN_SCALINGSTATE_H
