// RUN: te-opt %s --te-legalize-target | FileCheck %s
// RUN: te-opt %s --te-legalize-target | te-opt | FileCheck %s
// RUN: te-opt %s --pass-pipeline='builtin.module(te-legalize-target{grouped-mxfp8=direct})' | FileCheck %s --check-prefix=DIRECT
// RUN: te-opt %s --pass-pipeline='builtin.module(te-legalize-target{grouped-mxfp8=dequantize})' | FileCheck %s --check-prefix=DEQUANT
// RUN: not te-opt %s --pass-pipeline='builtin.module(te-legalize-target{grouped-mxfp8=fast})' 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: te-opt %s --pass-pipeline='builtin.module(te-legalize-target{grouped-nvfp4=direct})' | FileCheck %s --check-prefix=NVDIRECT
// RUN: te-opt %s --pass-pipeline='builtin.module(te-legalize-target{grouped-nvfp4=dequantize})' | FileCheck %s --check-prefix=NVDEQUANT
// RUN: not te-opt %s --pass-pipeline='builtin.module(te-legalize-target{grouped-nvfp4=codes})' 2>&1 | FileCheck %s --check-prefix=NVBAD

// Tests the path te-legalize-target records on grouped GEMMs (sm_90):
// `generated` where the GEMM engine's kernel reads the operands as stored
// (bf16, block FP8), `emulated` where it cannot (an MXFP8 weight read
// columnwise); for MXFP8 x MXFP8 read rowwise, the cheaper of the two by
// the cost model of docs/Performance.md ("A generated MXFP8 GEMM"): the
// direct kernel with 256 tokens per expert, the dequantized path with 4096
// at N = 4096 (and the direct kernel again at N = 128, where dequantizing
// the tokens costs more than the slower kernel); K not a multiple of 128
// (the kernel's stages) is always dequantized. The pass option
// grouped-mxfp8 overrides the cost model (direct / dequantize) where the
// kernel can read the operands, and nowhere else.
// BAD: te-legalize-target: grouped-mxfp8 is auto, direct or dequantize, not 'fast'
// NVBAD: te-legalize-target: grouped-nvfp4 is auto, direct or dequantize, not 'codes'

// CHECK-LABEL: func.func @grouped_paths
func.func @grouped_paths(
    %xb: tensor<2048x1024xbf16>, %wb: tensor<8x4096x1024xbf16>,
    %xq: !te.qtensor<2048x1024xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>,
    %wq: !te.qtensor<8x4096x1024xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>,
    %xm: !te.qtensor<2048x1024xbf16, #te.mxfp8<e4m3>, rowwise>,
    %wm: !te.qtensor<8x4096x1024xbf16, #te.mxfp8<e4m3>, rowwise>,
    %xl: !te.qtensor<32768x1024xbf16, #te.mxfp8<e4m3>, rowwise>,
    %wn: !te.qtensor<8x128x1024xbf16, #te.mxfp8<e4m3>, rowwise>,
    %dy: !te.qtensor<2048x4096xbf16, #te.mxfp8<e4m3>, rowwise>,
    %wc: !te.qtensor<8x4096x1024xbf16, #te.mxfp8<e4m3>, columnwise>,
    %xk: !te.qtensor<2048x192xbf16, #te.mxfp8<e4m3>, rowwise>,
    %wk: !te.qtensor<8x128x192xbf16, #te.mxfp8<e4m3>, rowwise>,
    %s: tensor<8xi64>) {
  // CHECK: te.grouped_gemm {{.*}}path = #te.gemm_path<generated>{{.*}} : tensor<2048x1024xbf16>
  %0 = te.grouped_gemm %xb, %wb, %s : tensor<2048x1024xbf16>, tensor<8x4096x1024xbf16>, tensor<8xi64> -> tensor<2048x4096xbf16>
  // CHECK: te.grouped_gemm {{.*}}path = #te.gemm_path<generated>{{.*}}fp8_block
  %1 = te.grouped_gemm %xq, %wq, %s : !te.qtensor<2048x1024xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>, !te.qtensor<8x4096x1024xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>, tensor<8xi64> -> tensor<2048x4096xbf16>
  // CHECK: te.grouped_gemm {{.*}}path = #te.gemm_path<generated>{{.*}} : !te.qtensor<2048x1024xbf16, #te.mxfp8
  // DEQUANT: te.grouped_gemm {{.*}}path = #te.gemm_path<emulated>{{.*}} : !te.qtensor<2048x1024xbf16, #te.mxfp8
  %2 = te.grouped_gemm %xm, %wm, %s : !te.qtensor<2048x1024xbf16, #te.mxfp8<e4m3>, rowwise>, !te.qtensor<8x4096x1024xbf16, #te.mxfp8<e4m3>, rowwise>, tensor<8xi64> -> tensor<2048x4096xbf16>
  // CHECK: te.grouped_gemm {{.*}}path = #te.gemm_path<emulated>{{.*}} : !te.qtensor<32768x1024xbf16, #te.mxfp8
  // DIRECT: te.grouped_gemm {{.*}}path = #te.gemm_path<generated>{{.*}} : !te.qtensor<32768x1024xbf16, #te.mxfp8{{.*}}8x4096x1024
  %3 = te.grouped_gemm %xl, %wm, %s : !te.qtensor<32768x1024xbf16, #te.mxfp8<e4m3>, rowwise>, !te.qtensor<8x4096x1024xbf16, #te.mxfp8<e4m3>, rowwise>, tensor<8xi64> -> tensor<32768x4096xbf16>
  // CHECK: te.grouped_gemm {{.*}}path = #te.gemm_path<generated>{{.*}} : !te.qtensor<32768x1024xbf16, #te.mxfp8{{.*}}8x128x1024
  %4 = te.grouped_gemm %xl, %wn, %s : !te.qtensor<32768x1024xbf16, #te.mxfp8<e4m3>, rowwise>, !te.qtensor<8x128x1024xbf16, #te.mxfp8<e4m3>, rowwise>, tensor<8xi64> -> tensor<32768x128xbf16>
  // CHECK: te.grouped_gemm {{.*}}path = #te.gemm_path<emulated>{{.*}}weight_columnwise
  // DIRECT: te.grouped_gemm {{.*}}path = #te.gemm_path<emulated>{{.*}}weight_columnwise
  %5 = te.grouped_gemm %dy, %wc, %s {weight_columnwise} : !te.qtensor<2048x4096xbf16, #te.mxfp8<e4m3>, rowwise>, !te.qtensor<8x4096x1024xbf16, #te.mxfp8<e4m3>, columnwise>, tensor<8xi64> -> tensor<2048x1024xbf16>
  // CHECK: te.grouped_gemm {{.*}}path = #te.gemm_path<emulated>{{.*}} : !te.qtensor<2048x192xbf16
  // DIRECT: te.grouped_gemm {{.*}}path = #te.gemm_path<emulated>{{.*}} : !te.qtensor<2048x192xbf16
  %6 = te.grouped_gemm %xk, %wk, %s : !te.qtensor<2048x192xbf16, #te.mxfp8<e4m3>, rowwise>, !te.qtensor<8x128x192xbf16, #te.mxfp8<e4m3>, rowwise>, tensor<8xi64> -> tensor<2048x128xbf16>
  return
}

// Operands the op quantizes per expert by NVFP4: `generated` has the
// engine's NVFP4 kernel read their codes, `emulated` the BF16 kernel their
// dequantized values. The cost model (docs/Performance.md, "A generated
// NVFP4 GEMM") picks the codes with 256 tokens per expert and the values
// with 4096; the dgrad (the weight read columnwise) always reads values.
// Per-tensor FP8 per expert is the block-scaled kernel's (`generated`).
// CHECK-LABEL: func.func @per_expert_paths
// NVDIRECT-LABEL: func.func @per_expert_paths
// NVDEQUANT-LABEL: func.func @per_expert_paths
func.func @per_expert_paths(%xs: tensor<2048x1024xbf16>,
                            %xl: tensor<32768x1024xbf16>,
                            %w: tensor<8x4096x1024xbf16>,
                            %dy: tensor<2048x4096xbf16>,
                            %s: tensor<8xi64>) {
  // CHECK: te.grouped_gemm {{.*}}path = #te.gemm_path<generated>{{.*}} : tensor<2048x1024xbf16>
  // NVDIRECT: te.grouped_gemm {{.*}}path = #te.gemm_path<generated>{{.*}} : tensor<2048x1024xbf16>
  // NVDEQUANT: te.grouped_gemm {{.*}}path = #te.gemm_path<emulated>{{.*}} : tensor<2048x1024xbf16>
  %0 = te.grouped_gemm %xs, %w, %s {input_scheme = #te.nvfp4<>, weight_scheme = #te.nvfp4<block2d>} : tensor<2048x1024xbf16>, tensor<8x4096x1024xbf16>, tensor<8xi64> -> tensor<2048x4096xbf16>
  // CHECK: te.grouped_gemm {{.*}}path = #te.gemm_path<emulated>{{.*}} : tensor<32768x1024xbf16>
  // NVDIRECT: te.grouped_gemm {{.*}}path = #te.gemm_path<generated>{{.*}} : tensor<32768x1024xbf16>
  // NVDEQUANT: te.grouped_gemm {{.*}}path = #te.gemm_path<emulated>{{.*}} : tensor<32768x1024xbf16>
  %1 = te.grouped_gemm %xl, %w, %s {input_scheme = #te.nvfp4<>, weight_scheme = #te.nvfp4<block2d>} : tensor<32768x1024xbf16>, tensor<8x4096x1024xbf16>, tensor<8xi64> -> tensor<32768x4096xbf16>
  // CHECK: te.grouped_gemm {{.*}}path = #te.gemm_path<emulated>{{.*}}weight_columnwise
  // NVDIRECT: te.grouped_gemm {{.*}}path = #te.gemm_path<emulated>{{.*}}weight_columnwise
  %2 = te.grouped_gemm %dy, %w, %s {input_scheme = #te.nvfp4<>, weight_scheme = #te.nvfp4<block2d>, weight_columnwise} : tensor<2048x4096xbf16>, tensor<8x4096x1024xbf16>, tensor<8xi64> -> tensor<2048x1024xbf16>
  // CHECK: te.grouped_gemm {{.*}}path = #te.gemm_path<generated>{{.*}}fp8_current
  // NVDEQUANT: te.grouped_gemm {{.*}}path = #te.gemm_path<generated>{{.*}}fp8_current
  %3 = te.grouped_gemm %xs, %w, %s {input_scheme = #te.fp8_current<e4m3>, weight_scheme = #te.fp8_current<e4m3>} : tensor<2048x1024xbf16>, tensor<8x4096x1024xbf16>, tensor<8xi64> -> tensor<2048x4096xbf16>
  return
}
