//===- Sha256.h - SHA-256 for cache keys and file checks --------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_SRC_SHA256_H
#define TE_RUNTIME_SRC_SHA256_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace te::rt::detail {

/// Incremental SHA-256 (FIPS 180-4).
class Sha256 {
public:
  Sha256();
  void update(const void *data, size_t size);
  void update(const std::string &s) { update(s.data(), s.size()); }
  std::array<uint8_t, 32> finish();

  static std::array<uint8_t, 32> digest(const void *data, size_t size);
  static std::string hex(const std::array<uint8_t, 32> &d);

private:
  void block(const uint8_t *p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t bufLen_ = 0;
  uint64_t total_ = 0;
};

} // namespace te::rt::detail

#endif // TE_RUNTIME_SRC_SHA256_H
