// RUN: te-opt %s --te-legalize-target | FileCheck %s --check-prefix=SM90
// RUN: te-opt %s --pass-pipeline='builtin.module(te-legalize-target{arch=sm_100a})' | FileCheck %s --check-prefix=SM100
// RUN: te-opt %s --te-legalize-target | te-opt | FileCheck %s --check-prefix=SM90

// The target is recorded on the module.
// SM90: module attributes {te.target = #te.target<"sm_90a">}
// SM100: module attributes {te.target = #te.target<"sm_100a">}

// Tests the GEMM path per scheme family and target: per-tensor FP8 and
// BF16 always have a cuBLASLt kernel; block FP8 only on sm_90; MXFP8 and
// NVFP4 only from sm_100 (emulated on Hopper).
// SM90-LABEL: func.func @paths
// SM100-LABEL: func.func @paths
func.func @paths(%a: !te.qtensor<128x128xbf16, #te.fp8_current<e4m3>, rowwise>,
                 %b: !te.qtensor<128x128xbf16, #te.fp8_delayed<e4m3>, rowwise>,
                 %c: !te.qtensor<128x128xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>,
                 %d: !te.qtensor<128x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>,
                 %e: !te.qtensor<128x128xbf16, #te.mxfp8<e4m3>, rowwise>,
                 %f: !te.qtensor<128x128xbf16, #te.nvfp4<>, rowwise>,
                 %g: tensor<128x128xbf16>) {
  // SM90: te.gemm {{.*}}path = #te.gemm_path<cublaslt>
  // SM100: te.gemm {{.*}}path = #te.gemm_path<cublaslt>
  %0 = te.gemm %a, %b {transpose_b} : !te.qtensor<128x128xbf16, #te.fp8_current<e4m3>, rowwise>, !te.qtensor<128x128xbf16, #te.fp8_delayed<e4m3>, rowwise> -> tensor<128x128xbf16>
  // SM90: te.gemm {{.*}}path = #te.gemm_path<cublaslt>
  // SM100: te.gemm {{.*}}path = #te.gemm_path<emulated>
  %1 = te.gemm %c, %d {transpose_b} : !te.qtensor<128x128xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>, !te.qtensor<128x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise> -> tensor<128x128xbf16>
  // SM90: te.gemm {{.*}}path = #te.gemm_path<emulated>
  // SM100: te.gemm {{.*}}path = #te.gemm_path<cublaslt>
  %2 = te.gemm %e, %e {transpose_b} : !te.qtensor<128x128xbf16, #te.mxfp8<e4m3>, rowwise>, !te.qtensor<128x128xbf16, #te.mxfp8<e4m3>, rowwise> -> tensor<128x128xbf16>
  // SM90: te.gemm {{.*}}path = #te.gemm_path<emulated>
  // SM100: te.gemm {{.*}}path = #te.gemm_path<cublaslt>
  %3 = te.gemm %f, %f {transpose_b} : !te.qtensor<128x128xbf16, #te.nvfp4<>, rowwise>, !te.qtensor<128x128xbf16, #te.nvfp4<>, rowwise> -> tensor<128x128xbf16>
  // SM90: te.gemm {{.*}}path = #te.gemm_path<cublaslt>
  %4 = te.gemm %g, %g {transpose_b} : tensor<128x128xbf16>, tensor<128x128xbf16> -> tensor<128x128xbf16>
  return
}
