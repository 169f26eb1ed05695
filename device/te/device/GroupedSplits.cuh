//===- te/device/GroupedSplits.cuh - the experts' row counts ----*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Grouped (MoE) kernels read the split sizes on the device, where nothing
// checks them: every kernel clamps them the same way, so that bad sizes
// (negative, or summing past M_total) never address memory outside the
// tensors and every kernel agrees on each expert's rows. The host twin is
// te::rt::ref::clampSplits.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_GROUPEDSPLITS_CUH
#define TE_DEVICE_GROUPEDSPLITS_CUH

#include "te/device/Common.cuh"

namespace te {
namespace dev {

/// Expert g's row count: `split` (splits[g]) clamped to [0, mTotal -
/// rowsBefore], rowsBefore the clamped rows of experts 0..g-1.
TE_HD long long clampedSplit(long long split, long long rowsBefore,
                             long long mTotal) {
  long long m = split < 0 ? 0 : split;
  return m > mTotal - rowsBefore ? mTotal - rowsBefore : m;
}

} // namespace dev
} // namespace te

#endif // TE_DEVICE_GROUPEDSPLITS_CUH
