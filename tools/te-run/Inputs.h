//===- Inputs.h - te-run's argument data ------------------------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Where each argument of each entry te-run calls gets its bytes: an .npy
// file named by --input (an argument, ENTRY.argN, or a persistent value's
// name), else seeded random data. Bad input is one line on stderr, exit 1.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TOOLS_TE_RUN_INPUTS_H
#define TE_TOOLS_TE_RUN_INPUTS_H

#include "te/codegen/Program.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace te::run {

/// Prints "te-run: MSG" and exits with 1.
[[noreturn]] void die(const std::string &msg);

/// The .npy type descriptor of a dtype ("<f4", "<u2" for bf16 bit
/// patterns, ...).
const char *npyDescr(rt::DType t);

/// The arguments of every entry of `calls` (each entry once, in order of
/// first call), from `inputs` (NAME=FILE) or, with `randomSeed` >= 0, seeded
/// random data (entry k's argument i from seed + 100 k + i). A persistent
/// quantized argument gets no bytes (the session's store provides it).
/// Dies on a missing or bad input, an --input no entry takes, and a
/// persistent quantized value read before any call wrote it.
std::map<const cg::Entry *, std::vector<std::vector<uint8_t>>>
argumentsOf(const cg::Program &program,
            const std::vector<const cg::Entry *> &calls,
            const std::vector<std::string> &inputs, int64_t randomSeed);

} // namespace te::run

#endif // TE_TOOLS_TE_RUN_INPUTS_H
