//===- te/codegen/DequantizeEmitter.h - CUDA for dequantize -----*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//
//
// One generated kernel per te.dequantize: an instantiation of
// te::dev::dequantizeTensor (te/device/DequantizeKernel.cuh) with the
// decoder of the direction's scheme and storage, and the output type.
//
//===----------------------------------------------------------------------===//

#ifndef TE_CODEGEN_DEQUANTIZEEMITTER_H
#define TE_CODEGEN_DEQUANTIZEEMITTER_H

#include "te/codegen/Program.h"

namespace te::cg {

constexpr unsigned kDequantizeThreads = 256;
/// Grid-stride dequantize kernels launch at most this many CTAs.
constexpr int64_t kDequantizeMaxCtas = 132 * 8;

/// The device-library decoder type, e.g.
/// "te::dev::Mxfp8Decode<te::dev::Fp8Format::E4M3, false>".
std::string decoderType(const rt::Scheme &s, rt::Direction d,
                        bool dataTransposed);

/// The source of `k`; its entry point is k.name with parameters
/// (data, scale, amax, out, m, k, scaleCols).
std::string emitDequantize(const DequantizeKernel &k, const Entry &e,
                           const rt::Target &target);

} // namespace te::cg

#endif // TE_CODEGEN_DEQUANTIZEEMITTER_H
