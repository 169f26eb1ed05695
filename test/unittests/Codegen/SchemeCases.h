//===- SchemeCases.h - The schemes every codegen test covers ---*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TEST_CODEGEN_SCHEMECASES_H
#define TE_TEST_CODEGEN_SCHEMECASES_H

#include "te/formats/Scheme.h"

#include <string>
#include <vector>

namespace te::test {

/// Every scheme kind with its options that change the generated code.
inline std::vector<rt::Scheme> allSchemes() {
  using rt::DType;
  using rt::Scheme;
  return {
      Scheme::fp8Current(DType::E4M3),
      Scheme::fp8Current(DType::E5M2, /*pow2=*/true, /*eps=*/1e-12),
      Scheme::fp8Delayed(DType::E4M3, 16),
      Scheme::mxfp8(DType::E4M3),
      Scheme::mxfp8(DType::E5M2),
      Scheme::fp8Block(DType::E4M3, 1, 128),
      Scheme::fp8Block(DType::E4M3, 128, 128, /*pow2=*/true),
      Scheme::nvfp4(),
      Scheme::nvfp4(false, /*sr=*/true),
      Scheme::nvfp4(false, false, /*block2d=*/true),
      Scheme::nvfp4(/*rht=*/true),
      Scheme::nvfp4(/*rht=*/true, /*sr=*/true),
      Scheme::nvfp4(/*rht=*/true, false, /*block2d=*/true),
      Scheme::nvfp4(/*rht=*/true, /*sr=*/true, /*block2d=*/true),
      Scheme::identity(DType::BF16),
      Scheme::identity(DType::F32),
  };
}

inline std::string schemeLabel(const rt::Scheme &s) {
  std::string n = rt::schemeKindName(s.kind);
  n += "_";
  n += rt::dtypeName(s.element);
  if (s.pow2)
    n += "_pow2";
  if (s.rht)
    n += "_rht";
  if (s.stochasticRounding)
    n += "_sr";
  if (s.block2d)
    n += "_2d";
  if (s.kind == rt::SchemeKind::Fp8Block)
    n += s.tileRows == 128 ? "_128x128" : "_1x128";
  return n;
}

} // namespace te::test

#endif // TE_TEST_CODEGEN_SCHEMECASES_H
