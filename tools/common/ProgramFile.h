//===- ProgramFile.h - Read a program file for a tool -----------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// te-opt, te-translate and te-run read their program the same way: a
// regular file or stdin ("-"), at most kMaxProgramBytes, so a directory, a
// device (/dev/zero) or a runaway pipe gets a one-line error instead of a
// hang or an abort.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TOOLS_COMMON_PROGRAMFILE_H
#define TE_TOOLS_COMMON_PROGRAMFILE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>
#include <string>

namespace te::tools {

/// The largest program text a tool reads: 256 MiB.
constexpr uint64_t kMaxProgramBytes = uint64_t(256) << 20;

/// Reads `path` ("-": stdin) whole. On failure returns null and sets `error`
/// to a one-line reason naming the file (without the tool's prefix).
std::unique_ptr<llvm::MemoryBuffer> readProgramFile(llvm::StringRef path,
                                                    std::string &error);

} // namespace te::tools

#endif // TE_TOOLS_COMMON_PROGRAMFILE_H
