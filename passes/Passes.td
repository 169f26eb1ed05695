//===- Passes.td - tejit graph-level passes ----------------*- tablegen -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#ifndef TE_PASSES_PASSES_TD
#define TE_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

def TeResolveRecipePass : Pass<"te-resolve-recipe", "::mlir::ModuleOp"> {
  let summary = "Give every quantized tensor of a (grouped) linear layer its scheme";
  let description = [{
    Looks up the op's recipe and records, for each role the op quantizes,
    the scheme of the first matching rule in the op's `schemes` dictionary
    (`input`, `weight` for `te.linear`; `grad_output`, `input`, `weight`
    for `te.linear_grad`). `te.grouped_linear` / `te.grouped_linear_grad`
    quantize the same roles under the module kind `grouped_linear`. A
    hybrid scheme is recorded whole: each direction keeps its own scheme.

    Before:
    ```mlir
    te.recipe @r {
      te.rule "linear", "weight" -> #te.fp8_block<e4m3, 128x128>
      te.rule "*", "*" -> #te.fp8_block<e4m3, 1x128>
    }
    %y = te.linear %x, %w {recipe = @r} : ...
    ```
    After:
    ```mlir
    %y = te.linear %x, %w {recipe = @r, schemes = {
           input = #te.fp8_block<e4m3, 1x128>,
           weight = #te.fp8_block<e4m3, 128x128>}} : ...
    ```
    A recipe without a rule for a role is an error at the op's location. A
    rule whose module kind no op of the module uses (say `grouped_linear`
    in a module of `te.linear` layers) gets a warning at the rule: it would
    otherwise be ignored silently while the layers fall through to `"*"`.

    `layer-recipes=fc1=mxfp8,fc2=nvfp4` gives the named layers (te.linear /
    te.linear_grad `layer`) another recipe of the module: their `recipe`
    becomes that symbol. A session switching a layer's recipe mid-training
    compiles the module again this way (docs/Guide.md §7.2). A layer name
    no layer has, or an entry that is not `layer=recipe`, is an error.
  }];
  let options = [
    ListOption<"layerRecipes", "layer-recipes", "std::string",
               "layer=recipe: the recipe the named layer uses instead of "
               "its own">
  ];
  let dependentDialects = ["::mlir::te::TeDialect"];
}

def TeExpandLinearPass : Pass<"te-expand-linear", "::mlir::func::FuncOp"> {
  let summary = "Linear layers -> quantizations and GEMMs, operands read in the right direction";
  let description = [{
    Needs the schemes `te-resolve-recipe` records. `te.linear`:
    fprop `y = x W^T (+ b)` reads x and W rowwise. `te.linear_grad`: dgrad
    `dx = dy W` reads dy rowwise and W columnwise; wgrad `dW = dy^T x` reads
    dy and x columnwise; with `bias`, `db = te.bias_grad(dy)`. Each operand
    is a `te.quantize` holding the directions its GEMMs read (the tensor
    itself when its role's scheme is `#te.identity` of its own type);
    `te-infer-usage` / `te-fuse-quantize` merge quantizations of one tensor
    across layers and across forward and backward. A GEMM whose operands
    do not pair (see `te.gemm`) is an error on the layer naming the GEMM.
    Inputs must be 2-D. `te.grouped_linear` becomes the quantizations of
    its tokens and stacked weight (both rowwise) and one `te.grouped_gemm`;
    each expert's part must quantize as its own tensor would, so its roles
    must be identity, block FP8 (128x128 weight tiles need N a multiple of
    128) or MXFP8 (forward; its grouped GEMM runs on dequantized operands).
    A role under a tensor-wide scheme (per-tensor FP8, NVFP4: one amax per
    expert) is not quantized here: its grouped GEMM takes the bf16 tensor
    with `input_scheme` / `weight_scheme` and quantizes it per expert,
    beside the other operand quantized here or per expert too.
    `te.grouped_linear_grad` becomes the dgrad `te.grouped_gemm
    {weight_columnwise}` (dy rowwise, the stack columnwise) and
    `te.grouped_wgrad` (dW and, with `bias`, each expert's db; it quantizes
    dy and x per expert itself); its dW must be f32.
  }];
  let dependentDialects = ["::mlir::te::TeDialect"];
}

def TeInferUsagePass : Pass<"te-infer-usage", "::mlir::ModuleOp"> {
  let summary = "Keep only the directions each quantized value's users read";
  let description = [{
    A `te.quantize` result stores the directions its type lists; each costs
    a write of the whole tensor. This pass narrows every `te.quantize`
    result to the union of what its users read:
    - `te.gemm`: the direction its transpose flags read the operand in
      (A rowwise unless `transpose_a`, B columnwise unless `transpose_b`);
    - `te.dequantize`: its direction;
    - `func.return` and any other op: every direction the type lists (a
      function result keeps what its signature says).
    A result without users is left alone (dead-code elimination removes
    it). A quantization of a *persistent parameter* - a function argument
    marked `te.persistent = "name"` - holds the union of what every
    function of the module reads of that parameter under that scheme (its
    stored quantization is shared), which can add directions: a weight
    quantized for training keeps its columnwise data in an inference-only
    function. A *persistent quantized value* - a `!te.qtensor` argument or
    result marked `te.persistent` - is stored once for the whole module:
    every declaration of the name must agree on shape, element type and
    scheme (else an error), and every declaration, and the `te.quantize`
    that writes such a result, gets the union of the directions they list,
    so an eval function cannot strip what a training function reads. With
    `report`, each change is reported as a remark.

    Before:
    ```mlir
    %q = te.quantize %x : tensor<64x128xbf16>
           -> !te.qtensor<64x128xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>
    %y = te.gemm %q, %w {transpose_b} : !te.qtensor<64x128xbf16, ...>, ...
    ```
    After: the type of `%q` lists only `rowwise`.
  }];
  let options = [
    Option<"report", "report", "bool", "false",
           "Emit a remark for every direction dropped">
  ];
  let dependentDialects = ["::mlir::te::TeDialect"];
}

def TeFuseQuantizePass : Pass<"te-fuse-quantize", "::mlir::func::FuncOp"> {
  let summary = "Read each tensor once for all its quantizations and its bias gradient";
  let description = [{
    Within each block, all `te.quantize` ops of one tensor (any schemes, any
    directions) and its `te.bias_grad` become one `te.fused_quantize` - one
    kernel that reads the input once - placed where the first of them was.
    Identical quantizations (same result type) share one result; duplicate
    bias gradients share one. A tensor with a single `te.quantize` and no
    bias gradient is left alone (it already is one kernel).

    Before:
    ```mlir
    %r = te.quantize %dy : tensor<256x128xbf16> -> !te.qtensor<..., #te.mxfp8<e4m3>, rowwise>
    %c = te.quantize %dy : tensor<256x128xbf16> -> !te.qtensor<..., #te.nvfp4<rht, sr>, columnwise>
    %db = te.bias_grad %dy : tensor<256x128xbf16> -> tensor<128xf32>
    ```
    After:
    ```mlir
    %r, %c, %db = te.fused_quantize %dy {bias_grad} : tensor<256x128xbf16>
        -> !te.qtensor<...>, !te.qtensor<...>, tensor<128xf32>
    ```
  }];
  let dependentDialects = ["::mlir::te::TeDialect"];
}

def TeFuseOptimizerPass : Pass<"te-fuse-optimizer", "::mlir::func::FuncOp"> {
  let summary = "An Adam step and the requantization of the new weight in one pass";
  let description = [{
    A `te.adam_step` whose new parameter feeds `te.quantize` /
    `te.fused_quantize` ops (no bias gradient) becomes one `te.fused_adam`
    producing the step's three results and every quantized result, so one
    kernel reads p, g, m, v once and writes p, m, v and each quantized
    output (any scheme, hybrid included, the directions the program reads).
    Other users of the new parameter read the fused op's first result.
    Runs after `te-fuse-quantize`.
  }];
  let dependentDialects = ["::mlir::te::TeDialect"];
}

def TeLegalizeTargetPass : Pass<"te-legalize-target", "::mlir::ModuleOp"> {
  let summary = "Fix what the target GPU decides: storage, legality, GEMM paths";
  let description = [{
    Records the target as the module attribute `te.target` (storage follows
    from it: on TN-only FP8 targets - sm_89, sm_90, sm_12x - the columnwise
    per-tensor FP8 data is an explicit transpose), rejects quantized tensors
    the target cannot hold (FP8 before sm_89), and records on every
    `te.gemm` how it runs (`path`):
    - high precision, identity, per-tensor FP8: a cuBLASLt kernel;
    - block-scaled FP8: cuBLASLt on sm_90 (VEC128/BLK128x128 scales exist
      only there), emulated elsewhere;
    - MXFP8, NVFP4: cuBLASLt on sm_100 and newer, emulated before
      (dequantize to bf16, then a bf16 GEMM);
    - quantized operands of two scheme families: emulated on every target
      (no kernel reads such a pair as stored).
    And on every `te.grouped_gemm` (sm_90 only): `generated` where the GEMM
    engine's kernel reads the operands as stored, `emulated` where they are
    dequantized first; MXFP8 x MXFP8 with the weight read rowwise is either,
    by a cost model on measured H100 rates unless `grouped-mxfp8` says. So
    is the fprop whose operands it quantizes per expert by NVFP4:
    `generated`, the engine's NVFP4 kernel reads their codes; `emulated`,
    the BF16 kernel reads their dequantized values (`grouped-nvfp4`).
  }];
  let options = [
    Option<"arch", "arch", "std::string", "\"sm_90a\"",
           "Target architecture (sm_XY or sm_XYa)">,
    Option<"groupedMxfp8", "grouped-mxfp8", "std::string", "\"auto\"",
           "How a grouped MXFP8 x MXFP8 GEMM reads its operands: auto (the "
           "cost model), direct (the GEMM engine's MXFP8 kernel) or "
           "dequantize (to bf16, then the bf16 kernel)">,
    Option<"groupedNvfp4", "grouped-nvfp4", "std::string", "\"auto\"",
           "How a grouped GEMM whose operands it quantizes per expert by "
           "NVFP4 reads them: auto (the cost model), direct (their codes, "
           "the GEMM engine's NVFP4 kernel) or dequantize (their bf16 "
           "values, the bf16 kernel)">
  ];
  let dependentDialects = ["::mlir::te::TeDialect"];
}

def TeLowerToKernelsPass : Pass<"te-lower-to-kernels", "::mlir::func::FuncOp"> {
  let summary = "One tek op per generated kernel: iteration space, tile, stages";
  let description = [{
    Lowers the graph-level ops that have kernels to the kernel level
    (`tek` dialect): `te.quantize`, `te.fused_quantize` and `te.bias_grad`
    become `tek.quantize_kernel` (one 128x128-tile pass over the input; one
    stage per held direction of each quantized result; `amax_prepass` when
    a stage scales by the tensor amax), `te.dequantize` becomes
    `tek.dequantize_kernel`, `te.gemm` a `tek.gemm_call` (an emulated GEMM
    first dequantizes its quantized operands), and optimizer steps with the
    same hyper-parameters, lr, step and requantization one
    `tek.adam_kernel`. A dialect conversion: te ops are illegal, tek ops
    legal. Kernels are named `te_<op>_<n>` in program order (optimizer
    groups last). Any other op of a function is a located error, never a
    silent skip.
  }];
  let dependentDialects = ["::mlir::tek::TekDialect"];
}

def TeFuseGemmEpiloguePass
    : Pass<"te-fuse-gemm-epilogue", "::mlir::func::FuncOp"> {
  let summary = "Quantize a grouped GEMM's output in its epilogue, not in a "
                "second read";
  let description = [{
    A `tek.quantize_kernel` whose only stage quantizes the result of a
    `tek.grouped_gemm` rowwise by FP8 block scaling with 1x128 blocks (the
    next MoE layer's tokens, say; no bias gradient, amax pre-pass or rank
    amaxes) becomes that GEMM's second result: the GEMM's epilogue, which
    holds each output tile in registers, writes the codes and scales a
    quantize kernel would, and the output is not read again. The GEMM still
    writes its bf16 result for its other users. Which quantizations an
    epilogue can apply is `rt::groupedEpilogueQuantizeError`'s rule (the
    tek verifier's too). Runs after `te-lower-to-kernels`.
  }];
  let dependentDialects = ["::mlir::tek::TekDialect"];
}

#endif // TE_PASSES_PASSES_TD
