//===- te/runtime/BlasLt.h - cuBLASLt GEMMs ---------------------*- C++ -*-===//
//
// Part of tejit. Plain C++17 interface; cuBLASLt is loaded at run time.
//
//===----------------------------------------------------------------------===//
//
// One GEMM shape that every tejit GEMM lowers to, because Hopper's FP8
// GEMMs accept only it: D[M,N] = A[M,K] * B[N,K]^T (+ bias[N]) (+ D), all
// row-major with both operands K-contiguous ("TN" in cuBLAS terms). The
// compiler makes every FP8 operand K-contiguous (columnwise data is stored
// transposed where the format needs it). A high-precision operand may
// instead be stored [K, rows] (`transposed`): a bf16 tensor read in its
// other direction needs no copy.
//
// Scaling of each operand: none (BF16/F16), a per-tensor FP32 scale-inverse
// (FP8), or FP8 block scales - 1x128 (VEC128_32F, scale[k/128][row], rows
// padded to 4) or 128x128 (BLK128x128_32F, scale[row/128][k/128], k-blocks
// padded to 4) - the storage layouts of te::rt::storageFor. Block-scaled
// GEMMs always use the split accumulator.
//
// Matmul descriptors, layouts and the chosen algorithm are cached per
// problem; the workspace is allocated once per handle, so a GEMM allocates
// nothing and is safe inside CUDA-graph capture. A BlasLt is one "stream
// slot": GEMMs issued through it share its workspace, so streams that run
// GEMMs concurrently each need their own BlasLt (a PlanExecutor owns one).
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_BLASLT_H
#define TE_RUNTIME_BLASLT_H

#include "te/formats/Scheme.h"
#include "te/runtime/Device.h"

#include <memory>

namespace te::rt {

enum class GemmScaling : uint8_t {
  None,        ///< BF16/F16/F32 operand
  PerTensor,   ///< FP8 with one FP32 scale-inverse
  Block1x128,  ///< FP8 with FP32 scales per 1x128 block
  Block128x128 ///< FP8 with FP32 scales per 128x128 tile
};

struct BlasLtOperand {
  DType dtype = DType::BF16;
  GemmScaling scaling = GemmScaling::None;
  uint64_t data = 0;     ///< device pointer, [rows, K] row-major
  uint64_t scaleInv = 0; ///< device pointer to the FP32 scale(s)
  /// The data is [K, rows] row-major instead (BF16/F16/F32 only).
  bool transposed = false;
};

struct GemmProblem {
  int64_t m = 0, n = 0, k = 0;
  BlasLtOperand a; ///< [M, K]
  BlasLtOperand b; ///< [N, K]
  DType outType = DType::BF16;
  uint64_t out = 0;  ///< D, [M, N] row-major
  uint64_t bias = 0; ///< optional [N], of `biasType`
  DType biasType = DType::BF16;
  bool accumulate = false; ///< D += A B^T (D converted to outType first)
  bool fastAccum = false;  ///< FP8 per-tensor only; block scaling forbids it
};

class BlasLt {
public:
  /// Loads cuBLASLt and allocates the workspace on `device`.
  static Expected<BlasLt> create(const Device &device,
                                 size_t workspaceBytes = 32u << 20);
  /// Checks the problem against cuBLASLt's rules for these types and
  /// scalings (alignment, pairing, epilogue); "" when it can run. `bias`
  /// only needs to be non-zero when there is one (GemmCall::shape()).
  static std::string validate(const GemmProblem &p);
  /// One line for tools and errors, e.g. "M=64 N=16 K=32: A e4m3 1x128
  /// [M,K] x B e4m3 128x128 [N,K] -> bf16 + bias".
  static std::string describe(const GemmProblem &p);

  Status gemm(const GemmProblem &p, const Stream &s);

  /// cuBLASLt's version (e.g. 130100), or 0.
  int version() const;
  /// Problems whose descriptors and algorithm are cached.
  size_t cachedPlans() const;

private:
  struct State;
  std::shared_ptr<State> state_;
};

} // namespace te::rt

#endif // TE_RUNTIME_BLASLT_H
