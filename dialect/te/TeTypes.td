//===- TeTypes.td - types of the te dialect ----------------*- tablegen -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_TETYPES_TD
#define TE_DIALECT_TE_TETYPES_TD

include "dialect/te/TeAttrs.td"

def Te_QTensorType : Te_Type<"QTensor", "qtensor"> {
  let summary = "a quantized tensor: logical shape, scheme, stored directions";
  let description = [{
    A value of this type is a tensor of logical `shape` and source element
    type (bf16, f16 or f32), quantized by `scheme`, whose storage exists for
    the listed directions. The scheme fixes the buffers of each direction
    (data, scale-inverse, amax; padding; transposition) - see
    docs/Guide.md. The tensor is viewed as M x K with K the last dimension
    and M the product of the others; the scheme's block rules apply to
    every listed direction. The element count must fit in int64, and the
    source tensor and every stored buffer must fit in 2^48 bytes (the
    runtime's addressable limit, `te::rt::validateSize`).

    ```mlir
    !te.qtensor<4096x1024xbf16, #te.mxfp8<e4m3>, rowwise>
    !te.qtensor<4096x1024xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>
    ```
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape,
                        "::mlir::Type":$elementType,
                        "::mlir::te::SchemeAttrInterface":$scheme,
                        "::mlir::te::Directions":$directions);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// True if storage for `dir` exists.
    bool hasDirection(Direction dir) const;
    int64_t getRank() const { return getShape().size(); }
    /// Rows of the M x K view (product of all but the last dimension).
    int64_t getRows() const;
    /// Columns of the M x K view (the last dimension).
    int64_t getCols() const { return getShape().back(); }
    /// The high-precision tensor this value quantizes (its shape and
    /// element type): what dequantizing it, or a gradient for it, yields.
    ::mlir::RankedTensorType getTensorType() const;
    /// The buffers of direction `dir` (which must be present).
    ::te::rt::DirectionStorage getStorage(Direction dir,
        const ::te::rt::Target &target = ::te::rt::Target::sm90()) const;
  }];
}

#endif // TE_DIALECT_TE_TETYPES_TD
