//===- te/exec/RecipeSwitch.h - A session changing recipes ------*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//
//
// A layer's recipe changes mid-training (NVFP4 for most of the run, MXFP8
// for the end): the session goes on with the same module compiled with the
// new recipe (api::CompileOptions::layerRecipes). Its persistent values
// stay, except those the new program stores differently: a quantized
// weight in another format is re-quantized from its FP32 master - the
// persistent tensor a function of the new program quantizes it from - so
// it is never left stale or in the old format; a delayed-scaling state of
// another scheme starts afresh. docs/Guide.md §7.2.
//
//===----------------------------------------------------------------------===//

#ifndef TE_EXEC_RECIPESWITCH_H
#define TE_EXEC_RECIPESWITCH_H

#include "te/codegen/Program.h"
#include "te/runtime/Status.h"

#include <functional>

namespace te::exec {

struct RecipeSwitch {
  /// Persistent values and delayed-scaling states the new program stores
  /// differently (or, for a state, that the old program did not use): a
  /// session drops them from its stores.
  std::vector<std::string> dropped;
  /// One entry per dropped quantized value ("requantize <value>"): it reads
  /// the value's master (a persistent argument) and writes the value (a
  /// persistent result) with the new program's schemes and directions.
  cg::Program requantize;
  /// (value, master) of each entry of `requantize`, in order.
  std::vector<std::pair<std::string, std::string>> requantized;
};

/// The masters `s` re-quantizes from that `holds` says are missing ("" when
/// every one is held): a session checks before it drops anything.
std::string
missingMaster(const RecipeSwitch &s,
              const std::function<bool(const std::string &)> &holds);

/// What switching a session from program `from` to program `to` does to
/// its stores. Fails where `to` changes a persistent tensor's type, or
/// stores a quantized value differently without quantizing it from a
/// persistent tensor anywhere (nothing to re-quantize it from).
rt::Expected<RecipeSwitch> planRecipeSwitch(const cg::Program &from,
                                            const cg::Program &to);

} // namespace te::exec

#endif // TE_EXEC_RECIPESWITCH_H
