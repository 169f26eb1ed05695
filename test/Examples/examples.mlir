// The shipped examples parse, verify and go through the main pipeline
// (scripts/run-example.sh).
// RUN: te-opt %te_src_root/examples/hybrid_linear.mlir --te-resolve-recipe --te-infer-usage --te-fuse-quantize --canonicalize --cse | FileCheck %s --check-prefix=HYBRID
// RUN: te-opt %te_src_root/examples/deepseek_linear.mlir --te-resolve-recipe | FileCheck %s --check-prefix=BLOCK
// RUN: te-opt %te_src_root/examples/quantize_hybrid.mlir --te-resolve-recipe --te-infer-usage --te-fuse-quantize --canonicalize | FileCheck %s --check-prefix=QUANT

// HYBRID-LABEL: func.func @train_step
// HYBRID: te.linear {{.*}}schemes = {input = #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<rht>>, weight = #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>}
// HYBRID: te.linear_grad {{.*}}schemes = {grad_output = #te.nvfp4<rht, sr>,

// BLOCK-LABEL: func.func @forward
// BLOCK: schemes = {input = #te.fp8_block<e4m3, 1x128, pow2>, weight = #te.fp8_block<e4m3, 128x128, pow2>}

// One kernel reads dy once for both directions and the bias gradient.
// QUANT-LABEL: func.func @quantize_grad
// QUANT: te.fused_quantize %{{.*}} {bias_grad}
// QUANT-NOT: te.quantize
// QUANT-NOT: te.bias_grad
