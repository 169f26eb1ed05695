// RUN: te-opt %s --te-infer-usage --te-fuse-quantize --te-lower-to-kernels --split-input-file | FileCheck %s

// Tests that a quantize of a row shard keeps its amax_ranks down to the
// kernel (where the plan reduces the tensor amax over the ranks), is not
// fused with another quantize of the same input (that one scales by the
// shard's own amax), and that te.all_gather becomes tek.all_gather.
// CHECK-LABEL: func.func @fsdp_weight
// CHECK: %[[Q:.*]] = tek.quantize_kernel "te_quantize_0" %arg0 {amax_prepass, amax_ranks = 2 : i64
// CHECK: %[[L:.*]] = tek.quantize_kernel "te_quantize_1" %arg0 {amax_prepass, grid
// CHECK: %[[G:.*]] = tek.all_gather "te_all_gather_2" %[[Q]] {ranks = 2 : i64}
// CHECK-SAME: -> !te.qtensor<256x64xbf16, #te.fp8_current<e4m3>, rowwise>
// CHECK: return %[[G]], %[[L]]
func.func @fsdp_weight(%w: tensor<128x64xbf16>)
    -> (!te.qtensor<256x64xbf16, #te.fp8_current<e4m3>, rowwise>,
        !te.qtensor<128x64xbf16, #te.fp8_current<e4m3>, columnwise>) {
  %q = te.quantize %w {amax_ranks = 2} : tensor<128x64xbf16>
         -> !te.qtensor<128x64xbf16, #te.fp8_current<e4m3>, rowwise>
  %local = te.quantize %w : tensor<128x64xbf16>
         -> !te.qtensor<128x64xbf16, #te.fp8_current<e4m3>, columnwise>
  %g = te.all_gather %q {ranks = 2}
         : !te.qtensor<128x64xbf16, #te.fp8_current<e4m3>, rowwise>
        -> !te.qtensor<256x64xbf16, #te.fp8_current<e4m3>, rowwise>
  return %g, %local : !te.qtensor<256x64xbf16, #te.fp8_current<e4m3>, rowwise>,
                      !te.qtensor<128x64xbf16, #te.fp8_current<e4m3>, columnwise>
}

// -----

// CHECK-LABEL: func.func @bf16_gather
// CHECK: tek.all_gather "te_all_gather_0" %arg0 {ranks = 4 : i64} : tensor<32x64xbf16> -> tensor<128x64xbf16>
func.func @bf16_gather(%w: tensor<32x64xbf16>) -> tensor<128x64xbf16> {
  %g = te.all_gather %w {ranks = 4} : tensor<32x64xbf16> -> tensor<128x64xbf16>
  return %g : tensor<128x64xbf16>
}

// -----

// A gather of both directions of a 128x128 block-FP8 weight sends only the
// rowwise copy (the columnwise one is its transpose): te-infer-usage
// narrows the shard's quantize to rowwise; with send_columnwise both are
// quantized and sent.
// CHECK-LABEL: func.func @derived_columnwise
// CHECK: tek.quantize_kernel "te_quantize_0" %arg0 {{.*}}stages = [#tek.stage<0, rowwise>]
// CHECK-SAME: -> !te.qtensor<128x256xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>
// CHECK: tek.quantize_kernel "te_quantize_1" %arg0 {{.*}}stages = [#tek.stage<0, rowwise>, #tek.stage<0, columnwise>]
// CHECK: tek.all_gather "te_all_gather_2" {{.*}} {ranks = 2 : i64}
// CHECK: tek.all_gather "te_all_gather_3" {{.*}} {ranks = 2 : i64, send_columnwise}
func.func @derived_columnwise(%w: tensor<128x256xbf16>)
    -> (!te.qtensor<256x256xbf16, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>,
        !te.qtensor<256x256xbf16, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>) {
  %q = te.quantize %w : tensor<128x256xbf16>
         -> !te.qtensor<128x256xbf16, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>
  %q2 = te.quantize %w {amax_ranks = 2} : tensor<128x256xbf16>
         -> !te.qtensor<128x256xbf16, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>
  %g = te.all_gather %q {ranks = 2}
         : !te.qtensor<128x256xbf16, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>
        -> !te.qtensor<256x256xbf16, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>
  %s = te.all_gather %q2 {ranks = 2, send_columnwise}
         : !te.qtensor<128x256xbf16, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>
        -> !te.qtensor<256x256xbf16, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>
  return %g, %s : !te.qtensor<256x256xbf16, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>,
                  !te.qtensor<256x256xbf16, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>
}
