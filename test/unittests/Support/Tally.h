//===- Support/Tally.h - counted comparisons for sweep tests ----*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Tally: the bookkeeping of the device-library sweeps (host and GPU), which
// compare millions of device results with the reference. One gtest failure
// per check with the first few mismatches, instead of one per mismatch, and
// an info line with the counts either way.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TEST_UNITTESTS_SUPPORT_TALLY_H
#define TE_TEST_UNITTESTS_SUPPORT_TALLY_H

#include "Support/TestSupport.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

namespace te::test {

/// Counts the checks and mismatches of one function, keeps the first few
/// mismatches for the failure message (raised when the tally goes out of
/// scope), and records which NaN codes a hardware conversion produced.
class Tally {
public:
  explicit Tally(std::string name) : name(std::move(name)) {}
  Tally(const Tally &) = delete;
  Tally &operator=(const Tally &) = delete;
  ~Tally() {
    std::printf("[   info   ] %-46s %9llu checked, %llu mismatched\n",
                name.c_str(), static_cast<unsigned long long>(checked),
                static_cast<unsigned long long>(mismatched));
    if (!nanCodes.empty()) {
      std::printf("[   info   ]   NaN inputs gave:");
      for (auto [code, count] : nanCodes)
        std::printf(" 0x%llx x %llu", static_cast<unsigned long long>(code),
                    static_cast<unsigned long long>(count));
      std::printf(" (reference for the last +NaN: 0x%llx)\n",
                  static_cast<unsigned long long>(refNaN));
    }
    EXPECT_EQ(mismatched, 0u) << name << ":\n" << firstMismatches.str();
  }

  void check(bool equal, const std::string &input, uint64_t got,
             uint64_t want) {
    ++checked;
    if (equal)
      return;
    if (++mismatched <= 10)
      firstMismatches << "  input " << input << ": device 0x" << std::hex << got
                      << ", reference 0x" << want << std::dec << "\n";
  }

  /// Exact equality of integer results (codes, bytes, words).
  template <typename Got, typename Want>
  void code(const std::string &input, Got got, Want want) {
    static_assert(std::is_integral_v<Got> && std::is_integral_v<Want>,
                  "Tally::code compares integers; use bits() or value()");
    check(static_cast<uint64_t>(got) == static_cast<uint64_t>(want), input,
          static_cast<uint64_t>(got), static_cast<uint64_t>(want));
  }

  /// A hardware conversion of `x`: exact unless x is NaN, where `isNaNCode`
  /// must accept the result.
  void hardware(float x, uint64_t got, uint64_t want,
                bool (*isNaNCode)(uint64_t)) {
    if (!std::isnan(x)) {
      code(describe(x), got, want);
      return;
    }
    ++nanCodes[got];
    if (!std::signbit(x))
      refNaN = want;
    check(isNaNCode(got), describe(x) + " (any NaN code)", got, want);
  }

  /// fp32 results of bit manipulation, compared as bit patterns (NaN
  /// payloads included).
  void bits(const std::string &input, float got, float want) {
    check(bitsOf(got) == bitsOf(want), input, bitsOf(got), bitsOf(want));
  }

  /// fp32 results of arithmetic: bit patterns, except that any NaN matches
  /// any NaN. IEEE 754 leaves the sign and payload of a NaN produced by
  /// arithmetic open (x86 returns one operand's NaN, depending on the
  /// compiler's operand order; GPUs return 0x7FFFFFFF).
  void value(const std::string &input, float got, float want) {
    check(bitsOf(got) == bitsOf(want) || (std::isnan(got) && std::isnan(want)),
          input, bitsOf(got), bitsOf(want));
  }

private:
  std::string name;
  uint64_t checked = 0;
  uint64_t mismatched = 0;
  uint64_t refNaN = 0;
  std::map<uint64_t, uint64_t> nanCodes;
  std::ostringstream firstMismatches;
};

} // namespace te::test

#endif // TE_TEST_UNITTESTS_SUPPORT_TALLY_H
