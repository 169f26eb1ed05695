//===- TeInterfaces.td - interfaces of the te dialect ------*- tablegen -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_TEINTERFACES_TD
#define TE_DIALECT_TE_TEINTERFACES_TD

include "mlir/IR/OpBase.td"

def Te_SchemeAttrInterface : AttrInterface<"SchemeAttrInterface"> {
  let cppNamespace = "::mlir::te";
  let description = [{
    Implemented by every quantization scheme attribute. A scheme answers,
    per direction, which (non-hybrid) scheme quantizes that direction and what
    that means at run time: element and scale formats, block shape, and the
    buffers a quantized tensor of a given shape stores (docs/Guide.md).
  }];
  let methods = [
    InterfaceMethod<[{
        Returns the run-time description of the scheme that quantizes
        direction `dir` (for non-hybrid schemes, the scheme itself).
      }], "::te::rt::Scheme", "getRuntimeScheme",
      (ins "::mlir::te::Direction":$dir)>,
    InterfaceMethod<[{
        Returns the non-hybrid scheme attribute that quantizes direction
        `dir`.
      }], "::mlir::te::SchemeAttrInterface", "getDirectionScheme",
      (ins "::mlir::te::Direction":$dir), "",
      [{ return ::llvm::cast<::mlir::te::SchemeAttrInterface>($_attr); }]>
  ];
  let extraClassDeclaration = [{
    /// The block shape of direction `dir` in the original matrix; 0 means
    /// the whole extent (per-tensor scaling).
    ::te::rt::BlockShape getBlockShape(Direction dir);
    /// The stored element type of direction `dir` (f8E4M3FN, f8E5M2,
    /// f4E2M1FN, or the identity's high-precision type).
    ::mlir::Type getStorageElementType(Direction dir);
    /// The scale-inverse element type of direction `dir` (f32, f8E8M0FNU,
    /// f8E4M3FN), or a null type for identity.
    ::mlir::Type getScaleType(Direction dir);
    /// Buffers of direction `dir` for a tensor of logical `shape`.
    ::te::rt::DirectionStorage getStorage(Direction dir,
        ::llvm::ArrayRef<int64_t> shape,
        const ::te::rt::Target &target = ::te::rt::Target::sm90());
    /// True for `#te.hybrid`.
    bool isHybrid();
  }];
}

#endif // TE_DIALECT_TE_TEINTERFACES_TD
