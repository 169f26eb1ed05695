//===- TekOps.td - the tek (kernel-level) dialect ----------*- tablegen -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TEK_TEKOPS_TD
#define TE_DIALECT_TEK_TEKOPS_TD

include "dialect/te/TeBase.td"
include "dialect/te/TeEnums.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Tek_Dialect : Dialect {
  let name = "tek";
  let cppNamespace = "::mlir::tek";
  let summary = "The kernel level: one op per generated kernel";
  let description = [{
    Produced by `te-lower-to-kernels` from the graph-level `te` dialect: each
    op is exactly one generated CUDA kernel (plus the companion launches its
    plan needs), with its iteration space (grid of tiles), tile shape, block
    size and fused stages spelled out. Values keep tensor / `!te.qtensor`
    semantics; code generation (codegen/lower) reads nothing else.
  }];
  let dependentDialects = ["::mlir::te::TeDialect"];
  let useDefaultAttributePrinterParser = 1;
}

def Tek_StageAttr : AttrDef<Tek_Dialect, "Stage"> {
  let mnemonic = "stage";
  let summary = "one output of a quantize kernel: a direction of a result";
  let description = [{
    `#tek.stage<1, columnwise>`: the kernel writes the columnwise direction
    of its quantized result 1, with the scheme that result's type holds for
    that direction. A `#te.fp8_delayed` direction names the delayed-scaling
    state it casts with and records into:
    `#tek.stage<0, rowwise, "fc1.input.delayed_scaling">`.
  }];
  let parameters = (ins "unsigned":$result, "::mlir::te::Direction":$direction,
                        StringRefParameter<"delayed-scaling state", "\"\"">:
                            $state);
  let assemblyFormat = "`<` $result `,` $direction (`,` $state^)? `>`";
}

def Tek_StageArray : TypedArrayAttrBase<Tek_StageAttr, "quantize stages">;

class Tek_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tek_Dialect, mnemonic, !listconcat([Te_AddressableValues], traits)>;

def Tek_QuantizeKernelOp : Tek_Op<"quantize_kernel", [Pure]> {
  let summary = "one fused quantize kernel: a tile pass over one tensor";
  let description = [{
    Reads `input` (the logical M x K view: M = product of the leading
    dimensions) once, tile by tile, and writes every stage (a direction of a
    quantized result) and, with `bias_grad`, the FP32 column sums as the
    last result. `grid` is the iteration space in tiles (ceil(M / tile[0]),
    ceil(K / tile[1])), one CTA of `threads` threads per tile.
    `amax_prepass`: a stage scales by the tensor amax (FP8 current scaling,
    NVFP4), so a grid-stride amax launch runs first. `amax_ranks` (from
    `te.quantize`): the input is a row shard and that amax, and the amax
    delayed scaling records, are reduced over the ranks (NCCL all-reduce).

    ```mlir
    func.func @quantize_kernel(%dy: tensor<256x128xbf16>) -> tensor<128xf32> {
      %q, %db = tek.quantize_kernel "te_fused_quantize_0" %dy {
          amax_prepass, bias_grad, grid = array<i64: 2, 1>,
          stages = [#tek.stage<0, rowwise>, #tek.stage<0, columnwise>],
          threads = 256 : i64, tile = array<i64: 128, 128>}
          : tensor<256x128xbf16>
          -> !te.qtensor<256x128xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>,
                 columnwise = #te.nvfp4<>>, rowwise|columnwise>, tensor<128xf32>
      return %db : tensor<128xf32>
    }
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, StrAttr:$kernel_name,
                       DenseI64ArrayAttr:$tile, DenseI64ArrayAttr:$grid,
                       I64Attr:$threads, Tek_StageArray:$stages,
                       UnitAttr:$bias_grad, UnitAttr:$amax_prepass,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<2>]>>:
                           $amax_ranks);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat =
      "$kernel_name $input attr-dict `:` type($input) `->` type($results)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The quantized results (all but a trailing bias gradient).
    ::mlir::ResultRange getQuantized();
    /// The bias gradient result, or a null value.
    ::mlir::Value getBiasGradResult();
  }];
}

def Tek_DequantizeKernelOp : Tek_Op<"dequantize_kernel", [Pure]> {
  let summary = "one dequantize kernel: a grid-stride pass over the elements";
  let description = [{
    Writes the logical values of one direction of `input`, rounded once to
    the result's element type; `grid` CTAs of `threads` threads stride over
    the M x K elements.

    ```mlir
    func.func @dequantize_kernel(
        %q: !te.qtensor<64x128xbf16, #te.nvfp4<>, columnwise>) -> tensor<64x128xf32> {
      %y = tek.dequantize_kernel "te_dequantize_1" %q columnwise {
          grid = array<i64: 32>, threads = 256 : i64}
          : !te.qtensor<64x128xbf16, #te.nvfp4<>, columnwise> -> tensor<64x128xf32>
      return %y : tensor<64x128xf32>
    }
    ```
  }];
  let arguments = (ins AnyType:$input, StrAttr:$kernel_name,
                       Te_Direction:$direction, DenseI64ArrayAttr:$grid,
                       I64Attr:$threads);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$kernel_name $input $direction attr-dict `:` "
                       "qualified(type($input)) `->` type($result)";
  let hasVerifier = 1;
}

def Tek_GemmCallOp : Tek_Op<"gemm_call", [Pure]> {
  let summary = "one library GEMM: D = op(A) op(B) (+ bias)";
  let description = [{
    A GEMM the target runs with a library kernel (cuBLASLt; on sm_90: high
    precision, per-tensor FP8, block FP8), with te.gemm's conventions: op(A)
    is M x K (A read rowwise unless `transpose_a`), op(B) is K x N (B read
    columnwise unless `transpose_b`). GEMMs the target cannot run natively
    (MXFP8, NVFP4 on sm_90) reach this op as high-precision operands
    produced by `tek.dequantize_kernel`: the emulation is explicit in the IR.

    ```mlir
    func.func @gemm_call(
        %x: !te.qtensor<256x128xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>,
        %w: !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>,
        %b: tensor<64xbf16>) -> tensor<256x64xbf16> {
      %y = tek.gemm_call "te_gemm_2" %x, %w bias %b {transpose_b}
          : !te.qtensor<256x128xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>,
            !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>,
            tensor<64xbf16> -> tensor<256x64xbf16>
      return %y : tensor<256x64xbf16>
    }
    ```
  }];
  let arguments = (ins AnyType:$a, AnyType:$b,
                       Optional<AnyRankedTensor>:$bias, StrAttr:$kernel_name,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $kernel_name $a `,` $b (`bias` $bias^)? attr-dict `:` qualified(type($a))
    `,` qualified(type($b)) (`,` type($bias)^)? `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The direction operand A (0) or B (1) is read in.
    ::mlir::te::Direction getOperandDirection(unsigned index);
  }];
}

def Tek_GroupedGemmOp : Tek_Op<"grouped_gemm", [Pure]> {
  let summary = "one generated grouped GEMM kernel (the GEMM engine)";
  let description = [{
    `te.grouped_gemm` as one launch of the GEMM engine's Hopper kernel
    (codegen's GroupedGemmEmitter), with the same operands and rules. The
    engine picks the tile, cluster and stage depth for the shape; split
    sizes stay on the device, so the launch needs no host synchronisation.
    With `input_scheme` and/or `weight_scheme` the plan first quantizes
    those bf16 operands per expert (te.grouped_gemm's rule): both per-tensor
    FP8 to codes for the block-scaled kernel; NVFP4 x NVFP4 with
    `nvfp4_codes` (te-legalize-target's `generated` path) to packed codes
    and block scales for the engine's NVFP4 kernel (the fprop, K a multiple
    of 64); every other case to each expert's dequantized bf16 values for
    the BF16 kernel, beside an operand that te-lower-to-kernels dequantized. With a second result
    (`te-fuse-gemm-epilogue`), the epilogue also quantizes the bf16 result
    rowwise by FP8 block scaling with 1x128 blocks, the codes and scales a
    `tek.quantize_kernel` over the result would write
    (`rt::groupedEpilogueQuantizeError`).

    ```mlir
    func.func @grouped_gemm(%x: tensor<512x256xbf16>,
                            %w: tensor<4x128x256xbf16>,
                            %splits: tensor<4xi64>) -> tensor<512x128xbf16> {
      %y = tek.grouped_gemm "te_grouped_gemm_0" %x, %w, %splits
             : tensor<512x256xbf16>, tensor<4x128x256xbf16>, tensor<4xi64>
               -> tensor<512x128xbf16>
      return %y : tensor<512x128xbf16>
    }
    ```
  }];
  let arguments = (ins AnyType:$input, AnyType:$weight,
                       AnyRankedTensor:$split_sizes,
                       Optional<AnyRankedTensor>:$bias, StrAttr:$kernel_name,
                       UnitAttr:$weight_columnwise,
                       OptionalAttr<Te_AnySchemeAttr>:$input_scheme,
                       OptionalAttr<Te_AnySchemeAttr>:$weight_scheme,
                       OptionalAttr<StrAttr>:$input_state,
                       OptionalAttr<StrAttr>:$weight_state,
                       UnitAttr:$nvfp4_codes);
  let results = (outs AnyRankedTensor:$result,
                      Optional<AnyType>:$quantized_result);
  let assemblyFormat = [{
    $kernel_name $input `,` $weight `,` $split_sizes (`bias` $bias^)?
    attr-dict `:` qualified(type($input)) `,` qualified(type($weight)) `,`
    type($split_sizes) (`,` type($bias)^)? `->` type($result)
    (`,` qualified(type($quantized_result))^)?
  }];
  let hasVerifier = 1;
}

def Tek_AllGatherOp : Tek_Op<"all_gather"> {
  let summary = "NCCL all-gathers of a row shard's buffers, unpacked";
  let description = [{
    `te.all_gather` as the runtime runs it: one NCCL all-gather per storage
    buffer of the gathered directions, straight into the whole tensor's
    buffer where every rank's piece is contiguous, else into a staging
    buffer that one launch lays out (docs/Numerics.md §16); a columnwise
    copy derived from the rowwise one is a transpose launch after the
    gathers. Same operand, attributes and rules as `te.all_gather`.

    ```mlir
    func.func @all_gather(%w: tensor<128x256xbf16>) -> tensor<256x256xbf16> {
      %g = tek.all_gather "te_all_gather_0" %w {ranks = 2 : i64}
          : tensor<128x256xbf16> -> tensor<256x256xbf16>
      return %g : tensor<256x256xbf16>
    }
    ```
  }];
  let arguments = (ins AnyType:$input, StrAttr:$kernel_name,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$ranks,
                       UnitAttr:$send_columnwise);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$kernel_name $input attr-dict `:` "
                       "qualified(type($input)) `->` qualified(type($result))";
  let hasVerifier = 1;
}

def Tek_QuantizeShardsKernelOp : Tek_Op<"quantize_shards_kernel", [Pure]> {
  let summary = "every rank's tiles of a tensor quantized from master shards";
  let description = [{
    `te.quantize_shards` as the runtime runs it, every rank in one process
    (te/device/ShardedQuantizeKernel.cuh): the amax table zeroed; one launch
    max-accumulating each rank's tensor amax (where a direction scales by
    it) and one the amaxes of the tiles ranks share into it - the
    reduction over ranks; then one launch over every rank's tiles writing
    each direction of the result its `stages` name (as
    `tek.quantize_kernel`'s, naming a `#te.fp8_delayed` direction's state).
    Same operands and rules as `te.quantize_shards`. With `rank_offsets`
    each process runs its own rank: its result buffers zeroed, the amax
    table all-reduced (max) between the amax launches and the tiles, then
    the codes (sum of bytes: each is written by one rank, an FP4 byte's
    nibbles by at most two) and the scales (max of bytes: every rank that
    writes one writes the same) all-reduced into the whole quantization.

    ```mlir
    func.func @quantize_shards_kernel(%s0: tensor<1000xf32>, %s1: tensor<15384xf32>)
        -> !te.qtensor<128x128xf32, #te.nvfp4<>, rowwise> {
      %w = tek.quantize_shards_kernel "te_quantize_shards_0" %s0, %s1
          {stages = [#tek.stage<0, rowwise>]}
          : tensor<1000xf32>, tensor<15384xf32>
          -> !te.qtensor<128x128xf32, #te.nvfp4<>, rowwise>
      return %w : !te.qtensor<128x128xf32, #te.nvfp4<>, rowwise>
    }
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$shards,
                       StrAttr:$kernel_name, Tek_StageArray:$stages,
                       OptionalAttr<DenseI64ArrayAttr>:$rank_offsets);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$kernel_name $shards attr-dict `:` type($shards) `->` "
                       "qualified(type($result))";
  let hasVerifier = 1;
}

def Tek_GroupedWgradOp : Tek_Op<"grouped_wgrad", [Pure]> {
  let summary = "the grouped wgrad: per-expert quantize launches, one GEMM";
  let description = [{
    `te.grouped_wgrad` as the GEMM engine runs it: dy (with each expert's
    bias gradient) and x quantized columnwise per expert into a private
    grouped layout, then one launch of the K-grouped Hopper GEMM. Same
    operands, attributes and rules as `te.grouped_wgrad`.

    ```mlir
    func.func @grouped_wgrad(%dy: tensor<512x256xbf16>, %x: tensor<512x384xbf16>,
                             %splits: tensor<4xi64>) -> tensor<4x256x384xf32> {
      %dw = tek.grouped_wgrad "te_grouped_wgrad_0" %dy, %x, %splits {
          grad_output_scheme = #te.identity<bf16>,
          input_scheme = #te.identity<bf16>}
          : tensor<512x256xbf16>, tensor<512x384xbf16>, tensor<4xi64>
          -> tensor<4x256x384xf32>
      return %dw : tensor<4x256x384xf32>
    }
    ```
  }];
  let arguments = (ins AnyRankedTensor:$grad_output, AnyRankedTensor:$input,
                       AnyRankedTensor:$split_sizes, StrAttr:$kernel_name,
                       Te_AnySchemeAttr:$grad_output_scheme,
                       Te_AnySchemeAttr:$input_scheme,
                       OptionalAttr<StrAttr>:$grad_output_state,
                       OptionalAttr<StrAttr>:$input_state);
  let results = (outs AnyRankedTensor:$grad_weight,
                      Optional<AnyRankedTensor>:$grad_bias);
  let assemblyFormat = [{
    $kernel_name $grad_output `,` $input `,` $split_sizes attr-dict `:`
    type($grad_output) `,` type($input) `,` type($split_sizes) `->`
    type($grad_weight) (`,` type($grad_bias)^)?
  }];
  let hasVerifier = 1;
}

def Tek_AdamKernelOp : Tek_Op<"adam_kernel", [Pure]> {
  let summary = "one multi-tensor Adam/AdamW kernel, requantizing each update";
  let description = [{
    Updates N parameters in one launch: `tensors` holds (param, grad,
    exp_avg, exp_avg_sq) of each, in order; the results hold, per
    parameter, (new_param, new_exp_avg, new_exp_avg_sq) and then its `Q`
    quantized results (Q = results / N - 3, the same for every parameter).
    Every parameter shares the hyper-parameters, `lr` and `step` (run-time
    scalars, so a captured graph replays with new values) and the stages:
    `#tek.stage<r, dir>` writes direction `dir` of quantized result `r` of
    each parameter from its new value. One CTA of `threads` threads per
    `tile` of every parameter: `grid` is the total tile count.
    `requantize_after`: a stage scales by an amax of the whole new
    parameter (per-tensor current scaling, NVFP4), so it cannot cast before
    every tile is updated: the update launch produces that amax as it writes
    each new parameter, and a second launch quantizes those stages from the
    new parameter (the other stages are quantized in the update).

    ```mlir
    func.func @adam_kernel(%lr: tensor<f32>, %step: tensor<i64>,
        %p: tensor<256x64xf32>, %g: tensor<256x64xbf16>,
        %m: tensor<256x64xf32>, %v: tensor<256x64xf32>,
        %pb: tensor<32x64xf32>, %gb: tensor<32x64xbf16>,
        %mb: tensor<32x64xf32>, %vb: tensor<32x64xf32>) {
      %p1, %m1, %v1, %q1, %p2, %m2, %v2, %q2 = tek.adam_kernel "te_adam_0"
          %lr, %step, (%p, %g, %m, %v, %pb, %gb, %mb, %vb) {
          beta1 = 0.9 : f32, beta2 = 0.999 : f32, eps = 1.0e-8 : f32,
          weight_decay = 0.01 : f32, mode = 1 : i32, grid = 3 : i64,
          stages = [#tek.stage<0, rowwise>],
          threads = 256 : i64, tile = array<i64: 128, 128>}
          : tensor<f32>, tensor<i64>,
            (tensor<256x64xf32>, tensor<256x64xbf16>, tensor<256x64xf32>,
             tensor<256x64xf32>, tensor<32x64xf32>, tensor<32x64xbf16>,
             tensor<32x64xf32>, tensor<32x64xf32>)
          -> (tensor<256x64xf32>, tensor<256x64xf32>, tensor<256x64xf32>,
              !te.qtensor<256x64xf32, #te.mxfp8<e4m3>, rowwise>,
              tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>,
              !te.qtensor<32x64xf32, #te.mxfp8<e4m3>, rowwise>)
      return
    }
    ```
  }];
  let arguments = (ins 0DTensorOf<[F32]>:$lr, 0DTensorOf<[I64]>:$step,
                       Variadic<AnyRankedTensor>:$tensors,
                       StrAttr:$kernel_name, F32Attr:$beta1, F32Attr:$beta2,
                       F32Attr:$eps, F32Attr:$weight_decay,
                       Te_AdamMode:$mode, UnitAttr:$fast_math,
                       DenseI64ArrayAttr:$tile, I64Attr:$grid,
                       I64Attr:$threads, Tek_StageArray:$stages,
                       UnitAttr:$requantize_after);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = [{
    $kernel_name $lr `,` $step `,` `(` $tensors `)` attr-dict `:`
    type($lr) `,` type($step) `,` `(` type($tensors) `)` `->`
    `(` type($results) `)`
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Parameters updated (operands / 4).
    unsigned getNumParams() { return getTensors().size() / 4; }
    /// Quantized results per parameter.
    unsigned getNumQuantizedPerParam() {
      return getNumParams() ? getResults().size() / getNumParams() - 3 : 0;
    }
  }];
}

#endif // TE_DIALECT_TEK_TEKOPS_TD
