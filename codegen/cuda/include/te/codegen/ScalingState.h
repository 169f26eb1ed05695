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
};

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
