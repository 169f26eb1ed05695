//===- te/codegen/QuantizeEmitter.h - CUDA for quantize kernels -*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//
//
// Emits the CUDA C++ of one fused quantize kernel (te/device/
// QuantizeKernel.cuh instantiated with one stage type per output) and its
// companions: the tensor-amax pre-pass when a stage scales by the global
// amax (per-tensor current scaling, NVFP4) and the bias-gradient finalize.
// Kernels are specialised on input type, schemes, directions and fusion; the
// shape is a run-time parameter, so one compiled kernel serves every shape.
//
// Each stage type comes from a small per-scheme emitter (stageType), so a
// new scheme adds one case there and one stage in the device library.
//
//===----------------------------------------------------------------------===//

#ifndef TE_CODEGEN_QUANTIZEEMITTER_H
#define TE_CODEGEN_QUANTIZEEMITTER_H

#include "te/codegen/Program.h"

#include <string>

namespace te::cg {

constexpr unsigned kQuantizeTileRows = 128;
constexpr unsigned kQuantizeTileCols = 128;
constexpr unsigned kQuantizeThreads = 256;
/// Threads per CTA of the bias gradient's finishing launch (one column a
/// thread): small CTAs spread its few thousand threads over every SM.
constexpr unsigned kBiasFinalizeThreads = 64;
/// The bias gradient's one-launch form (te::dev::biasGradStrips over a
/// te::dev::BiasStrip of kQuantizeThreads threads): 16-byte column groups
/// a strip, and the strips it is used with: one CTA an SM (its registers allow
/// no second), one wave of an H100's 132 SMs, from 128 on (measured at 128:
/// docs/Performance.md). More would leave a second wave mostly idle, fewer idle
/// SMs; neither measured.
constexpr int64_t kBiasStripVectors = 8;
constexpr int64_t kBiasStripMinCtas = 128, kBiasStripMaxCtas = 132;
/// CTAs per SM the tile kernel is register-limited to (64 registers). Its
/// 41 KB of shared memory would allow five, but at five (48 registers) the
/// NVFP4 stages spill and the kernel, issue-bound there, ran 3 % slower;
/// four measured as fast or faster for every scheme on the H100
/// (docs/Performance.md, "Fewer instructions an element").
constexpr unsigned kQuantizeMinBlocksPerSm = 4;
/// An f32 tile adds a 32 KB plane of low halves (dynamic shared memory), so
/// three CTAs fit per SM; their register cap is set to match.
constexpr unsigned kQuantizeMinBlocksPerSmF32 = 3;
/// Fields per stage in the kernel's parameter list (StageArgs).
constexpr unsigned kStageParams = 7;

struct EmittedQuantize {
  std::string source;
  std::string mainEntry;
  /// The input's amax pre-pass; empty: none, or the RHT pre-pass takes
  /// the tensor amax too (rhtPrepassTakesTensorAmax).
  std::string amaxEntry;
  std::string rhtAmaxEntry; ///< empty: no RHT columnwise stage
  /// The RHT pre-pass (x, m, k, rht_amax, tensor_amax) also writes the
  /// tensor amax another stage scales by: one read of the input for both.
  bool rhtPrepassTakesTensorAmax = false;
  std::string biasEntry; ///< empty: no bias gradient
};

/// NVFP4 columnwise with the random Hadamard transform: its tensor amax is
/// that of the transformed tensor (its own pre-pass), not the input's
/// (the input's amax pre-pass serves rt::Scheme::scalesByTensorAmax()).
bool usesRht(const Stage &s);

/// "te::dev::SourceType::BF16" / F16 / F32 for an input element type.
std::string sourceType(rt::DType input);

/// Dynamic shared memory of the tile kernel over `input` elements (the
/// low-half plane of an f32 tile; te::dev::quantizeDynamicSmem).
unsigned quantizeDynamicSmem(rt::DType input);

/// The device-library stage type of `s` in direction `d`, e.g.
/// "te::dev::Mxfp8Stage<te::dev::Fp8Format::E4M3, true>".
std::string stageType(const rt::Scheme &s, rt::Direction d, rt::DType input);

/// The source of `k` (call cudaSupport first).
EmittedQuantize emitQuantize(const QuantizeKernel &k, const Entry &e);

/// The CTAs of `k`'s bias gradient in column strips, one launch
/// (te::dev::biasGradStrips: its main entry takes x, m, k and the bias
/// gradient), or 0 where it runs in the tile kernel: `k` quantizes nothing,
/// its rows are whole 16-byte groups and the strips number
/// kBiasStripMinCtas to kBiasStripMaxCtas.
int64_t biasGradStrips(const QuantizeKernel &k, const Entry &e);

/// Whether double quantization (docs/Numerics.md §11) from a rowwise
/// `source` into a columnwise `target` runs in one read of the input
/// (te/device/DoubleQuantizeKernel.cuh): every scale either direction needs
/// lies inside one tile - rowwise MXFP8, block FP8 or NVFP4 (its tensor amax
/// from the input's pre-pass), columnwise MXFP8 or block FP8.
bool doubleQuantizesInOneRead(const rt::Scheme &source,
                              const rt::Scheme &target);

/// The one-read double-quantize kernel `name` over `input` elements:
/// parameters (x, m, k, the rowwise stage's kStageParams, the columnwise
/// stage's, the rowwise scale buffer's columns); `amaxEntry` is the input's
/// amax pre-pass where the rowwise scheme scales by it.
EmittedQuantize emitDoubleQuantize(const std::string &name, rt::DType input,
                                   const rt::Scheme &source,
                                   const rt::Scheme &target,
                                   bool dataTransposed);

/// Where master shards lie in an M x K tensor
/// (te/device/ShardedQuantizeKernel.cuh): the plan's launch sizes and the
/// amax table.
struct ShardGeometry {
  std::vector<int64_t> lo;           ///< R + 1 row-major offsets
  std::vector<int64_t> boundaryRows; ///< tile rows an offset splits
  int64_t tilesAcross = 0;
  int64_t rankTiles = 0; ///< the most tiles of one rank's tile rows
  /// Where each rank's tile rows start in phase B's grid with every rank in
  /// one launch: R + 1 prefix sums of the tile rows each spans.
  std::vector<int64_t> tileRowStart;
  /// Floats of the amax table: the tensor amax, a slot per tile of each
  /// boundary tile row (te::dev::kSlotFloats).
  int64_t tableFloats() const;
};
ShardGeometry shardGeometry(const std::vector<int64_t> &sizes, int64_t k);

/// The kernels of sharded quantize `q`: `mainEntry` (phase B: every rank's
/// tiles), `shardAmaxEntry` (phase A: the amaxes of the blocks ranks share)
/// and `amaxEntry` where a stage scales by the tensor amax. Each takes a
/// te::dev::MasterShards<R> (a Table argument), the rank of its first grid
/// row (an I32, or the Rank argument with one process per rank), then m,
/// k; the main entry then every stage's kStageParams and the table, the
/// others the table.
struct EmittedShardedQuantize {
  std::string source, mainEntry, shardAmaxEntry, amaxEntry;
};
EmittedShardedQuantize emitShardedQuantize(const ShardedQuantizeKernel &q,
                                           const Entry &e);

} // namespace te::cg

#endif // TE_CODEGEN_QUANTIZEEMITTER_H
