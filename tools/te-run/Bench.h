//===- Bench.h - te-run --bench ---------------------------------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TOOLS_TE_RUN_BENCH_H
#define TE_TOOLS_TE_RUN_BENCH_H

#include "te/exec/CudaRunner.h"

namespace te::run {

/// Times every kernel of `runner` on its own, `runs` times each (GEMMs in
/// TFLOP/s, the others in GB/s and % of the copy ceiling), then the whole
/// entry back to back, after warming up with the whole entry. With
/// `idleMs`, the GPU idles that long before each kernel's timing (a
/// memory-bound kernel timed right after the entry's GEMMs runs up to 20 %
/// slower than rested, docs/Performance.md).
void bench(exec::CudaRunner &runner, const rt::Stream &s, int runs,
           unsigned idleMs = 0);

} // namespace te::run

#endif // TE_TOOLS_TE_RUN_BENCH_H
