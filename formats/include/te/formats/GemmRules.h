//===- te/formats/GemmRules.h - Which operands a GEMM pairs -----*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR and no CUDA.
//
//===----------------------------------------------------------------------===//
//
// The one home of the GEMM pairing rules: which schemes the two operands of a
// GEMM may have, given the direction each is read in. The te.gemm verifier
// (which prints its own diagnostics from the reason), te-expand-linear
// (through that verifier) and code generation's Program validation all call
// checkGemmPairing, so a rule changes in one place.
//
//===----------------------------------------------------------------------===//

#ifndef TE_FORMATS_GEMMRULES_H
#define TE_FORMATS_GEMMRULES_H

#include "te/formats/Scheme.h"

#include <optional>
#include <string>

namespace te::rt {

/// One operand of a GEMM as the pairing rules see it.
struct GemmOperand {
  /// The scheme of the direction the GEMM reads; empty for a high-precision
  /// (bf16, f16, f32) tensor.
  std::optional<Scheme> scheme;
  /// The direction the GEMM reads: rowwise when it contracts the operand's
  /// last dimension (A without transpose), columnwise when its first.
  Direction read = Direction::Rowwise;
  /// The element type of a high-precision operand; unused when quantized.
  DType element = DType::BF16;
};

/// Why two operands do not pair (None: they do).
enum class GemmPairingError : uint8_t {
  None,
  /// Both high precision, of different element types.
  ElementTypesDiffer,
  /// Operand `operand` is high precision, the other is quantized by a scheme
  /// other than identity.
  HighPrecisionWithQuantized,
  /// Operand `operand` is identity (kept in high precision) and the other
  /// is quantized: a GEMM multiplies two high-precision operands or two
  /// quantized ones.
  IdentityWithQuantized,
  /// Block FP8 with 128x128 tiles on both sides (no such kernel).
  BlockTiles128x128,
  /// Scaled FP8 (per-tensor or block) with e5m2 on both sides.
  E5m2ByE5m2,
  /// Operand `operand` is read in NVFP4's random-Hadamard-transformed domain
  /// (an RHT scheme read columnwise) and the other is not: the transform
  /// cancels in the product only when both apply it.
  HadamardOneSided,
};

struct GemmPairing {
  GemmPairingError error = GemmPairingError::None;
  /// The operand the reason names (0: A, 1: B) where it names one, else -1.
  int operand = -1;
  bool ok() const { return error == GemmPairingError::None; }
};

/// The pairing rules: high-precision operands share an element type; a
/// high-precision operand pairs only with an identity one, an identity one
/// only with an identity one; quantized operands of one family
/// (gemmSchemeFamily) pair as that family's kernel allows - block FP8 never
/// pairs 128x128 with 128x128, scaled FP8 never multiplies e5m2 by e5m2 -
/// and quantized operands of two families (a hybrid recipe's MXFP8 weight
/// with an NVFP4 gradient, say) pair as the BF16 GEMM of their dequantized
/// values (gemmMixesFamilies); NVFP4's RHT is read on both sides or on
/// neither. Checks the first rule broken, in that order. Whether each
/// operand holds the direction it is read in is the caller's check (it
/// knows the directions a tensor stores).
GemmPairing checkGemmPairing(const GemmOperand &a, const GemmOperand &b);

/// Whether a GEMM that pairs (checkGemmPairing) multiplies quantized
/// operands of two scheme families. No kernel reads such a pair as stored
/// on any target: each operand is dequantized to bf16 in the direction read
/// and a BF16 GEMM multiplies the values (docs/Numerics.md §11), which
/// te-legalize-target records as the GEMM's `emulated` path.
bool gemmMixesFamilies(const GemmOperand &a, const GemmOperand &b);

/// The family a scheme pairs within: "per-tensor FP8" for both per-tensor FP8
/// kinds, else the kind's name (schemeKindName).
std::string gemmSchemeFamily(const Scheme &s);

/// checkGemmPairing as text: "" when the operands pair, else the reason in
/// plain words (operands named 'a' and 'b', schemes by family), for callers
/// without the compiler's attribute printer.
std::string gemmOperandsError(const GemmOperand &a, const GemmOperand &b);

/// The grouped wgrad's operands (te.grouped_wgrad, dW_g = dy_g^T x_g with dy
/// and x read columnwise, each expert's rows quantized as their own
/// tensor), each identity of bf16, block FP8 1x128, per-tensor FP8 (current
/// or delayed scaling; one scale per expert), MXFP8 or NVFP4 with 1x16
/// blocks: FP8 codes where groupedWgradReadsCodes (paired by
/// checkGemmPairing), else a BF16 GEMM on the values each expert's
/// quantization dequantizes to (the random Hadamard transform on both
/// NVFP4 operands or neither). "" when `dy` and `x` pass, else the reason.
/// The te verifier and code generation's Program validation call it.
std::string groupedWgradSchemesError(const Scheme &dy, const Scheme &x);

/// Whether the grouped wgrad of `dy` and `x` (passing
/// groupedWgradSchemesError) multiplies FP8 codes on the FP8 kernel: both
/// block FP8 1x128, or both per-tensor FP8. Every other pair - one of them
/// identity, MXFP8 or NVFP4, or FP8 of two families - runs the BF16 kernel
/// on each expert's dequantized values. The plan, the CPU backend and
/// groupedWgradSchemesError ask it.
bool groupedWgradReadsCodes(const Scheme &dy, const Scheme &x);

/// Whether `s` scales by one scale for a whole tensor, which a grouped GEMM
/// takes per expert (quantizing that operand itself): per-tensor FP8 or
/// NVFP4 (whose tensor scale is its amax's).
bool groupedTensorWide(const Scheme &s);

/// A grouped GEMM that quantizes one or both of its bf16 operands itself,
/// one tensor scale per expert (te.grouped_gemm's `input_scheme` /
/// `weight_scheme`; x rowwise, w rowwise or for the dgrad columnwise). `x`
/// and `w` are those schemes, absent for an operand that comes in another
/// form (groupedPerExpertPartnerError). Each scheme present is per-tensor
/// FP8 (current or delayed scaling, e4m3 or e5m2) or NVFP4 (1x16 blocks
/// for the tokens; for the dgrad's weight no random Hadamard transform and
/// no stochastic rounding). Both per-tensor FP8: the block-scaled FP8
/// kernel reads the codes (paired by checkGemmPairing); every other case
/// is a BF16 GEMM on each expert's dequantized values
/// (groupedPerExpertReadsCodes). "" when they pass, else the reason. The
/// te and tek verifiers and code generation's Program validation call it.
std::string groupedPerExpertSchemesError(const std::optional<Scheme> &x,
                                         const std::optional<Scheme> &w,
                                         bool weightColumnwise = false);

/// Where a grouped GEMM quantizes only one operand per expert by
/// `perExpert`, what the other operand (read in its direction) may be:
/// quantized by a scheme without a tensor-wide scale (block FP8, MXFP8),
/// which pairs as two families do - the BF16 GEMM of both operands'
/// dequantized values (gemmMixesFamilies, docs/Numerics.md §7.4). Not
/// identity (a GEMM multiplies two quantized operands or two high-precision
/// ones) and not a tensor-wide scheme (that operand is quantized per expert
/// too); the tokens (`otherIsTokens`) not in 128x128 tiles, which would
/// span experts. "" when it may, else the reason.
std::string groupedPerExpertPartnerError(const Scheme &perExpert,
                                         const Scheme &other,
                                         bool otherIsTokens);

/// The shapes a grouped GEMM quantizing operands per expert (`x`, `w` as
/// for groupedPerExpertSchemesError) takes, with the stack [G, n, k] and
/// x's rows of `xCols` elements (k for the fprop, n for the dgrad): codes
/// (groupedPerExpertReadsCodes) over each expert's own 128x128 weight tiles
/// and whole 128-element K blocks; values for the BF16 kernel over
/// 64-element slabs of the contracted dimension, rows quantized in 16-byte
/// pieces, NVFP4's 1x16 and 16x16 blocks each an expert's own, an even
/// output width, and a stack read along N in 16-byte rows. "" when they
/// fit, else the reason, as "quantizes its ... per expert ...: ...". The te
/// verifier and code generation's Program validation call it.
std::string groupedPerExpertShapeError(const std::optional<Scheme> &x,
                                       const std::optional<Scheme> &w,
                                       bool weightColumnwise, int64_t xCols,
                                       int64_t n, int64_t k);

/// Whether a grouped GEMM passing groupedPerExpertSchemesError reads FP8
/// codes (the block-scaled kernel, each expert's scale repeated over the
/// blocks): both operands quantized per expert by per-tensor FP8. Otherwise
/// it reads bf16 values - NVFP4 x NVFP4 may instead read codes on the
/// NVFP4 kernel (groupedNvfp4CodesError).
bool groupedPerExpertReadsCodes(const std::optional<Scheme> &x,
                                const std::optional<Scheme> &w);

/// Whether a grouped GEMM's epilogue can quantize its bf16 output in
/// direction `dir` by `s` itself, instead of a quantize kernel reading the
/// output again (te-fuse-gemm-epilogue): FP8 block scaling with 1x128
/// blocks (E4M3 or E5M2, pow2 or not, any eps), rowwise - each block is part
/// of one row of an output tile. "" when it can, else why not. The tek
/// verifier, the pass and code generation's Program validation call it.
std::string groupedEpilogueQuantizeError(const Scheme &s, Direction dir);

/// Whether the GEMM engine's NVFP4 kernel can read a grouped GEMM's
/// operands quantized per expert by NVFP4 (`x`, `w` as for
/// groupedPerExpertSchemesError) as codes instead of the BF16 kernel
/// reading their values (docs/Numerics.md §6.7): the fprop (the weight
/// read rowwise, 1x16 or 16x16 blocks) with `k`, the contracted dimension,
/// a multiple of 64 (the kernel's stage). "" when it can, else why not.
/// te-legalize-target, the tek verifier and code generation's Program
/// validation call it.
std::string groupedNvfp4CodesError(const Scheme &x, const Scheme &w,
                                   bool weightColumnwise, int64_t k);

} // namespace te::rt

#endif // TE_FORMATS_GEMMRULES_H
