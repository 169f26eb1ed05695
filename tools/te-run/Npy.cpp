//===- Npy.cpp - NumPy .npy files for te-run ------------------------------===//
//
// Part of tejit. Plain C++17.
//
//===----------------------------------------------------------------------===//

#include "Npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

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

bool read(const std::string &path, Array &out, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open '" + path + "'";
    return false;
  }
  std::string all((std::istreambuf_iterator<char>(in)),
                  std::istreambuf_iterator<char>());
  if (all.size() < 10 || all.compare(0, 6, "\x93NUMPY") != 0) {
    error = "'" + path + "' is not a .npy file";
    return false;
  }
  uint8_t major = uint8_t(all[6]);
  size_t headerLen, start;
  if (major == 1) {
    headerLen = uint8_t(all[8]) | uint8_t(all[9]) << 8;
    start = 10;
  } else {
    if (all.size() < 12) {
      error = "'" + path + "' is truncated";
      return false;
    }
    headerLen = size_t(uint8_t(all[8])) | size_t(uint8_t(all[9])) << 8 |
                size_t(uint8_t(all[10])) << 16 | size_t(uint8_t(all[11])) << 24;
    start = 12;
  }
  if (all.size() < start + headerLen) {
    error = "'" + path + "' is truncated";
    return false;
  }
  std::string header = all.substr(start, headerLen), order, shape;
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
  out.shape.clear();
  std::stringstream ss(shape);
  std::string dim;
  int64_t count = 1;
  while (std::getline(ss, dim, ',')) {
    if (dim.find_first_not_of(' ') == std::string::npos)
      continue;
    out.shape.push_back(std::stoll(dim));
    count *= out.shape.back();
  }
  size_t bytes = size_t(count) * size_t(itemSize(out.descr));
  if (all.size() - start - headerLen != bytes) {
    error = "'" + path + "' holds " +
            std::to_string(all.size() - start - headerLen) +
            " data bytes, its header says " + std::to_string(bytes);
    return false;
  }
  out.bytes.assign(all.begin() + long(start + headerLen), all.end());
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
