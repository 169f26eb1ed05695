// RUN: te-opt %s --te-to-cuda | FileCheck %s --check-prefix=OPT
// RUN: not te-run %s --random-inputs 1 2>&1 | FileCheck %s

// Tests that a function argument no te op touches, so no op verifier checks
// it, is still rejected, located, when it is too large for the runtime: the
// lowering to a program checks every value it adds.
// OPT-LABEL: func.func @passthrough
// CHECK: lower-to-program-sizes.mlir:[[@LINE+2]]:24: error: value arg0 'tensor<4000000000x4000000000xbf16>' is too large for the runtime: its element count overflows a 64-bit integer
// CHECK-NOT: Stack dump
func.func @passthrough(%x: tensor<4000000000x4000000000xbf16>) -> tensor<4000000000x4000000000xbf16> {
  return %x : tensor<4000000000x4000000000xbf16>
}
