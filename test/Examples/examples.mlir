// The shipped examples parse, verify and go through the main pipeline
// (scripts/run-example.sh).
// RUN: te-opt %te_src_root/examples/hybrid_linear.mlir --te-resolve-recipe --te-infer-usage --te-fuse-quantize --canonicalize --cse | FileCheck %s --check-prefix=HYBRID
// RUN: te-opt %te_src_root/examples/deepseek_linear.mlir --te-to-cuda | FileCheck %s --check-prefix=BLOCK
// RUN: te-opt %te_src_root/examples/hybrid_linear.mlir --te-to-cuda | FileCheck %s --check-prefix=HYBRIDK
// RUN: te-opt %te_src_root/examples/delayed_fp8_linear.mlir --te-to-cuda | FileCheck %s --check-prefix=DELAYED
// RUN: te-opt %te_src_root/examples/quantize_hybrid.mlir --te-resolve-recipe --te-infer-usage --te-fuse-quantize --canonicalize | FileCheck %s --check-prefix=QUANT
// RUN: te-opt %te_src_root/examples/quantized_weight_adamw.mlir --te-to-cuda | FileCheck %s --check-prefix=QWEIGHT
// RUN: te-run %te_src_root/examples/quantized_weight_adamw.mlir --random-inputs 1 --entry init,train_step,optimizer_step,train_step | FileCheck %s --check-prefix=QSESSION
// RUN: te-opt %te_src_root/examples/moe_block_fp8.mlir --te-to-cuda | FileCheck %s --check-prefix=MOE
// RUN: te-run %te_src_root/examples/moe_block_fp8.mlir --random-inputs 1 --entry up,down,up_grad | FileCheck %s --check-prefix=MOECPU
// RUN: te-opt %te_src_root/examples/fsdp_block_fp8.mlir --te-to-cuda | FileCheck %s --check-prefix=FSDP
// RUN: te-run %te_src_root/examples/fsdp_block_fp8.mlir --ranks 2 --backend cpu --random-inputs 1 --entry forward,backward | FileCheck %s --check-prefix=FSDPCPU
// RUN: te-opt %te_src_root/examples/sharded_master_update.mlir --te-to-cuda | FileCheck %s --check-prefix=SHARDED
// RUN: te-run %te_src_root/examples/sharded_master_update.mlir --random-inputs 1 --backend cpu --steps 2 | FileCheck %s --check-prefix=SHARDEDCPU
// RUN: te-opt %te_src_root/examples/sharded_master_ranks.mlir --te-to-cuda | FileCheck %s --check-prefix=RANKS
// RUN: te-run %te_src_root/examples/sharded_master_ranks.mlir --ranks 2 --random-inputs 1 --backend cpu --steps 2 | FileCheck %s --check-prefix=RANKSCPU

// A distributed optimizer's step: the four shard updates are one
// multi-tensor launch; the weight is quantized from the four updated
// shards, in rank order.
// SHARDED-LABEL: func.func @step
// SHARDED: %[[A:.*]]:12 = tek.adam_kernel
// SHARDED: tek.quantize_shards_kernel "te_quantize_shards_0" %[[A]]#0, %[[A]]#3, %[[A]]#6, %[[A]]#9 {stages = [#tek.stage<0, rowwise>, #tek.stage<0, columnwise>]} : tensor<30000xf32>, tensor<35613xf32>, tensor<32692xf32>, tensor<32767xf32> -> !te.qtensor<256x512xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
// SHARDEDCPU: step 2: rms(result0)=
// SHARDEDCPU: result12 ({{.*}}): rowwise.data[256x512 e4m3] rowwise.scale_inv[256x16 e8m0] columnwise.data[256x512 e4m3] columnwise.scale_inv[8x512 e8m0]

// The same step with one process per rank: each updates its own piece and
// the kernel names every rank's offsets.
// RANKS-LABEL: func.func @step
// RANKS: %[[A:.*]]:3 = tek.adam_kernel
// RANKS: tek.quantize_shards_kernel "te_quantize_shards_0" %[[A]]#0 {rank_offsets = array<i64: 0, 65613, 131072>, stages = [#tek.stage<0, rowwise>, #tek.stage<0, columnwise>]} : tensor<65613xf32> -> !te.qtensor<256x512xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
// RANKSCPU: == rank 0 of 2 (exit 0) ==
// RANKSCPU: step 2: rms(result0)=
// RANKSCPU: result3 ({{.*}}): rowwise.data[256x512 e4m3] rowwise.scale_inv[256x16 e8m0] columnwise.data[256x512 e4m3] columnwise.scale_inv[8x512 e8m0]
// RANKSCPU: == rank 1 of 2 (exit 0) ==
// RANKSCPU: result3 ({{.*}}): rowwise.data[256x512 e4m3] rowwise.scale_inv[256x16 e8m0] columnwise.data[256x512 e4m3] columnwise.scale_inv[8x512 e8m0]

// The MoE experts: per projection, the tokens and the stacked weight are
// quantized rowwise and one grouped GEMM reads them with the split sizes.
// MOE-LABEL: func.func @up
// MOE: %[[X:.*]] = tek.quantize_kernel "te_quantize_0" %arg0 {{.*}} -> !te.qtensor<1024x512xbf16, #te.fp8_block<e4m3, 1x128, pow2>, rowwise>
// The persistent experts.w1 is quantized in both directions where it is
// quantized (te-infer-usage: the union of what up and up_grad read).
// MOE: %[[W:.*]] = tek.quantize_kernel "te_quantize_1" %arg1 {{.*}} -> !te.qtensor<8x256x512xbf16, #te.fp8_block<e4m3, 128x128, pow2>, rowwise|columnwise>
// MOE: tek.grouped_gemm "te_grouped_gemm_2" %[[X]], %[[W]], %arg2
// MOE-LABEL: func.func @down
// MOE: tek.grouped_gemm "te_grouped_gemm_2"
// The backward: dgrad through the stack's columnwise copy, the grouped
// wgrad on dh and x as they are.
// MOE-LABEL: func.func @up_grad
// MOE: tek.grouped_gemm "te_grouped_gemm_2" {{.*}} {weight_columnwise}
// MOE: tek.grouped_wgrad "te_grouped_wgrad_3" %arg0, %arg1, %arg3
// The CPU backend runs both entries (random split sizes: ragged, one
// expert with no tokens).
// MOECPU: call 1 up: rms(result0)=
// MOECPU: call 2 down: rms(result0)=
// MOECPU: call 3 up_grad: rms(result0)={{.*}} rms(result1)=
// MOECPU: result0 ({{.*}}): data[1024x512 bf16]

// HYBRID-LABEL: func.func @train_step
// HYBRID: te.linear {{.*}}schemes = {input = #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<rht>>, weight = #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>}
// HYBRID: te.linear_grad {{.*}}schemes = {grad_output = #te.nvfp4<rht, sr>,

// The whole step at the kernel level on sm_90: x, W, dy quantized once each
// (dy with the bias gradient); MXFP8/NVFP4 GEMMs are emulated, so each
// operand is dequantized to bf16 before a bf16 library GEMM.
// HYBRIDK-LABEL: func.func @train_step
// HYBRIDK-COUNT-2: tek.quantize_kernel "te_fused_quantize_{{[0-9]+}}" %arg{{[01]}} {amax_prepass, grid
// HYBRIDK-COUNT-2: tek.dequantize_kernel
// HYBRIDK: tek.gemm_call "te_gemm_{{[0-9]+}}" {{.*}} bias %arg2 {transpose_b}
// HYBRIDK: tek.quantize_kernel "te_fused_quantize_{{[0-9]+}}" %arg3 {amax_prepass, bias_grad
// HYBRIDK-COUNT-2: tek.dequantize_kernel
// HYBRIDK-NEXT: tek.gemm_call
// HYBRIDK-COUNT-2: tek.dequantize_kernel
// HYBRIDK-NEXT: tek.gemm_call {{.*}} {transpose_a}
// HYBRIDK-NOT: tek.
// HYBRIDK: return

// FP8 delayed scaling: native TN GEMMs, no dequantize; the persistent W is
// quantized once, holding both directions.
// DELAYED-LABEL: func.func @train_step
// DELAYED-NOT: tek.dequantize_kernel
// DELAYED: %[[X:.*]]:2 = tek.quantize_kernel {{.*}} %arg0 {{.*}}#tek.stage<0, rowwise, "fc1.input.delayed_scaling">, #tek.stage<1, columnwise, "fc1.input.delayed_scaling">]
// DELAYED: %[[W:.*]] = tek.quantize_kernel {{.*}} %arg1 {{.*}} -> !te.qtensor<1024x1024xbf16, #te.fp8_delayed<e4m3, history = 16{{.*}}>, rowwise|columnwise>
// DELAYED: tek.gemm_call {{.*}} %[[X]]#0, %[[W]] bias %arg2 {transpose_b}
// DELAYED: %[[DY:.*]]:2 = tek.quantize_kernel {{.*}} %arg3 {bias_grad
// DELAYED: tek.gemm_call {{.*}} %[[DY]]#0, %[[W]] :
// DELAYED: tek.gemm_call {{.*}} %[[DY]]#0, %[[X]]#1 {transpose_a}
// DELAYED-NOT: tek.dequantize_kernel

// FP8 block scaling: three native block-scaled GEMMs (1x128 x 128x128 for
// fprop and dgrad, 1x128 x 1x128 for wgrad), x, W and dy quantized once each.
// BLOCK-LABEL: func.func @train_step
// BLOCK-NOT: tek.dequantize_kernel
// BLOCK: %[[X:.*]]:2 = tek.quantize_kernel {{.*}} %arg0 {{.*}} -> !te.qtensor<1024x512xbf16, #te.fp8_block<e4m3, 1x128, pow2>, rowwise>, !te.qtensor<1024x512xbf16, #te.fp8_block<e4m3, 1x128, pow2>, columnwise>
// BLOCK: %[[W:.*]] = tek.quantize_kernel {{.*}} %arg1 {{.*}} -> !te.qtensor<768x512xbf16, #te.fp8_block<e4m3, 128x128, pow2>, rowwise|columnwise>
// BLOCK: tek.gemm_call {{.*}} %[[X]]#0, %[[W]] bias %arg2 {transpose_b}
// BLOCK: %[[DY:.*]]:2 = tek.quantize_kernel {{.*}} %arg3 {bias_grad
// BLOCK: tek.gemm_call {{.*}} %[[DY]]#0, %[[W]] :
// BLOCK: tek.gemm_call {{.*}} %[[DY]]#0, %[[X]]#1 {transpose_a}
// BLOCK-NOT: tek.dequantize_kernel

// One kernel reads dy once for both directions and the bias gradient.
// QUANT-LABEL: func.func @quantize_grad
// QUANT: te.fused_quantize %{{.*}} {bias_grad}
// QUANT-NOT: te.quantize
// QUANT-NOT: te.bias_grad

// A quantized primary weight: the training step reads the stored MXFP8
// weight (rowwise for fprop, columnwise for dgrad) and never quantizes it;
// the optimizer requantizes it in the fused Adam kernel.
// QWEIGHT-LABEL: func.func @train_step
// QWEIGHT-NOT: tek.quantize_kernel {{.*}} %arg2
// QWEIGHT: tek.dequantize_kernel {{.*}} %arg2 rowwise
// QWEIGHT-NOT: tek.quantize_kernel {{.*}} %arg2
// QWEIGHT: tek.dequantize_kernel {{.*}} %arg2 columnwise
// QWEIGHT: tek.gemm_call {{.*}} {transpose_a} : {{.*}} -> tensor<1024x512xf32>
// QWEIGHT-LABEL: func.func @optimizer_step
// QWEIGHT: tek.adam_kernel {{.*}} stages = [#tek.stage<0, rowwise>, #tek.stage<0, columnwise>]
// QSESSION: call 1 init:
// QSESSION: call 2 train_step: rms(result0)=
// QSESSION: call 3 optimizer_step: rms(result0)=
// QSESSION: call 4 train_step: rms(result0)=
// QSESSION: result2 ({{.*}}): data[1024x512 f32]

// The sharded weight: each rank quantizes its 384 rows rowwise only and
// gathers the forward's rowwise copy; the backward gathers the same bytes
// and derives the columnwise copy its dgrad reads.
// FSDP-LABEL: func.func @forward
// FSDP: %[[Q:.*]] = tek.quantize_kernel "te_quantize_0" %arg1 {{.*}}stages = [#tek.stage<0, rowwise>]
// FSDP: %[[W:.*]] = tek.all_gather "te_all_gather_1" %[[Q]] {ranks = 2 : i64} {{.*}} -> !te.qtensor<768x512xbf16, #te.fp8_block<e4m3, 128x128, pow2>, rowwise>
// FSDP: tek.gemm_call "te_gemm_3" %{{.*}}, %[[W]] {transpose_b}
// FSDP-LABEL: func.func @backward
// FSDP: %[[Q:.*]] = tek.quantize_kernel "te_quantize_0" %arg2 {{.*}}stages = [#tek.stage<0, rowwise>]
// FSDP: %[[W:.*]] = tek.all_gather "te_all_gather_1" %[[Q]] {ranks = 2 : i64} {{.*}} -> !te.qtensor<768x512xbf16, #te.fp8_block<e4m3, 128x128, pow2>, rowwise|columnwise>
// FSDP: tek.gemm_call "te_gemm_4" %{{.*}}, %[[W]] :
// FSDPCPU: == rank 0 of 2 (exit 0) ==
// FSDPCPU: call 2 backward: rms(result0)=
// FSDPCPU: == rank 1 of 2 (exit 0) ==
// FSDPCPU: call 2 backward: rms(result0)=
