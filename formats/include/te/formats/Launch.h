//===- te/formats/Launch.h - Launch shapes of grid-stride kernels -*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR, no CUDA.
//
//===----------------------------------------------------------------------===//
//
// The grid of a dequantize kernel: the tek verifier pins it, te-lower-to-
// kernels writes it and the CUDA plan builder launches it, so the rule
// lives here, below all three.
//
//===----------------------------------------------------------------------===//

#ifndef TE_FORMATS_LAUNCH_H
#define TE_FORMATS_LAUNCH_H

#include <algorithm>
#include <cstdint>

namespace te::rt {

/// Threads of a dequantize CTA.
constexpr int64_t kDequantizeThreads = 256;
/// CTAs per SM the dequantize kernels are built to keep resident (their
/// registers are capped to fit): 132 * 8 CTAs are one full wave on an H100.
constexpr int64_t kDequantizeCtasPerSm = 8;
constexpr int64_t kDequantizeWaveCtas = 132 * kDequantizeCtasPerSm;
/// Elements one CTA covers in one pass of the row path (256 threads x 4
/// runs of 8 in flight; the identity decoder keeps 2 and loops twice) or
/// of the tile path (a 128 x 64 tile).
constexpr int64_t kDequantizeElementsPerCta = 8192;

/// The grid of a dequantize kernel over `elements` values: one CTA per
/// kDequantizeElementsPerCta elements, so that every thread's loads are in
/// flight at once and the block scheduler, not a grid-stride loop, balances
/// the SMs (measured on the H100 at 8192 x 8192: MXFP8 rows 82 -> 88 % of
/// the copy ceiling against one resident wave); at least one element per
/// thread up to a full wave for small tensors. The kernels are grid-stride
/// loops, so any grid is correct.
inline int64_t dequantizeGrid(int64_t elements) {
  auto ceilDiv = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  int64_t grid = std::max(
      ceilDiv(elements, kDequantizeElementsPerCta),
      std::min(ceilDiv(elements, kDequantizeThreads), kDequantizeWaveCtas));
  return std::clamp<int64_t>(grid, 1, INT32_MAX);
}

} // namespace te::rt

#endif // TE_FORMATS_LAUNCH_H
