//===- ProgramFile.cpp - Read a program file for a tool -------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#include "ProgramFile.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"

namespace te::tools {

static std::string limitText() {
  return std::to_string(kMaxProgramBytes >> 20) + " MiB";
}

/// Reads stdin in chunks until end of file or past the limit (a pipe has no
/// size to check up front).
static std::unique_ptr<llvm::MemoryBuffer> readStdin(std::string &error) {
  llvm::SmallString<0> text;
  llvm::sys::fs::file_t in = llvm::sys::fs::getStdinHandle();
  constexpr size_t chunk = size_t(1) << 16;
  while (true) {
    size_t used = text.size();
    text.resize_for_overwrite(used + chunk);
    llvm::Expected<size_t> n = llvm::sys::fs::readNativeFile(
        in, llvm::MutableArrayRef<char>(text.data() + used, chunk));
    if (!n) {
      error = "cannot read stdin: " + llvm::toString(n.takeError());
      return nullptr;
    }
    text.truncate(used + *n);
    if (*n == 0)
      break;
    if (text.size() > kMaxProgramBytes) {
      error = "stdin holds more than " + limitText() +
              ", the largest program a tool reads";
      return nullptr;
    }
  }
  return llvm::MemoryBuffer::getMemBufferCopy(text, "<stdin>");
}

std::unique_ptr<llvm::MemoryBuffer> readProgramFile(llvm::StringRef path,
                                                    std::string &error) {
  if (path == "-")
    return readStdin(error);
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(path, status)) {
    error = "cannot read '" + path.str() + "': " + ec.message();
    return nullptr;
  }
  if (status.type() == llvm::sys::fs::file_type::directory_file) {
    error = "'" + path.str() + "' is a directory, not a program file";
    return nullptr;
  }
  if (status.type() != llvm::sys::fs::file_type::regular_file) {
    error = "'" + path.str() +
            "' is not a regular file (give a file, or - for stdin)";
    return nullptr;
  }
  if (status.getSize() > kMaxProgramBytes) {
    error = "'" + path.str() + "' has " + std::to_string(status.getSize()) +
            " bytes; a program may have at most " + limitText();
    return nullptr;
  }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/true);
  if (!buffer) {
    error = "cannot read '" + path.str() + "': " + buffer.getError().message();
    return nullptr;
  }
  return std::move(*buffer);
}

} // namespace te::tools
