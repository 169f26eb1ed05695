//===- te/runtime/reference/Scales.h - Scale computations -------*- C++ -*-===//
//
// Reference scale-factor math for every low-precision recipe: per-tensor
// current scaling, delayed scaling, MXFP8 block exponents, NVFP4 two-level
// scales and DeepSeek-style FP8 block scales (docs/Numerics.md §3, 4, 5.1, 6.2,
// 7.1). Each function performs exactly the fp32 operations, in the order,
// that docs/Numerics.md lists, so a kernel that matches it bit for bit matches
// TransformerEngine. Build without fast-math and with -ffp-contract=off.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_REFERENCE_SCALES_H
#define TE_RUNTIME_REFERENCE_SCALES_H

#include "te/runtime/reference/Codecs.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace te {
namespace rt {
namespace ref {

//===----------------------------------------------------------------------===//
// Amax and per-tensor scales (docs/Numerics.md §3, 7.1)
//===----------------------------------------------------------------------===//

/// max |x_i| (fmaxf semantics): NaN elements are ignored, an infinite element
/// makes the result Inf, an empty range gives 0 (docs/Numerics.md §3 step 1).
float amaxOf(const float *data, size_t count);

/// compute_scale_from_amax (docs/Numerics.md §3 step 3, 7.1):
///   amax < eps -> amax = eps; amax 0, Inf or NaN -> 1;
///   s = div_rn(fp8Max, amax); Inf -> valueForInf;
///   pow2 -> s truncated to a power of two (mantissa bits cleared).
float computeScaleFromAmax(float amax, float fp8Max, bool pow2, float eps,
                           float valueForInf);

/// scale_inv written by the per-tensor cast kernels: rcp_rn(scale).
float scaleInvFromScale(float scale);

//===----------------------------------------------------------------------===//
// Delayed scaling (docs/Numerics.md §4)
//===----------------------------------------------------------------------===//

enum class AmaxAlgo { Max, MostRecent };

/// One quantizer column of the delayed-scaling state. history[0] is the slot
/// the current step's casts accumulate into; history.size() is the history
/// length L (>= 1).
struct DelayedScalingState {
  std::vector<float> history;
  float scale = 1.0f;
};

/// The fused amax_and_scale_update_after_reduction kernel for one column
/// (docs/Numerics.md §4 step 2). `reducedAmax` is the all-reduced amax of this
/// column, or 0 when there was no reduction (then history[0] is used). When
/// the resulting last amax is 0 the history is NOT rolled; otherwise it
/// becomes [0, old[2], ..., old[L-1], last]. The new scale is
/// fp8Max * 2^-margin / amaxUsed (fp32), the old scale if amaxUsed is not
/// finite and positive, and FLT_MAX if the quotient is Inf; with `pow2`
/// (tejit's option) a new scale is then rounded down to a power of two.
void updateDelayedScaling(DelayedScalingState &state, AmaxAlgo algo,
                          float fp8Max, int margin, float reducedAmax,
                          bool pow2 = false);

/// fp8Max * 2^-margin as TE's host computes it (exact for margin in
/// [0, 32]): the numerator of the delayed-scaling update.
float delayedScaledMax(float fp8Max, int margin);

//===----------------------------------------------------------------------===//
// MXFP8 (docs/Numerics.md §5.1)
//===----------------------------------------------------------------------===//

/// fl(1 / fp8Max) as used by the MXFP8 kernels: E4M3 0x3B124925, E5M2
/// 0x37924925.
float mxfp8MaxNormReciprocal(Fp8Format format);

/// Block scale exponent E = e8m0(fl(blockAmax * fl(1 / fp8Max))); the stored
/// scale_inv byte, decoding to 2^(E-127).
uint8_t mxfp8BlockExponent(float blockAmax, Fp8Format format);

//===----------------------------------------------------------------------===//
// NVFP4 (docs/Numerics.md §6.2)
//===----------------------------------------------------------------------===//

/// fl(1/6) = 0x3E2AAAAB and fl(1/2688) = 0x39C30C31.
float nvfp4OneSixth();
float nvfp4OneOver2688();

/// Global encode scale S_enc = fminf(2688 / A, FLT_MAX), with 1 when A is 0
/// or the quotient is 0 (A = Inf). A NaN amax gives FLT_MAX.
float nvfp4GlobalEncodeScale(float globalAmax);
/// Global decode scale S_dec = (float)(1.0 / (double)S_enc) (== rcp_rn).
float nvfp4GlobalDecodeScale(float sEnc);
/// Stored E4M3 block scale byte:
///   e4m3_satfinite(fminf(fl(blockAmax * fl(sEnc * fl(1/6))), FLT_MAX)).
uint8_t nvfp4BlockScale(float blockAmax, float sEnc);
/// Per-block encode factor fminf(div_rn(1, fl(e4m3(sB) * sDec)), FLT_MAX);
/// elements are quantized as e2m1(fl(x * factor)).
float nvfp4BlockEncodeFactor(uint8_t sB, float sDec);
/// Dequantization factor fl(fl(e4m3(sB) * A) * fl(1/2688)); x = e2m1 * it.
float nvfp4DequantFactor(uint8_t sB, float globalAmax);

//===----------------------------------------------------------------------===//
// FP8 block scaling (docs/Numerics.md §7.1)
//===----------------------------------------------------------------------===//

/// High-precision dtype of the tensor being quantized; selects the
/// value_for_inf of the block scale.
enum class SourceType { BF16, F16, F32 };

/// Largest finite value of the source dtype: 0x1.FEp127, 65504, FLT_MAX.
float sourceTypeMaxFinite(SourceType src);

/// computeScaleFromAmax with valueForInf = max finite of the source dtype.
float fp8BlockScale(float blockAmax, Fp8Format format, bool pow2, float eps,
                    SourceType src);
/// Stored fp32 block scale_inv: (float)(1.0 / (double)scale).
float fp8BlockScaleInv(float scale);

} // namespace ref
} // namespace rt
} // namespace te

#endif // TE_RUNTIME_REFERENCE_SCALES_H
