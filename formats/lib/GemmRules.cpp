//===- GemmRules.cpp - Which operands a GEMM pairs ------------------------===//
//
// Part of tejit. Plain C++17, no MLIR and no CUDA.
//
//===----------------------------------------------------------------------===//

#include "te/formats/GemmRules.h"

namespace te::rt {

std::string gemmSchemeFamily(const Scheme &s) {
  // Both per-tensor kinds scale by one scalar: one kernel takes either.
  return s.isPerTensor() ? "per-tensor FP8" : schemeKindName(s.kind);
}

/// Read in NVFP4's Hadamard-transformed domain: the transform runs down
/// columns, i.e. along the contraction dimension of a columnwise read.
static bool readsHadamard(const GemmOperand &o) {
  return o.scheme && o.scheme->kind == SchemeKind::Nvfp4 && o.scheme->rht &&
         o.read == Direction::Columnwise;
}

GemmPairing checkGemmPairing(const GemmOperand &a, const GemmOperand &b) {
  const GemmOperand *ops[2] = {&a, &b};
  if (!a.scheme && !b.scheme) {
    if (a.element != b.element)
      return {GemmPairingError::ElementTypesDiffer, -1};
    return {};
  }
  auto isIdentity = [](const GemmOperand &o) {
    return o.scheme && o.scheme->kind == SchemeKind::Identity;
  };
  for (int i = 0; i < 2; ++i)
    if (!ops[i]->scheme && !isIdentity(*ops[1 - i]))
      return {GemmPairingError::HighPrecisionWithQuantized, i};
  if (!a.scheme || !b.scheme)
    return {}; // high precision x identity
  for (int i = 0; i < 2; ++i)
    if (isIdentity(*ops[i]) && !isIdentity(*ops[1 - i]))
      return {GemmPairingError::IdentityWithQuantized, i};
  const Scheme &sa = *a.scheme, &sb = *b.scheme;
  // Within a family, the family's kernel decides; across families every
  // operand is dequantized to bf16 first, which any pair of codes allows.
  if (!gemmMixesFamilies(a, b)) {
    if (sa.kind == SchemeKind::Fp8Block && sa.tileRows == 128 &&
        sb.tileRows == 128)
      return {GemmPairingError::BlockTiles128x128, -1};
    bool fp8Scaled = sa.isPerTensor() || sa.kind == SchemeKind::Fp8Block;
    if (fp8Scaled && !fp8ElementsPair(sa.element, sb.element))
      return {GemmPairingError::E5m2ByE5m2, -1};
  }
  if (readsHadamard(a) != readsHadamard(b))
    return {GemmPairingError::HadamardOneSided, readsHadamard(a) ? 0 : 1};
  return {};
}

bool gemmMixesFamilies(const GemmOperand &a, const GemmOperand &b) {
  return a.scheme && b.scheme && a.scheme->kind != SchemeKind::Identity &&
         b.scheme->kind != SchemeKind::Identity &&
         gemmSchemeFamily(*a.scheme) != gemmSchemeFamily(*b.scheme);
}

std::string gemmOperandsError(const GemmOperand &a, const GemmOperand &b) {
  GemmPairing p = checkGemmPairing(a, b);
  const char *names[2] = {"a", "b"};
  const GemmOperand *ops[2] = {&a, &b};
  switch (p.error) {
  case GemmPairingError::None:
    return "";
  case GemmPairingError::ElementTypesDiffer:
    return std::string("high-precision operands must share an element type, "
                       "got ") +
           dtypeName(a.element) + " and " + dtypeName(b.element);
  case GemmPairingError::HighPrecisionWithQuantized:
    return std::string("operand '") + names[p.operand] +
           "' is a high-precision tensor but operand '" + names[1 - p.operand] +
           "' is quantized by " +
           gemmSchemeFamily(*ops[1 - p.operand]->scheme) +
           "; quantize both, or keep both in high precision";
  case GemmPairingError::IdentityWithQuantized:
    return std::string("operand '") + names[p.operand] +
           "' is identity (high precision) but operand '" +
           names[1 - p.operand] + "' is quantized by " +
           gemmSchemeFamily(*ops[1 - p.operand]->scheme) +
           "; quantize both, or keep both in high precision";
  case GemmPairingError::BlockTiles128x128:
    return "block FP8 cannot pair 128x128 tiles with 128x128 tiles (no such "
           "GEMM kernel); quantize one operand with 1x128 tiles";
  case GemmPairingError::E5m2ByE5m2:
    return "no FP8 GEMM multiplies e5m2 by e5m2; use e4m3 for at least one "
           "operand";
  case GemmPairingError::HadamardOneSided:
    return std::string("operand '") + names[p.operand] +
           "' is read in the random-Hadamard-transformed domain but operand '" +
           names[1 - p.operand] +
           "' is not; the transform cancels only when both operands apply it";
  }
  return "";
}

/// Per-tensor FP8 of an FP8 element, current or delayed scaling (what the
/// grouped kernels quantize per expert with one tensor scale each).
static bool perTensorFp8(const Scheme &s) {
  return (s.kind == SchemeKind::Fp8Current ||
          s.kind == SchemeKind::Fp8Delayed) &&
         (s.element == DType::E4M3 || s.element == DType::E5M2);
}

static bool block1x128Fp8(const Scheme &s) {
  return s.kind == SchemeKind::Fp8Block && s.tileRows == 1 &&
         s.tileCols == 128 &&
         (s.element == DType::E4M3 || s.element == DType::E5M2);
}

bool groupedWgradReadsCodes(const Scheme &dy, const Scheme &x) {
  return (block1x128Fp8(dy) && block1x128Fp8(x)) ||
         (perTensorFp8(dy) && perTensorFp8(x));
}

std::string groupedWgradSchemesError(const Scheme &dy, const Scheme &x) {
  // What the grouped columnwise quantize lays out per expert: bf16, FP8
  // codes (or their values), MXFP8's and NVFP4's (1x16 blocks down each
  // expert's tokens) dequantized values - no MXFP8 or FP4 MMA on Hopper.
  auto laidOut = [](const Scheme &s) {
    return (s.kind == SchemeKind::Identity && s.element == DType::BF16) ||
           block1x128Fp8(s) || perTensorFp8(s) || s.kind == SchemeKind::Mxfp8 ||
           (s.kind == SchemeKind::Nvfp4 && !s.block2d);
  };
  if (!laidOut(dy) || !laidOut(x))
    return "the grouped wgrad reads each operand as identity of bf16, block "
           "FP8 1x128, per-tensor FP8 (current or delayed scaling, one "
           "tensor scale per expert), MXFP8 or NVFP4 with 1x16 blocks";
  if (groupedWgradReadsCodes(dy, x)) // the FP8 kernel's pairing
    return gemmOperandsError({dy, Direction::Columnwise},
                             {x, Direction::Columnwise});
  auto rht = [](const Scheme &s) {
    return s.kind == SchemeKind::Nvfp4 && s.rht;
  };
  if (rht(dy) != rht(x))
    return "one operand is read in the random-Hadamard-transformed domain "
           "and the other is not; the transform cancels only when both "
           "apply it";
  return "";
}

bool groupedTensorWide(const Scheme &s) {
  return s.isPerTensor() || s.kind == SchemeKind::Nvfp4;
}

/// The rules of one operand quantized per expert by `s` (the weight's read
/// columnwise for the dgrad).
static std::string perExpertSchemeError(const Scheme &s, bool weight,
                                        bool weightColumnwise) {
  if (s.kind == SchemeKind::Nvfp4) {
    // NVFP4 runs on the BF16 kernel as each expert's dequantized values (no
    // FP4 MMA on Hopper), or on the NVFP4 kernel as codes; 16x16 blocks for
    // the weight only (the tokens' splits need not be multiples of 16).
    if (!weight && s.block2d)
      return "the tokens' NVFP4 blocks are 1x16 (16x16 blocks would span "
             "experts whose rows are not multiples of 16)";
    // The dgrad reads each expert's weight columnwise: 16x16 blocks (the
    // rowwise values) or 16x1 blocks down its N rows, rounded to nearest
    // (stochastic rounding would draw the columnwise direction's bytes).
    if (weight && weightColumnwise && (s.rht || s.stochasticRounding))
      return "the dgrad reads each expert's NVFP4 weight columnwise without "
             "the random Hadamard transform (which only the wgrad's operands "
             "take) and rounded to nearest";
    return "";
  }
  if (!perTensorFp8(s))
    return "a grouped GEMM quantizes an operand per expert (one tensor scale "
           "per expert) by per-tensor FP8 (current or delayed scaling; e4m3 "
           "or e5m2) or by NVFP4, not by " +
           gemmSchemeFamily(s);
  return "";
}

bool groupedPerExpertReadsCodes(const std::optional<Scheme> &x,
                                const std::optional<Scheme> &w) {
  return x && w && perTensorFp8(*x) && perTensorFp8(*w);
}

std::string groupedPerExpertSchemesError(const std::optional<Scheme> &x,
                                         const std::optional<Scheme> &w,
                                         bool weightColumnwise) {
  if (!x && !w)
    return "quantizes no operand per expert";
  if (x)
    if (std::string why = perExpertSchemeError(*x, false, weightColumnwise);
        !why.empty())
      return why;
  if (w)
    if (std::string why = perExpertSchemeError(*w, true, weightColumnwise);
        !why.empty())
      return why;
  // The FP8 kernel's pairing; the BF16 kernel multiplies any values.
  if (groupedPerExpertReadsCodes(x, w))
    return gemmOperandsError({*x, Direction::Rowwise},
                             {*w, Direction::Rowwise});
  return "";
}

std::string groupedPerExpertPartnerError(const Scheme &perExpert,
                                         const Scheme &other,
                                         bool otherIsTokens) {
  if (other.kind == SchemeKind::Identity)
    return "the other operand is identity (high precision) but this one is "
           "quantized by " +
           gemmSchemeFamily(perExpert) +
           "; quantize both, or keep both in high precision";
  if (groupedTensorWide(other))
    return "the other operand is quantized by " + gemmSchemeFamily(other) +
           ", a tensor-wide scale: quantize it per expert too";
  if (otherIsTokens && other.kind == SchemeKind::Fp8Block &&
      other.tileRows != 1)
    return "the tokens' 128x128 tiles would span experts whose rows are not "
           "multiples of 128: quantize them by 1x128 blocks";
  return "";
}

std::string groupedPerExpertShapeError(const std::optional<Scheme> &x,
                                       const std::optional<Scheme> &w,
                                       bool weightColumnwise, int64_t xCols,
                                       int64_t n, int64_t k) {
  const std::string nStr = std::to_string(n), kStr = std::to_string(k);
  if (groupedPerExpertReadsCodes(x, w)) {
    // FP8 codes: each expert's scale over 128x128 tiles, 128-element K
    // blocks.
    if (n % 128 != 0)
      return "quantizes its weight per expert with N = " + nStr +
             ": the GEMM reads each expert's scale over 128x128 tiles of its "
             "own, so N must be a multiple of 128";
    if (k % 128 != 0 && !weightColumnwise)
      return "quantizes its operands per expert with K = " + kStr +
             ": the per-expert GEMMs contract whole 128-element blocks, so K "
             "must be a multiple of 128";
    if (k % 8 != 0)
      return "quantizes its weight per expert with K = " + kStr +
             ": the quantize reads 16-byte pieces of each row, so K must be a "
             "multiple of 8";
    return "";
  }
  // Values (or NVFP4 codes): NVFP4's 16x16 blocks of the stack are each
  // expert's own; the quantize reads 16-byte pieces of each row; the BF16
  // and NVFP4 kernels contract 64-element slabs.
  auto nvfp4 = [](const std::optional<Scheme> &s) {
    return s && s->kind == SchemeKind::Nvfp4;
  };
  if (nvfp4(w) && (n % 16 != 0 || k % 16 != 0))
    return "quantizes its weight per expert by NVFP4 with [N, K] = " + nStr +
           "x" + kStr +
           ": each expert's 16x16 blocks are its own only when N and K are "
           "multiples of 16";
  if (nvfp4(x) && xCols % 16 != 0)
    return "quantizes its input per expert by NVFP4 with " +
           std::to_string(xCols) +
           " columns: each row's 1x16 blocks need a multiple of 16";
  const bool xRows = x && xCols % 8 != 0;
  if (xRows || (w && k % 8 != 0))
    return std::string("quantizes ") + (xRows ? "its input" : "its weight") +
           " per expert with rows of " + std::to_string(xRows ? xCols : k) +
           " elements: the quantize reads 16-byte pieces of each row, so "
           "they must be a multiple of 8";
  const int64_t contracted = weightColumnwise ? n : k;
  if (contracted % 64 != 0)
    return "quantizes its operands per expert with " +
           std::string(weightColumnwise ? "N = " : "K = ") +
           std::to_string(contracted) +
           ": the BF16 GEMM contracts 64-element slabs, so it must be a "
           "multiple of 64";
  // The BF16 kernel's output pairs, and (the dgrad) the stack it reads
  // along N by TMA in 16-byte rows.
  const int64_t outCols = weightColumnwise ? k : n;
  if (outCols % 2 != 0)
    return "quantizes its operands per expert with " + std::to_string(outCols) +
           " output columns: the BF16 GEMM writes column pairs, so they "
           "must be even";
  if (weightColumnwise && k % 8 != 0)
    return "quantizes its operands per expert with K = " + kStr +
           ": the BF16 dgrad reads the stack's rows of K elements in 16-byte "
           "pieces, so K must be a multiple of 8";
  return "";
}

std::string groupedNvfp4CodesError(const Scheme &x, const Scheme &w,
                                   bool weightColumnwise, int64_t k) {
  if (x.kind != SchemeKind::Nvfp4 || w.kind != SchemeKind::Nvfp4)
    return "the NVFP4 kernel reads operands quantized per expert by NVFP4";
  if (std::string why = groupedPerExpertSchemesError(x, w, weightColumnwise);
      !why.empty())
    return why;
  if (weightColumnwise)
    return "the NVFP4 kernel reads the weight rowwise (the fprop); the "
           "dgrad runs on each expert's dequantized values";
  if (k <= 0 || k % 64 != 0)
    return "the NVFP4 kernel contracts K in 64-element stages: K = " +
           std::to_string(k) + " is not a multiple of 64";
  return "";
}

std::string groupedEpilogueQuantizeError(const Scheme &s, Direction dir) {
  if (s.kind != SchemeKind::Fp8Block || s.tileRows != 1 || s.tileCols != 128)
    return "the grouped GEMM's epilogue quantizes its output by FP8 block "
           "scaling with 1x128 blocks only, not " +
           std::string(schemeKindName(s.kind)) +
           (s.kind == SchemeKind::Fp8Block ? " with 128x128 tiles" : "");
  if (dir != Direction::Rowwise)
    return "the grouped GEMM's epilogue quantizes its output rowwise only "
           "(a 1x128 block is part of an output tile's row)";
  return "";
}

} // namespace te::rt
