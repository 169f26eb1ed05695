//===- te/runtime/reference/Gemm.h - Reference GEMMs ------------*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR and no CUDA.
//
//===----------------------------------------------------------------------===//
//
// Host GEMMs that library GEMMs (cuBLASLt) and the CPU backend are compared
// against: a plain GEMM on dequantized fp32 operands with a fixed summation
// order (fp32 or fp64 accumulation), the block-scaled FP8 GEMM with exactly
// the accumulation semantics TE's bit-exact test reference uses
// (docs/Numerics.md §7.3), and the bias gradient (docs/Numerics.md §10).
//
// All matrices are row-major. TE's general_gemm(A, B, layout) computes, in
// row-major terms, TN: B * A^T, NN: B * A, NT: B^T * A (docs/Numerics.md §8.1);
// e.g. TN is referenceGemm(B, false, A, true, ...).
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_REFERENCE_GEMM_H
#define TE_RUNTIME_REFERENCE_GEMM_H

#include "te/runtime/reference/Quantize.h"

#include <cstdint>
#include <string>
#include <vector>

namespace te {
namespace rt {
namespace ref {

/// D (M x N) = op(A) * op(B) (+ bias[N] broadcast down the rows). op(A) is
/// M x K: A is stored M x K, or K x M when `transA`; op(B) is K x N: B is
/// stored K x N, or N x K when `transB`.
/// fp32 accumulation: acc = +0.0f, acc = acc + fl(a * b) for k = 0..K-1 in
/// order, then fl(acc + bias). fp64 accumulation: the same sum and bias add
/// in double, rounded to fp32 once at the end. With `absSum`, also
/// sum_k |a_ik b_kj| (+ |bias_j|) per output in fp32: the scale that error
/// bounds of other summation orders are stated in. Rows run in parallel;
/// the result does not depend on the number of threads.
std::vector<float> referenceGemm(const float *a, bool transA, const float *b,
                                 bool transB, int64_t m, int64_t n, int64_t k,
                                 const float *bias = nullptr,
                                 bool accumulateInF64 = false,
                                 std::vector<float> *absSum = nullptr);

/// One operand of a block-scaled FP8 GEMM in TN form: `rows` x `k` fp8 codes
/// with K contiguous, and the fp32 scale_inv values in TE's GEMM_READY
/// layout (docs/Numerics.md §7.2), which is the same for a rowwise tensor and
/// for the transposed columnwise data of one:
///   1x128:   scaleInv[(kk / 128) * scaleStride + row]
///   128x128: scaleInv[(row / 128) * scaleStride + kk / 128]
struct BlockScaledOperand {
  std::vector<uint8_t> codes;
  std::vector<float> scaleInv;
  int64_t rows = 0, k = 0;
  int64_t scaleStride = 0;
  Fp8Format format = Fp8Format::E4M3;
  bool tile2d = false;
};

/// The GEMM operand view of a block-FP8 direction produced by quantize():
/// rows x k = the stored data shape (M x K rowwise, K x M columnwise).
BlockScaledOperand blockScaledOperand(const QuantizedDirection &q,
                                      const Scheme &scheme);

/// The logical values (row-major rows x k) of `op`: each code times its
/// block's scale_inv (for the |a||b| sums of error bounds).
std::vector<float> dequantizeBlockScaled(const BlockScaledOperand &op);

/// y (x.rows x w.rows) = x * w^T as the Hopper block-scaled GEMM does it:
/// for each K block of 128 (the last one may be shorter)
///   P = sum of decode(qx) * decode(qw) over the block, fp32, k in order;
///   1D x with 1D or 2D w: y = fma(P * sx, sw, y);
///   2D x with 1D w:       y = fma(P * sw, sx, y);
/// starting from y = +0, then y = y + bias[n] in fp32 if `bias` is given.
/// 2D x 2D is rejected as TE does; on error `error` (if given) is set and
/// the result is empty.
std::vector<float> blockScaledGemm(const BlockScaledOperand &x,
                                   const BlockScaledOperand &w,
                                   const float *bias = nullptr,
                                   std::string *error = nullptr);

/// One operand of an MXFP8 GEMM in TN form: `rows` x `k` FP8 codes with K
/// contiguous (k a multiple of 32), and the E8M0 scale of (row, kk) at
/// scales[row * scaleStride + kk / 32] - the compact rowwise layout of
/// docs/Numerics.md §5.2.
struct Mxfp8Operand {
  std::vector<uint8_t> codes, scales;
  int64_t rows = 0, k = 0;
  int64_t scaleStride = 0;
  Fp8Format format = Fp8Format::E4M3;
};

/// y (x.rows x w.rows) = x * w^T as tejit's generated Hopper MXFP8 GEMM
/// computes it (docs/Numerics.md §5.4): for each 32-element K block j
///   P = sum of decode(qx) * decode(qw) over the block, fp32, k in order;
///   y = fma(P * 2^(Ex-127), 2^(Ew-127), y)   (E8M0 decoded by decodeE8M0)
/// starting from y = +0, then y = y + bias[n] in fp32 if `bias` is given.
/// On bad operands `error` (if given) is set and the result is empty.
std::vector<float> mxfp8Gemm(const Mxfp8Operand &x, const Mxfp8Operand &w,
                             const float *bias = nullptr,
                             std::string *error = nullptr);

/// The GEMM operand view of an MXFP8 direction produced by quantize() with
/// compact scales: rows x k = the stored data shape. Rowwise only: the
/// columnwise direction's 32x1 blocks run across rows.
Mxfp8Operand mxfp8Operand(const QuantizedDirection &q, const Scheme &scheme);

/// The M-grouped GEMM (as groupedBlockScaledGemm) on MXFP8 operands: x's
/// mTotal rows sorted by expert, w the stacked [G·N, K] rows; every row of
/// expert g is mxfp8Gemm's rule against w's rows g·N .. g·N + N - 1, rows
/// past the experts' +0. Result [mTotal, N].
std::vector<float> groupedMxfp8Gemm(const Mxfp8Operand &x,
                                    const Mxfp8Operand &w,
                                    const std::vector<int64_t> &splits,
                                    std::string *error = nullptr);

/// One operand of an NVFP4 GEMM in TN form: `rows` x `k` E2M1 codes packed
/// two a byte along K (the even element in the low nibble), the E4M3 block
/// scale of (row, kk) at scales[row * scaleStride + kk / 16] (the compact
/// rowwise layout of docs/Numerics.md §6.6), and the tensor's global amax.
struct Nvfp4Operand {
  std::vector<uint8_t> codes, scales;
  int64_t rows = 0, k = 0;
  int64_t scaleStride = 0;
  float amax = 0.0f;
};

/// y (x.rows x w.rows) = x * w^T as tejit's generated Hopper NVFP4 GEMM
/// computes it (docs/Numerics.md §6.7): each element is the exact product
/// v = e2m1 · s_b of its code and block scale; the fp32 sum of v_x · v_w
/// over K, k in order, from +0 (the tensor cores' order is theirs: equal
/// wherever the partial sums are exact), then
///   y = fl(sum · fl(fl(A_x · A_w) · fl(1/7225344))) (+ bias[n] in fp32).
/// On bad operands `error` (if given) is set and the result is empty.
std::vector<float> nvfp4Gemm(const Nvfp4Operand &x, const Nvfp4Operand &w,
                             const float *bias = nullptr,
                             std::string *error = nullptr);

/// The split sizes of a grouped GEMM as the kernels apply them: each
/// clamped to [0, rows left of mTotal] (docs/Numerics.md §7.4).
std::vector<int64_t> clampSplits(const std::vector<int64_t> &splits,
                                 int64_t mTotal);

/// The expert of each of mTotal rows under clampSplits(splits), -1 for the
/// padding rows past the experts'.
std::vector<int64_t> expertOfRows(const std::vector<int64_t> &splits,
                                  int64_t mTotal);

/// The M-grouped GEMM of an MoE layer (docs/Numerics.md §7.4): x holds
/// mTotal rows sorted by expert, w the G experts' N x K weights stacked
/// (expert g's rows g·N .. g·N + N - 1), `splits` each expert's row count
/// (clamped by clampSplits). Every row of expert g is y = x_row · w_g^T
/// computed exactly as the single-expert GEMM computes it; rows past the
/// experts' are +0. Result [mTotal, N].
/// Block FP8: x 1x128 (scales in x's GEMM_READY layout over all mTotal
/// rows); w 128x128 with each expert's own tiles, scales
/// [G][ceil(N/128)][scaleStride] (the stacked [G·N, K] matrix's layout when
/// N is a multiple of 128), or 1x128 over the stacked rows;
/// blockScaledGemm's rule per output.
std::vector<float> groupedBlockScaledGemm(const BlockScaledOperand &x,
                                          const BlockScaledOperand &w,
                                          const std::vector<int64_t> &splits,
                                          std::string *error = nullptr);
/// dgrad's grouped GEMM: y [mTotal, n] = each expert's rows of x (1x128,
/// [mTotal, k]) times its [k, n] weight read columnwise, `w` being the
/// columnwise storage of the [G, k, n] stack: codes [n, G·k], 128x128
/// scales [ceil(n/128)][scaleStride >= G·k/128]; k a multiple of 128.
/// Expert g's weight is columns g·k .. g·k + k - 1 with their own tiles, so
/// each row is exactly the single-expert GEMM on that weight.
std::vector<float> groupedBlockScaledGemmColumnwise(
    const BlockScaledOperand &x, const BlockScaledOperand &w,
    const std::vector<int64_t> &splits, std::string *error = nullptr);
/// Plain operands (bf16 or f32 values): referenceGemm per expert (fp32
/// accumulation, k in order). x [mTotal, K], w [G·N, K]; or, with
/// `weightColumnwise` (dgrad), w the [G, K, N] stack, expert g's rows times
/// its [K, N] matrix.
std::vector<float> groupedGemm(const float *x, const float *w, int64_t mTotal,
                               int64_t n, int64_t k,
                               const std::vector<int64_t> &splits,
                               bool weightColumnwise = false);

/// Rounds every value RNE to bf16 (the usual GEMM output cast).
std::vector<uint16_t> roundToBF16(const std::vector<float> &values);

/// dbias[c] = sum over r of dy[r][c] for the row-major M x N `dy`, in fp32.
/// chunkRows == 0 (or >= M): rows 0..M-1 added sequentially. Otherwise the
/// fused-kernel order of docs/Numerics.md §10: each chunk of `chunkRows` rows
/// sums sequentially into an fp32 partial, then the partials are summed
/// sequentially (chunk 0 first). The caller casts to the activation dtype.
std::vector<float> biasGrad(const void *dy, SourceType type, int64_t m,
                            int64_t n, int64_t chunkRows = 0);

} // namespace ref
} // namespace rt
} // namespace te

#endif // TE_RUNTIME_REFERENCE_GEMM_H
