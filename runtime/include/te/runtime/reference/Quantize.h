//===- te/runtime/reference/Quantize.h - Whole-tensor quantize --*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR and no CUDA.
//
//===----------------------------------------------------------------------===//
//
// The reference quantizer and dequantizer for whole M x K tensors, for every
// scheme and direction, producing the raw storage bytes exactly as
// docs/Numerics.md §2 lays them out (buffer shapes from te::rt::storageFor).
// This is the specification in code that generated GPU kernels are compared
// against bit for bit, so every value goes through the element codecs and
// scale functions of Codecs.h / Scales.h in the operation order
// docs/Numerics.md section 12b fixes, and every padding byte is defined (zero).
//
// Storage conventions of the returned bytes:
//  * fp8 codes and E8M0 / E4M3 scale bytes: one byte per element;
//  * FP4: two E2M1 codes per byte, the even element in the low nibble;
//  * fp32 scale_inv and amax values: little-endian IEEE binary32;
//  * identity data: little-endian bf16 / f16 / f32.
// Padding entries of scale buffers (the rows and columns beyond the logical
// extents that the 128 x 4 or multiple-of-4 padding adds) are written as 0.
// TransformerEngine leaves them undefined (torch.empty) except on the
// swizzled-scale path, which zero-fills; comparing kernels must therefore
// either zero them too or compare only the logical entries.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_REFERENCE_QUANTIZE_H
#define TE_RUNTIME_REFERENCE_QUANTIZE_H

#include "te/formats/Scheme.h"
#include "te/runtime/reference/Scales.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace te {
namespace rt {
namespace ref {

//===----------------------------------------------------------------------===//
// Host buffers
//===----------------------------------------------------------------------===//

/// One storage buffer: its descriptor and its raw bytes (desc.bytes() of
/// them). An absent buffer has desc.rows == 0 and no bytes.
struct HostBuffer {
  BufferDesc desc;
  std::vector<uint8_t> bytes;

  bool present() const { return desc.present(); }
  /// A zero-filled buffer of the given shape (empty when `d` is absent).
  static HostBuffer zeros(const BufferDesc &d);
};

/// Little-endian element access, independent of the host byte order.
float loadF32(const HostBuffer &b, int64_t index);
void storeF32(HostBuffer &b, int64_t index, float value);
uint16_t loadU16(const HostBuffer &b, int64_t index);
void storeU16(HostBuffer &b, int64_t index, uint16_t value);

//===----------------------------------------------------------------------===//
// Quantized tensors
//===----------------------------------------------------------------------===//

/// The buffers of one direction. Layout flags mirror DirectionStorage.
struct QuantizedDirection {
  HostBuffer data;
  HostBuffer scaleInv;
  HostBuffer amax;
  /// `data` holds the K x M transpose of the logical matrix.
  bool dataTransposed = false;
  /// A runtime keeps no buffer of its own for this direction's data (per
  /// tensor FP8 on targets with any-layout FP8 GEMMs; identity columnwise).
  /// The reference still fills `data` with a copy of the shared bytes, so
  /// each direction can be read and dequantized on its own. Never set for
  /// the columnwise direction of a hybrid (different schemes): there is no
  /// rowwise buffer of the same format to share.
  bool sharesRowwiseData = false;
  /// The scale_inv buffer is the rowwise one (per-tensor FP8); copied too.
  bool sharesRowwiseScale = false;
  /// MXFP8 / NVFP4 scales are in the cuBLAS tile layout (docs/Numerics.md
  /// §5.3).
  bool swizzledScales = false;
};

struct QuantizedTensor {
  std::optional<QuantizedDirection> rowwise;
  std::optional<QuantizedDirection> columnwise;
  /// Empty on success; otherwise why nothing was produced.
  std::string error;

  bool ok() const { return error.empty(); }
  const QuantizedDirection *get(Direction d) const;
};

/// Bit mask of the directions to produce: unsigned(Direction::Rowwise) = 1,
/// unsigned(Direction::Columnwise) = 2.
constexpr unsigned kRowwiseMask = 1u;
constexpr unsigned kColumnwiseMask = 2u;
constexpr unsigned kBothDirections = 3u;

struct QuantizeOptions {
  Target target = Target::sm90();
  /// NVFP4 stochastic rounding state (docs/Numerics.md §6.5). The random byte
  /// of the element at linear index i of a direction's STORED data buffer, in
  /// element (not byte) units (rowwise (r, c) -> r*K + c, transposed
  /// columnwise (r, c) -> c*M + r), is srRandomByte(seed, offset, i). Both
  /// directions use the same (seed, offset).
  uint64_t seed = 0;
  uint64_t offset = 0;
  /// fp8_delayed state: `scale` is read and the tensor amax is
  /// max-accumulated into history[0] (never overwritten: several casts of
  /// one step record their maximum); the direction's amax buffer holds this
  /// tensor's amax. Used by the rowwise direction, and
  /// by the columnwise one unless `delayedColumnwise` is set (a hybrid of
  /// two different delayed schemes has two quantizers, hence two states).
  DelayedScalingState *delayed = nullptr;
  DelayedScalingState *delayedColumnwise = nullptr;
  /// MXFP8 / NVFP4: write scales in the GEMM-ready swizzled layout.
  bool swizzleScales = false;
  /// `x` is one row shard of a larger tensor (docs/Numerics.md §16): the
  /// whole tensor's amax, reduced over the ranks, replaces x's own in
  /// per-tensor FP8 (the recorded amax of delayed scaling too) and NVFP4;
  /// `rhtTensorAmax` likewise for NVFP4's Hadamard-transformed columnwise
  /// direction. Null: x's own amax.
  const float *tensorAmax = nullptr;
  const float *rhtTensorAmax = nullptr;
};

/// The end-of-step update (updateDelayedScaling) of a state of fp8_delayed
/// scheme `s` - its format, algo, margin and pow2 - after the step's casts
/// recorded their amaxes into history[0].
void updateDelayedScaling(DelayedScalingState &state, const Scheme &s);
/// fp8_max * 2^-margin of fp8_delayed scheme `s`: that update's numerator.
float delayedScaledMax(const Scheme &s);

/// Widens `count` elements of the given type to fp32 (exact).
std::vector<float> widenToF32(const void *x, SourceType type, int64_t count);

/// Quantizes the row-major M x K tensor `x` (bf16 / f16 bits as uint16_t, or
/// f32) into each direction selected by `directions`, `rowwise` describing
/// the rowwise direction and `columnwise` the columnwise one (a hybrid when
/// they differ). Every direction is computed from the original input, so a
/// direction's bytes do not depend on which other directions are produced.
/// Per-tensor FP8 columnwise-only output, which TE's dispatcher rejects, is
/// allowed here. On invalid schemes, shapes or options `error` is set and no
/// direction is returned; the delayed-scaling state is then left untouched.
QuantizedTensor quantize(const void *x, SourceType type, int64_t m, int64_t k,
                         const Scheme &rowwise, const Scheme &columnwise,
                         unsigned directions, const QuantizeOptions &options);
/// One scheme for both directions.
QuantizedTensor quantize(const void *x, SourceType type, int64_t m, int64_t k,
                         const Scheme &scheme, unsigned directions,
                         const QuantizeOptions &options);

/// Double quantization (a hybrid's columnwise_source = rowwise_dequantized,
/// docs/Numerics.md §11): the columnwise direction under `columnwise` of
/// the values that the rowwise quantization of `x` under `source`
/// dequantizes to, each rounded to `type` (round to nearest even) - the
/// tensor the backward then reads carries the forward's quantization error.
/// `error` set (nothing returned) when either step fails.
QuantizedTensor quantizeFromRowwiseDequantized(const void *x, SourceType type,
                                               int64_t m, int64_t k,
                                               const Scheme &source,
                                               const Scheme &columnwise,
                                               const QuantizeOptions &options);

/// The logical M x K values (row-major fp32) that direction `d` of `t`
/// represents under `scheme`, by the format's dequantization formula:
/// per-tensor FP8 q * scale_inv, MXFP8 q * 2^(E-127), NVFP4
/// e2m1 * fl(fl(s_b * A) * fl(1/2688)), block FP8 q * scale_inv, identity
/// the stored value. For NVFP4 with RHT the columnwise values are those of
/// the transformed matrix (RHT applied down each column), transposed back to
/// M x K; undo it with inverseRhtColumns. Empty when `d` is absent or the
/// buffers do not match the scheme.
std::vector<float> dequantize(const QuantizedTensor &t, Direction d,
                              const Scheme &scheme, int64_t m, int64_t k);
std::vector<float> dequantize(const QuantizedDirection &q, Direction d,
                              const Scheme &scheme, int64_t m, int64_t k);

//===----------------------------------------------------------------------===//
// Random Hadamard transform (docs/Numerics.md §6.4)
//===----------------------------------------------------------------------===//

/// Sign vector of TE's RHT as a mask: bit i set <=> s_i = -1.
constexpr uint16_t kRhtSignMask = 0xD7E8;

/// Entry R[k][j] = s_k * (-1)^popcount(k & j) * 0.25 of the 16 x 16 RHT
/// matrix R = diag(s) * H16 * 0.25.
float rhtMatrixEntry(int k, int j, uint16_t signMask = kRhtSignMask);

/// y = v * R in fp32, not yet rounded to bf16: for each output j,
/// acc = +0.0f, then acc = acc + fl(v[kk] * R[kk][j]) for kk = 0..15 in
/// order, each product and sum rounded to fp32 (no FMA: -ffp-contract=off
/// semantics). The products are exact except for fp32 underflow, so only the
/// sum order matters; the GPU MMA's internal order is hardware-defined
/// (docs/Numerics.md §6.4).
void rht16(const float *v, float *y, uint16_t signMask = kRhtSignMask);

/// The columnwise NVFP4 RHT input: the K x M matrix RHT(x^T) whose row c
/// holds column c of x transformed in runs of 16 original rows, each output
/// rounded RNE to bf16 and widened back (M % 16 == 0). TE requires bf16
/// inputs; f16 / f32 inputs enter the transform with their fp32 values.
std::vector<float> rhtColumnwise(const float *x, int64_t m, int64_t k);

/// Applies R^T (the inverse transform) in place to each run of 16 rows of
/// every column of the row-major M x K matrix, in double, rounded once to
/// fp32. Maps dequantized RHT columnwise values back to the original domain.
void inverseRhtColumns(std::vector<float> &mk, int64_t m, int64_t k);

//===----------------------------------------------------------------------===//
// GEMM scale swizzle (docs/Numerics.md §5.3, 6.6)
//===----------------------------------------------------------------------===//

/// Position of compact scale S[i][j] in the cuBLAS VEC32_UE8M0 /
/// VEC16_UE4M3 layout of an R x C scale matrix (R % 128 == 0, C % 4 == 0;
/// `cols` is C):
///   ((i/128) * (C/4) + j/4) * 512 + (i%32) * 16 + ((i%128)/32) * 4 + j%4.
int64_t gemmSwizzledScaleIndex(int64_t i, int64_t j, int64_t cols);

/// Whole-matrix swizzle / unswizzle of an R x C byte matrix; empty when the
/// shape is not a whole number of 128 x 4 tiles or `bytes` has the wrong size.
std::vector<uint8_t> swizzleScales(const std::vector<uint8_t> &compact,
                                   int64_t rows, int64_t cols);
std::vector<uint8_t> unswizzleScales(const std::vector<uint8_t> &swizzled,
                                     int64_t rows, int64_t cols);

/// The GEMM layout of a compact scale buffer of `scheme`'s direction `d`
/// (shape `desc`). MXFP8 columnwise scales are swizzled as the transposed
/// matrix (roundup(K,128) rows of roundup(M/32,4) K-blocks); NVFP4 columnwise
/// scales are already stored transposed and swizzle as they are. Empty for
/// schemes without byte block scales.
std::vector<uint8_t> swizzleScalesFor(const Scheme &scheme, Direction d,
                                      const std::vector<uint8_t> &compact,
                                      const BufferDesc &desc);
std::vector<uint8_t> unswizzleScalesFor(const Scheme &scheme, Direction d,
                                        const std::vector<uint8_t> &swizzled,
                                        const BufferDesc &desc);

} // namespace ref
} // namespace rt
} // namespace te

#endif // TE_RUNTIME_REFERENCE_QUANTIZE_H
