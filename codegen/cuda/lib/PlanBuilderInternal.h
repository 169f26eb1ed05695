//===- PlanBuilderInternal.h - The plan builder's shared parts --*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//
//
// PlanBuilder.cpp plans the quantize, dequantize, library-GEMM and Adam
// kernels; PlanGrouped.cpp the GEMM engine's grouped kernels,
// PlanCollective.cpp all-gathers, PlanMasterShards.cpp quantizes from
// master shards, PlanScaling.cpp delayed-scaling states. All write into
// one entry's buffer table; the tile-kernel plans share KernelPlanWriter
// and stageBuffers.
//
//===----------------------------------------------------------------------===//

#ifndef TE_CODEGEN_CUDA_LIB_PLANBUILDERINTERNAL_H
#define TE_CODEGEN_CUDA_LIB_PLANBUILDERINTERNAL_H

#include "te/codegen/PlanBuilder.h"
#include "te/codegen/QuantizeEmitter.h"

#include <algorithm>
#include <optional>

namespace te::cg::detail {

using rt::Direction;

/// Builds the entry's buffer list and value-to-buffer map.
class BufferTable {
public:
  explicit BufferTable(EntryPlan &out) : out_(out) {}

  int add(const std::string &name, uint64_t bytes,
          std::vector<uint8_t> initial = {}) {
    rt::BufferDecl d;
    d.name = name;
    d.bytes = bytes;
    d.external = true;
    out_.buffers.push_back(d);
    out_.initial.push_back(std::move(initial));
    return static_cast<int>(out_.buffers.size()) - 1;
  }

  void addValue(const Value &v, const rt::Target &target) {
    ValueBuffers vb;
    if (!v.isQuantized()) {
      int64_t n = v.rows() * v.cols();
      vb.tensor = add(v.name, uint64_t(n * rt::dtypeSize(v.dtype)));
    } else {
      for (Direction d : {Direction::Rowwise, Direction::Columnwise}) {
        if (!v.scheme(d))
          continue;
        rt::DirectionStorage st = directionStorage(v, d, target);
        std::string prefix = v.name + "." + rt::directionName(d);
        ValueBuffers::Direction &bd = vb.dir[d == Direction::Rowwise ? 0 : 1];
        if (st.data.present())
          bd.data = add(prefix + ".data", uint64_t(st.data.bytes()));
        if (st.scaleInv.present())
          bd.scale = add(prefix + ".scale_inv", uint64_t(st.scaleInv.bytes()));
        if (st.amax.present())
          bd.amax = add(prefix + ".amax", uint64_t(st.amax.bytes()));
      }
    }
    out_.values.push_back(vb);
  }

  uint64_t bytes(int buffer) const {
    return buffer < 0 ? 0 : out_.buffers[buffer].bytes;
  }

  /// The buffer named `name`, or -1.
  int find(const std::string &name) const {
    for (size_t i = 0; i < out_.buffers.size(); ++i)
      if (out_.buffers[i].name == name)
        return static_cast<int>(i);
    return -1;
  }

private:
  EntryPlan &out_;
};

/// Writes one KernelPlan: the fills and launches of one generated source.
class KernelPlanWriter {
public:
  KernelPlanWriter(const Program &p, BufferTable &table, std::string name,
                   std::string source)
      : arch_(p.arch), table_(table), source_(std::move(source)) {
    kp.name = std::move(name);
  }

  /// Zeroes `buffer` (counted as bytes moved).
  void fill(int buffer) {
    kp.addFill(buffer);
    kp.bytesMoved += table_.bytes(buffer);
  }

  /// The input's amax pre-pass `entry` over the `n` elements of `input`
  /// (`inputBytes`) into a new zeroed buffer `name`.tensor_amax; returns it.
  int tensorAmax(const std::string &name, const std::string &entry, int input,
                 int64_t n, uint64_t inputBytes) {
    int amax = table_.add(name + ".tensor_amax", 4);
    fill(amax);
    int64_t grid =
        std::min<int64_t>(rt::ceilDiv(rt::ceilDiv(n, 8), 4 * 256), 132 * 16);
    launch(
        entry, rt::Dim3{unsigned(std::max<int64_t>(grid, 1)), 1, 1},
        {rt::ArgDesc::ptr(input), rt::ArgDesc::i64(n), rt::ArgDesc::ptr(amax)});
    kp.bytesMoved += inputBytes;
    return amax;
  }

  /// A tile kernel `entry` over an M x K tensor of `dtype`: one CTA per
  /// 128 x 128 tile.
  rt::KernelSpec &launchTiles(const std::string &entry, int64_t m, int64_t k,
                              rt::DType dtype, std::vector<rt::ArgDesc> args) {
    int64_t tiles = rt::ceilDiv(m, int64_t(kQuantizeTileRows)) *
                    rt::ceilDiv(k, int64_t(kQuantizeTileCols));
    rt::KernelSpec &spec =
        launch(entry, rt::Dim3{unsigned(tiles), 1, 1}, std::move(args));
    spec.sharedBytes = quantizeDynamicSmem(dtype);
    return spec;
  }

  rt::KernelSpec &launch(const std::string &entry, rt::Dim3 grid,
                         std::vector<rt::ArgDesc> args) {
    rt::KernelSpec spec;
    spec.name = entry;
    spec.entry = entry;
    spec.source = source_;
    spec.options.arch = arch_;
    spec.grid = grid;
    spec.block = rt::Dim3{kQuantizeThreads, 1, 1};
    spec.args = std::move(args);
    return kp.addLaunch(std::move(spec));
  }

  KernelPlan kp;

private:
  std::string arch_;
  BufferTable &table_;
  std::string source_;
};

/// The buffers a stage writes into direction `s.dir` of quantized value
/// `value` and the one it reads (`in`).
struct StageBuffers {
  int data = -1, scale = -1, amax = -1, in = -1;
};

/// Stage `s` on value `value` (an M x K tensor): `in` is `tensorAmax` for
/// schemes scaled by the tensor amax, the scale of the stage's state for
/// delayed scaling (whose amax buffer, zeroed here, records the tensor's
/// amax for the state's update), else none; scale padding is zeroed.
StageBuffers stageBuffers(const Program &p, const Entry &e, const Stage &s,
                          int value, int tensorAmax, BufferTable &table,
                          const EntryPlan &out, KernelPlanWriter &w);

/// A sharded master quantize (te/device/ShardedQuantizeKernel.cuh): the
/// amax table zeroed, the tensor amax and shared-tile amax passes of every
/// rank, then every rank's tiles.
rt::Expected<KernelPlan> planShardedQuantize(const Program &p, const Entry &e,
                                             const ShardedQuantizeKernel &q,
                                             BufferTable &table,
                                             EntryPlan &out);

/// Whether value `value` of `e` is the output of a dequantize kernel (a GEMM
/// operand te-lower-to-kernels dequantized for the bf16 GEMM).
bool isDequantized(const Entry &e, int value);

/// A GEMM's engine for `te-run --bench`: `library` ("cuBLASLt" or
/// "generated"), and what it read where that is not the operands as
/// stored: ", dequantized operands" after dequantize kernels; for the
/// generated MXFP8 kernel ", MXFP8 operands".
std::string gemmEngine(const Entry &e, const char *library, int a, int b,
                       bool mxfp8 = false);

/// Whether direction `d` of quantized value `v`, quantized by `s`, has
/// scale entries past the logical ones (rows or columns padded for the
/// GEMM's layout), which every kernel writing it leaves to a zero fill the
/// plan runs first.
bool scalesHavePadding(const Program &p, const Value &v, const rt::Scheme &s,
                       rt::Direction d);

/// A grouped GEMM (fprop or dgrad): one persistent launch of the generated
/// Hopper kernel.
rt::Expected<KernelPlan> planGroupedGemm(const Program &p, const Entry &e,
                                         const GroupedGemmKernel &g,
                                         BufferTable &table,
                                         const EntryPlan &out);
/// An MoE layer's wgrad: the grouped quantizes into workspaces, then the
/// K-grouped GEMM.
rt::Expected<KernelPlan> planGroupedWgrad(const Program &p, const Entry &e,
                                          const GroupedWgradKernel &g,
                                          BufferTable &table,
                                          const EntryPlan &out);

/// An all-gather of row shards: NCCL all-gathers straight into the whole
/// tensor's buffers where the pieces are contiguous, else into a staging
/// buffer and an unpack launch (te/device/GatherKernel.cuh).
rt::Expected<KernelPlan> planAllGather(const Program &p, const Entry &e,
                                       const AllGatherKernel &g,
                                       BufferTable &table,
                                       const EntryPlan &out);

/// The scale and history buffers of every delayed-scaling state of `e`
/// (initially 1 and zeros), into out.states.
void addStateBuffers(const Entry &e, BufferTable &table, EntryPlan &out);
/// The scale buffer of state `state` (-1 if `out` has none).
int stateScaleBuffer(const EntryPlan &out, const std::string &state);
/// The end-of-entry update of every delayed-scaling state
/// (te/device/DelayedScaling.cuh); none when `e` has no state.
/// Unsupported when a grouped kernel's amax record is missing.
rt::Expected<std::optional<KernelPlan>>
planScalingUpdate(const Program &p, const Entry &e, const BufferTable &table,
                  const EntryPlan &out);

} // namespace te::cg::detail

#endif // TE_CODEGEN_CUDA_LIB_PLANBUILDERINTERNAL_H
