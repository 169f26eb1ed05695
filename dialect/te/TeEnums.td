//===- TeEnums.td - enumerations of the te dialect ---------*- tablegen -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_TEENUMS_TD
#define TE_DIALECT_TE_TEENUMS_TD

include "mlir/IR/EnumAttr.td"

def Te_Fp8Format : I32EnumAttr<"Fp8Format", "FP8 element format", [
    I32EnumAttrCase<"e4m3", 0>, // 4 exponent bits, 3 mantissa bits, no Inf
    I32EnumAttrCase<"e5m2", 1>  // 5 exponent bits, 2 mantissa bits
  ]> {
  let cppNamespace = "::mlir::te";
  let genSpecializedAttr = 0;
}

def Te_AmaxAlgo : I32EnumAttr<"AmaxAlgo",
    "how delayed scaling reduces its amax history", [
    I32EnumAttrCase<"max", 0>,
    I32EnumAttrCase<"most_recent", 1>
  ]> {
  let cppNamespace = "::mlir::te";
  let genSpecializedAttr = 0;
}

def Te_Direction : I32EnumAttr<"Direction",
    "one direction of a quantized tensor", [
    I32EnumAttrCase<"rowwise", 1>,
    I32EnumAttrCase<"columnwise", 2>
  ]> {
  let cppNamespace = "::mlir::te";
}

def Te_Directions : I32BitEnumAttr<"Directions",
    "the set of directions whose storage a quantized tensor holds", [
    I32BitEnumAttrCaseNone<"none">,
    I32BitEnumAttrCaseBit<"rowwise", 0>,
    I32BitEnumAttrCaseBit<"columnwise", 1>
  ]> {
  let cppNamespace = "::mlir::te";
  let separator = "|";
  let genSpecializedAttr = 0;
}

def Te_AdamMode : I32EnumAttr<"AdamMode", "weight decay flavour of Adam", [
    I32EnumAttrCase<"adam", 0>,  // L2: weight decay added to the gradient
    I32EnumAttrCase<"adamw", 1>  // decoupled weight decay (AdamW)
  ]> {
  let cppNamespace = "::mlir::te";
}

def Te_GemmPath : I32EnumAttr<"GemmPath",
    "how a te.gemm runs on the target", [
    I32EnumAttrCase<"cublaslt", 0>,  // a native cuBLASLt kernel
    I32EnumAttrCase<"emulated", 1>,  // dequantize to bf16, then a bf16 GEMM
    I32EnumAttrCase<"generated", 2>  // the GEMM engine's kernel reads the
                                     // operands as stored
  ]> {
  let cppNamespace = "::mlir::te";
  let genSpecializedAttr = 0;
}

#endif // TE_DIALECT_TE_TEENUMS_TD
