//===- te/codegen/GroupedWgradEmitter.h - Hopper K-grouped wgrad -*- C++
//-*-===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//
//
// The wgrad GEMM of an MoE layer (dW_g = dY_g^T X_g for each expert, the
// sum over its own token rows) as generated CUDA C++: an instantiation of
// te::gemm::groupedWgradSm90 (te/device/gemm/GroupedWgradSm90.cuh) for one
// shape and operand recipe, and its launch - TMA descriptors over the
// grouped transposed operands, the split sizes on the device.
//
//===----------------------------------------------------------------------===//

#ifndef TE_CODEGEN_GROUPEDWGRADEMITTER_H
#define TE_CODEGEN_GROUPEDWGRADEMITTER_H

#include "te/codegen/GroupedGemmEmitter.h"

namespace te::cg {

/// What one wgrad kernel is specialised for: dW [groups, n, k].
struct GroupedWgradSpec {
  /// BF16 operands, or FP8 block 1x128 x 1x128 (scales along the tokens).
  GroupedGemmSpec::Operands operands = GroupedGemmSpec::Operands::BF16;
  /// Block FP8: the formats of dY's (a) and X's (b) codes.
  Fp8Operands fp8Formats;
  int64_t groups = 1;
  int64_t n = 0; ///< rows of each expert's dW (the layer's output features)
  int64_t k = 0; ///< columns of each expert's dW (its input features)
  /// Depth of the TMA -> MMA ring; 0 fills the shared memory.
  int stages = 0;
  /// dW tile width (columns of K): FP8 128, BF16 128 or 256; 0 picks one.
  int blockN = 0;
  /// dW row tiles per band of the tile order: an expert's tiles are walked
  /// in bands of this many 128-row tiles, row tile first, so the CTAs
  /// running at one time share X's tiles and the band's dY rows stay in L2
  /// (1: row by row); 0 picks one.
  int band = 0;
  /// Output boxes (64 rows x 32 fp32 columns) a math warpgroup stores its dW
  /// tile through where groupedWgradTmaStore: 1 (a tile row's parts one
  /// after the other) or 2 (one part's store runs while the next is
  /// written, 16 KB more shared memory); 0 picks one.
  int outBoxes = 0;

  bool fp8() const { return operands == GroupedGemmSpec::Operands::Fp8Block; }
  GroupedWgradSpec resolved() const;
  /// e.g. "te_grouped_wgrad_fp8block_g8_n4096_k7168_t128_b16_o1_s6" (the
  /// formats' suffix after "fp8block"; "_t128": the tile width, "_b16":
  /// bands of 16 row tiles, "_o1": one output box a warpgroup).
  std::string kernelName() const;
};

/// InvalidArgument naming the rule when the spec has no kernel: FP8 formats
/// that pair, G >= 1, N and K even, the ring within an SM's shared memory.
rt::Status checkGroupedWgrad(const GroupedWgradSpec &s);
unsigned groupedWgradSharedBytes(const GroupedWgradSpec &s);
/// Whether dW's tiles leave through shared memory by TMA store (K a
/// multiple of 4: the fp32 rows' 16-byte TMA stride); its fifth tensor map
/// is then dW's.
bool groupedWgradTmaStore(const GroupedWgradSpec &s);
/// The kernel's source (entry point s.kernelName()); compile it with
/// groupedGemmCompileOptions().
std::string emitGroupedWgrad(const GroupedWgradSpec &s);

/// The grouped transposed layout the wgrad kernel reads, for `capacity`
/// token columns (a multiple of 128, at least 128 · sum ceil(m_g / 128)):
/// A = dY^T [n, capacity] and B = X^T [k, capacity], expert g's tokens at
/// columns 128 · S_g .., S_g = sum over h < g of ceil(m_h / 128), zero to
/// the next multiple of 128. FP8: codes (Fp8Operands); scales
/// [capacity/128][roundup (n, 4)] and [capacity/128][roundup(k, 4)] f32.
struct GroupedWgradBuffers {
  uint64_t a = 0, b = 0;
  uint64_t sa = 0, sb = 0; ///< FP8 only
  uint64_t splits = 0;     ///< G int64, clamped to mTotal rows
  /// [G, n, k] f32; 16-byte aligned where groupedWgradTmaStore (the TMA
  /// store's base).
  uint64_t dw = 0;
  int64_t mTotal = 0;
  int64_t capacity = 0;
};

/// The 128-aligned segment capacity every split of `mTotal` rows among
/// `groups` experts fits: roundup(mTotal, 128) + 128 · (groups - 1).
int64_t groupedWgradCapacity(int64_t mTotal, int64_t groups);

/// The five TMA descriptors' geometry: A, B, FP8 the two scale maps (BF16
/// repeats A and B), and dW as [G·n, k] fp32 (box 64 x 32, 128-byte
/// swizzle) where groupedWgradTmaStore (else A's again, unused).
std::array<rt::TensorMapShape, 5> groupedWgradMaps(const GroupedWgradSpec &s,
                                                   int64_t capacity);

struct GroupedWgradLaunch {
  std::array<rt::TensorMap, 5> maps;
  uint64_t splits = 0, dw = 0;
  int32_t mTotal = 0;
  rt::Dim3 grid, block;
  unsigned sharedBytes = 0;
  std::array<void *, 8> args();
};

rt::Expected<GroupedWgradLaunch>
prepareGroupedWgrad(const GroupedWgradSpec &s, const GroupedWgradBuffers &b,
                    const rt::Device &device, const rt::Kernel &kernel);
rt::Status launchGroupedWgrad(const rt::Kernel &kernel, GroupedWgradLaunch &l,
                              const rt::Stream &stream);

} // namespace te::cg

#endif // TE_CODEGEN_GROUPEDWGRADEMITTER_H
