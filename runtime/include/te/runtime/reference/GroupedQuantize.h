//===- te/runtime/reference/GroupedQuantize.h - per-expert columnwise -*- C++
//-*-===//
//
// Part of tejit. Plain C++17, no MLIR and no CUDA.
//
//===----------------------------------------------------------------------===//
//
// The reference of the grouped columnwise quantization of an MoE layer's
// tokens (docs/Numerics.md §7.4; the device kernel is
// te/device/GroupedQuantizeKernel.cuh): each expert's rows quantized as
// their own tensor, columnwise, and laid out for the wgrad GEMM - expert
// g's transposed data at columns 128·S_g .. of a [C, capacity] buffer, its
// 1x128 scales at block rows S_g .. of [capacity/128][roundup(C, 4)] -
// with each expert's own bias gradient. Per-tensor FP8 current scaling
// lays each expert's codes out the same way, its one scale_inv repeated
// over its blocks. MXFP8 is laid out dequantized: the
// bf16 values of quantizing each expert's rows, zero-padded to a multiple
// of 32, columnwise and dequantizing them (what the BF16 wgrad GEMM of an
// emulated MXFP8 wgrad reads on a GPU without MXFP8 MMAs). NVFP4 likewise:
// each expert's rows zero-padded to a multiple of 16, quantized columnwise
// (with the random Hadamard transform and stochastic rounding as the
// scheme says) and dequantized; the padding rows' values are laid out too,
// since the transform spreads each block over them.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_REFERENCE_GROUPEDQUANTIZE_H
#define TE_RUNTIME_REFERENCE_GROUPEDQUANTIZE_H

#include "te/runtime/reference/Quantize.h"

#include <cstdint>
#include <string>
#include <vector>

namespace te {
namespace rt {
namespace ref {

struct GroupedColumnwise {
  /// [C, capacity] codes (FP8, 1 byte each) or bf16 values (identity;
  /// MXFP8, NVFP4 and with `fp8Values` FP8 dequantized; 2 bytes each); zero
  /// outside the experts' rows.
  std::vector<uint8_t> data;
  /// [capacity/128][roundup(C, 4)] f32 scale_inv (FP8 codes), zero
  /// elsewhere; empty for values.
  std::vector<float> scaleInv;
  /// [G, C] f32: each expert's bias gradient (128-row chunks).
  std::vector<float> biasGrad;
  /// The first 128-row block of each expert's segment.
  std::vector<int64_t> segmentStart;
  std::string error; ///< set when an expert's quantize fails
};

/// `x` [mTotal, cols] bf16 sorted by expert; `splits` as the grouped GEMMs
/// clamp them; `scheme` block FP8 1x128, per-tensor FP8 current scaling,
/// MXFP8, NVFP4 (1x16) or identity of bf16;
/// `capacity` a multiple of 128 that holds every segment; (`seed`,
/// `offset`) NVFP4's stochastic rounding state, each expert's random bytes
/// those of quantizing it alone (QuantizeOptions); `delayed` (fp8_delayed):
/// each expert's state, which casts it and records its amax; `fp8Values`
/// (FP8 schemes): instead of the codes and scales, the bf16 values they
/// dequantize to, fl(decode(code) · scale_inv) rounded to bf16 - what the
/// BF16 wgrad reads where the other operand is of another family
/// (groupedWgradReadsCodes).
GroupedColumnwise groupedColumnwiseQuantize(
    const uint16_t *x, int64_t mTotal, int64_t cols,
    const std::vector<int64_t> &splits, const Scheme &scheme, int64_t capacity,
    uint64_t seed = 0, uint64_t offset = 0,
    const std::vector<DelayedScalingState *> *delayed = nullptr,
    bool fp8Values = false);

/// The rows of expert g's segment the wgrad GEMM contracts: its m_g rows,
/// or for NVFP4 (whose transform fills its padding rows) m_g rounded up to
/// 16.
int64_t groupedColumnwiseRows(const Scheme &scheme, int64_t rows);

/// Rowwise per-tensor FP8 with one amax per expert, laid out for the
/// block-scaled grouped GEMM (docs/Numerics.md §7.4; the device kernels are
/// te/device/GroupedTensorQuantize.cuh).
struct GroupedTensorScaled {
  /// [rows, C] codes, each expert's as quantizing its rows alone gives
  /// them; zero on padding rows.
  std::vector<uint8_t> codes;
  /// Each expert's scale_inv repeated over the layout's blocks; zero on
  /// padding rows and padding columns.
  std::vector<float> blockScaleInv;
  int64_t blockStride = 0; ///< the layout's row length
  /// [G]: each expert's amax and scale_inv (an expert with no rows: amax 0,
  /// the scale of amax 0).
  std::vector<float> amax, scaleInv;
  std::string error; ///< set (and nothing else) when a quantize fails
};

/// `x` [rows, cols] bf16: the tokens sorted by expert under `splits`
/// (clamped as the grouped GEMMs clamp them; scales over 1x128 blocks,
/// [ceil(cols/128)][roundup(rows, 4)]) or, with `splits` empty, the stacked
/// weight of `groups` experts of rows / groups rows each (scales over
/// 128x128 tiles, [G][ceil(N/128)][roundup(ceil(cols/128), 4)]). `scheme`:
/// #te.fp8_current, or #te.fp8_delayed with `delayed` each expert's state
/// (its scale casts the expert, its history[0] records the expert's amax;
/// an expert without rows records nothing). With `columnwise` (the stack
/// only, rows / groups a multiple
/// of 128): the stack's columnwise copy the dgrad reads - codes [cols, rows],
/// each expert's columnwise quantization side by side, and its scale over
/// 128x128 tiles, [ceil(cols/128)][roundup(rows/128, 4)].
GroupedTensorScaled groupedTensorScaledQuantize(
    const uint16_t *x, int64_t rows, int64_t cols,
    const std::vector<int64_t> &splits, int64_t groups, const Scheme &scheme,
    bool columnwise = false,
    const std::vector<DelayedScalingState *> *delayed = nullptr);

/// The values groupedTensorScaledQuantize's rowwise codes `q` of `x` [rows,
/// cols] (`splits`, `groups` as given to it) dequantize to: fl(decode(code)
/// · scale_inv of the row's expert), rounded to bf16; zero on padding rows.
/// What the BF16 grouped GEMM reads where a per-tensor FP8 operand quantized
/// per expert meets another family (rt::groupedPerExpertReadsCodes false);
/// a per-tensor scale makes them the same in either direction, so the
/// stack's serve the dgrad too.
std::vector<uint16_t>
groupedTensorScaledValues(const GroupedTensorScaled &q, int64_t rows,
                          int64_t cols, const std::vector<int64_t> &splits,
                          int64_t groups, const Scheme &scheme);

/// NVFP4 with one tensor scale per expert, as the BF16 grouped GEMM reads
/// it on a GPU without FP4 MMAs (te/device/GroupedTensorQuantize.cuh's
/// groupedRowsNvfp4Values): `values` [rows, cols] bf16, each expert's rows
/// quantized rowwise as their own tensor (`quantize`) and dequantized
/// (`dequantize`, rounded to bf16), zero on padding rows; `amax` [G] each
/// expert's tensor amax. `x` and `splits` as for groupedTensorScaledQuantize
/// (splits empty: the stack, rows / groups rows an expert); (`seed`,
/// `offset`) the stochastic rounding state, each expert's random bytes those
/// of quantizing it alone. With `columnwise` (the stack only): each
/// expert's columnwise quantization (16x1 or 16x16 blocks), its values in
/// the stack's [rows, cols] layout - what the dgrad reads. Rowwise, also the
/// quantized data itself as the GEMM engine's NVFP4 kernel reads it: `codes`
/// [rows, cols/2] packed E2M1 and `scales` [rows, cols/16] E4M3 (each
/// expert's rowwise data without its scale padding; zeros on padding rows).
struct GroupedNvfp4Values {
  std::vector<uint16_t> values;
  std::vector<uint8_t> codes, scales;
  std::vector<float> amax;
  std::string error; ///< set (and nothing else) when a quantize fails
};
GroupedNvfp4Values groupedNvfp4Values(const uint16_t *x, int64_t rows,
                                      int64_t cols,
                                      const std::vector<int64_t> &splits,
                                      int64_t groups, const Scheme &scheme,
                                      uint64_t seed = 0, uint64_t offset = 0,
                                      bool columnwise = false);

} // namespace ref
} // namespace rt
} // namespace te

#endif // TE_RUNTIME_REFERENCE_GROUPEDQUANTIZE_H
