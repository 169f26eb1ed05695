//===- EmitterSupport.h - Spelling device-library types ---------*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR. Private to codegen/cuda/lib.
//
//===----------------------------------------------------------------------===//
//
// How the emitters spell template arguments of the device library.
//
//===----------------------------------------------------------------------===//

#ifndef TE_CODEGEN_LIB_EMITTERSUPPORT_H
#define TE_CODEGEN_LIB_EMITTERSUPPORT_H

#include "te/formats/Scheme.h"

namespace te::cg::detail {

/// te::dev::Fp8Format of an FP8 element type.
inline const char *fp8Format(rt::DType t) {
  return t == rt::DType::E5M2 ? "te::dev::Fp8Format::E5M2"
                              : "te::dev::Fp8Format::E4M3";
}

inline const char *boolText(bool b) { return b ? "true" : "false"; }

/// The device library's code of a high-precision type: 0 bf16, 1 f16,
/// 2 f32.
inline int typeCode(rt::DType t) {
  return t == rt::DType::BF16 ? 0 : t == rt::DType::F16 ? 1 : 2;
}

} // namespace te::cg::detail

#endif // TE_CODEGEN_LIB_EMITTERSUPPORT_H
