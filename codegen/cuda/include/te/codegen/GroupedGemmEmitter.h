//===- te/codegen/GroupedGemmEmitter.h - Hopper grouped GEMMs ---*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//
//
// The M-grouped GEMM of an MoE layer (fprop: Y_g = X_g · W_g^T for each
// expert's rows of X; dgrad: dX_g = dY_g · W_g, the weight read through its
// columnwise storage) as generated CUDA C++: an instantiation of
// te::gemm::groupedGemmSm90 (te/device/gemm/GroupedGemmSm90.cuh, on
// CUTLASS/CuTe) for one shape and operand recipe, and the launch
// arguments for it - 2-D TMA descriptors over the caller's buffers, encoded
// by the runtime, and plain pointers. The split sizes stay on the device.
//
//===----------------------------------------------------------------------===//

#ifndef TE_CODEGEN_GROUPEDGEMMEMITTER_H
#define TE_CODEGEN_GROUPEDGEMMEMITTER_H

#include "te/runtime/Device.h"
#include "te/runtime/NvrtcCompiler.h"
#include "te/runtime/Plan.h"
#include "te/runtime/TensorMap.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace te::cg {

/// The code formats of a block-FP8 GEMM's two operands: E4M3 or E5M2 each,
/// never both E5M2 (rt::checkGemmPairing's rule) - an E5M2 gradient meets
/// E4M3 weights or activations in the backward of TE's hybrid format.
struct Fp8Operands {
  rt::DType a = rt::DType::E4M3, b = rt::DType::E4M3;
  /// "" for E4M3 x E4M3 (the kernel names predate the choice), else e.g.
  /// "_e5m2xe4m3".
  std::string nameSuffix() const;
  /// The kernel configuration's two flags, "AE5M2, BE5M2".
  std::string templateFlags() const;
  /// Why the pair has no kernel, or "".
  std::string error() const;
};

/// What one grouped GEMM kernel is specialised for.
struct GroupedGemmSpec {
  enum class Operands {
    BF16,     ///< bf16 x bf16
    Fp8Block, ///< E4M3 x with 1x128 scales, E4M3 W with 128x128 scales
    /// MXFP8 x and W, both rowwise (1x32 blocks along K, E8M0 scales in
    /// the compact layout [rows][K/32]): the fprop only, one CTA a cluster.
    Mxfp8,
    /// NVFP4 x and W, both rowwise (E2M1 codes two a byte, 1x16 E4M3 block
    /// scales in the compact layout [rows][K/16], each expert's global
    /// amax of x and of W): exact f16 operands on the f16 tensor cores; the
    /// fprop only, one CTA a cluster, K a multiple of 64.
    Nvfp4
  };
  Operands operands = Operands::BF16;
  /// FP8 (block or MXFP8): the formats of x's (a) and w's (b) codes.
  Fp8Operands fp8Formats;
  int64_t groups = 1; ///< G experts
  int64_t n = 0;      ///< output columns per expert
  int64_t k = 0;      ///< reduction length
  /// dgrad: Y_g = X_g · W'_g for a [G, k, n] stack W'. Block FP8: W is its
  /// columnwise storage - the transpose [n, G·k] with 128x128 scales
  /// [ceil(n/128)][roundup(G·k/128, 4)]. BF16: W is the stack itself,
  /// [G·k, n] row-major, read N-major by the tensor cores.
  bool weightColumnwise = false;
  /// Output tile width: FP8 128, BF16 128 or 256; 0 picks one.
  int blockN = 0;
  /// CTAs per cluster along N (1, or 2 to share the x tile by TMA
  /// multicast; needs an even number of column blocks); 0 picks one.
  int cluster = 0;
  /// CTAs per cluster along M (1, or 2: two row tiles of an expert share
  /// the W tile by TMA multicast, each expert's row tiles padded to a
  /// pair; K-major W only, not the BF16 stack read along N); 0 picks one.
  int clusterM = 0;
  /// Row units (kClusterM row tiles) per band of the tile order: the work
  /// items of a band are walked row unit first, so the clusters running at
  /// one time share W tiles and x rows in L2 (1: row by row); 0 picks one.
  int band = 0;
  /// Output boxes (64 rows x 64 columns) a math warpgroup stores its tile
  /// through (where groupedGemmTmaStore), a 64-column part at a time: 2, a
  /// part's store runs while the next is written; 1, 16 KB less shared
  /// memory, which buys a stage at 128x128 FP8 tiles; 0 picks one (1).
  int outBoxes = 0;
  /// Depth of the TMA -> MMA ring (NVFP4: of the f16 stages the convert
  /// warps write); 0 fills the shared memory (NVFP4: 3).
  int stages = 0;
  /// NVFP4: depth of the ring of packed codes the TMA loads ahead of the
  /// conversion; 0 fills the shared memory (at most 8). Else unused (0).
  int rawStages = 0;
  /// The epilogue also max-accumulates each expert's amax of the y it
  /// stores (max |y| over the rounded bf16, NaN ignored: the per-expert
  /// amax pass's rule) into GroupedGemmBuffers::amaxY, which the caller
  /// zeroes: a per-tensor scaled quantize of y then needs no pass of its own.
  bool outputAmax = false;
  /// The epilogue also quantizes y rowwise by this FP8 block scheme (1x128
  /// blocks, rt::groupedEpilogueQuantizeError) into
  /// GroupedGemmBuffers::yCodes / yScaleInv: the codes and scales a quantize
  /// kernel over y would write. Or by fp8_delayed: each expert's rows by its
  /// state's scale (GroupedGemmBuffers::yScale), the codes and 1x128 block
  /// scales the next grouped GEMM's per-expert cast of y would write for the
  /// block-scaled kernel (quantizesPerExpert).
  std::optional<rt::Scheme> quantizeOutput;
  /// quantizeOutput casts each expert by a scale it is given.
  bool quantizesPerExpert() const {
    return quantizeOutput && quantizeOutput->kind == rt::SchemeKind::Fp8Delayed;
  }

  /// FP8 codes (block-scaled or MXFP8): 128-element K stages, FP8 MMAs.
  bool fp8() const {
    return operands == Operands::Fp8Block || operands == Operands::Mxfp8;
  }
  bool mxfp8() const { return operands == Operands::Mxfp8; }
  bool nvfp4() const { return operands == Operands::Nvfp4; }
  /// CTAs per cluster, N x M (of a resolved spec): what the launch passes.
  unsigned clusterSize() const { return unsigned(cluster * clusterM); }
  /// The spec with every 0 replaced by the choice made for it.
  GroupedGemmSpec resolved() const;
  /// e.g. "te_grouped_gemm_fp8block_g8_n4096_k7168_t128_c1_b16_o1_s6"
  /// ("_wcol" after "fp8block" for a columnwise weight, then the formats'
  /// suffix; "_c2x2" for a 2 x 2 cluster, "_b8" for bands of 8 row units,
  /// "_o1" for one output box a warpgroup where tiles leave by TMA store,
  /// "_amax" for outputAmax, then "_q" and the quantizeOutput scheme, e.g.
  /// "_qe4m3", "_qe5m2p2" with pow2 scales, "_qe4m3d" by each expert's
  /// delayed-scaling scale).
  std::string kernelName() const;
};

/// Threads per CTA: two math warpgroups and a producer warpgroup.
constexpr unsigned kGroupedGemmThreads = 384;

/// InvalidArgument naming the rule when the (resolved) spec has no kernel:
/// FP8 formats that pair, K a multiple of 128 (FP8) or 64 (BF16), N even (a
/// BF16 columnwise weight: a multiple of 8, its rows' 16-byte TMA stride), G >=
/// 1, a tile width and cluster the kernel has, the shared memory within an
/// SM's.
rt::Status checkGroupedGemm(const GroupedGemmSpec &s);

/// Whether the kernel stores its output tiles through shared memory by TMA
/// (N a multiple of 8, the bf16 rows' 16-byte TMA stride) rather than from
/// registers: its fourth tensor map is then Y's.
bool groupedGemmTmaStore(const GroupedGemmSpec &s);

/// Whether the epilogue's FP8 codes of y (quantizeOutput) leave by TMA:
/// where y does and the codes' rows (N bytes) keep its 16-byte stride;
/// else from registers. Its fifth tensor map is then the codes'.
bool groupedGemmTmaCodes(const GroupedGemmSpec &s);

/// The codes' tensor map: [mTotal, N] one-byte codes, 64 x 128-byte boxes,
/// 128-byte swizzle.
rt::TensorMapShape groupedGemmCodesMap(const GroupedGemmSpec &s,
                                       int64_t mTotal);

/// Dynamic shared memory the kernel needs (stages, output boxes, scales,
/// barriers, per-expert tables).
unsigned groupedGemmSharedBytes(const GroupedGemmSpec &s);

/// The kernel's source (entry point s.kernelName()) and NVRTC options
/// (sm_90a, the CUTLASS include directories).
std::string emitGroupedGemm(const GroupedGemmSpec &s);
rt::Expected<rt::CompileOptions> groupedGemmCompileOptions();

/// The device buffers of one call. Block FP8: x and w are FP8 codes, sx the
/// 1x128 scales [ceil(K/128)][roundup(mTotal,4)] f32, sw the 128x128
/// scales [G][ceil(N/128)][roundup(ceil(K/128),4)] f32 (columnwise weight:
/// w [N, G·K], sw as GroupedGemmSpec::weightColumnwise says). MXFP8: sx
/// the E8M0 scales of x [roundup(mTotal,128)][K/32], sw those of the stack
/// as one [G·N, K] tensor, [roundup(G·N,128)][K/32] (the compact rowwise
/// layout of docs/Numerics.md §5.2). NVFP4: x [mTotal, K/2] and w
/// [G·N, K/2] packed codes, sx and sw their E4M3 scales [roundup(rows,
/// 128)][K/16], amaxX and amaxW each expert's global amax of x and of W
/// ([G] f32). BF16: sx, sw unused.
struct GroupedGemmBuffers {
  uint64_t x = 0; ///< [mTotal, K]
  uint64_t w = 0; ///< [G, N, K]
  uint64_t sx = 0, sw = 0;
  uint64_t splits = 0; ///< G int64 on the device, sum <= mTotal
  /// [mTotal, N] bf16; 16-byte aligned where groupedGemmTmaStore (the
  /// TMA store's base).
  uint64_t y = 0;
  int64_t mTotal = 0;
  uint64_t bias = 0; ///< 0, or [G, N] bf16 added before the rounding
  uint64_t amaxX = 0, amaxW = 0; ///< NVFP4: [G] f32 each, else 0
  uint64_t amaxY = 0;            ///< outputAmax: [G] f32, zeroed; else 0
  /// quantizeOutput: y's codes [mTotal, N] and scale_inv
  /// [ceil(N/128)][roundup(mTotal, 4)] f32; else 0.
  uint64_t yCodes = 0, yScaleInv = 0;
  /// quantizesPerExpert: each expert's scale [G] f32; else 0.
  uint64_t yScale = 0;
};

/// The geometry of the kernel's four TMA descriptors for `mTotal` token
/// rows: x [mTotal, K] (box: a cluster rank's share of the tile rows), w
/// [G*N, K] or columnwise [N, G*K] (box: one tile of rows, one K block) or,
/// BF16 columnwise, [G*K, N] (box: 64 rows of K, 64 columns), the x scales
/// [ceil(K/128), roundup(mTotal, 4)] (block FP8; the BF16 and MXFP8 kernels
/// ignore their third map, which repeats x's), and y [mTotal, N] (box: 64 x 64,
/// 128-byte swizzle) where groupedGemmTmaStore, else x's again, unused. The one
/// place both the direct launch and plans take them from.
std::array<rt::TensorMapShape, 4> groupedGemmMaps(const GroupedGemmSpec &s,
                                                  int64_t mTotal);

/// The launch of one call: its parameter block (four tensor maps, then
/// pointers and M_total, in the kernel's order) and its grid.
struct GroupedGemmLaunch {
  std::array<rt::TensorMap, 4> maps;
  /// sx: MXFP8's and NVFP4's x scales (the block-FP8 kernel reads them by
  /// TMA), else 0.
  uint64_t sw = 0, sx = 0, splits = 0, bias = 0, y = 0;
  int32_t mTotal = 0;
  uint64_t amaxX = 0, amaxW = 0, amaxY = 0, yCodes = 0, yScaleInv = 0;
  float yEps = 0.0f;
  /// The codes' tensor map (groupedGemmCodesMap), or x's again.
  rt::TensorMap codesMap;
  uint64_t yScale = 0;
  rt::Dim3 grid, block, cluster;
  unsigned sharedBytes = 0;
  /// Pointers to each parameter, as cuLaunchKernel takes them (point into
  /// this object: do not copy it between args() and the launch).
  std::array<void *, 18> args();
};

/// Encodes the tensor maps for `b` and sizes the grid: one CTA per SM of
/// `device` (clusters: as many as `kernel` can keep resident), or fewer
/// when `maxCtas` > 0.
rt::Expected<GroupedGemmLaunch> prepareGroupedGemm(const GroupedGemmSpec &s,
                                                   const GroupedGemmBuffers &b,
                                                   const rt::Device &device,
                                                   const rt::Kernel &kernel,
                                                   int maxCtas = 0);

/// Enqueues a prepared launch of `kernel` on `stream`.
rt::Status launchGroupedGemm(const rt::Kernel &kernel, GroupedGemmLaunch &l,
                             const rt::Stream &stream);

} // namespace te::cg

#endif // TE_CODEGEN_GROUPEDGEMMEMITTER_H
