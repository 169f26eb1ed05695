//===- TeAttrs.td - quantization scheme attributes ---------*- tablegen -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Every scheme attribute has a hand-written parser/printer (TeAttrs.cpp)
// because its options are optional keywords in any order, and a verifier that
// delegates to the run-time scheme's validate() so the rules live in one
// place (formats/lib/Scheme.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_TEATTRS_TD
#define TE_DIALECT_TE_TEATTRS_TD

include "dialect/te/TeBase.td"
include "dialect/te/TeEnums.td"
include "dialect/te/TeInterfaces.td"

class Te_SchemeAttr<string name, string attrMnemonic,
                    list<string> overridden = []>
    : Te_Attr<name, attrMnemonic,
              [DeclareAttrInterfaceMethods<Te_SchemeAttrInterface,
                                           overridden>]> {
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def Te_Fp8CurrentAttr : Te_SchemeAttr<"Fp8Current", "fp8_current"> {
  let summary = "FP8 with per-tensor current scaling";
  let description = [{
    One FP32 scale for the whole tensor, computed from the amax of the very
    tensor being quantized: `scale = fp8_max / max(amax, eps)` (1 when amax
    is 0, Inf or NaN), optionally truncated to a power of two (`pow2`).
    Elements are `e4m3` or `e5m2`. `eps` (default 0) is an FP32 value,
    finite and in [0, 1]: a floor for a near-zero amax, not a replacement for
    an ordinary one.

    ```mlir
    #te.fp8_current<e4m3>
    #te.fp8_current<e5m2, pow2, eps = 1.0e-12>
    ```
  }];
  let parameters = (ins "::mlir::te::Fp8Format":$format,
                        "bool":$pow2,
                        APFloatParameter<"lower bound of amax (FP32)">:$eps);
  let builders = [
    AttrBuilder<(ins "::mlir::te::Fp8Format":$format,
                     CArg<"bool", "false">:$pow2,
                     CArg<"double", "0.0">:$eps), [{
      return $_get($_ctxt, format, pow2,
                   ::llvm::APFloat(static_cast<float>(eps)));
    }]>
  ];
}

def Te_Fp8DelayedAttr : Te_SchemeAttr<"Fp8Delayed", "fp8_delayed"> {
  let summary = "FP8 with per-tensor delayed scaling";
  let description = [{
    One FP32 scale for the whole tensor, taken from an amax history of
    `history` steps (`algo = max` over the window or `most_recent`),
    reduced by `2^margin`, rounded down to a power of two with `pow2`. The
    amax of the current step is recorded while casting; the state (scale
    and history) lives between calls under the name `te.quantize`'s
    `scaling_state` gives it. Defaults: `history = 1024, algo = max,
    margin = 0`, no `pow2`. Ranges:
    `history` in [1, 65536] (one FP32 window per quantized tensor),
    `margin` in [0, 32] (beyond it even an e5m2 amax quantizes to zero).

    ```mlir
    #te.fp8_delayed<e4m3, history = 1024, algo = max, margin = 0>
    #te.fp8_delayed<e5m2, history = 16, algo = most_recent>
    #te.fp8_delayed<e4m3, history = 16, algo = max, margin = 0, pow2>
    ```
  }];
  let parameters = (ins "::mlir::te::Fp8Format":$format,
                        "int64_t":$history,
                        "::mlir::te::AmaxAlgo":$algo,
                        "int64_t":$margin,
                        DefaultValuedParameter<"bool", "false">:$pow2);
  let builders = [
    AttrBuilder<(ins "::mlir::te::Fp8Format":$format), [{
      return $_get($_ctxt, format, 1024, ::mlir::te::AmaxAlgo::max, 0, false);
    }]>
  ];
}

def Te_Mxfp8Attr : Te_SchemeAttr<"Mxfp8", "mxfp8"> {
  let summary = "MXFP8: FP8 with an E8M0 scale per 32 elements";
  let description = [{
    OCP microscaling FP8: blocks of 32 consecutive elements (1x32 rowwise,
    32x1 columnwise) share a power-of-two E8M0 scale. Both directions are
    computed from the original high-precision input. The blocked dimension
    must be a multiple of 32.

    ```mlir
    #te.mxfp8<e4m3>
    #te.mxfp8<e5m2>
    ```
  }];
  let parameters = (ins "::mlir::te::Fp8Format":$format);
}

def Te_Nvfp4Attr : Te_SchemeAttr<"Nvfp4", "nvfp4"> {
  let summary = "NVFP4: E2M1 with an E4M3 scale per 16 elements and an FP32 tensor scale";
  let description = [{
    Two-level scaling: a per-tensor FP32 scale from the tensor's amax and an
    E4M3 scale per block of 16 elements. Options:
    - `rht`: a 16-point random Hadamard transform applied to the columnwise
      direction before quantizing (the wgrad operands);
    - `sr`: stochastic rounding (Philox4x32-10, counter-based);
    - `block2d`: 16x16 blocks (one scale per tile, both directions).
    The blocked dimension must be a multiple of 16.

    ```mlir
    #te.nvfp4<>
    #te.nvfp4<rht, sr, block2d>
    ```
  }];
  let parameters = (ins "bool":$rht, "bool":$sr, "bool":$block2d);
}

def Te_Fp8BlockAttr : Te_SchemeAttr<"Fp8Block", "fp8_block"> {
  let summary = "FP8 block scaling with FP32 scales per 1x128 or 128x128 tile";
  let description = [{
    DeepSeek-style block scaling: `1x128` tiles (activations, gradients;
    128x1 in the columnwise direction) or `128x128` tiles (weights). Each
    tile's scale is `fp8_max / max(amax, eps)`, optionally a power of two;
    `eps` (default 0) is an FP32 value, finite and in [0, 1]. Partial edge
    tiles use only their valid elements.

    ```mlir
    #te.fp8_block<e4m3, 1x128>
    #te.fp8_block<e4m3, 128x128, pow2, eps = 0.0>
    ```
  }];
  let parameters = (ins "::mlir::te::Fp8Format":$format,
                        "int64_t":$tileRows,
                        "int64_t":$tileCols,
                        "bool":$pow2,
                        APFloatParameter<"lower bound of amax (FP32)">:$eps);
  let builders = [
    AttrBuilder<(ins "::mlir::te::Fp8Format":$format,
                     "int64_t":$tileRows, "int64_t":$tileCols,
                     CArg<"bool", "false">:$pow2,
                     CArg<"double", "0.0">:$eps), [{
      return $_get($_ctxt, format, tileRows, tileCols, pow2,
                   ::llvm::APFloat(static_cast<float>(eps)));
    }]>
  ];
}

def Te_IdentityAttr : Te_SchemeAttr<"Identity", "identity"> {
  let summary = "no quantization: the high-precision values pass through";
  let description = [{
    The "quantized" tensor holds the input (cast to `type` when it differs);
    one buffer serves both directions and GEMMs run in that precision.

    ```mlir
    #te.identity<bf16>
    ```
  }];
  let parameters = (ins "::mlir::Type":$type);
}

def Te_HybridAttr : Te_SchemeAttr<"Hybrid", "hybrid",
                                  ["getDirectionScheme"]> {
  let summary = "one scheme per direction";
  let description = [{
    The rowwise direction is quantized by `rowwise`, the columnwise one by
    `columnwise`, each exactly as that scheme alone would. Neither may itself
    be a `#te.hybrid`. A hybrid with the same scheme twice behaves bit for
    bit like that scheme.

    `columnwise_source = rowwise_dequantized` (double quantization): the
    columnwise direction is quantized from the values the rowwise
    quantization dequantizes to, rounded to the tensor's element type,
    instead of from the tensor - so a backward GEMM sees the error the
    forward's quantization made (TransformerEngine's `columnwise_source`).
    Both schemes must quantize (neither `#te.identity`), and the rowwise
    scheme must accept the tensor's shape even where only the columnwise
    direction is held (docs/Numerics.md §11).

    ```mlir
    #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>
    #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.mxfp8<e4m3>,
               columnwise_source = rowwise_dequantized>
    ```
  }];
  let parameters = (ins "::mlir::te::SchemeAttrInterface":$rowwise,
                        "::mlir::te::SchemeAttrInterface":$columnwise,
                        DefaultValuedParameter<"bool", "false">:
                            $columnwiseFromRowwise);
  let builders = [
    AttrBuilder<(ins "::mlir::te::SchemeAttrInterface":$rowwise,
                     "::mlir::te::SchemeAttrInterface":$columnwise), [{
      return $_get($_ctxt, rowwise, columnwise, false);
    }]>
  ];
  let skipDefaultBuilders = 0;
  let extraClassDeclaration = [{
    /// The rowwise scheme whose dequantized values the columnwise direction
    /// is quantized from (columnwise_source = rowwise_dequantized), or none.
    std::optional<::te::rt::Scheme> getColumnwiseSource() const;
  }];
}

def Te_GemmPathAttr : EnumAttr<Te_Dialect, Te_GemmPath, "gemm_path"> {
  let summary = "how a te.gemm runs on the target (set by te-legalize-target)";
  let assemblyFormat = "`<` $value `>`";
}

def Te_TargetAttr : Te_Attr<"Target", "target"> {
  let summary = "the GPU architecture a module is compiled for";
  let description = [{
    Set on the module by `te-legalize-target` as `te.target`. Storage
    decisions follow from it: on TN-only FP8 targets (sm_89, sm_90, sm_12x)
    the columnwise per-tensor FP8 data is an explicit transpose.

    ```mlir
    module attributes {te.target = #te.target<"sm_90a">} {}
    ```
  }];
  let parameters = (ins StringRefParameter<"architecture, e.g. sm_90a">:$arch);
  let assemblyFormat = "`<` $arch `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Compute capability * 10 + minor (90 for sm_90a).
    int getSmVersion() const;
    /// The run-time storage facts of this target.
    ::te::rt::Target getRuntimeTarget() const;
  }];
}

#endif // TE_DIALECT_TE_TEATTRS_TD
