//===- te/exec/Compare.h - Compare two backends' results --------*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef TE_EXEC_COMPARE_H
#define TE_EXEC_COMPARE_H

#include "te/exec/ValueData.h"

namespace te::exec {

/// The outcome of comparing two results of the same entry.
struct Comparison {
  /// The first disagreement, e.g. "result 0 rowwise.data: byte 1234
  /// (element [9, 82] of ...) cpu 0x3c cuda 0x3d; 3 of 16384 bytes of the
  /// buffer differ"; "" when they agree.
  std::string difference;
  size_t exactBuffers = 0, boundedBuffers = 0, uncheckedBuffers = 0;
  uint64_t bytes = 0;
  /// Largest |a - b| / bound over the bounded elements (<= 1 when agreed).
  double worstBoundRatio = 0;

  /// Adds the counts of `other` (a later call of the same session).
  void accumulate(const Comparison &other);
};

/// Compares every buffer: bit for bit, or within the tolerance either side
/// states. Elements that are NaN in both count as equal (the hardware FP8 /
/// 16-bit conversions drop the NaN sign and payload; docs/Numerics.md).
Comparison compareResults(const std::vector<ValueData> &a,
                          const std::vector<ValueData> &b, const char *nameA,
                          const char *nameB);

/// compareResults(...).difference.
std::string firstDifference(const std::vector<ValueData> &a,
                            const std::vector<ValueData> &b, const char *nameA,
                            const char *nameB);

} // namespace te::exec

#endif // TE_EXEC_COMPARE_H
