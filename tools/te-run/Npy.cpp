//===- Npy.cpp - NumPy .npy files for te-run ------------------------------===//
//
// Part of tejit. Plain C++17.
//
//===----------------------------------------------------------------------===//

#include "Npy.h"

#include <cstring>
#include <filesystem>
#include <fstream>

namespace te::npy {

int itemSize(const std::string &descr) {
  if (descr == "<f4")
    return 4;
  if (descr == "<f2" || descr == "<u2")
    return 2;
  if (descr == "|u1" || descr == "<u1")
    return 1;
  if (descr == "<i8")
    return 8;
  return 0;
}

/// The value of `key` in the header dict, as written by NumPy.
static bool field(const std::string &header, const std::string &key,
                  std::string &value) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos)
    return false;
  at = header.find(':', at);
  if (at == std::string::npos)
    return false;
  ++at;
  while (at < header.size() && header[at] == ' ')
    ++at;
  size_t end;
  if (header[at] == '\'') {
    end = header.find('\'', at + 1);
    value = header.substr(at + 1, end - at - 1);
  } else if (header[at] == '(') {
    end = header.find(')', at);
    value = header.substr(at + 1, end - at - 1);
  } else {
    end = header.find_first_of(",}", at);
    value = header.substr(at, end - at);
  }
  return end != std::string::npos;
}

/// The dimensions of a header's shape tuple ("3, 4" or "3,"); false on
/// anything but non-negative decimal integers.
static bool parseShape(const std::string &text, std::vector<int64_t> &dims) {
  dims.clear();
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(',', at);
    if (end == std::string::npos)
      end = text.size();
    std::string dim = text.substr(at, end - at);
    size_t first = dim.find_first_not_of(' ');
    at = end + 1;
    if (first == std::string::npos) { // "(3,)": nothing after the comma
      if (end != text.size())
        return false;
      continue;
    }
    size_t last = dim.find_last_not_of(' ');
    dim = dim.substr(first, last - first + 1);
    if (!dim.empty() && dim.back() == 'L') // Python 2's long
      dim.pop_back();
    if (dim.empty() || dim.size() > 18 ||
        dim.find_first_not_of("0123456789") != std::string::npos)
      return false;
    dims.push_back(std::stoll(dim));
  }
  return true;
}

bool read(const std::string &path, Array &out, std::string &error,
          const Accept &accept) {
  // Only a regular file has a size to check the header against before
  // reading (a directory, /dev/zero or a pipe would abort or never end).
  std::error_code ec;
  std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) {
    error = "cannot open '" + path + "'";
    return false;
  }
  if (std::filesystem::is_directory(status)) {
    error = "'" + path + "' is a directory, not an .npy file";
    return false;
  }
  if (!std::filesystem::is_regular_file(status)) {
    error = "'" + path + "' is not a regular file";
    return false;
  }
  uint64_t size = std::filesystem::file_size(path, ec);
  std::ifstream in(path, std::ios::binary);
  if (ec || !in) {
    error = "cannot open '" + path + "'";
    return false;
  }
  char prefix[12] = {};
  in.read(prefix, sizeof(prefix));
  if (size < 10 || std::memcmp(prefix, "\x93NUMPY", 6) != 0) {
    error = "'" + path + "' is not a .npy file";
    return false;
  }
  uint8_t major = uint8_t(prefix[6]);
  if (major < 1 || major > 3) {
    error = "'" + path + "' is .npy version " + std::to_string(major) +
            "; te-run reads versions 1 to 3";
    return false;
  }
  uint64_t headerLen, start;
  if (major == 1) {
    headerLen = uint8_t(prefix[8]) | uint8_t(prefix[9]) << 8;
    start = 10;
  } else {
    headerLen = uint64_t(uint8_t(prefix[8])) |
                uint64_t(uint8_t(prefix[9])) << 8 |
                uint64_t(uint8_t(prefix[10])) << 16 |
                uint64_t(uint8_t(prefix[11])) << 24;
    start = 12;
  }
  if (size < start + headerLen) {
    error = "'" + path + "' is truncated";
    return false;
  }
  std::string header(size_t(headerLen), '\0'), order, shape;
  in.seekg(std::streamoff(start));
  in.read(header.data(), std::streamsize(headerLen));
  if (!in) {
    error = "cannot read '" + path + "'";
    return false;
  }
  if (!field(header, "descr", out.descr) ||
      !field(header, "fortran_order", order) ||
      !field(header, "shape", shape)) {
    error = "'" + path + "' has a malformed header";
    return false;
  }
  if (order.find("True") != std::string::npos) {
    error = "'" + path + "' is Fortran-ordered; save it C-ordered";
    return false;
  }
  if (!itemSize(out.descr)) {
    error = "'" + path + "' has dtype '" + out.descr +
            "'; te-run reads <f4, <f2, <u2 (bf16 bits), |u1 and <i8";
    return false;
  }
  if (!parseShape(shape, out.shape)) {
    error = "'" + path + "' has a malformed shape (" + shape + ")";
    return false;
  }
  // The payload the header declares, checked against the file's size (and
  // by `accept` against what the caller wants) before a byte is read.
  uint64_t payload = size - start - headerLen;
  uint64_t bytes = uint64_t(itemSize(out.descr));
  for (int64_t d : out.shape)
    if (__builtin_mul_overflow(bytes, uint64_t(d), &bytes)) {
      error =
          "'" + path + "' has a shape of more than 2^64 bytes (" + shape + ")";
      return false;
    }
  if (payload != bytes) {
    error = "'" + path + "' holds " + std::to_string(payload) +
            " data bytes, its header says " + std::to_string(bytes);
    return false;
  }
  if (accept) {
    error = accept(out);
    if (!error.empty())
      return false;
  }
  out.bytes.resize(size_t(bytes));
  in.read(reinterpret_cast<char *>(out.bytes.data()), std::streamsize(bytes));
  if (!in) {
    error = "cannot read '" + path + "'";
    return false;
  }
  return true;
}

bool write(const std::string &path, const Array &a, std::string &error) {
  std::string shape;
  for (size_t i = 0; i < a.shape.size(); ++i)
    shape += std::to_string(a.shape[i]) +
             (a.shape.size() == 1 || i + 1 < a.shape.size() ? "," : "");
  if (!shape.empty() && a.shape.size() > 1 && shape.back() == ',')
    shape.pop_back();
  std::string header = "{'descr': '" + a.descr +
                       "', 'fortran_order': False, 'shape': (" + shape + "), }";
  // Pad so the data starts at a multiple of 64 bytes; end with '\n'.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) {
    error = "cannot write '" + path + "'";
    return false;
  }
  out.write("\x93NUMPY\x01\x00", 8);
  uint16_t len = uint16_t(header.size());
  char lenBytes[2] = {char(len & 0xFF), char(len >> 8)};
  out.write(lenBytes, 2);
  out.write(header.data(), std::streamsize(header.size()));
  out.write(reinterpret_cast<const char *>(a.bytes.data()),
            std::streamsize(a.bytes.size()));
  if (!out) {
    error = "cannot write '" + path + "'";
    return false;
  }
  return true;
}

} // namespace te::npy
