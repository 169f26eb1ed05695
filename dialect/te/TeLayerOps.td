//===- TeLayerOps.td - layer and optimizer ops of te ---------*- tablegen -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The module-level ops: linear layers (plain and grouped, forward and
// backward) under a recipe, and the optimizer step. Included by TeOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_TELAYEROPS_TD
#define TE_DIALECT_TE_TELAYEROPS_TD

//===----------------------------------------------------------------------===//
// Layers and optimizer
//===----------------------------------------------------------------------===//

let opDocGroup = Te_ModuleGroup in {

def Te_LinearOp : Te_Op<"linear", [
    Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "y = x W^T (+ b), quantized by a recipe";
  let description = [{
    `x` is [..., in], `W` is [out, in], `b` is [out], `y` is [..., out].
    The recipe (a `te.recipe` symbol) must have rules for the roles
    ("linear", "input") and ("linear", "weight"). `te-resolve-recipe`
    records the scheme of each role in `schemes`. `W` may be a quantized
    primary weight (`!te.qtensor`): fprop reads it rowwise as stored, so it
    must hold the rowwise direction, quantized as the weight rule says.
    `layer = "name"` names the layer: a role quantized by `#te.fp8_delayed`
    keeps its amax history under "name.role.delayed_scaling" (required
    then), shared with the `te.linear_grad` of the same name.

    ```mlir
    te.recipe @mxfp8 {
      te.rule "*", "*" -> #te.mxfp8<e4m3>
    }
    func.func @linear(%x: tensor<256x1024xbf16>, %w: tensor<512x1024xbf16>,
                      %b: tensor<512xbf16>) -> tensor<256x512xbf16> {
      %y = te.linear %x, %w bias %b {recipe = @mxfp8}
             : tensor<256x1024xbf16>, tensor<512x1024xbf16>, tensor<512xbf16>
             -> tensor<256x512xbf16>
      return %y : tensor<256x512xbf16>
    }
    // A quantized primary weight, read as stored (rowwise for fprop).
    func.func @linear_quantized_weight(%x: tensor<256x1024xbf16>,
        %w: !te.qtensor<512x1024xf32, #te.mxfp8<e4m3>, rowwise>)
        -> tensor<256x512xbf16> {
      %y = te.linear %x, %w {recipe = @mxfp8}
             : tensor<256x1024xbf16>, !te.qtensor<512x1024xf32, #te.mxfp8<e4m3>, rowwise>
             -> tensor<256x512xbf16>
      return %y : tensor<256x512xbf16>
    }
    ```
  }];
  let arguments = (ins Te_FloatTensor:$input, Te_GemmOperand:$weight,
                       Optional<Te_FloatTensor>:$bias,
                       FlatSymbolRefAttr:$recipe,
                       OptionalAttr<DictionaryAttr>:$schemes,
                       OptionalAttr<StrAttr>:$layer);
  let results = (outs Te_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`bias` $bias^)? attr-dict `:` type($input) `,`
    type($weight) (`,` type($bias)^)? `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The tensor kinds this op quantizes (roles ("linear", kind)).
    static ::llvm::ArrayRef<::llvm::StringRef> getQuantizedRoles();
  }];
}

def Te_LinearGradOp : Te_Op<"linear_grad", [
    Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "backward of te.linear: dx, dW and (with `bias`) db";
  let description = [{
    Operands in the order `dy` [..., out], `x` [..., in], `W` [out, in].
    `dx = dy W`, `dW = dy^T x` (FP32 or the weight's type), and with the
    `bias` flag `db = bias_grad(dy)` (FP32). The recipe must have rules for
    ("linear", "grad_output"), ("linear", "input") and ("linear", "weight");
    `te-resolve-recipe` records the scheme of each role in `schemes`. `W`
    may be a quantized primary weight (`!te.qtensor`): dgrad reads it
    columnwise as stored (it must hold that direction, quantized as the
    weight rule says) and `dW` has the shape of the tensor it quantizes,
    in FP32 or that tensor's element type. `layer` as for `te.linear`.

    ```mlir
    te.recipe @mxfp8 {
      te.rule "*", "*" -> #te.mxfp8<e4m3>
    }
    // Operands dy [tokens, out], x [tokens, in], W [out, in]; dW in f32 (or
    // the weight's type), db always f32.
    func.func @linear_grad(%dy: tensor<256x512xbf16>, %x: tensor<256x1024xbf16>,
                           %w: tensor<512x1024xbf16>)
        -> (tensor<256x1024xbf16>, tensor<512x1024xf32>, tensor<512xf32>) {
      %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @mxfp8, bias}
             : tensor<256x512xbf16>, tensor<256x1024xbf16>, tensor<512x1024xbf16>
             -> tensor<256x1024xbf16>, tensor<512x1024xf32>, tensor<512xf32>
      return %dx, %dw, %db
          : tensor<256x1024xbf16>, tensor<512x1024xf32>, tensor<512xf32>
    }
    ```
  }];
  let arguments = (ins Te_FloatTensor:$grad_output, Te_FloatTensor:$input,
                       Te_GemmOperand:$weight, FlatSymbolRefAttr:$recipe,
                       UnitAttr:$bias, OptionalAttr<DictionaryAttr>:$schemes,
                       OptionalAttr<StrAttr>:$layer);
  let results = (outs Te_FloatTensor:$grad_input,
                      Te_FloatTensor:$grad_weight,
                      Optional<RankedTensorOf<[F32]>>:$grad_bias);
  let assemblyFormat = [{
    $grad_output `,` $input `,` $weight attr-dict `:` type($grad_output) `,`
    type($input) `,` type($weight) `->` type(results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The tensor kinds this op quantizes (roles ("linear", kind)).
    static ::llvm::ArrayRef<::llvm::StringRef> getQuantizedRoles();
  }];
}

def Te_GroupedLinearOp : Te_Op<"grouped_linear", [
    Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "G linear layers (experts) over token groups: y_g = x_g W_g^T (+ b_g)";
  let description = [{
    A Mixture-of-Experts layer: `x` is [M_total, K], tokens sorted by
    expert; `W` stacks the G experts' weights, [G, N, K]; `split_sizes` (a
    device `tensor<Gxi64>`) holds each expert's token count, so expert g
    multiplies the `split_sizes[g]` rows that follow those of experts
    0..g-1; `b` is [G, N]; `y` is [M_total, N]. The split sizes may sum to
    less than M_total: the rows past their sum are padding and their output
    rows are zeros. Only static shapes are verified (G agrees between `W`,
    `split_sizes` and `b`; K and N as for `te.linear`); the split sizes
    themselves are run-time values. The recipe must have rules for the
    roles ("grouped_linear", "input") and ("grouped_linear", "weight");
    `te-resolve-recipe` records the scheme of each role in `schemes`. The
    weight is a tensor: a `!te.qtensor` of [G, N, K] would be quantized as
    one [G*N, K] matrix, not per expert. `te-expand-linear` lowers it into
    the rowwise quantizations of x and W and one `te.grouped_gemm`, or into
    one `te.grouped_gemm` that quantizes both per expert (per-tensor FP8,
    NVFP4). `layer = "name"` names the layer as for `te.linear`: a role
    quantized by `#te.fp8_delayed` keeps one amax history per expert, the
    state "name.role.delayed_scaling.expert<g>" of expert g (required then),
    shared with the `te.grouped_linear_grad` of the same name.

    ```mlir
    te.recipe @moe {
      te.rule "grouped_linear", "weight" -> #te.mxfp8<e4m3>
      te.rule "*", "*" -> #te.mxfp8<e4m3>
    }
    // 4 experts, 1024 -> 512 features, 256 token rows (sorted by expert).
    func.func @grouped_linear(%x: tensor<256x1024xbf16>,
                              %w: tensor<4x512x1024xbf16>,
                              %splits: tensor<4xi64>, %b: tensor<4x512xbf16>)
        -> tensor<256x512xbf16> {
      %y = te.grouped_linear %x, %w, %splits bias %b {recipe = @moe}
             : tensor<256x1024xbf16>, tensor<4x512x1024xbf16>, tensor<4xi64>,
               tensor<4x512xbf16> -> tensor<256x512xbf16>
      return %y : tensor<256x512xbf16>
    }
    ```
  }];
  // A quantized weight parses, so that the verifier can say why it is not
  // supported yet.
  let arguments = (ins Te_FloatTensor:$input, Te_GemmOperand:$weight,
                       AnyRankedTensor:$split_sizes,
                       Optional<Te_FloatTensor>:$bias,
                       FlatSymbolRefAttr:$recipe,
                       OptionalAttr<DictionaryAttr>:$schemes,
                       OptionalAttr<StrAttr>:$layer);
  let results = (outs Te_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $split_sizes (`bias` $bias^)? attr-dict `:`
    type($input) `,` type($weight) `,` type($split_sizes)
    (`,` type($bias)^)? `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The tensor kinds this op quantizes (roles ("grouped_linear", kind)).
    static ::llvm::ArrayRef<::llvm::StringRef> getQuantizedRoles();
  }];
}

def Te_GroupedLinearGradOp : Te_Op<"grouped_linear_grad", [
    Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "backward of te.grouped_linear: dx, dW and (with `bias`) db";
  let description = [{
    Operands in the order `dy` [M_total, N], `x` [M_total, K], `W`
    [G, N, K], `split_sizes` (`tensor<Gxi64>`), as `te.linear_grad` plus
    the split sizes. Per expert g over its rows: `dx_g = dy_g W_g`,
    `dW_g = dy_g^T x_g` (`dW` [G, N, K], FP32 or the weight's type), and
    with the `bias` flag `db_g = bias_grad(dy_g)` (`db` [G, N], FP32). Rows
    past the sum of the split sizes are padding: their `dx` rows are zeros
    and they add nothing to `dW` or `db`; an expert with no rows gets zero
    gradients. The recipe must have rules for ("grouped_linear",
    "grad_output"), ("grouped_linear", "input") and ("grouped_linear",
    "weight"); `te-resolve-recipe` records the scheme of each role in
    `schemes`. `te-expand-linear` lowers it into the dgrad
    `te.grouped_gemm {weight_columnwise}` and `te.grouped_wgrad`. `layer`
    as for `te.grouped_linear`.

    ```mlir
    te.recipe @moe {
      te.rule "grouped_linear", "grad_output" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.mxfp8<e5m2>>
      te.rule "*", "*" -> #te.mxfp8<e4m3>
    }
    // Operands dy [M_total, N], x [M_total, K], W [G, N, K], split sizes;
    // dW in f32 (or the weight's type), db always f32.
    func.func @grouped_linear_grad(%dy: tensor<256x512xbf16>,
                                   %x: tensor<256x1024xbf16>,
                                   %w: tensor<4x512x1024xbf16>,
                                   %splits: tensor<4xi64>)
        -> (tensor<256x1024xbf16>, tensor<4x512x1024xf32>, tensor<4x512xf32>) {
      %dx, %dw, %db = te.grouped_linear_grad %dy, %x, %w, %splits
             {recipe = @moe, bias}
             : tensor<256x512xbf16>, tensor<256x1024xbf16>,
               tensor<4x512x1024xbf16>, tensor<4xi64>
             -> tensor<256x1024xbf16>, tensor<4x512x1024xf32>, tensor<4x512xf32>
      return %dx, %dw, %db
          : tensor<256x1024xbf16>, tensor<4x512x1024xf32>, tensor<4x512xf32>
    }
    ```
  }];
  let arguments = (ins Te_FloatTensor:$grad_output, Te_FloatTensor:$input,
                       Te_GemmOperand:$weight, AnyRankedTensor:$split_sizes,
                       FlatSymbolRefAttr:$recipe, UnitAttr:$bias,
                       OptionalAttr<DictionaryAttr>:$schemes,
                       OptionalAttr<StrAttr>:$layer);
  // grad_bias is checked to be f32 by the verifier, with a clearer message.
  let results = (outs Te_FloatTensor:$grad_input,
                      Te_FloatTensor:$grad_weight,
                      Optional<Te_FloatTensor>:$grad_bias);
  let assemblyFormat = [{
    $grad_output `,` $input `,` $weight `,` $split_sizes attr-dict `:`
    type($grad_output) `,` type($input) `,` type($weight) `,`
    type($split_sizes) `->` type(results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The tensor kinds this op quantizes (roles ("grouped_linear", kind)).
    static ::llvm::ArrayRef<::llvm::StringRef> getQuantizedRoles();
  }];
}

def Te_AdamStepOp : Te_Op<"adam_step", [Pure]> {
  let summary = "one Adam/AdamW step on FP32 master weights";
  let description = [{
    Updates the FP32 parameter `p` and moments `m`, `v` from gradient `g`
    (bf16, f16 or f32). `lr` (tensor<f32>) and `step` (tensor<i64>, the
    1-based step after increment) are run-time operands, so a new learning
    rate or step never forces a recompile. Hyper-parameters default to
    `beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0,
    mode = adamw` and are always printed. The arithmetic is IEEE fp32 (no
    contraction); the unit attribute `fast_math` selects TransformerEngine's
    fast-math form instead (flush-to-zero and its fused multiply-adds,
    docs/Numerics.md §9; division and square root stay correctly rounded),
    written `{..., mode = adamw, fast_math}`.

    ```mlir
    func.func @adam_step(%p: tensor<4096x1024xf32>, %g: tensor<4096x1024xbf16>,
                         %m: tensor<4096x1024xf32>, %v: tensor<4096x1024xf32>,
                         %lr: tensor<f32>, %step: tensor<i64>)
        -> (tensor<4096x1024xf32>, tensor<4096x1024xf32>, tensor<4096x1024xf32>) {
      %p1, %m1, %v1 = te.adam_step %p, %g, %m, %v, %lr, %step
             {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.01, mode = adamw}
             : tensor<4096x1024xf32>, tensor<4096x1024xbf16>, tensor<4096x1024xf32>,
               tensor<4096x1024xf32>, tensor<f32>, tensor<i64>
             -> tensor<4096x1024xf32>, tensor<4096x1024xf32>, tensor<4096x1024xf32>
      return %p1, %m1, %v1
          : tensor<4096x1024xf32>, tensor<4096x1024xf32>, tensor<4096x1024xf32>
    }
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$param, Te_FloatTensor:$grad,
                       RankedTensorOf<[F32]>:$exp_avg,
                       RankedTensorOf<[F32]>:$exp_avg_sq,
                       0DTensorOf<[F32]>:$lr, 0DTensorOf<[I64]>:$step,
                       F32Attr:$beta1, F32Attr:$beta2, F32Attr:$eps,
                       F32Attr:$weight_decay, Te_AdamMode:$mode,
                       UnitAttr:$fast_math);
  let results = (outs RankedTensorOf<[F32]>:$new_param,
                      RankedTensorOf<[F32]>:$new_exp_avg,
                      RankedTensorOf<[F32]>:$new_exp_avg_sq);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $lr `,` $step
    custom<AdamHyperParams>($beta1, $beta2, $eps, $weight_decay, $mode,
                           $fast_math)
    attr-dict `:` type($param) `,` type($grad) `,` type($exp_avg) `,`
    type($exp_avg_sq) `,` type($lr) `,` type($step) `->` type(results)
  }];
  let hasVerifier = 1;
}

def Te_FusedAdamOp : Te_Op<"fused_adam", [Pure]> {
  let summary = "an Adam/AdamW step and the requantization of the new parameter";
  let description = [{
    Produced by `te-fuse-optimizer`: a `te.adam_step` (same operands,
    hyper-parameters and first three results) whose new FP32 parameter is
    also quantized, in the same pass over memory, into every trailing
    result (any schemes, any directions): one kernel reads p, g, m, v once
    and writes p, m, v and every quantized output.

    ```mlir
    func.func @fused_adam(%p: tensor<4096x1024xf32>, %g: tensor<4096x1024xbf16>,
                          %m: tensor<4096x1024xf32>, %v: tensor<4096x1024xf32>,
                          %lr: tensor<f32>, %step: tensor<i64>)
        -> !te.qtensor<4096x1024xf32, #te.mxfp8<e4m3>, rowwise|columnwise> {
      %p1, %m1, %v1, %q = te.fused_adam %p, %g, %m, %v, %lr, %step
             {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.01, mode = adamw}
             : tensor<4096x1024xf32>, tensor<4096x1024xbf16>, tensor<4096x1024xf32>,
               tensor<4096x1024xf32>, tensor<f32>, tensor<i64>
             -> tensor<4096x1024xf32>, tensor<4096x1024xf32>, tensor<4096x1024xf32>,
                !te.qtensor<4096x1024xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
      return %q : !te.qtensor<4096x1024xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
    }
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$param, Te_FloatTensor:$grad,
                       RankedTensorOf<[F32]>:$exp_avg,
                       RankedTensorOf<[F32]>:$exp_avg_sq,
                       0DTensorOf<[F32]>:$lr, 0DTensorOf<[I64]>:$step,
                       F32Attr:$beta1, F32Attr:$beta2, F32Attr:$eps,
                       F32Attr:$weight_decay, Te_AdamMode:$mode,
                       UnitAttr:$fast_math);
  let results = (outs RankedTensorOf<[F32]>:$new_param,
                      RankedTensorOf<[F32]>:$new_exp_avg,
                      RankedTensorOf<[F32]>:$new_exp_avg_sq,
                      Variadic<Te_QTensor>:$quantized);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $lr `,` $step
    custom<AdamHyperParams>($beta1, $beta2, $eps, $weight_decay, $mode,
                           $fast_math)
    attr-dict `:` type($param) `,` type($grad) `,` type($exp_avg) `,`
    type($exp_avg_sq) `,` type($lr) `,` type($step) `->` type(results)
  }];
  let hasVerifier = 1;
}

} // opDocGroup Te_ModuleGroup

#endif // TE_DIALECT_TE_TELAYEROPS_TD
