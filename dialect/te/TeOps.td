//===- TeOps.td - operations of the te dialect -------------*- tablegen -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_TEOPS_TD
#define TE_DIALECT_TE_TEOPS_TD

include "dialect/te/TeTypes.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Te_QTensor : Type<CPred<"::llvm::isa<::mlir::te::QTensorType>($_self)">,
                      "quantized tensor", "::mlir::te::QTensorType">;
def Te_FloatTensor : RankedTensorOf<[F32, F16, BF16]>;
def Te_GemmOperand : AnyTypeOf<[Te_FloatTensor, Te_QTensor]>;

def Te_RecipeGroup : OpDocGroup {
  let summary = "Recipes";
  let description = "Schemes chosen by tensor role.";
}
def Te_QuantGroup : OpDocGroup {
  let summary = "Quantization and GEMMs";
  let description = "Quantize, dequantize, GEMM and bias gradient.";
}
def Te_ModuleGroup : OpDocGroup {
  let summary = "Layers and optimizer";
  let description = "Linear layers under a recipe, and the Adam step.";
}

//===----------------------------------------------------------------------===//
// Recipes
//===----------------------------------------------------------------------===//

let opDocGroup = Te_RecipeGroup in {

def Te_RecipeOp : Te_Op<"recipe", [
    Symbol, IsolatedFromAbove, NoTerminator, SingleBlock, NoRegionArguments,
    HasOnlyGraphRegion, RegionKindInterface]> {
  let summary = "a named list of rules mapping tensor roles to schemes";
  let description = [{
    A role is a (module kind, tensor kind) pair: module kinds `linear`,
    `grouped_linear`; tensor kinds `input`, `weight`, `output`,
    `grad_output`, `grad_input`; `"*"` matches any. Rules match in order
    and the first match wins. An op naming the recipe must find a rule for
    every role it quantizes.

    ```mlir
    te.recipe @mxfp8_fwd_nvfp4_bwd {
      te.rule "linear", "input"       -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>
      te.rule "linear", "grad_output" -> #te.nvfp4<rht, sr>
      te.rule "*", "*"                -> #te.identity<bf16>
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name);
  let regions = (region AnyRegion:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The scheme of the first rule matching (moduleKind, tensorKind), or a
    /// null attribute when no rule matches.
    SchemeAttrInterface lookup(::llvm::StringRef moduleKind,
                               ::llvm::StringRef tensorKind);
  }];
}

def Te_RuleOp : Te_Op<"rule", [HasParent<"RecipeOp">]> {
  let summary = "one rule of a recipe";
  let description = [{
    ```mlir
    te.recipe @deepseek {
      te.rule "linear", "weight" -> #te.fp8_block<e4m3, 128x128>
      te.rule "*", "*" -> #te.fp8_block<e4m3, 1x128>
    }
    ```
  }];
  let arguments = (ins StrAttr:$module_kind, StrAttr:$tensor_kind,
                       Te_AnySchemeAttr:$scheme);
  let assemblyFormat =
      "$module_kind `,` $tensor_kind `->` $scheme attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    bool matches(::llvm::StringRef moduleKind, ::llvm::StringRef tensorKind);
  }];
}

} // opDocGroup Te_RecipeGroup

//===----------------------------------------------------------------------===//
// Quantization and GEMMs
//===----------------------------------------------------------------------===//

let opDocGroup = Te_QuantGroup in {

def Te_QuantizeOp : Te_Op<"quantize", [Pure]> {
  let summary = "quantize a tensor into the directions of the result type";
  let description = [{
    ```mlir
    func.func @quantize(%x: tensor<4096x1024xbf16>)
        -> !te.qtensor<4096x1024xbf16, #te.mxfp8<e4m3>, rowwise|columnwise> {
      %q = te.quantize %x : tensor<4096x1024xbf16>
             -> !te.qtensor<4096x1024xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>
      return %q : !te.qtensor<4096x1024xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>
    }
    ```

    With `amax_ranks = R` the input is one row shard of a tensor split over
    R ranks along its first dimension (FSDP): the amax that per-tensor FP8
    and NVFP4 scale by, and record, is the whole tensor's, reduced over the
    ranks, so `te.all_gather` of the shards equals the quantization of the
    whole tensor bit for bit (docs/Numerics.md §16).

    A result quantized by `#te.fp8_delayed` casts with a scale taken from
    an amax history kept between calls: `scaling_state = "name"` names
    that state (required then, refused otherwise). Quantizations naming one
    state share it, as the casts of one TransformerEngine quantizer do; a
    session keeps it under that name (docs/Numerics.md §4).

    ```mlir
    func.func @quantize_delayed(%x: tensor<512x1024xbf16>)
        -> !te.qtensor<512x1024xbf16, #te.fp8_delayed<e4m3, history = 16>, rowwise> {
      %q = te.quantize %x {scaling_state = "fc1.input.delayed_scaling"}
             : tensor<512x1024xbf16>
             -> !te.qtensor<512x1024xbf16, #te.fp8_delayed<e4m3, history = 16>, rowwise>
      return %q : !te.qtensor<512x1024xbf16, #te.fp8_delayed<e4m3, history = 16>, rowwise>
    }
    ```
  }];
  let arguments = (ins Te_FloatTensor:$input,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<2>]>>:
                           $amax_ranks,
                       OptionalAttr<StrAttr>:$scaling_state);
  let results = (outs Te_QTensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` type($input) `->` qualified(type($result))";
  let hasVerifier = 1;
}

def Te_FusedQuantizeOp : Te_Op<"fused_quantize", [Pure]> {
  let summary = "every quantization of one tensor (and its bias gradient) in one pass";
  let description = [{
    Produced by `te-fuse-quantize`: one kernel reads the input once and
    writes every quantized result (any schemes, any directions) and, with
    `bias_grad`, the FP32 column sums as the last result. `scaling_states`
    holds each quantized result's delayed-scaling state (te.quantize's
    `scaling_state`; "" for none) when one has any.

    ```mlir
    func.func @fused_quantize(%dy: tensor<256x128xbf16>)
        -> (!te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>,
            !te.qtensor<256x128xbf16, #te.nvfp4<rht, sr>, columnwise>, tensor<128xf32>) {
      %row, %col, %db = te.fused_quantize %dy {bias_grad} : tensor<256x128xbf16>
          -> !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>,
             !te.qtensor<256x128xbf16, #te.nvfp4<rht, sr>, columnwise>,
             tensor<128xf32>
      return %row, %col, %db : !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>,
          !te.qtensor<256x128xbf16, #te.nvfp4<rht, sr>, columnwise>, tensor<128xf32>
    }
    ```
  }];
  let arguments = (ins Te_FloatTensor:$input, UnitAttr:$bias_grad,
                       OptionalAttr<StrArrayAttr>:$scaling_states);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($results)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The quantized results (all but a trailing bias gradient).
    ::mlir::ResultRange getQuantized();
    /// The bias gradient result, or a null value.
    ::mlir::Value getBiasGradResult();
  }];
}

def Te_DequantizeOp : Te_Op<"dequantize", [Pure]> {
  let summary = "back to high precision, reading one direction";
  let description = [{
    ```mlir
    func.func @dequantize(
        %q: !te.qtensor<4096x1024xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>)
        -> tensor<4096x1024xbf16> {
      %y = te.dequantize %q rowwise
             : !te.qtensor<4096x1024xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>
             -> tensor<4096x1024xbf16>
      return %y : tensor<4096x1024xbf16>
    }
    ```
  }];
  let arguments = (ins Te_QTensor:$input, Te_Direction:$direction);
  let results = (outs Te_FloatTensor:$result);
  let assemblyFormat = "$input $direction attr-dict `:` "
                       "qualified(type($input)) `->` type($result)";
  let hasVerifier = 1;
  // Folds a round trip through #te.identity of the tensor's own type.
  let hasFolder = 1;
}

def Te_GemmOp : Te_Op<"gemm", [Pure]> {
  let summary = "D = op(A) * op(B) [+ bias]";
  let description = [{
    `op(X)` is `X` transposed when `transpose_a` / `transpose_b` is set;
    `op(A)` is M x K and `op(B)` is K x N. An operand contracted along its
    last dimension is read rowwise, along its first dimension columnwise:
    A is read rowwise unless `transpose_a`, B columnwise unless
    `transpose_b`. A quantized operand must hold the direction read, and the
    two operands' schemes for those directions must pair. Within one
    family (per-tensor FP8, MXFP8, NVFP4, block FP8, identity) as the
    family's kernel allows: block FP8 never 128x128 with 128x128, no e5m2 x
    e5m2 FP8 GEMM. Quantized operands of two families (a hybrid recipe's
    MXFP8 weight with NVFP4 gradients, say) pair as the bf16 GEMM of their
    dequantized values; an identity operand pairs only with high precision.
    NVFP4's random Hadamard transform is read on both sides or neither.
    `te-legalize-target` records in `path` whether the target runs it with
    a native cuBLASLt kernel or emulates it.

    ```mlir
    func.func @gemm(%x: !te.qtensor<4096x1024xbf16, #te.mxfp8<e4m3>, rowwise>,
                    %w: !te.qtensor<2048x1024xbf16, #te.mxfp8<e4m3>, rowwise>,
                    %a: tensor<64x32xbf16>, %b: tensor<16x32xbf16>,
                    %bias: tensor<16xbf16>)
        -> (tensor<4096x2048xbf16>, tensor<64x16xbf16>) {
      %y = te.gemm %x, %w {transpose_b}
             : !te.qtensor<4096x1024xbf16, #te.mxfp8<e4m3>, rowwise>,
               !te.qtensor<2048x1024xbf16, #te.mxfp8<e4m3>, rowwise>
             -> tensor<4096x2048xbf16>
      %z = te.gemm %a, %b bias %bias {transpose_b}
             : tensor<64x32xbf16>, tensor<16x32xbf16>, tensor<16xbf16>
             -> tensor<64x16xbf16>
      return %y, %z : tensor<4096x2048xbf16>, tensor<64x16xbf16>
    }
    ```
  }];
  let arguments = (ins Te_GemmOperand:$a, Te_GemmOperand:$b,
                       Optional<Te_FloatTensor>:$bias,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b,
                       OptionalAttr<Te_GemmPathAttr>:$path);
  let results = (outs Te_FloatTensor:$result);
  let assemblyFormat = [{
    $a `,` $b (`bias` $bias^)? attr-dict `:` qualified(type($a)) `,`
    qualified(type($b)) (`,` type($bias)^)? `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The direction in which operand A (index 0) or B (index 1) is read.
    Direction getOperandDirection(unsigned index);
    static Direction getOperandDirection(unsigned index, bool transposeA,
                                         bool transposeB);
    /// The te.gemm rules on its types alone (shapes, bias, directions read,
    /// scheme pairing), so a pass can check a GEMM before building it.
    /// `emitError` starts each diagnostic; `bias` may be null.
    static ::llvm::LogicalResult
    verifyTypes(::llvm::function_ref<::mlir::InFlightDiagnostic()> emitError,
                ::mlir::Type a, ::mlir::Type b, ::mlir::Type bias,
                ::mlir::Type result, bool transposeA, bool transposeB);
  }];
}

def Te_GroupedGemmOp : Te_Op<"grouped_gemm", [Pure]> {
  let summary = "the M-grouped GEMM of G experts: y_g = x_g W_g^T";
  let description = [{
    `x` is [M_total, K] with its rows sorted by expert, `w` stacks the G
    experts' [N, K] weights as [G, N, K], `split_sizes` (a device
    `tensor<Gxi64>`, read at run time) holds each expert's row count. Expert
    g multiplies the `split_sizes[g]` rows after those of experts 0..g-1 by
    the transpose of its weight; rows past the sum of the split sizes are
    padding and their output rows are zeros (split sizes that are negative
    or run past M_total are clamped). Both operands are contracted along
    their last dimension, so both are read rowwise: a quantized operand must
    hold its rowwise direction, and the two rowwise schemes must pair as for
    `te.gemm`. An optional `bias` [G, N] in the result's type adds expert
    g's row to each of its rows (in fp32, before the rounding).
    `te-expand-linear` produces it from `te.grouped_linear`.

    With `weight_columnwise` it is dgrad's GEMM, `y_g = x_g W_g`: `x` is
    [M_total, N], `y` [M_total, K], and each expert's weight is contracted
    along its first dimension, so `w` is read columnwise; it takes no bias.

    With `input_scheme` and/or `weight_scheme` (per-tensor FP8, current or
    delayed scaling, or NVFP4) the operand so named is a bf16 tensor that
    the op quantizes itself, one tensor scale per expert: each expert's
    tokens or weight are scaled as their own tensors would be, which a
    te.quantize of the whole [M_total, K] or [G, N, K] tensor (one amax)
    cannot express (docs/Numerics.md §7.4). `x` is quantized rowwise, `w`
    rowwise or, with `weight_columnwise`, into its columnwise copy. Both
    per-tensor FP8: the block-scaled FP8 kernel reads the codes. Otherwise
    the BF16 kernel reads each expert's dequantized values: NVFP4 by NVFP4,
    NVFP4 by per-tensor FP8, and a GEMM that quantizes only one operand per
    expert, whose other operand then comes quantized by a scheme without a
    tensor-wide scale (block FP8 or MXFP8, dequantized first: two scheme
    families pair as their values, as for te.gemm). The quantized
    operands are private to the op, as te.grouped_wgrad's are. N and K must
    be multiples of 128 (FP8 codes); otherwise the contracted dimension a
    multiple of 64 (and N, K of 16 for an NVFP4 weight). An operand under
    `#te.fp8_delayed` names its state in `input_state` / `weight_state`:
    expert g casts with the scale of the state `<name>.expert<g>` and records
    its amax there (each expert keeps its own amax history).

    `te-legalize-target` records in `path` how it runs: `generated` (the
    GEMM engine's kernel reads the operands as stored) or `emulated`
    (quantized operands dequantized to bf16 first, then the bf16 kernel).
    MXFP8 x MXFP8 with the weight read rowwise is the one pairing where
    this is a choice: the direct kernel costs more per FLOP than the bf16
    one, dequantizing costs bytes, and the pass picks the cheaper for the
    shape.

    ```mlir
    func.func @grouped_gemm_per_expert(%x: tensor<512x256xbf16>,
                                       %w: tensor<4x128x256xbf16>,
                                       %splits: tensor<4xi64>)
        -> tensor<512x128xbf16> {
      %y = te.grouped_gemm %x, %w, %splits {
               input_scheme = #te.fp8_current<e4m3>,
               weight_scheme = #te.fp8_current<e4m3>}
             : tensor<512x256xbf16>, tensor<4x128x256xbf16>, tensor<4xi64>
               -> tensor<512x128xbf16>
      return %y : tensor<512x128xbf16>
    }
    ```

    ```mlir
    func.func @grouped_gemm(
        %x: !te.qtensor<512x256xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>,
        %w: !te.qtensor<4x128x256xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>,
        %splits: tensor<4xi64>) -> tensor<512x128xbf16> {
      %y = te.grouped_gemm %x, %w, %splits
             : !te.qtensor<512x256xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>,
               !te.qtensor<4x128x256xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>,
               tensor<4xi64> -> tensor<512x128xbf16>
      return %y : tensor<512x128xbf16>
    }
    ```
  }];
  let arguments = (ins Te_GemmOperand:$input, Te_GemmOperand:$weight,
                       AnyRankedTensor:$split_sizes,
                       Optional<Te_FloatTensor>:$bias,
                       UnitAttr:$weight_columnwise,
                       OptionalAttr<Te_AnySchemeAttr>:$input_scheme,
                       OptionalAttr<Te_AnySchemeAttr>:$weight_scheme,
                       OptionalAttr<StrAttr>:$input_state,
                       OptionalAttr<StrAttr>:$weight_state,
                       OptionalAttr<Te_GemmPathAttr>:$path);
  let results = (outs Te_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $split_sizes (`bias` $bias^)? attr-dict `:`
    qualified(type($input)) `,` qualified(type($weight)) `,`
    type($split_sizes) (`,` type($bias)^)? `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The te.grouped_gemm rules on its types alone (shapes, split sizes,
    /// the directions read, scheme pairing), for passes that check a
    /// grouped GEMM before building it and for tek.grouped_gemm. With
    /// `partnerDequantized` (tek.grouped_gemm), where one operand is
    /// quantized per expert the other is a bf16 tensor, its values.
    static ::llvm::LogicalResult
    verifyTypes(::llvm::function_ref<::mlir::InFlightDiagnostic()> emitError,
                ::mlir::Type input, ::mlir::Type weight,
                ::mlir::Type splitSizes, ::mlir::Type bias,
                ::mlir::Type result, bool weightColumnwise,
                SchemeAttrInterface inputScheme = {},
                SchemeAttrInterface weightScheme = {},
                bool partnerDequantized = false);
    /// The runtime schemes of the operands quantized per expert (x
    /// rowwise, w in the direction read), absent for an operand without
    /// one: what the GemmRules per-expert rules take.
    static std::pair<std::optional<::te::rt::Scheme>,
                     std::optional<::te::rt::Scheme>>
    perExpertSchemes(SchemeAttrInterface inputScheme,
                     SchemeAttrInterface weightScheme, bool weightColumnwise);
    /// The direction the weight is read in.
    Direction getWeightDirection() {
      return getWeightColumnwise() ? Direction::columnwise
                                   : Direction::rowwise;
    }
    /// Whether the GEMM engine's grouped kernel reads the operands as they
    /// are (the weight read in direction `weightDir`): high-precision
    /// tensors and block FP8, each on its own; MXFP8 x MXFP8 with the weight
    /// read rowwise (the fprop) and K a multiple of 128. te-lower-to-kernels dequantizes other
    /// operands to bf16 first, and those where te-legalize-target chose the
    /// `emulated` path; tek.grouped_gemm takes only what the kernel reads.
    static bool engineReads(::mlir::Type input, ::mlir::Type weight,
                            Direction weightDir);
    /// Whether both operands are MXFP8 in the directions read: the pairing
    /// where reading them directly is a choice (te-legalize-target's
    /// `path`), since the kernel is slower than the bf16 one per FLOP.
    static bool bothMxfp8(::mlir::Type input, ::mlir::Type weight,
                          Direction weightDir);
    /// Whether the engine's NVFP4 kernel can read the codes of operands
    /// this op quantizes per expert by NVFP4 (rt::groupedNvfp4CodesError
    /// on its schemes, direction and K): te-legalize-target's choice and
    /// te-lower-to-kernels' `nvfp4_codes`.
    bool nvfp4CodesReadable();
  }];
}

def Te_GroupedWgradOp : Te_Op<"grouped_wgrad", [Pure]> {
  let summary = "the wgrad of G experts: dW_g = dy_g^T x_g (and db_g)";
  let description = [{
    `grad_output` (dy, [M_total, N]) and `input` (x, [M_total, K]) are bf16
    with their rows sorted by expert as for `te.grouped_gemm`; `split_sizes`
    is the device `tensor<Gxi64>`. Each expert's weight gradient is the sum
    over its own rows, `dW` [G, N, K] in f32; with a second result, `db`
    [G, N] f32, each expert's bias gradient (the column sums of its dy
    rows). The contraction runs along the rows, so dy and x are read
    columnwise, each quantized by the columnwise direction of its scheme
    (`grad_output_scheme`, `input_scheme`; a `#te.fp8_delayed` one names its
    state in `grad_output_state` / `input_state`, one per expert as for
    te.grouped_gemm) as if each expert's rows were
    their own tensor (docs/Numerics.md §7.4): block FP8 1x128 (e4m3 or
    e5m2, not both e5m2) for both, per-tensor FP8 (current or delayed
    scaling) for both (one tensor scale per expert) - the FP8 GEMM on the
    codes -, or any other pair of identity of bf16, block FP8 1x128,
    per-tensor FP8, MXFP8 and NVFP4 (the BF16 GEMM on each expert's values
    dequantized, its rows padded to whole 32- or 16-row blocks; unlike
    te.gemm, whose operands arrive quantized, a bf16 side then pairs with a
    quantized one, as both are bf16 values by the time the GEMM reads
    them). The quantized operands are private
    to the op (a per-expert layout only this GEMM reads), which is why it
    takes the high-precision tensors. `te-expand-linear` produces it from
    `te.grouped_linear_grad`.

    ```mlir
    func.func @grouped_wgrad(%dy: tensor<512x256xbf16>, %x: tensor<512x384xbf16>,
                             %splits: tensor<4xi64>)
        -> (tensor<4x256x384xf32>, tensor<4x256xf32>) {
      %dw, %db = te.grouped_wgrad %dy, %x, %splits {
          grad_output_scheme = #te.fp8_block<e4m3, 1x128, pow2>,
          input_scheme = #te.fp8_block<e4m3, 1x128, pow2>}
          : tensor<512x256xbf16>, tensor<512x384xbf16>, tensor<4xi64>
          -> tensor<4x256x384xf32>, tensor<4x256xf32>
      return %dw, %db : tensor<4x256x384xf32>, tensor<4x256xf32>
    }
    ```
  }];
  let arguments = (ins Te_FloatTensor:$grad_output, Te_FloatTensor:$input,
                       AnyRankedTensor:$split_sizes,
                       Te_AnySchemeAttr:$grad_output_scheme,
                       Te_AnySchemeAttr:$input_scheme,
                       OptionalAttr<StrAttr>:$grad_output_state,
                       OptionalAttr<StrAttr>:$input_state);
  let results = (outs RankedTensorOf<[F32]>:$grad_weight,
                      Optional<RankedTensorOf<[F32]>>:$grad_bias);
  let assemblyFormat = [{
    $grad_output `,` $input `,` $split_sizes attr-dict `:`
    type($grad_output) `,` type($input) `,` type($split_sizes) `->`
    type($grad_weight) (`,` type($grad_bias)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The te.grouped_wgrad rules on its types and schemes alone, for
    /// passes that check it before building it and for tek.grouped_wgrad.
    static ::llvm::LogicalResult
    verifyTypes(::llvm::function_ref<::mlir::InFlightDiagnostic()> emitError,
                ::mlir::Type gradOutput, ::mlir::Type input,
                ::mlir::Type splitSizes, ::mlir::Type gradWeight,
                ::mlir::Type gradBias, SchemeAttrInterface gradOutputScheme,
                SchemeAttrInterface inputScheme);
  }];
}

def Te_BiasGradOp : Te_Op<"bias_grad", [Pure]> {
  let summary = "column sums of a gradient in FP32 (the bias gradient)";
  let description = [{
    `db[n] = sum over all rows of dy[..., n]`, accumulated in FP32. Fusible
    with the quantization of the same tensor.

    ```mlir
    func.func @bias_grad(%dy: tensor<4096x4096xbf16>) -> tensor<4096xf32> {
      %db = te.bias_grad %dy : tensor<4096x4096xbf16> -> tensor<4096xf32>
      return %db : tensor<4096xf32>
    }
    ```
  }];
  let arguments = (ins Te_FloatTensor:$input);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Te_AllGatherOp : Te_Op<"all_gather"> {
  let summary = "the whole tensor from every rank's row shard";
  let description = [{
    Each of `ranks` ranks (one process per GPU) holds rows `[r*m, (r+1)*m)`
    of a tensor; every rank receives the whole `[ranks*m, ...]` tensor. A
    quantized shard is gathered in the directions the result holds, and
    only those (a forward gathers the rowwise copy, a backward the
    columnwise one), data and scales laid into the whole tensor's layout
    (docs/Numerics.md §16): the result is bit-identical to quantizing the
    whole high-precision tensor. Scaling blocks that run down the rows must
    not cross a shard boundary, and a scheme scaled by the tensor amax
    needs its shard from `te.quantize` with `amax_ranks = ranks`. Where
    the columnwise copy is the rowwise one transposed bit for bit (FP8 block
    128x128, per-tensor FP8), a gather of both directions sends only the
    rowwise copy and derives the columnwise one on each rank - the shard
    then needs only its rowwise direction - unless `send_columnwise` asks
    to send both (to measure the difference). Every rank runs the same
    program; it lowers to NCCL all-gathers.

    ```mlir
    func.func @gather(%w: tensor<2048x4096xbf16>)
        -> !te.qtensor<4096x4096xbf16, #te.mxfp8<e4m3>, rowwise> {
      %q = te.quantize %w : tensor<2048x4096xbf16>
             -> !te.qtensor<2048x4096xbf16, #te.mxfp8<e4m3>, rowwise>
      %g = te.all_gather %q {ranks = 2}
             : !te.qtensor<2048x4096xbf16, #te.mxfp8<e4m3>, rowwise>
            -> !te.qtensor<4096x4096xbf16, #te.mxfp8<e4m3>, rowwise>
      return %g : !te.qtensor<4096x4096xbf16, #te.mxfp8<e4m3>, rowwise>
    }
    ```
  }];
  let arguments = (ins Te_GemmOperand:$input,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$ranks,
                       UnitAttr:$send_columnwise);
  let results = (outs Te_GemmOperand:$result);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input)) `->` "
                       "qualified(type($result))";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The rules on types alone (te.all_gather and tek.all_gather):
    /// shapes, element types, schemes, directions and shard boundaries.
    static ::llvm::LogicalResult
    verifyTypes(::llvm::function_ref<::mlir::InFlightDiagnostic()> emitError,
                ::mlir::Type input, ::mlir::Type result, int64_t ranks,
                bool sendColumnwise);
    /// The directions the gather reads from the shard (the result's, less
    /// a columnwise copy it derives from the rowwise one).
    static ::mlir::te::Directions shardDirections(::mlir::Type result,
                                                  bool sendColumnwise);
  }];
}

def Te_QuantizeShardsOp : Te_Op<"quantize_shards", [Pure]> {
  let summary = "quantize a tensor from its master shards, rank by rank";
  let description = [{
    A distributed optimizer splits the flattened high-precision master of a
    weight into contiguous 1-D shards at any element offsets, one per rank,
    in rank order (rank r holds the row-major elements after those of ranks
    before it). Each rank quantizes its shard straight into the whole
    tensor's quantized layout; the amaxes that span ranks (the tensor amax,
    and every scaling block a boundary splits: MXFP8 and NVFP4 blocks, FP8
    1x128 blocks and 128x128 tiles) are max-reduced over the ranks first,
    so the result is bit for bit the quantization of the concatenated
    master, in every scheme and direction (docs/Numerics.md §17). Here one
    process plays every rank. NVFP4 with the Hadamard transform columnwise
    and double quantization are refused. A `#te.fp8_delayed` direction
    names its state with `scaling_state`, as `te.quantize` does, and
    records the whole tensor's amax into it.

    With `rank_offsets`, one process runs each rank (te-run --ranks R): the
    one operand is this rank's shard, and rank r holds the elements
    [rank_offsets[r], rank_offsets[r + 1]) in the first elements of it (its
    type is the largest shard's, or more, so that every rank runs the same
    program). The amaxes are max-reduced over the ranks by an all-reduce,
    each rank writes its elements, and a second all-reduce merges the ranks'
    codes and scales, so every rank's result is the whole quantization.

    ```mlir
    func.func @quantize_shards(%s0: tensor<100000xf32>, %s1: tensor<162144xf32>)
        -> !te.qtensor<256x1024xf32, #te.mxfp8<e4m3>, rowwise|columnwise> {
      %w = te.quantize_shards %s0, %s1 : tensor<100000xf32>, tensor<162144xf32>
             -> !te.qtensor<256x1024xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
      return %w : !te.qtensor<256x1024xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
    }

    // Rank r of 2 (one process each) holds elements [o_r, o_{r+1}).
    func.func @quantize_rank_shard(%mine: tensor<162144xf32>)
        -> !te.qtensor<256x1024xf32, #te.mxfp8<e4m3>, rowwise|columnwise> {
      %w = te.quantize_shards %mine {rank_offsets = array<i64: 0, 100000, 262144>}
             : tensor<162144xf32>
             -> !te.qtensor<256x1024xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
      return %w : !te.qtensor<256x1024xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
    }
    ```
  }];
  let arguments = (ins Variadic<Te_FloatTensor>:$shards,
                       OptionalAttr<StrAttr>:$scaling_state,
                       OptionalAttr<DenseI64ArrayAttr>:$rank_offsets);
  let results = (outs Te_QTensor:$result);
  let assemblyFormat =
      "$shards attr-dict `:` type($shards) `->` qualified(type($result))";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The rules on types alone (te.quantize_shards and
    /// tek.quantize_shards_kernel): shard shapes and element types, the
    /// ranks' offsets (one process per rank when `rankOffsets` is given),
    /// and which schemes a sharded master can be quantized in.
    static ::llvm::LogicalResult
    verifyTypes(::llvm::function_ref<::mlir::InFlightDiagnostic()> emitError,
                ::mlir::TypeRange shards, ::mlir::Type result,
                std::optional<::llvm::ArrayRef<int64_t>> rankOffsets);
  }];
}

} // opDocGroup Te_QuantGroup

include "dialect/te/TeLayerOps.td"

#endif // TE_DIALECT_TE_TEOPS_TD
