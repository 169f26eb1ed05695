// RUN: te-opt %s --te-lower-to-kernels | FileCheck %s

// Tests how te-lower-to-kernels follows te-legalize-target's `path` on a
// grouped GEMM that quantizes its operands per expert by NVFP4: `generated`
// has the engine's NVFP4 kernel read their codes (nvfp4_codes), `emulated`
// the BF16 kernel their values; a dgrad marked `generated` (recorded
// before the codes existed) keeps its values, since the NVFP4 kernel reads
// the weight rowwise only (rt::groupedNvfp4CodesError).

// CHECK-LABEL: func.func @paths
func.func @paths(%x: tensor<256x128xbf16>, %w: tensor<4x64x128xbf16>,
                 %dy: tensor<256x64xbf16>, %s: tensor<4xi64>) {
  // CHECK: tek.grouped_gemm "te_grouped_gemm_0" %arg0, %arg1, %arg3 {input_scheme = #te.nvfp4<>, nvfp4_codes, weight_scheme = #te.nvfp4<block2d>}
  %0 = te.grouped_gemm %x, %w, %s {input_scheme = #te.nvfp4<>, weight_scheme = #te.nvfp4<block2d>, path = #te.gemm_path<generated>} : tensor<256x128xbf16>, tensor<4x64x128xbf16>, tensor<4xi64> -> tensor<256x64xbf16>
  // CHECK: tek.grouped_gemm "te_grouped_gemm_1" %arg0, %arg1, %arg3 {input_scheme = #te.nvfp4<>, weight_scheme = #te.nvfp4<block2d>}
  %1 = te.grouped_gemm %x, %w, %s {input_scheme = #te.nvfp4<>, weight_scheme = #te.nvfp4<block2d>, path = #te.gemm_path<emulated>} : tensor<256x128xbf16>, tensor<4x64x128xbf16>, tensor<4xi64> -> tensor<256x64xbf16>
  // CHECK: tek.grouped_gemm "te_grouped_gemm_2" %arg2, %arg1, %arg3 {input_scheme = #te.nvfp4<>, weight_columnwise, weight_scheme = #te.nvfp4<block2d>}
  %2 = te.grouped_gemm %dy, %w, %s {input_scheme = #te.nvfp4<>, weight_scheme = #te.nvfp4<block2d>, weight_columnwise, path = #te.gemm_path<generated>} : tensor<256x64xbf16>, tensor<4x64x128xbf16>, tensor<4xi64> -> tensor<256x128xbf16>
  return
}
