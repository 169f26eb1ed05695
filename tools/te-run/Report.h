//===- Report.h - What te-run prints and dumps ------------------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TOOLS_TE_RUN_REPORT_H
#define TE_TOOLS_TE_RUN_REPORT_H

#include "te/codegen/Program.h"
#include "te/exec/BackendSession.h"
#include "te/exec/Compare.h"

namespace te::run {

/// Writes every result buffer of `e` as DIR/resultI[.part].npy.
void dump(const cg::Entry &e, const std::vector<exec::ValueData> &results,
          const std::string &dir);

/// One line per result: its buffers with their shapes and types.
void summarize(const cg::Entry &e, const std::vector<exec::ValueData> &results);

/// One line per call of --steps or of an --entry sequence: the RMS of every
/// floating-point tensor result (the parameters an optimizer step returns, a
/// weight gradient), so a user sees them evolve.
void printStep(const cg::Entry &e, const std::string &label,
               const std::vector<exec::ValueData> &results);

/// One line per delayed-scaling state a call updated: its scale, the amax
/// it recorded (the newest history entry) and the history's maximum, so a
/// user sees the scale follow the amaxes.
void printStates(const std::vector<std::string> &names,
                 const std::vector<exec::ValueData> &states);

/// "switch before call N: re-quantized V from M, ..." for --switch-recipe.
void printSwitch(size_t call, const exec::BackendSession::Switch &s);

/// The closing "check: ..." line of --check over `numCalls` calls.
void printCheck(const exec::Comparison &total, size_t numCalls);

} // namespace te::run

#endif // TE_TOOLS_TE_RUN_REPORT_H
