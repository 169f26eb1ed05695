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
#include "te/formats/Launch.h"

namespace te::cg {

/// The block size and registers cap of the kernels; their grid is
/// rt::dequantizeGrid (te/formats/Launch.h).
constexpr unsigned kDequantizeThreads = unsigned(rt::kDequantizeThreads);
constexpr unsigned kDequantizeCtasPerSm = unsigned(rt::kDequantizeCtasPerSm);

/// The device-library decoder type, e.g.
/// "te::dev::Mxfp8Decode<te::dev::Fp8Format::E4M3, false>".
/// How a dequantize kernel walks the tensor (te::dev::DequantPath):
/// 8-element row runs of [M, K] data, shared-memory tiles of transposed
/// [K, M] data, or one element per thread for any other shape. Every path
/// is a grid-stride loop, so the grid (rt::dequantizeGrid) fits all three.
enum class DequantizePath { Rows, Tiles, Elements };
DequantizePath dequantizePath(int64_t m, int64_t k, bool dataTransposed);
/// The most 8-element runs the row path takes (its 32-bit run indices).
constexpr int64_t kMaxRowPathRuns = int64_t(1) << 30;
const char *dequantizePathName(DequantizePath p);

std::string decoderType(const rt::Scheme &s, rt::Direction d,
                        bool dataTransposed);

/// The source of `k`; its entry point is k.name with parameters
/// (data, scale, amax, out, m, k, scaleCols).
std::string emitDequantize(const DequantizeKernel &k, const Entry &e,
                           const rt::Target &target);

} // namespace te::cg

#endif // TE_CODEGEN_DEQUANTIZEEMITTER_H
