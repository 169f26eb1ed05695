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
/// CTAs per SM the kernels are built to keep resident (registers capped to
/// fit), so that the grid-stride grid below runs as one wave on an H100.
constexpr unsigned kDequantizeCtasPerSm = 8;
constexpr int64_t kDequantizeMaxCtas = 132 * kDequantizeCtasPerSm;

/// The device-library decoder type, e.g.
/// "te::dev::Mxfp8Decode<te::dev::Fp8Format::E4M3, false>".
/// How a dequantize kernel walks the tensor (te::dev::DequantPath):
/// 8-element row runs of [M, K] data, shared-memory tiles of transposed
/// [K, M] data, or one element per thread for any other shape. Every path
/// is a grid-stride loop, so the grid (tek::dequantizeGrid) fits all three.
enum class DequantizePath { Rows, Tiles, Elements };
DequantizePath dequantizePath(int64_t m, int64_t k, bool dataTransposed);
const char *dequantizePathName(DequantizePath p);

std::string decoderType(const rt::Scheme &s, rt::Direction d,
                        bool dataTransposed);

/// The source of `k`; its entry point is k.name with parameters
/// (data, scale, amax, out, m, k, scaleCols).
std::string emitDequantize(const DequantizeKernel &k, const Entry &e,
                           const rt::Target &target);

} // namespace te::cg

#endif // TE_CODEGEN_DEQUANTIZEEMITTER_H
