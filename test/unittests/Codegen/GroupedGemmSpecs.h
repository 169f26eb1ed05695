//===- GroupedGemmSpecs.h - Specs of the grouped GEMM tests -----*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The grouped GEMM kernel a test asks for, by operands and shape; shared by
// the compile tests (GroupedGemmTest.cpp) and the GPU tests
// (GroupedGemmGpuTest.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TE_TEST_UNITTESTS_CODEGEN_GROUPEDGEMMSPECS_H
#define TE_TEST_UNITTESTS_CODEGEN_GROUPEDGEMMSPECS_H

#include "te/codegen/GroupedGemmEmitter.h"

#include <cstdint>

namespace te::test {

inline cg::GroupedGemmSpec spec(cg::GroupedGemmSpec::Operands op, int64_t g,
                                int64_t n, int64_t k) {
  cg::GroupedGemmSpec s;
  s.operands = op;
  s.groups = g;
  s.n = n;
  s.k = k;
  return s;
}

} // namespace te::test

#endif // TE_TEST_UNITTESTS_CODEGEN_GROUPEDGEMMSPECS_H
