// RUN: not te-run %s --random-inputs 1 2>&1 | FileCheck %s

// Tests that an op the kernel level does not cover yet is a located error.
// CHECK: te-run-unsupported.mlir:[[@LINE+4]]:{{.*}} error: 'te.gemm' has no kernel lowering yet
func.func @gemm(%a: tensor<128x128xbf16>, %b: tensor<128x128xbf16>) -> tensor<128x128xbf16> {
  %qa = te.quantize %a : tensor<128x128xbf16> -> !te.qtensor<128x128xbf16, #te.mxfp8<e4m3>, rowwise>
  %qb = te.quantize %b : tensor<128x128xbf16> -> !te.qtensor<128x128xbf16, #te.mxfp8<e4m3>, rowwise>
  %y = te.gemm %qa, %qb {transpose_b} : !te.qtensor<128x128xbf16, #te.mxfp8<e4m3>, rowwise>, !te.qtensor<128x128xbf16, #te.mxfp8<e4m3>, rowwise> -> tensor<128x128xbf16>
  return %y : tensor<128x128xbf16>
}
