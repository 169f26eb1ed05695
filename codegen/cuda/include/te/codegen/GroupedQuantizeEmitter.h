//===- te/codegen/GroupedQuantizeEmitter.h - per-expert columnwise -*- C++
//-*-===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//
//
// The grouped columnwise quantization of an MoE layer's tokens (x, or dy
// with each expert's bias gradient) into the layout the wgrad GEMM reads
// (te/device/GroupedQuantizeKernel.cuh, GroupedWgradEmitter.h) as generated
// CUDA C++: one block pass and, with a bias gradient, one reduction.
// And the rowwise per-tensor FP8 of a grouped GEMM's operands with one amax
// per expert (te/device/GroupedTensorQuantize.cuh): an amax pass, then the
// cast, which also lays each expert's scale out for the block-scaled GEMM.
//
//===----------------------------------------------------------------------===//

#ifndef TE_CODEGEN_GROUPEDQUANTIZEEMITTER_H
#define TE_CODEGEN_GROUPEDQUANTIZEEMITTER_H

#include "te/formats/Scheme.h"
#include "te/runtime/Device.h"
#include "te/runtime/Status.h"

#include <string>

namespace te::cg {

struct GroupedQuantizeSpec {
  /// Block FP8 1x128 (E4M3 or E5M2, pow2 or not): codes and scales;
  /// per-tensor FP8 current scaling: codes and the expert's scale over the
  /// same blocks, from each expert's amax (a groupedRowsAmax pass first);
  /// identity of bf16: the values; MXFP8 (E4M3 or E5M2): the bf16 values of
  /// each expert's 32 x 1 blocks quantized and dequantized; NVFP4 (1x16,
  /// with or without the random Hadamard transform and stochastic
  /// rounding): likewise, of its 16 x 1 blocks, from each expert's amax (an
  /// amax pass first: emitGroupedRhtAmax with the transform, else
  /// emitGroupedExpertAmax).
  rt::Scheme scheme;
  int64_t groups = 1;
  int64_t cols = 0; ///< C of the [M_total, C] bf16 input
  bool biasGrad = false;
  /// FP8 (block or per-tensor): the bf16 values the codes dequantize to
  /// instead of the codes and scales, for a BF16 wgrad that pairs them with
  /// another family (rt::groupedWgradReadsCodes).
  bool fp8Values = false;

  /// e.g. "te_grouped_quantize_e4m3_pow2_g8_c4096_db",
  /// "te_grouped_quantize_mxfp8_e4m3_g8_c4096",
  /// "te_grouped_quantize_nvfp4_rht_sr_g8_c4096_db"; "_values" after the
  /// FP8 format for fp8Values.
  std::string kernelName() const;
  /// Per-tensor FP8 current scaling and NVFP4: the block pass reads each
  /// expert's amax.
  bool needsExpertAmax() const;
  /// #te.fp8_delayed: the block pass reads each expert's scale (its state's,
  /// gathered by emitGatherScales) and records each expert's amax.
  bool delayed() const;
};

/// InvalidArgument naming the rule: the scheme, C a positive multiple of 8
/// (16-byte loads; of 16 for NVFP4), 1..4096 experts, fp8Values for FP8
/// only.
rt::Status checkGroupedQuantize(const GroupedQuantizeSpec &s);

struct EmittedGroupedQuantize {
  std::string source;
  /// (in, mTotal, cols, splits, capacity, out, scaleInv, eps, partial,
  /// expertAmax, seed, offset, amaxRecord): grid groupedQuantizeGrid,
  /// kGroupedQuantizeThreads threads; expertAmax [G] where needsExpertAmax
  /// (delayed: the experts' scales), else null; (seed, offset) NVFP4's
  /// stochastic rounding state; amaxRecord [G] (delayed only, zeroed
  /// before) each expert's amax.
  std::string mainEntry;
  /// (partial, mTotal, cols, splits, db), with biasGrad: grid
  /// groupedBiasGrid, kGroupedBiasThreads threads.
  std::string biasEntry;
};
EmittedGroupedQuantize emitGroupedQuantize(const GroupedQuantizeSpec &s);

constexpr unsigned kGroupedQuantizeThreads = 256;
/// The block pass's dynamic shared memory (GroupedQuantizeSmem).
unsigned groupedQuantizeSharedBytes(const GroupedQuantizeSpec &s);
/// One CTA per 128-row block of the capacity and 128 columns.
rt::Dim3 groupedQuantizeGrid(int64_t capacity, int64_t cols);
/// The bias reduction: one thread per (expert, column) in small CTAs, so
/// that the few thousand threads spread over every SM.
constexpr unsigned kGroupedBiasThreads = 64;
rt::Dim3 groupedBiasGrid(int64_t groups, int64_t cols);

/// Rowwise per-tensor FP8 of a grouped GEMM operand, one amax per expert.
struct GroupedRowsQuantizeSpec {
  /// #te.fp8_current (E4M3 or E5M2, pow2 or not) or #te.fp8_delayed (each
  /// expert's scale given, its amax recorded): codes and the expert's
  /// scale over the block-scaled GEMM's blocks (or with fp8Values their
  /// bf16 values); or #te.nvfp4 (stochastic rounding or not; 16x16 blocks
  /// for the stack only): bf16 values, each expert's rows quantized with its
  /// own tensor scale and dequantized, for the BF16 GEMM (no FP4 MMA on
  /// Hopper).
  rt::Scheme scheme;
  int64_t groups = 1;
  int64_t cols = 0; ///< C of the [rows, C] bf16 input
  /// The stacked weight [G·N, C] (N rows per expert, 128x128 tile scales);
  /// else the tokens under the split sizes (1x128 block scales).
  bool weightStack = false;
  /// With weightStack: the stack's columnwise copy for the dgrad, codes
  /// [C, G·N] and 128x128 tile scales [ceil(C/128)][roundup(G·N/128, 4)]
  /// (N a multiple of 128); NVFP4 (1x16, rounded to nearest): the values of
  /// the stack's 16x1 column blocks, in the stack's [G·N, C] layout (16x16
  /// blocks need no columnwise pass: their values are the rowwise ones).
  bool columnwise = false;
  /// NVFP4, rowwise: the quantized data instead of its values - packed E2M1
  /// codes [rows, C/2] and E4M3 block scales [rows, C/16] (a 16x16 tile's on
  /// each of its rows), each expert's tensor amax the amax pass's - which
  /// the GEMM engine's NVFP4 kernel reads (docs/Numerics.md §6.7).
  bool nvfp4Codes = false;
  /// Per-tensor FP8, rowwise: instead of the codes and scales, the bf16
  /// values [rows, C] they dequantize to (ref::groupedTensorScaledValues),
  /// which the BF16 GEMM reads beside an operand of another family. The
  /// same values serve the dgrad's columnwise read of the stack.
  bool fp8Values = false;

  /// e.g. "te_grouped_rows_e4m3_g8_c4096_tokens", "..._weights_t",
  /// "te_grouped_rows_nvfp4_2d_g8_c4096_weights", "..._codes", "..._values".
  std::string kernelName() const;
  bool nvfp4() const;
  bool delayed() const;
  /// Whether the cast writes bf16 values (no scales): NVFP4 without
  /// nvfp4Codes, or FP8 with fp8Values.
  bool values() const;
};

/// InvalidArgument naming the rule: the scheme, C a positive multiple of 8,
/// 1..4096 experts.
rt::Status checkGroupedRowsQuantize(const GroupedRowsQuantizeSpec &s);

struct EmittedGroupedRowsQuantize {
  std::string source;
  /// (in, rows, cols, splits, rowsPerExpert, amax): amax [G] f32, zeroed
  /// before the launch.
  std::string amaxEntry;
  /// (in, rows, cols, splits, rowsPerExpert, amax, eps, codes, scaleInv,
  /// blockScales, blockStride, seed, offset, amaxRecord); NVFP4 writes bf16
  /// values [rows, C] into `codes` and takes no scales, or with nvfp4Codes
  /// its packed codes into `codes` and E4M3 scale bytes into blockScales
  /// (groupedRowsBlockScales floats); (seed, offset) its
  /// stochastic rounding state; delayed scaling reads each expert's scale
  /// from `amax` (no amax pass) and records its amax into amaxRecord [G]
  /// (zeroed before).
  std::string quantizeEntry;
};
EmittedGroupedRowsQuantize
emitGroupedRowsQuantize(const GroupedRowsQuantizeSpec &s);

/// Device pointers of one per-expert quantize: the bf16 input [rows, C],
/// the split sizes (0 for the stack), the [G] amax (zeroed before), the
/// codes (NVFP4: the bf16 values, or with nvfp4Codes the packed codes) and,
/// for FP8, scaleInv [G] and the block scales (nvfp4Codes: E4M3 bytes).
struct GroupedRowsBuffers {
  uint64_t in = 0, splits = 0, amax = 0, codes = 0, scaleInv = 0,
           blockScales = 0;
  int64_t rows = 0;
  uint64_t seed = 0, offset = 0; ///< NVFP4's stochastic rounding state
  /// Delayed scaling: `amax` holds the experts' scales and their amaxes go
  /// to amaxRecord [G] (zeroed before); no amax pass runs.
  uint64_t amaxRecord = 0;
};
/// Launches `amaxPass` and `cast` (the entries of emitGroupedRowsQuantize(s),
/// loaded from one compiled source) on `stream` - what the plan's two
/// launches do, for tests and benchmarks that run the kernels alone.
rt::Status launchGroupedRowsQuantize(const GroupedRowsQuantizeSpec &s,
                                     const rt::Kernel &amaxPass,
                                     const rt::Kernel &cast,
                                     const GroupedRowsBuffers &b,
                                     const rt::Stream &stream);

/// The amax pass alone (the grouped wgrad's per-tensor operands, whose cast
/// is its grouped columnwise pass): the same entry and arguments as
/// EmittedGroupedRowsQuantize::amaxEntry.
struct EmittedGroupedAmax {
  std::string source, entry;
};
EmittedGroupedAmax emitGroupedExpertAmax(int64_t groups);
/// The amax pass of an NVFP4 wgrad operand with the random Hadamard
/// transform (each expert's max over its transformed 16-row runs):
/// (in, mTotal, cols, splits, amax), amax [G] zeroed before; the block
/// pass's grid (groupedQuantizeGrid) and kGroupedQuantizeThreads threads.
EmittedGroupedAmax emitGroupedRhtAmax(int64_t groups);
/// Gathers the scales of `groups` delayed-scaling states (one per expert,
/// each its own buffer) into one [G] f32 buffer for the casts:
/// (table of G scale pointers, out), one CTA of groupedGatherThreads(G).
EmittedGroupedAmax emitGatherScales(int64_t groups);
unsigned groupedGatherThreads(int64_t groups);

/// Both launches: kGroupedRowsThreads threads; the amax pass and the
/// rowwise casts with enough warps for every SM, the columnwise cast one CTA
/// per 128x128 tile of the stack.
constexpr unsigned kGroupedRowsThreads = 256;
rt::Dim3 groupedRowsGrid(int64_t rows);
rt::Dim3 groupedRowsCastGrid(const GroupedRowsQuantizeSpec &s, int64_t rows);
/// The row length of the block-scale layout the GEMM reads: roundup(rows,
/// 4) for the tokens, roundup(ceil(C/128), 4) for the stack, roundup(rows /
/// 128, 4) for its columnwise copy; and its floats.
int64_t groupedRowsBlockStride(const GroupedRowsQuantizeSpec &s, int64_t rows);
int64_t groupedRowsBlockScales(const GroupedRowsQuantizeSpec &s, int64_t rows);

} // namespace te::cg

#endif // TE_CODEGEN_GROUPEDQUANTIZEEMITTER_H
