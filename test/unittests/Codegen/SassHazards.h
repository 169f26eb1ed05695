//===- SassHazards.h - scanning a CUBIN's SASS for ptxas hazards -*- C++
//-*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// A check on what ptxas made of a generated kernel, for a hazard the
// bit-exact tests only catch by chance (docs/Performance.md, "Master
// shards: a reconvergence hazard"): inside a divergent region - opened by
// `BSSY Bn, L`, with some lanes already branched to its `BSYNC Bn` and
// waiting there - ptxas (CUDA 13.0), short of convergence barriers, loads
// an inner region's mask into the same Bn (`BMOV.32 Bn, Rm`) and runs
// `BSYNC Bn` on it. The waiting lanes are released with the inner region,
// so the warp runs on split: the next __syncthreads sees a divergent warp
// (compute-sanitizer synccheck) and warp-uniform registers serve two
// program counters.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TEST_CODEGEN_SASSHAZARDS_H
#define TE_TEST_CODEGEN_SASSHAZARDS_H

#include "te/codegen/Program.h"

#include <optional>
#include <string>
#include <vector>

namespace te {
namespace test {

/// `nvdisasm -c` of `cubin`, or nullopt with `why` set where no nvdisasm is
/// found ($TE_NVDISASM, PATH, $CUDA_HOME/bin, /usr/local/cuda/bin) or it
/// fails.
std::optional<std::string> disassembleCubin(const std::vector<char> &cubin,
                                            std::string &why);

/// Every "BSYNC on a reloaded barrier inside a region with waiting lanes"
/// of a disassembly (its function and address, one string each).
std::vector<std::string> reconvergenceHazards(const std::string &sass);

/// Compiles every kernel of `p`'s first entry with NVRTC and expects no
/// reconvergence hazard in any; GTEST_SKIPs where NVRTC or nvdisasm is
/// missing.
void expectNoReconvergenceHazards(const cg::Program &p);

} // namespace test
} // namespace te

#endif // TE_TEST_CODEGEN_SASSHAZARDS_H
