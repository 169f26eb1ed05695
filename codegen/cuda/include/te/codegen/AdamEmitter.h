//===- te/codegen/AdamEmitter.h - CUDA for optimizer kernels ----*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//
//
// Generates the CUDA C++ of a multi-tensor Adam kernel (AdamKernel): a
// `Hyper` struct with the compile-time hyper-parameters and an entry that
// instantiates te::dev::adamQuantizeTiles with the gradient type, the
// table size and the stage types of the requantization (the quantize
// kernel's stages on an f32 tile); plus, when a stage scales by an amax of
// the whole new parameter, the requantize kernel that follows the update
// (which produces that amax).
//
//===----------------------------------------------------------------------===//

#ifndef TE_CODEGEN_ADAMEMITTER_H
#define TE_CODEGEN_ADAMEMITTER_H

#include "te/codegen/Program.h"

#include <string>
#include <vector>

namespace te::cg {

/// Words of one tensor in the launch's table before its stages
/// (te::dev::kAdamWords), and per stage.
constexpr unsigned kAdamTensorWords = 10;
constexpr unsigned kAdamStageWords = 4;

/// Whether stage `s` of an optimizer kernel scales by an amax of the whole
/// new parameter (per-tensor current scaling, NVFP4, an RHT columnwise
/// direction), so that it is quantized by the requantize kernel after the
/// update, which produces that amax.
bool requantizedAfterUpdate(const Stage &s);

struct EmittedAdam {
  std::string source;
  std::string mainEntry;
  /// The kernel's stages in table order (indices into AdamKernel::stages):
  /// the `updateStages` the update kernel quantizes from the tile it keeps,
  /// then those the requantize kernel quantizes after it.
  std::vector<size_t> stageOrder;
  size_t updateStages = 0;
  /// The requantize kernel's entry, or empty (every stage in the update).
  std::string requantizeEntry;
  /// Table positions (in stageOrder) of the stage whose `in` word receives
  /// the new parameter's amax, and of the RHT columnwise stage's, which
  /// receives the transformed amax; -1 when none. The plan zeroes them.
  int amaxStage = -1, rhtStage = -1;
};

/// The source of `k` for launches of at most `tensors` tensors each.
EmittedAdam emitAdam(const AdamKernel &k, const Entry &e, size_t tensors);

} // namespace te::cg

#endif // TE_CODEGEN_ADAMEMITTER_H
