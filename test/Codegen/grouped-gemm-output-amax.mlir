// RUN: te-translate --te-to-cuda %s | FileCheck %s

// Tests that a grouped GEMM whose output a later kernel of the entry
// quantizes with one amax per expert (per-tensor FP8, NVFP4) takes those
// amaxes in its epilogue (the "_amax" kernel) and that the later kernels
// run no amax pass over that output: the next layer's cast of its tokens,
// and in a backward the dgrad's and the wgrad's quantizes of dh. The
// inputs of the entry keep their passes (x, h, dy, the stacks).

te.recipe @current {
  te.rule "grouped_linear", "weight" -> #te.fp8_current<e4m3>
  te.rule "grouped_linear", "input"  -> #te.fp8_current<e5m2>
}
te.recipe @current_bwd {
  te.rule "grouped_linear", "grad_output" -> #te.fp8_current<e5m2>
  te.rule "grouped_linear", "*" -> #te.fp8_current<e4m3>
}
te.recipe @nvfp4 {
  te.rule "grouped_linear", "*" -> #te.nvfp4<>
}
te.recipe @fp8_block {
  te.rule "grouped_linear", "weight" -> #te.fp8_block<e4m3, 128x128>
  te.rule "grouped_linear", "input"  -> #te.fp8_block<e4m3, 1x128>
}

// CHECK-LABEL: // ===== entry @chain kernel te_grouped_gemm_0 (sm_90a)
// CHECK-NEXT: // launch te_grouped_amax_g4
// CHECK-NEXT: // launch te_grouped_rows_e5m2_g4_c384_tokens
// CHECK-NEXT: // launch te_grouped_amax_g4
// CHECK-NEXT: // launch te_grouped_rows_e4m3_g4_c384_weights
// CHECK-NEXT: // launch te_grouped_gemm_fp8block_e5m2xe4m3_g4_n256_k384_{{.*}}_amax grid
// CHECK-LABEL: // ===== entry @chain kernel te_grouped_gemm_1 (sm_90a)
// CHECK-NEXT: // launch te_grouped_rows_e5m2_g4_c256_tokens
// CHECK-NEXT: // launch te_grouped_amax_g4
// CHECK-NEXT: // launch te_grouped_rows_e4m3_g4_c256_weights
// CHECK-NEXT: // launch te_grouped_gemm_fp8block_e5m2xe4m3_g4_n384_k256_{{[a-z0-9_]*}}_s6 grid
func.func @chain(%x: tensor<500x384xbf16>, %w1: tensor<4x256x384xbf16>,
                 %w2: tensor<4x384x256xbf16>, %s: tensor<4xi64>)
    -> tensor<500x384xbf16> {
  %h = te.grouped_linear %x, %w1, %s {recipe = @current}
         : tensor<500x384xbf16>, tensor<4x256x384xbf16>, tensor<4xi64>
         -> tensor<500x256xbf16>
  %y = te.grouped_linear %h, %w2, %s {recipe = @current}
         : tensor<500x256xbf16>, tensor<4x384x256xbf16>, tensor<4xi64>
         -> tensor<500x384xbf16>
  return %y : tensor<500x384xbf16>
}

// A block-FP8 layer's output quantized by NVFP4 (each expert's tensor
// scale) for the next layer's NVFP4 kernel.
// CHECK-LABEL: // ===== entry @block_then_nvfp4 kernel te_grouped_gemm_2 (sm_90a)
// CHECK-NEXT: // launch te_grouped_gemm_fp8block_g4_n256_k384_{{.*}}_amax grid
// CHECK-LABEL: // ===== entry @block_then_nvfp4 kernel te_grouped_gemm_3 (sm_90a)
// CHECK-NEXT: // launch te_grouped_rows_nvfp4_g4_c256_tokens_codes
// CHECK-NEXT: // launch te_grouped_amax_g4
// CHECK-NEXT: // launch te_grouped_rows_nvfp4_g4_c256_weights_codes
// CHECK-NEXT: // launch te_grouped_gemm_nvfp4_g4_n384_k256_
func.func @block_then_nvfp4(%x: tensor<500x384xbf16>, %w1: tensor<4x256x384xbf16>,
                            %w2: tensor<4x384x256xbf16>, %s: tensor<4xi64>)
    -> tensor<500x384xbf16> {
  %h = te.grouped_linear %x, %w1, %s {recipe = @fp8_block}
         : tensor<500x384xbf16>, tensor<4x256x384xbf16>, tensor<4xi64>
         -> tensor<500x256xbf16>
  %y = te.grouped_linear %h, %w2, %s {recipe = @nvfp4}
         : tensor<500x256xbf16>, tensor<4x384x256xbf16>, tensor<4xi64>
         -> tensor<500x384xbf16>
  return %y : tensor<500x384xbf16>
}

// The backward of two layers: the second layer's dgrad takes dh's amaxes;
// the first layer's dgrad and wgrad quantize dh without a pass.
// CHECK-LABEL: // ===== entry @chain_grad kernel te_grouped_gemm_0 (sm_90a)
// CHECK: // launch te_grouped_gemm_fp8block_wcol_e5m2xe4m3_g4_n256_k384_{{.*}}_amax grid
// CHECK-LABEL: // ===== entry @chain_grad kernel te_grouped_wgrad_1 (sm_90a)
// CHECK-NEXT: // launch te_grouped_quantize_e5m2_tensor_g4_c384
// CHECK-NEXT: // launch te_grouped_amax_g4
// CHECK-NEXT: // launch te_grouped_quantize_e4m3_tensor_g4_c256
// CHECK-LABEL: // ===== entry @chain_grad kernel te_grouped_gemm_2 (sm_90a)
// CHECK-NEXT: // launch te_grouped_rows_e5m2_g4_c256_tokens
// CHECK-NEXT: // launch te_grouped_amax_g4
// CHECK-NEXT: // launch te_grouped_rows_e4m3_g4_c384_weights_t
// CHECK-NEXT: // launch te_grouped_gemm_fp8block_wcol_e5m2xe4m3_g4_n384_k256_{{[a-z0-9_]*}}_s6 grid
// CHECK-LABEL: // ===== entry @chain_grad kernel te_grouped_wgrad_3 (sm_90a)
// CHECK-NEXT: // launch te_grouped_quantize_e5m2_tensor_g4_c256
// CHECK-NEXT: // launch te_grouped_amax_g4
// CHECK-NEXT: // launch te_grouped_quantize_e4m3_tensor_g4_c384
func.func @chain_grad(%dy: tensor<500x384xbf16>, %x: tensor<500x384xbf16>,
                      %h: tensor<500x256xbf16>, %w1: tensor<4x256x384xbf16>,
                      %w2: tensor<4x384x256xbf16>, %s: tensor<4xi64>)
    -> (tensor<500x384xbf16>, tensor<4x256x384xf32>, tensor<4x384x256xf32>) {
  %dh, %dw2 = te.grouped_linear_grad %dy, %h, %w2, %s {recipe = @current_bwd}
      : tensor<500x384xbf16>, tensor<500x256xbf16>, tensor<4x384x256xbf16>, tensor<4xi64>
      -> tensor<500x256xbf16>, tensor<4x384x256xf32>
  %dx, %dw1 = te.grouped_linear_grad %dh, %x, %w1, %s {recipe = @current_bwd}
      : tensor<500x256xbf16>, tensor<500x384xbf16>, tensor<4x256x384xbf16>, tensor<4xi64>
      -> tensor<500x384xbf16>, tensor<4x256x384xf32>
  return %dx, %dw1, %dw2 : tensor<500x384xbf16>, tensor<4x256x384xf32>, tensor<4x384x256xf32>
}
