// Every op's description carries a complete example (```mlir block in
// dialect/te/TeOps.td, TeLayerOps.td and dialect/tek/TekOps.td) that parses and verifies as
// written: the blocks are taken from the .td files themselves, so they
// cannot rot.
// RUN: awk '/```mlir/{on=1; if (n++) print "// -----"; next} /```/{on=0} on' %te_src_root/dialect/te/TeOps.td %te_src_root/dialect/te/TeLayerOps.td %te_src_root/dialect/tek/TekOps.td > %t.mlir
// RUN: te-opt %t.mlir -split-input-file -verify-diagnostics | FileCheck %s
// RUN: te-opt %t.mlir -split-input-file | te-opt -split-input-file | FileCheck %s
// No op of either dialect lacks an example.
// RUN: awk '/^def /{ if (name != "" && !seen) print name; name = ($0 ~ /: Tek?_Op</) ? $2 : ""; seen = 0 } /```mlir/{ seen = 1 } END { if (name != "" && !seen) print name }' %te_src_root/dialect/te/TeOps.td %te_src_root/dialect/te/TeLayerOps.td %te_src_root/dialect/tek/TekOps.td | count 0

// CHECK: te.recipe @mxfp8_fwd_nvfp4_bwd
// CHECK: te.recipe @deepseek
// CHECK: te.rule "linear", "weight" -> #te.fp8_block<e4m3, 128x128>
// CHECK-LABEL: func.func @quantize
// CHECK: te.quantize
// CHECK-LABEL: func.func @fused_quantize
// CHECK: te.fused_quantize
// CHECK-LABEL: func.func @dequantize
// CHECK: te.dequantize
// CHECK-LABEL: func.func @gemm
// CHECK-COUNT-2: te.gemm
// CHECK-LABEL: func.func @grouped_gemm_per_expert
// CHECK: te.grouped_gemm %arg0, %arg1, %arg2 {input_scheme = #te.fp8_current<e4m3>, weight_scheme = #te.fp8_current<e4m3>}
// CHECK-LABEL: func.func @grouped_gemm(
// CHECK: te.grouped_gemm %arg0, %arg1, %arg2 : !te.qtensor<512x256xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>
// CHECK-LABEL: func.func @grouped_wgrad
// CHECK: te.grouped_wgrad %arg0, %arg1, %arg2 {grad_output_scheme = #te.fp8_block<e4m3, 1x128, pow2>, input_scheme = #te.fp8_block<e4m3, 1x128, pow2>}
// CHECK-LABEL: func.func @bias_grad
// CHECK: te.bias_grad
// CHECK-LABEL: func.func @quantize_shards
// CHECK: te.quantize_shards %arg0, %arg1 : tensor<100000xf32>, tensor<162144xf32> -> !te.qtensor<256x1024xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
// CHECK-LABEL: func.func @linear(
// CHECK: te.linear
// CHECK-LABEL: func.func @linear_quantized_weight
// CHECK: te.linear {{.*}} !te.qtensor<512x1024xf32, #te.mxfp8<e4m3>, rowwise>
// CHECK-LABEL: func.func @linear_grad
// CHECK: te.linear_grad %arg0, %arg1, %arg2 {bias, recipe = @mxfp8} : tensor<256x512xbf16>, tensor<256x1024xbf16>, tensor<512x1024xbf16> -> tensor<256x1024xbf16>, tensor<512x1024xf32>, tensor<512xf32>
// CHECK: te.recipe @moe
// CHECK-LABEL: func.func @grouped_linear(
// CHECK: te.grouped_linear %arg0, %arg1, %arg2 bias %arg3 {recipe = @moe} : tensor<256x1024xbf16>, tensor<4x512x1024xbf16>, tensor<4xi64>, tensor<4x512xbf16> -> tensor<256x512xbf16>
// CHECK-LABEL: func.func @grouped_linear_grad
// CHECK: te.grouped_linear_grad %arg0, %arg1, %arg2, %arg3 {bias, recipe = @moe} : tensor<256x512xbf16>, tensor<256x1024xbf16>, tensor<4x512x1024xbf16>, tensor<4xi64> -> tensor<256x1024xbf16>, tensor<4x512x1024xf32>, tensor<4x512xf32>
// CHECK-LABEL: func.func @adam_step
// CHECK: te.adam_step
// CHECK-LABEL: func.func @fused_adam
// CHECK: te.fused_adam
// CHECK-LABEL: func.func @quantize_kernel
// CHECK: tek.quantize_kernel
// CHECK-LABEL: func.func @dequantize_kernel
// CHECK: tek.dequantize_kernel
// CHECK-LABEL: func.func @gemm_call
// CHECK: tek.gemm_call
// CHECK-LABEL: func.func @grouped_gemm
// CHECK: tek.grouped_gemm "te_grouped_gemm_0" %arg0, %arg1, %arg2
// CHECK-LABEL: func.func @quantize_shards_kernel
// CHECK: tek.quantize_shards_kernel "te_quantize_shards_0" %arg0, %arg1 {stages = [#tek.stage<0, rowwise>]} : tensor<1000xf32>, tensor<15384xf32> -> !te.qtensor<128x128xf32, #te.nvfp4<>, rowwise>
// CHECK-LABEL: func.func @grouped_wgrad
// CHECK: tek.grouped_wgrad "te_grouped_wgrad_0" %arg0, %arg1, %arg2
// CHECK-LABEL: func.func @adam_kernel
// CHECK: tek.adam_kernel
