//===- te/codegen/Program.h - The kernel-level program ----------*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//
//
// The kernel level of tejit: what the compiler hands to code generation and
// to both backends. An entry is a list of values (tensors and quantized
// tensors, each with its shape and, per present direction, its scheme) and
// an ordered list of kernels that read and write them. The compiler lowers
// a `te` function to an Entry (codegen/lower); a host program can also build
// one directly. The CUDA backend turns an Entry into generated kernels and a
// runtime Plan (PlanBuilder.h); the CPU backend runs it with the reference
// numerics (CpuBackend.h), so every GPU result has a bit-exact twin.
//
//===----------------------------------------------------------------------===//

#ifndef TE_CODEGEN_PROGRAM_H
#define TE_CODEGEN_PROGRAM_H

#include "te/formats/Scheme.h"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace te::cg {

struct Entry;

/// A tensor, or a quantized tensor with the directions it holds.
struct Value {
  enum class Kind : uint8_t { Tensor, Quantized };
  Kind kind = Kind::Tensor;
  std::string name; ///< for diagnostics and dump files
  /// The value's type as the IR wrote it ("!te.qtensor<...>"), for front
  /// ends that build programs over it; empty for a program built in C++.
  std::string type;
  std::vector<int64_t> shape;        ///< logical shape
  rt::DType dtype = rt::DType::BF16; ///< tensor element / high-precision type
  /// Quantized: the scheme of each direction held (absent: not held).
  std::optional<rt::Scheme> rowwise, columnwise;
  /// Double quantization (a hybrid's columnwise_source =
  /// rowwise_dequantized): the columnwise direction is quantized from the
  /// values this rowwise scheme's quantization dequantizes to, rounded to
  /// `dtype` (docs/Numerics.md §11); absent: from the tensor itself.
  std::optional<rt::Scheme> columnwiseSource;

  bool isQuantized() const { return kind == Kind::Quantized; }
  /// Rows of the logical 2-D view: the product of all but the last dim.
  int64_t rows() const;
  int64_t cols() const { return shape.empty() ? 1 : shape.back(); }
  const std::optional<rt::Scheme> &scheme(rt::Direction d) const {
    return d == rt::Direction::Rowwise ? rowwise : columnwise;
  }
};

/// One output of a quantize kernel: direction `dir` of quantized value
/// `value`, quantized with `scheme`.
struct Stage {
  rt::Scheme scheme;
  rt::Direction dir = rt::Direction::Rowwise;
  int value = -1;
  /// fp8_delayed: the delayed-scaling state the stage casts with and
  /// records its amax into (ScalingState.h); empty for other schemes.
  std::string state;
};

/// Reads tensor `input` once and writes every stage and, if `biasGrad` is a
/// value, the FP32 column sums of the input into it.
struct QuantizeKernel {
  std::string name; ///< C identifier, unique in the entry
  int input = -1;
  std::vector<Stage> stages;
  int biasGrad = -1;
  /// > 1: `input` is one row shard of a tensor split over that many ranks,
  /// and the amax that per-tensor FP8 and NVFP4 scale by (and record) is
  /// the whole tensor's, reduced over the ranks (docs/Numerics.md §16).
  int amaxRanks = 1;
};

/// Quantizes a tensor whose high-precision master is split into contiguous
/// 1-D shards, `shards` in rank order (rank r holds the row-major elements
/// from the sum of the sizes before it on; docs/Numerics.md §17), straight
/// into the whole tensor's quantized layout: every stage's value has the
/// whole tensor's shape, and the result is bit for bit the quantization of
/// the concatenated master. The CUDA plan runs every rank in one process:
/// an amax pass over the tiles split between ranks (and the tensor amax),
/// whose max over ranks the shared table holds, then each rank's tiles.
///
/// With `rankOffsets` (R + 1 element offsets) one process runs each rank:
/// `shards` is this rank's shard alone, rank r holding [rankOffsets[r],
/// rankOffsets[r + 1]) in its first elements; the plan all-reduces the
/// amax table between the amax pass and the tiles, and merges the ranks'
/// outputs with a second all-reduce, so every rank holds the whole result.
struct ShardedQuantizeKernel {
  std::string name;
  std::vector<int> shards;
  std::vector<Stage> stages;
  std::vector<int64_t> rankOffsets;

  bool perProcess() const { return !rankOffsets.empty(); }
  /// The number of ranks.
  size_t ranks() const {
    return perProcess() ? rankOffsets.size() - 1 : shards.size();
  }

  /// The most shards one kernel takes: they travel as one by-value kernel
  /// parameter of 4 R + 3 words (te::dev::MasterShards), within CUDA's
  /// parameter space (rt::kMaxTableWords).
  static constexpr size_t kMaxShards = 999;
};

/// The logical values of direction `dir` of quantized value `input`, as a
/// tensor of the output's dtype (CPU backend only for now).
struct DequantizeKernel {
  std::string name;
  int input = -1;
  rt::Direction dir = rt::Direction::Rowwise;
  int output = -1;
};

/// D = op(A) op(B) (+ bias), with te.gemm's conventions: op(A) is M x K
/// (A read rowwise, or columnwise when `transposeA`), op(B) is K x N (B
/// read columnwise, or rowwise when `transposeB`). Operands are tensors or
/// quantized values holding the direction read. CPU backend only for now.
struct GemmKernel {
  std::string name;
  int a = -1, b = -1, bias = -1, output = -1;
  bool transposeA = false, transposeB = false;

  rt::Direction directionA() const {
    return transposeA ? rt::Direction::Columnwise : rt::Direction::Rowwise;
  }
  rt::Direction directionB() const {
    return transposeB ? rt::Direction::Rowwise : rt::Direction::Columnwise;
  }
};

/// Adam / AdamW hyper-parameters, fixed at compile time (te.adam_step's
/// attributes). lr and step are run-time values.
struct AdamHyper {
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weightDecay = 0.0f;
  bool adamW = true;
  /// TE-compatible fast-math arithmetic (flush-to-zero, TE's contractions);
  /// else IEEE fp32 (docs/Numerics.md §9, ref::AdamConfig).
  bool fastMath = false;
  bool operator==(const AdamHyper &o) const {
    return beta1 == o.beta1 && beta2 == o.beta2 && eps == o.eps &&
           weightDecay == o.weightDecay && adamW == o.adamW &&
           fastMath == o.fastMath;
  }
};

/// One parameter of a multi-tensor Adam kernel: reads param, grad,
/// expAvg, expAvgSq; writes newParam, newExpAvg, newExpAvgSq and the
/// quantized values the kernel's stages write into.
struct AdamTensor {
  int param = -1, grad = -1, expAvg = -1, expAvgSq = -1;
  int newParam = -1, newExpAvg = -1, newExpAvgSq = -1;
  std::vector<int> quantized;

  /// The (old, new) value pairs the update maps element by element: the
  /// parameter and both moments.
  std::array<std::pair<int, int>, 3> updates() const {
    return {{{param, newParam}, {expAvg, newExpAvg}, {expAvgSq, newExpAvgSq}}};
  }
};

/// One launch updates every tensor with the same hyper-parameters, lr
/// (f32 scalar value) and step (i64 scalar value, the step after
/// increment), and requantizes each new parameter with the same stages
/// (scheme + direction; a stage's `value` is a slot: it writes
/// `quantized[value]` of each tensor).
struct AdamKernel {
  std::string name;
  AdamHyper hyper;
  int lr = -1, step = -1;
  std::vector<AdamTensor> tensors;
  std::vector<Stage> stages;
};

/// The M-grouped GEMM of an MoE layer (docs/Numerics.md §7.4): y [M, N] =
/// each expert's rows of x [M, K] times the transpose of its weight in w
/// [G, N, K]; `splits` is a [G] i64 value read at run time (clamped), rows
/// past the experts' are zeros. Operands both tensors (bf16, f16, f32), or
/// x block FP8 1x128 and w block FP8 128x128 with N a multiple of 128, both
/// read rowwise; `bias` (optional) a [G, N] tensor of y's type, expert g's
/// row added in fp32 before the rounding. `weightColumnwise` (dgrad): y
/// [M, K] = each expert's rows of x [M, N] times its weight, w read
/// columnwise (block FP8 only, no bias). The
/// CPU backend runs it with the reference; the CUDA plan is one launch of
/// GroupedGemmEmitter.h's kernel.
struct GroupedGemmKernel {
  std::string name;
  int x = -1, w = -1, splits = -1, output = -1, bias = -1;
  bool weightColumnwise = false;
  /// Operands (bf16 tensors) that the kernel's plan quantizes by these
  /// per-tensor FP8 or NVFP4 schemes with one amax per expert
  /// (rt::groupedPerExpertSchemesError; docs/Numerics.md §7.4): both
  /// per-tensor FP8 into workspaces laid out for the block-scaled GEMM;
  /// otherwise into each expert's dequantized bf16 values for the BF16 GEMM
  /// (an operand without a scheme then holds another family's values,
  /// dequantized before), or NVFP4 x NVFP4 codes (nvfp4Codes).
  std::optional<rt::Scheme> xScheme, wScheme;
  /// fp8_delayed operands: their states (ScalingState.h), one per expert,
  /// rt::expertStateName(xState, g); "" otherwise.
  std::string xState, wState;
  /// NVFP4 schemes: the plan quantizes both to packed codes and block
  /// scales and the engine's NVFP4 kernel reads them
  /// (rt::groupedNvfp4CodesError); else the BF16 kernel reads their values.
  bool nvfp4Codes = false;
  /// >= 0: a quantized value (y's shape and type, rowwise by FP8 block
  /// scaling with 1x128 blocks: rt::groupedEpilogueQuantizeError) that the
  /// epilogue writes from y as a quantize kernel over y would
  /// (te-fuse-gemm-epilogue; docs/Numerics.md §7.4). y is written too.
  int quantizedOutput = -1;

  bool quantizesPerExpert() const { return xScheme || wScheme; }
  /// Both operands per-tensor FP8 per expert: the FP8 codes on the
  /// block-scaled kernel (rt::groupedPerExpertReadsCodes).
  bool readsPerExpertCodes() const;
  /// Quantized per expert and read as bf16 values by the BF16 kernel.
  bool readsPerExpertValues() const;

  rt::Direction weightDirection() const {
    return weightColumnwise ? rt::Direction::Columnwise
                            : rt::Direction::Rowwise;
  }
};

/// The wgrad of an MoE layer: dW [G, N, K] f32, dW_g = dy_g^T x_g over
/// each expert's rows of dy [M, N] and x [M, K] (bf16 tensors; `splits` as
/// for GroupedGemmKernel), each operand quantized columnwise per expert by
/// its scheme (FP8 of one family for both, read as codes; else each of
/// bf16, block FP8 1x128, per-tensor FP8, MXFP8 and NVFP4, read as values by
/// the BF16 GEMM; rt::groupedWgradSchemesError, rt::groupedWgradReadsCodes)
/// as if the
/// expert's rows were their own tensor (docs/Numerics.md §7.4); with
/// `biasGrad` >= 0, also each expert's bias gradient [G, N] f32 from the
/// same read of dy. The quantized operands live in the kernel's workspace
/// (the grouped layout only this GEMM reads).
struct GroupedWgradKernel {
  std::string name;
  int dy = -1, x = -1, splits = -1, output = -1, biasGrad = -1;
  rt::Scheme dyScheme, xScheme;
  /// fp8_delayed operands' states, one per expert as GroupedGemmKernel's.
  std::string dyState, xState;
};

/// The whole tensor `output` ([ranks * m, ...]) from every rank's row shard
/// `input` ([m, ...]; docs/Numerics.md §16): a tensor, or a quantized value
/// whose directions `output` holds (the same schemes; only those are
/// gathered; a columnwise copy that derives from the rowwise one is derived
/// on each rank instead, docs/Numerics.md §16). The CUDA plan is NCCL
/// all-gathers plus an unpack launch per buffer whose pieces are not
/// contiguous and the transposes of derived copies; the CPU backend
/// gathers through its host collective.
struct AllGatherKernel {
  std::string name;
  int input = -1, output = -1;
  int ranks = 1;
  /// Send the columnwise copy even where it derives from the rowwise one
  /// (rt::shardDirectionsRead), to measure the difference.
  bool sendColumnwise = false;

  /// The directions (rt::Direction bits) read from `input` of `e`.
  unsigned shardDirections(const Entry &e) const;
};

/// One kernel of an entry. A std::variant, so a new kernel kind is a compile
/// error in every std::visit that does not handle it yet.
using Kernel = std::variant<QuantizeKernel, DequantizeKernel, GemmKernel,
                            AdamKernel, GroupedGemmKernel, GroupedWgradKernel,
                            AllGatherKernel, ShardedQuantizeKernel>;

/// The kernel's C identifier.
inline const std::string &kernelName(const Kernel &k) {
  return std::visit(
      [](const auto &kernel) -> const std::string & { return kernel.name; }, k);
}

/// Overloaded lambdas for std::visit over a Kernel.
template <typename... Fs> struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <typename... Fs> Overloaded(Fs...) -> Overloaded<Fs...>;

struct Entry {
  std::string name;
  std::vector<Value> values;
  std::vector<int> args;    ///< values bound by the caller, in order
  std::vector<int> results; ///< values returned, in order
  std::vector<Kernel> kernels;
  /// The te.persistent name of each argument / result ("" if none): values
  /// a session keeps between calls of the program's entries (Session.h).
  /// Empty vectors: nothing persistent.
  std::vector<std::string> argPersistent, resultPersistent;

  const std::string &persistentArg(size_t i) const;
  const std::string &persistentResult(size_t i) const;
};

/// Random state of NVFP4 stochastic rounding: one (seed, offset) for the
/// whole program (docs/Numerics.md §6.5).
struct RandomState {
  uint64_t seed = 0x7e5eed;
  uint64_t offset = 0;
};

struct Program {
  std::vector<Entry> entries;
  std::string arch = "sm_90a";
  rt::Target target = rt::Target::sm90();
  RandomState random;

  const Entry *find(const std::string &name) const;
};

/// Whether `a` and `b` are stored alike: the same kind, shape, element type
/// and schemes (every declaration of one persistent value has one type).
bool sameType(const Value &a, const Value &b);

/// Every persistent value of `p` (te.persistent on any entry's argument or
/// result) with its type, by name.
std::map<std::string, Value> persistentValues(const Program &p);

/// The storage of direction `d` of a quantized value (te::rt::storageFor on
/// the value's 2-D view). In a hybrid the columnwise direction never shares
/// the rowwise buffers.
rt::DirectionStorage directionStorage(const Value &v, rt::Direction d,
                                      const rt::Target &target);

/// Whether result value `out` of `e` may be written into the buffers of
/// argument value `in` (one persistent value read and written): only where
/// an optimizer kernel updates that tensor element by element (parameter
/// or moment), no later kernel reads `in` and the entry does not return it.
bool updatesInPlace(const Entry &e, int in, int out);

/// Checks an entry: value indices in range, kernel inputs and outputs of the
/// right kinds and shapes, schemes valid for their shapes. "" when valid.
std::string validate(const Entry &e);

/// Checks one kernel of `e` (its value indices, kinds, shapes and
/// directions; "" when valid), for a producer that adds kernels one at a
/// time and reports each where it came from.
std::string validateKernel(const Entry &e, const Kernel &k);

} // namespace te::cg

#endif // TE_CODEGEN_PROGRAM_H
