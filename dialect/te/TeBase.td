//===- TeBase.td - the te dialect and its base classes -----*- tablegen -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_TEBASE_TD
#define TE_DIALECT_TE_TEBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Te_Dialect : Dialect {
  let name = "te";
  let cppNamespace = "::mlir::te";
  let summary = "Low-precision training: quantization recipes, GEMMs, optimizer";
  let description = [{
    The `te` dialect states *what* a low-precision training step computes:
    quantization schemes chosen per tensor and per direction (`#te.mxfp8`,
    `#te.nvfp4`, `#te.fp8_block`, `#te.hybrid`, ...), recipes that map tensor
    roles to schemes (`te.recipe`), quantized tensor values
    (`!te.qtensor`) and graph-level operations on them (`te.quantize`,
    `te.gemm`, `te.linear`, `te.adam_step`, ...). Values have tensor
    (value) semantics; passes decide kernels, fusion and storage.

    A *direction* is the axis along which scaling blocks run and a GEMM
    contracts: `rowwise` blocks run along the last dimension, `columnwise`
    blocks along the (flattened) leading dimensions.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  // `te.persistent = "name"` on a function argument or result: a value the
  // runtime keeps between calls of the module's functions.
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    /// The argument / result attribute naming a persistent value.
    static constexpr ::llvm::StringLiteral kPersistentAttrName =
        "te.persistent";
    void registerAttributes();
    void registerTypes();
  }];
}

// Every value of a te or tek op must fit the runtime's buffers
// (mlir::te::verifyAddressable, TeTraits.h).
def Te_AddressableValues : NativeOpTrait<"AddressableValues"> {
  let cppNamespace = "::mlir::te";
}

/// Any attribute implementing SchemeAttrInterface (a scheme or a hybrid).
def Te_AnySchemeAttr : Attr<
    CPred<"::llvm::isa<::mlir::te::SchemeAttrInterface>($_self)">,
    "quantization scheme attribute"> {
  let storageType = "::mlir::te::SchemeAttrInterface";
  let returnType = "::mlir::te::SchemeAttrInterface";
  let convertFromStorage = "$_self";
}

class Te_Op<string mnemonic, list<Trait> traits = []>
    : Op<Te_Dialect, mnemonic, !listconcat([Te_AddressableValues], traits)>;

class Te_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Te_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

class Te_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Te_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

#endif // TE_DIALECT_TE_TEBASE_TD
