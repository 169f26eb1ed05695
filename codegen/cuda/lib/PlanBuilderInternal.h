//===- PlanBuilderInternal.h - What the plan builder's files share -*- C++
//-*-===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//
//
// PlanBuilder.cpp plans the quantize, dequantize, library-GEMM and Adam
// kernels; PlanGrouped.cpp the GEMM engine's grouped kernels. Both write
// into one entry's buffer table.
//
//===----------------------------------------------------------------------===//

#ifndef TE_CODEGEN_CUDA_LIB_PLANBUILDERINTERNAL_H
#define TE_CODEGEN_CUDA_LIB_PLANBUILDERINTERNAL_H

#include "te/codegen/PlanBuilder.h"

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

private:
  EntryPlan &out_;
};

/// A grouped GEMM (fprop or dgrad): one persistent launch of the generated
/// Hopper kernel.
rt::Expected<KernelPlan> planGroupedGemm(const Program &p, const Entry &e,
                                         const GroupedGemmKernel &g,
                                         const BufferTable &table,
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
std::optional<KernelPlan> planScalingUpdate(const Program &p, const Entry &e,
                                            const BufferTable &table,
                                            const EntryPlan &out);

} // namespace te::cg::detail

#endif // TE_CODEGEN_CUDA_LIB_PLANBUILDERINTERNAL_H
