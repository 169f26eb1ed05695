// Round trip of !te.qtensor with every scheme and direction set.
// RUN: te-opt %s | FileCheck %s
// RUN: te-opt %s | te-opt | FileCheck %s
// RUN: te-opt %s --mlir-print-op-generic | te-opt | FileCheck %s
// RUN: te-opt %s > %t.1 && te-opt %t.1 > %t.2 && diff %t.1 %t.2

// CHECK-LABEL: func.func private @directions
// CHECK-SAME: !te.qtensor<4096x1024xbf16, #te.mxfp8<e4m3>, rowwise>
// CHECK-SAME: !te.qtensor<4096x1024xbf16, #te.mxfp8<e4m3>, columnwise>
// CHECK-SAME: !te.qtensor<4096x1024xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>
// The set is printed in a canonical order.
// CHECK-SAME: !te.qtensor<64x64xf32, #te.fp8_current<e4m3>, rowwise|columnwise>
func.func private @directions(
    !te.qtensor<4096x1024xbf16, #te.mxfp8<e4m3>, rowwise>,
    !te.qtensor<4096x1024xbf16, #te.mxfp8<e4m3>, columnwise>,
    !te.qtensor<4096x1024xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>,
    !te.qtensor<64x64xf32, #te.fp8_current<e4m3>, columnwise|rowwise>)

// CHECK-LABEL: func.func private @schemes
// CHECK-SAME: !te.qtensor<200x160xbf16, #te.fp8_block<e4m3, 128x128, pow2>, rowwise|columnwise>
// CHECK-SAME: !te.qtensor<48x80xf16, #te.nvfp4<rht, sr>, rowwise|columnwise>
// CHECK-SAME: !te.qtensor<96x64xbf16, #te.fp8_delayed<e5m2, history = 16, algo = max, margin = 0>, rowwise>
// CHECK-SAME: !te.qtensor<7x9xbf16, #te.identity<bf16>, rowwise|columnwise>
// CHECK-SAME: !te.qtensor<2x16x64xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<rht>>, rowwise|columnwise>
func.func private @schemes(
    !te.qtensor<200x160xbf16, #te.fp8_block<e4m3, 128x128, pow2>, rowwise|columnwise>,
    !te.qtensor<48x80xf16, #te.nvfp4<rht, sr>, rowwise|columnwise>,
    !te.qtensor<96x64xbf16, #te.fp8_delayed<e5m2, history = 16>, rowwise>,
    !te.qtensor<7x9xbf16, #te.identity<bf16>, rowwise|columnwise>,
    !te.qtensor<2x16x64xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<rht>>, rowwise|columnwise>)

// Ragged shapes are fine where the scheme allows partial blocks.
// CHECK-LABEL: func.func private @ragged
// CHECK-SAME: !te.qtensor<201x130xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>
// CHECK-SAME: !te.qtensor<3x5xbf16, #te.fp8_current<e4m3>, rowwise|columnwise>
// Only the direction present must satisfy the block rule: 48 rows are not a
// multiple of 32 but MXFP8 rowwise blocks run along the 96 columns.
// CHECK-SAME: !te.qtensor<48x96xbf16, #te.mxfp8<e4m3>, rowwise>
func.func private @ragged(
    !te.qtensor<201x130xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>,
    !te.qtensor<3x5xbf16, #te.fp8_current<e4m3>, rowwise|columnwise>,
    !te.qtensor<48x96xbf16, #te.mxfp8<e4m3>, rowwise>)
