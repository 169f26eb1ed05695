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
// kernel's stages on an f32 tile); plus, when a stage scales by the tensor
// amax, the amax pre-pass over the new parameters.
//
//===----------------------------------------------------------------------===//

#ifndef TE_CODEGEN_ADAMEMITTER_H
#define TE_CODEGEN_ADAMEMITTER_H

#include "te/codegen/Program.h"

#include <string>

namespace te::cg {

/// Words of one tensor in the launch's table before its stages
/// (te::dev::kAdamWords), and per stage.
constexpr unsigned kAdamTensorWords = 10;
constexpr unsigned kAdamStageWords = 4;

struct EmittedAdam {
  std::string source;
  std::string mainEntry;
  std::string amaxEntry; ///< empty: no stage needs the tensor amax
  int amaxStage = -1;    ///< the stage whose `in` word the pre-pass fills
  /// The amax pre-pass of the transformed new parameter (an NVFP4 RHT
  /// columnwise stage), or empty; it fills stage rhtStage's `in` word.
  std::string rhtAmaxEntry;
  int rhtStage = -1;
};

/// The source of `k` for launches of at most `tensors` tensors each.
EmittedAdam emitAdam(const AdamKernel &k, const Entry &e, size_t tensors);

} // namespace te::cg

#endif // TE_CODEGEN_ADAMEMITTER_H
