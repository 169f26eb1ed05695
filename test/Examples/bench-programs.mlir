// The shipped benchmark programs (bench/*.mlir, which docs/Performance.md
// measures and scripts/gpu-run.sh runs) parse, verify and lower to their
// kernels: each function's kernels, in order.

// RUN: te-opt %te_src_root/bench/dequantize_8192.mlir --te-to-cuda | FileCheck %s --check-prefix=DEQ
// RUN: te-opt %te_src_root/bench/double_quantize_16384x8192.mlir --te-to-cuda | FileCheck %s --check-prefix=DOUBLEQ
// RUN: te-opt %te_src_root/bench/linear_block_fp8_8192.mlir --te-to-cuda | FileCheck %s --check-prefix=LINBLOCK
// RUN: te-opt %te_src_root/bench/linear_recipes_8192.mlir --te-to-cuda | FileCheck %s --check-prefix=RECIPES
// RUN: te-opt %te_src_root/bench/moe_block_fp8_32768.mlir --te-to-cuda | FileCheck %s --check-prefix=MOE
// RUN: te-opt %te_src_root/bench/moe_dgrad_block_fp8_32768.mlir --te-to-cuda | FileCheck %s --check-prefix=MOEDGRAD
// RUN: te-opt %te_src_root/bench/moe_fp8_current_32768.mlir --te-to-cuda | FileCheck %s --check-prefix=MOECURRENT
// RUN: te-opt %te_src_root/bench/moe_grouped_bf16_32768.mlir --te-to-cuda | FileCheck %s --check-prefix=MOEBF16
// RUN: te-opt %te_src_root/bench/moe_nvfp4_fprop_8192.mlir --te-to-cuda | FileCheck %s --check-prefix=MOENVFP4
// RUN: te-opt %te_src_root/bench/moe_tensor_wide_mixed_32768.mlir --te-to-cuda | FileCheck %s --check-prefix=MOEMIXED
// RUN: te-opt %te_src_root/bench/quantize_16384x8192.mlir --te-to-cuda | FileCheck %s --check-prefix=QBF16
// RUN: te-opt %te_src_root/bench/quantize_f32_8192.mlir --te-to-cuda | FileCheck %s --check-prefix=QF32
// RUN: te-opt %te_src_root/bench/quantize_rank_shards_8192.mlir --te-to-cuda | FileCheck %s --check-prefix=RANKSHARDS

// DEQ-LABEL: func.func @dequantize(
// DEQ: tek.quantize_kernel "te_fused_quantize_0"
// DEQ: tek.dequantize_kernel "te_dequantize_1"
// DEQ: tek.dequantize_kernel "te_dequantize_2"
// DEQ: tek.dequantize_kernel "te_dequantize_3"
// DEQ: tek.dequantize_kernel "te_dequantize_4"
// DEQ: tek.dequantize_kernel "te_dequantize_5"
// DEQ: tek.dequantize_kernel "te_dequantize_6"
// DEQ: tek.dequantize_kernel "te_dequantize_7"
// DEQ: tek.dequantize_kernel "te_dequantize_8"

// DOUBLEQ-LABEL: func.func @plain_mxfp8_mxfp8(
// DOUBLEQ: tek.quantize_kernel "te_quantize_0"
// DOUBLEQ-LABEL: func.func @doubled_mxfp8_mxfp8(
// DOUBLEQ: tek.quantize_kernel "te_quantize_0"
// DOUBLEQ-LABEL: func.func @plain_nvfp4_mxfp8(
// DOUBLEQ: tek.quantize_kernel "te_quantize_0"
// DOUBLEQ-LABEL: func.func @doubled_nvfp4_mxfp8(
// DOUBLEQ: tek.quantize_kernel "te_quantize_0"
// DOUBLEQ-LABEL: func.func @plain_mxfp8_nvfp4(
// DOUBLEQ: tek.quantize_kernel "te_quantize_0"
// DOUBLEQ-LABEL: func.func @doubled_mxfp8_nvfp4(
// DOUBLEQ: tek.quantize_kernel "te_quantize_0"

// LINBLOCK-LABEL: func.func @train_step(
// LINBLOCK: tek.quantize_kernel "te_fused_quantize_0"
// LINBLOCK: tek.quantize_kernel "te_fused_quantize_1"
// LINBLOCK: tek.gemm_call "te_gemm_2"
// LINBLOCK: tek.quantize_kernel "te_fused_quantize_3"
// LINBLOCK: tek.gemm_call "te_gemm_4"
// LINBLOCK: tek.gemm_call "te_gemm_5"

// RECIPES-LABEL: func.func @bf16(
// RECIPES: tek.gemm_call "te_gemm_0"
// RECIPES: tek.gemm_call "te_gemm_1"
// RECIPES: tek.gemm_call "te_gemm_2"
// RECIPES: tek.quantize_kernel "te_bias_grad_3"
// RECIPES-LABEL: func.func @fp8_block(
// RECIPES: tek.quantize_kernel "te_fused_quantize_0"
// RECIPES: tek.quantize_kernel "te_fused_quantize_1"
// RECIPES: tek.gemm_call "te_gemm_2"
// RECIPES: tek.quantize_kernel "te_fused_quantize_3"
// RECIPES: tek.gemm_call "te_gemm_4"
// RECIPES: tek.gemm_call "te_gemm_5"
// RECIPES-LABEL: func.func @mxfp8(
// RECIPES: tek.quantize_kernel "te_fused_quantize_0"
// RECIPES: tek.quantize_kernel "te_fused_quantize_1"
// RECIPES: tek.dequantize_kernel "te_dequantize_2"
// RECIPES: tek.dequantize_kernel "te_dequantize_3"
// RECIPES: tek.gemm_call "te_gemm_4"
// RECIPES: tek.quantize_kernel "te_fused_quantize_5"
// RECIPES: tek.dequantize_kernel "te_dequantize_6"
// RECIPES: tek.dequantize_kernel "te_dequantize_7"
// RECIPES: tek.gemm_call "te_gemm_8"
// RECIPES: tek.dequantize_kernel "te_dequantize_9"
// RECIPES: tek.dequantize_kernel "te_dequantize_10"
// RECIPES: tek.gemm_call "te_gemm_11"
// RECIPES-LABEL: func.func @nvfp4(
// RECIPES: tek.quantize_kernel "te_fused_quantize_0"
// RECIPES: tek.quantize_kernel "te_fused_quantize_1"
// RECIPES: tek.dequantize_kernel "te_dequantize_2"
// RECIPES: tek.dequantize_kernel "te_dequantize_3"
// RECIPES: tek.gemm_call "te_gemm_4"
// RECIPES: tek.quantize_kernel "te_fused_quantize_5"
// RECIPES: tek.dequantize_kernel "te_dequantize_6"
// RECIPES: tek.dequantize_kernel "te_dequantize_7"
// RECIPES: tek.gemm_call "te_gemm_8"
// RECIPES: tek.dequantize_kernel "te_dequantize_9"
// RECIPES: tek.dequantize_kernel "te_dequantize_10"
// RECIPES: tek.gemm_call "te_gemm_11"
// RECIPES-LABEL: func.func @hybrid(
// RECIPES: tek.quantize_kernel "te_fused_quantize_0"
// RECIPES: tek.quantize_kernel "te_fused_quantize_1"
// RECIPES: tek.dequantize_kernel "te_dequantize_2"
// RECIPES: tek.dequantize_kernel "te_dequantize_3"
// RECIPES: tek.gemm_call "te_gemm_4"
// RECIPES: tek.quantize_kernel "te_fused_quantize_5"
// RECIPES: tek.dequantize_kernel "te_dequantize_6"
// RECIPES: tek.dequantize_kernel "te_dequantize_7"
// RECIPES: tek.gemm_call "te_gemm_8"
// RECIPES: tek.dequantize_kernel "te_dequantize_9"
// RECIPES: tek.dequantize_kernel "te_dequantize_10"
// RECIPES: tek.gemm_call "te_gemm_11"
// The mixed recipe's dgrad and wgrad pair NVFP4 dy with MXFP8 W and x:
// dequantized, then bf16 GEMMs.
// RECIPES-LABEL: func.func @mixed(
// RECIPES: tek.dequantize_kernel "te_dequantize_6" %{{.*}} rowwise {{.*}}#te.nvfp4<sr>
// RECIPES: tek.dequantize_kernel "te_dequantize_7" %{{.*}} columnwise {{.*}}#te.mxfp8<e4m3>
// RECIPES: tek.gemm_call "te_gemm_8"
// RECIPES: tek.dequantize_kernel "te_dequantize_9" %{{.*}} columnwise {{.*}}#te.nvfp4<sr>
// RECIPES: tek.dequantize_kernel "te_dequantize_10" %{{.*}} columnwise {{.*}}#te.mxfp8<e4m3>
// RECIPES: tek.gemm_call "te_gemm_11"

// MOE-LABEL: func.func @up(
// MOE: tek.quantize_kernel "te_quantize_0"
// MOE: tek.quantize_kernel "te_quantize_1"
// MOE: tek.grouped_gemm "te_grouped_gemm_2"
// MOE-LABEL: func.func @up_grad(
// MOE: tek.quantize_kernel "te_quantize_0"
// MOE: tek.quantize_kernel "te_quantize_1"
// MOE: tek.grouped_gemm "te_grouped_gemm_2"
// MOE: tek.grouped_wgrad "te_grouped_wgrad_3"
// MOE-LABEL: func.func @mlp(
// MOE: %[[H:.*]], %[[HQ:.*]] = tek.grouped_gemm "te_grouped_gemm_2"
// MOE-NOT: tek.quantize_kernel {{.*}} %[[H]]
// MOE: tek.grouped_gemm "te_grouped_gemm_5" %[[HQ]]

// MOEDGRAD-LABEL: func.func @dgrad(
// MOEDGRAD: tek.quantize_kernel "te_quantize_0"
// MOEDGRAD: tek.quantize_kernel "te_quantize_1"
// MOEDGRAD: tek.grouped_gemm "te_grouped_gemm_2"
// MOEDGRAD-LABEL: func.func @dgrad_e5m2(
// MOEDGRAD: tek.quantize_kernel "te_quantize_0"
// MOEDGRAD: tek.quantize_kernel "te_quantize_1"
// MOEDGRAD: tek.grouped_gemm "te_grouped_gemm_2"

// MOECURRENT-LABEL: func.func @current(
// MOECURRENT-NEXT: tek.grouped_gemm "te_grouped_gemm_0" %arg0, %arg1, %arg2 {input_scheme = #te.fp8_current<e4m3>, weight_scheme = #te.fp8_current<e4m3>}
// MOECURRENT-LABEL: func.func @block(
// MOECURRENT: tek.quantize_kernel "te_quantize_0"
// MOECURRENT: tek.quantize_kernel "te_quantize_1"
// MOECURRENT: tek.grouped_gemm "te_grouped_gemm_2"
// MOECURRENT-LABEL: func.func @current_grad(
// MOECURRENT-NEXT: tek.grouped_gemm "te_grouped_gemm_0" %arg0, %arg2, %arg3 {input_scheme = #te.fp8_current<e4m3>, weight_columnwise, weight_scheme = #te.fp8_current<e4m3>}
// MOECURRENT-NEXT: tek.grouped_wgrad "te_grouped_wgrad_1"
// MOECURRENT-LABEL: func.func @block_grad(
// MOECURRENT: tek.grouped_wgrad
// MOECURRENT-LABEL: func.func @nvfp4(
// MOECURRENT-NEXT: tek.grouped_gemm "te_grouped_gemm_0" %arg0, %arg1, %arg2 {input_scheme = #te.nvfp4<>, weight_scheme = #te.nvfp4<block2d>}
// MOECURRENT-LABEL: func.func @bf16(
// MOECURRENT-NEXT: tek.grouped_gemm "te_grouped_gemm_0" %arg0, %arg1, %arg2 :
// MOECURRENT-LABEL: func.func @nvfp4_grad(
// MOECURRENT-NEXT: tek.grouped_gemm "te_grouped_gemm_0" %arg0, %arg2, %arg3 {input_scheme = #te.nvfp4<rht, sr>, weight_columnwise, weight_scheme = #te.nvfp4<block2d>}
// MOECURRENT-NEXT: tek.grouped_wgrad "te_grouped_wgrad_1" %arg0, %arg1, %arg3 {grad_output_scheme = #te.nvfp4<rht, sr>, input_scheme = #te.nvfp4<rht>}
// MOECURRENT-LABEL: func.func @bf16_grad(
// MOECURRENT: tek.grouped_wgrad
// MOECURRENT-LABEL: func.func @nvfp4_1d_grad(
// MOECURRENT-NEXT: tek.grouped_gemm "te_grouped_gemm_0" %arg0, %arg2, %arg3 {input_scheme = #te.nvfp4<rht, sr>, weight_columnwise, weight_scheme = #te.nvfp4<>}
// MOECURRENT-LABEL: func.func @mlp(
// MOECURRENT-NEXT: tek.grouped_gemm "te_grouped_gemm_0" %arg0, %arg1, %arg3 {input_scheme = #te.fp8_current<e4m3>, weight_scheme = #te.fp8_current<e4m3>}
// MOECURRENT-NEXT: tek.grouped_gemm "te_grouped_gemm_1" %result, %arg2, %arg3 {input_scheme = #te.fp8_current<e4m3>, weight_scheme = #te.fp8_current<e4m3>}
// MOECURRENT-LABEL: func.func @mlp_grad(
// MOECURRENT-NEXT: tek.grouped_gemm "te_grouped_gemm_0" %arg0, %arg4, %arg5 {input_scheme = #te.fp8_current<e4m3>, weight_columnwise, weight_scheme = #te.fp8_current<e4m3>}
// MOECURRENT-NEXT: tek.grouped_wgrad "te_grouped_wgrad_1" %arg0, %arg2, %arg5
// MOECURRENT-NEXT: tek.grouped_gemm "te_grouped_gemm_2" %result, %arg3, %arg5
// MOECURRENT-NEXT: tek.grouped_wgrad "te_grouped_wgrad_3" %result, %arg1, %arg5

// MOEBF16-LABEL: func.func @fprop(
// MOEBF16: tek.grouped_gemm "te_grouped_gemm_0"
// MOEBF16-LABEL: func.func @dgrad(
// MOEBF16: tek.grouped_gemm "te_grouped_gemm_0"

// QBF16-LABEL: func.func @mxfp8(
// QBF16: tek.quantize_kernel "te_quantize_0"
// QBF16-LABEL: func.func @fp8_block_1x128(
// QBF16: tek.quantize_kernel "te_quantize_0"
// QBF16-LABEL: func.func @fp8_block_128x128(
// QBF16: tek.quantize_kernel "te_quantize_0"
// QBF16-LABEL: func.func @nvfp4(
// QBF16: tek.quantize_kernel "te_quantize_0"
// QBF16-LABEL: func.func @fp8_current(
// QBF16: tek.quantize_kernel "te_quantize_0"
// QBF16-LABEL: func.func @nvfp4_rht(
// QBF16: tek.quantize_kernel "te_quantize_0"

// QF32-LABEL: func.func @mxfp8_both(
// QF32: tek.quantize_kernel "te_quantize_0" %{{.*}}stages = [#tek.stage<0, rowwise>, #tek.stage<0, columnwise>]{{.*}} : tensor<8192x8192xf32> ->
// QF32-LABEL: func.func @block_128x128_rowwise(
// QF32: tek.quantize_kernel "te_quantize_0"
// QF32-LABEL: func.func @block_1x128_both(
// QF32: tek.quantize_kernel "te_quantize_0"
// QF32-LABEL: func.func @current_rowwise(
// QF32: tek.quantize_kernel "te_quantize_0" %{{.*}} {amax_prepass, {{.*}}} : tensor<8192x8192xf32> ->
// QF32-LABEL: func.func @nvfp4_rowwise(
// QF32: tek.quantize_kernel "te_quantize_0" %{{.*}} {amax_prepass, {{.*}}} : tensor<8192x8192xf32> ->

// RANKSHARDS-LABEL: func.func @ranks(
// RANKSHARDS: tek.quantize_shards_kernel "te_quantize_shards_0"
// RANKSHARDS-LABEL: func.func @one_process(
// RANKSHARDS: tek.quantize_shards_kernel "te_quantize_shards_0"

// At 256 tokens an expert the NVFP4 forward reads codes (te-legalize-target).
// MOENVFP4-LABEL: func.func @nvfp4_fprop(
// MOENVFP4-NEXT: tek.grouped_gemm "te_grouped_gemm_0" %arg0, %arg1, %arg2 {input_scheme = #te.nvfp4<>, nvfp4_codes, weight_scheme = #te.nvfp4<block2d>}

// MOEMIXED-LABEL: func.func @hybrid_grad(
// MOEMIXED: tek.quantize_kernel "te_quantize_0"
// MOEMIXED: tek.dequantize_kernel "te_dequantize_1" %{{.*}} columnwise
// MOEMIXED: tek.grouped_gemm "te_grouped_gemm_2" {{.*}}input_scheme = #te.nvfp4<sr>, weight_columnwise
// MOEMIXED: tek.grouped_wgrad "te_grouped_wgrad_3"
// MOEMIXED-LABEL: func.func @bf16_grad(
// MOEMIXED: tek.grouped_gemm "te_grouped_gemm_0"
// MOEMIXED: tek.grouped_wgrad "te_grouped_wgrad_1"
// MOEMIXED-LABEL: func.func @current_block(
// MOEMIXED: tek.quantize_kernel "te_quantize_0"
// MOEMIXED: tek.dequantize_kernel "te_dequantize_1" %{{.*}} rowwise
// MOEMIXED: tek.grouped_gemm "te_grouped_gemm_2" {{.*}}input_scheme = #te.fp8_current<e4m3>
