//===- te/formats/Scheme.h - Quantization schemes and layouts ---*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR and no CUDA.
//
//===----------------------------------------------------------------------===//
//
// A Scheme is the run-time description of one quantization format for one
// direction of a tensor (the compiler's `#te.*` attributes lower to it). This
// file is the single source of truth for which buffers a quantized tensor has
// and how large they are (docs/Guide.md "Storage layouts", docs/Numerics.md
// §2): the dialect's verifiers and storage queries, the reference numerics and
// the runtime's buffer allocation all call these functions.
//
//===----------------------------------------------------------------------===//

#ifndef TE_FORMATS_SCHEME_H
#define TE_FORMATS_SCHEME_H

#include <cstdint>
#include <string>

namespace te::rt {

/// Element types of every buffer a quantized tensor can own.
enum class DType : uint8_t {
  F32,
  F16,
  BF16,
  E4M3,   ///< FP8 E4M3 ("fn": no Inf)
  E5M2,   ///< FP8 E5M2
  E8M0,   ///< unsigned power-of-two scale byte (MXFP8)
  E2M1x2, ///< two FP4 E2M1 codes per byte, even element in the low nibble
  I64,    ///< a 64-bit integer scalar (an optimizer's step count)
};

/// Size in bytes of one stored element of `t` (E2M1x2 holds two codes).
int64_t dtypeSize(DType t);
const char *dtypeName(DType t);
/// E4M3 or E5M2: the element types FP8 tensor cores and FP8 schemes take.
bool isFp8(DType t);
/// Whether FP8 codes of `a` and `b` (E4M3 or E5M2 each) meet in a scaled
/// FP8 GEMM: any pair but E5M2 x E5M2 (the rule checkGemmPairing applies
/// and the GEMM engine's kernel specs check).
bool fp8ElementsPair(DType a, DType b);

/// The axis along which scaling blocks run and a GEMM contracts.
enum class Direction : uint8_t {
  Rowwise = 1,    ///< blocks along the last (contiguous) dimension
  Columnwise = 2, ///< blocks along the flattened first dimensions
};
const char *directionName(Direction d);

enum class SchemeKind : uint8_t {
  Fp8Current, ///< FP8, per-tensor current scaling
  Fp8Delayed, ///< FP8, per-tensor delayed scaling (amax history)
  Mxfp8,      ///< FP8 with E8M0 scales per 32 elements
  Nvfp4,      ///< E2M1 with E4M3 scales per 16 elements + FP32 tensor amax
  Fp8Block,   ///< FP8 with FP32 scales per 1x128 or 128x128 tile
  Identity,   ///< high-precision passthrough
};
const char *schemeKindName(SchemeKind k);

enum class AmaxAlgo : uint8_t { Max, MostRecent };

/// One (non-hybrid) quantization scheme with all of its options. Options that
/// do not apply to `kind` keep their defaults.
struct Scheme {
  SchemeKind kind = SchemeKind::Identity;
  /// E4M3/E5M2 for the FP8 kinds, E2M1x2 for NVFP4, F32/F16/BF16 for identity.
  DType element = DType::BF16;
  /// fp8_current, fp8_block, fp8_delayed: power-of-two scales
  bool pow2 = false;
  double eps = 0.0;              ///< fp8_current, fp8_block: amax lower bound
  int64_t history = 1024;        ///< fp8_delayed: amax history length
  AmaxAlgo algo = AmaxAlgo::Max; ///< fp8_delayed
  int64_t margin = 0;            ///< fp8_delayed: scale = max/amax/2^margin
  bool rht = false; ///< nvfp4: random Hadamard transform (columnwise only)
  bool stochasticRounding = false;      ///< nvfp4
  bool block2d = false;                 ///< nvfp4: 16x16 blocks
  int64_t tileRows = 1, tileCols = 128; ///< fp8_block tile: 1x128 or 128x128

  static Scheme fp8Current(DType element, bool pow2 = false, double eps = 0.0);
  static Scheme fp8Delayed(DType element, int64_t history = 1024,
                           AmaxAlgo algo = AmaxAlgo::Max, int64_t margin = 0,
                           bool pow2 = false);
  static Scheme mxfp8(DType element);
  static Scheme nvfp4(bool rht = false, bool sr = false, bool block2d = false);
  static Scheme fp8Block(DType element, int64_t tileRows, int64_t tileCols,
                         bool pow2 = false, double eps = 0.0);
  static Scheme identity(DType element);

  bool isPerTensor() const {
    return kind == SchemeKind::Fp8Current || kind == SchemeKind::Fp8Delayed;
  }
  /// Scales by the amax of the whole tensor (FP8 current scaling, NVFP4's
  /// global scale): a quantize kernel needs that amax before its first cast.
  bool scalesByTensorAmax() const {
    return kind == SchemeKind::Fp8Current || kind == SchemeKind::Nvfp4;
  }

  /// The type of the scale-inverse buffer, or false if the scheme has none.
  bool hasScale() const { return kind != SchemeKind::Identity; }
  DType scaleType() const;

  /// Valid option ranges (docs/Guide.md "Schemes"). history: the CPU
  /// backend keeps a window of that many floats per quantized direction and
  /// TransformerEngine's default is 1024. margin: the scale is
  /// fp8_max * 2^-margin / amax; past 32 even an e5m2 amax rounds to zero.
  /// eps: a floor for a near-zero amax; above 1 it would replace the amax
  /// of ordinary tensors (at 1e38 the scale is ~4e-36, its inverse ~2e35).
  static constexpr int64_t kMaxHistory = 65536;
  static constexpr int64_t kMaxMargin = 32;
  static constexpr double kMaxEps = 1.0;

  /// Checks the options on their own (history in [1, kMaxHistory], margin
  /// in [0, kMaxMargin], eps finite in [0, kMaxEps], formats the kind
  /// allows, tile shapes). Returns "" when valid, else a message naming the
  /// bad option and its value.
  std::string validate() const;

  bool operator==(const Scheme &o) const;
  bool operator!=(const Scheme &o) const { return !(*this == o); }
};

/// The delayed-scaling state (docs/Numerics.md §4) direction `dir` of a
/// quantization by (rowwise, columnwise) casts with, given the state name
/// `base` the quantization carries: `base` where the directions share one
/// quantizer (one scheme), `base.rowwise` / `base.columnwise` where a hybrid
/// has two different fp8_delayed schemes (two quantizers, hence two states);
/// "" where `dir`'s scheme is not fp8_delayed.
std::string delayedStateName(const std::string &base, const Scheme &rowwise,
                             const Scheme &columnwise, Direction dir);

/// The state of expert `expert` of a grouped layer's operand whose
/// (direction-resolved, delayedStateName) state is `state`: each expert
/// keeps its own amax history, "state.expert<g>".
std::string expertStateName(const std::string &state, int64_t expert);

/// Shape of a scaling block in the original M x K matrix. A value of 0 means
/// "the whole extent" (per-tensor scaling uses {0, 0}).
struct BlockShape {
  int64_t rows = 0, cols = 0;
  bool operator==(const BlockShape &o) const {
    return rows == o.rows && cols == o.cols;
  }
};
BlockShape blockShape(const Scheme &s, Direction d);

/// The SM number of a target architecture "sm_XY" or "sm_XYa" (90 for
/// "sm_90a"), or -1 when `arch` is not of that form.
int smVersion(const std::string &arch);

/// The code-generation target facts that change storage. The one home of
/// the rule: the dialect's #te.target, the lowering and the backends all
/// call forArch.
struct Target {
  /// True on Hopper/Ada (sm_89, sm_90, sm_12x): FP8 GEMMs are TN-only, so the
  /// columnwise per-tensor FP8 data is stored as an explicit transpose.
  bool tnOnlyFp8Gemm = true;
  static Target sm90() { return Target{true}; }
  static Target sm100() { return Target{false}; }
  /// The facts of `arch` (smVersion(arch) >= 0): FP8 GEMMs take any layout
  /// on sm_100..sm_119 and sm_130+, else they are TN-only (docs/Numerics.md).
  static Target forArch(const std::string &arch);
};

/// A 2-D buffer; `rows == 0` marks an absent buffer.
struct BufferDesc {
  DType dtype = DType::F32;
  int64_t rows = 0, cols = 0;
  bool present() const { return rows > 0 && cols > 0; }
  int64_t numElements() const { return rows * cols; }
  int64_t bytes() const { return rows * cols * dtypeSize(dtype); }
  bool operator==(const BufferDesc &o) const {
    return dtype == o.dtype && rows == o.rows && cols == o.cols;
  }
};

/// What one direction of a quantized M x K tensor stores.
struct DirectionStorage {
  BufferDesc data;     ///< quantized (or passthrough) elements
  BufferDesc scaleInv; ///< dequantization scales, padded as the format needs
  BufferDesc amax;     ///< FP32 amax(es) the format keeps, if any
  /// The data buffer holds the K x M transpose of the logical matrix.
  bool dataTransposed = false;
  /// No buffer of its own: this direction reads the rowwise data (per-tensor
  /// FP8 on targets whose FP8 GEMM accepts any layout; identity always).
  bool sharesRowwiseData = false;
  /// The scale-inverse is the rowwise one (per-tensor FP8).
  bool sharesRowwiseScale = false;
};

/// Storage of direction `d` for a logical M x K tensor (M = product of all but
/// the last dimension). Call validateShape first: the result is unspecified
/// for shapes the scheme rejects.
DirectionStorage storageFor(const Scheme &s, Direction d, int64_t m, int64_t k,
                            const Target &target = Target::sm90());

/// Checks that an M x K tensor can be quantized in direction `d`. Returns ""
/// when it can, else a message naming the dimension and the reason.
std::string validateShape(const Scheme &s, Direction d, int64_t m, int64_t k);

/// The largest buffer, in bytes, a tensor or one buffer of a quantized
/// tensor may need: 2^48 (256 TiB). The runtime counts bytes in int64 /
/// uint64 and CUDA's unified virtual address space is 48 bits wide, so no
/// device allocation (and no index computed from one) can exceed it.
constexpr int64_t kMaxBufferBytes = int64_t(1) << 48;

/// Checks that the runtime can address a tensor of shape `dims[0..rank)`
/// with `elementBytes`-byte elements: its element count must not overflow
/// int64 and its size must stay within kMaxBufferBytes. When `rowwise` /
/// `columnwise` are given, every buffer storageFor lays out for that
/// direction (viewing the tensor as M x K) must fit as well. A shape with a
/// dynamic (negative) or zero dimension passes. Returns "" when addressable,
/// else a message naming the count or buffer that does not fit.
std::string validateSize(const int64_t *dims, size_t rank, int64_t elementBytes,
                         const Scheme *rowwise = nullptr,
                         const Scheme *columnwise = nullptr);

/// Smallest multiple of `m` that is >= `v` (m > 0, v >= 0).
inline int64_t roundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
inline int64_t ceilDiv(int64_t v, int64_t m) { return (v + m - 1) / m; }

} // namespace te::rt

#endif // TE_FORMATS_SCHEME_H
