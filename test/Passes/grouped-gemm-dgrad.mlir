// RUN: te-opt %s | te-opt | FileCheck %s --check-prefix=ROUNDTRIP
// RUN: te-opt %s --te-to-cuda | FileCheck %s
// RUN: te-run %s --random-inputs 3 | FileCheck %s --check-prefix=RUNOUT

// Tests the dgrad form of te.grouped_gemm written by hand (te.grouped_linear_grad
// is not expanded yet): dx_g = dy_g W_g with the stacked weight read
// columnwise. te-infer-usage narrows the weight's quantization to the
// columnwise direction the GEMM reads, the op becomes one tek.grouped_gemm
// of the GEMM engine, and the CPU backend runs it (scripts/gpu-run.sh
// compares the GPU with it: te-run --check).

// ROUNDTRIP-LABEL: func.func @dgrad
// ROUNDTRIP: te.grouped_gemm %{{.*}}, %{{.*}}, %arg2 {weight_columnwise}
// CHECK-LABEL: func.func @dgrad
// CHECK: %[[DY:.*]] = tek.quantize_kernel "te_quantize_0" %arg0 {{.*}}stages = [#tek.stage<0, rowwise>]
// CHECK: %[[W:.*]] = tek.quantize_kernel "te_quantize_1" %arg1 {{.*}}stages = [#tek.stage<0, columnwise>]{{.*}} -> !te.qtensor<4x256x384xbf16, #te.fp8_block<e4m3, 128x128>, columnwise>
// CHECK: tek.grouped_gemm "te_grouped_gemm_2" %[[DY]], %[[W]], %arg2 {weight_columnwise} {{.*}} -> tensor<700x384xbf16>
// RUNOUT: result0 ({{.*}}): data[700x384 bf16]
func.func @dgrad(%dy: tensor<700x256xbf16>, %w: tensor<4x256x384xbf16>, %splits: tensor<4xi64>)
    -> tensor<700x384xbf16> {
  %qdy = te.quantize %dy : tensor<700x256xbf16>
           -> !te.qtensor<700x256xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>
  %qw = te.quantize %w : tensor<4x256x384xbf16>
          -> !te.qtensor<4x256x384xbf16, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>
  %dx = te.grouped_gemm %qdy, %qw, %splits {weight_columnwise}
          : !te.qtensor<700x256xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>,
            !te.qtensor<4x256x384xbf16, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>,
            tensor<4xi64> -> tensor<700x384xbf16>
  return %dx : tensor<700x384xbf16>
}
