// Tests that a recipe giving every role a hybrid with the same scheme in both
// directions computes exactly what that scheme alone computes, through a
// whole train step (forward, dgrad, wgrad, bias gradient), for every scheme
// family: the CPU backend's dumps are identical file for file.
// RUN: rm -rf %t && mkdir -p %t
// RUN: te-run %s --entry plain_current --backend cpu --random-inputs 5 --dump %t/plain_current > /dev/null
// RUN: te-run %s --entry hybrid_current --backend cpu --random-inputs 5 --dump %t/hybrid_current > /dev/null
// RUN: diff -r %t/plain_current %t/hybrid_current
// RUN: te-run %s --entry plain_delayed --backend cpu --random-inputs 5 --dump %t/plain_delayed > /dev/null
// RUN: te-run %s --entry hybrid_delayed --backend cpu --random-inputs 5 --dump %t/hybrid_delayed > /dev/null
// RUN: diff -r %t/plain_delayed %t/hybrid_delayed
// RUN: te-run %s --entry plain_mxfp8 --backend cpu --random-inputs 5 --dump %t/plain_mxfp8 > /dev/null
// RUN: te-run %s --entry hybrid_mxfp8 --backend cpu --random-inputs 5 --dump %t/hybrid_mxfp8 > /dev/null
// RUN: diff -r %t/plain_mxfp8 %t/hybrid_mxfp8
// RUN: te-run %s --entry plain_block_1x128 --backend cpu --random-inputs 5 --dump %t/plain_block_1x128 > /dev/null
// RUN: te-run %s --entry hybrid_block_1x128 --backend cpu --random-inputs 5 --dump %t/hybrid_block_1x128 > /dev/null
// RUN: diff -r %t/plain_block_1x128 %t/hybrid_block_1x128
// RUN: te-run %s --entry plain_nvfp4 --backend cpu --random-inputs 5 --dump %t/plain_nvfp4 > /dev/null
// RUN: te-run %s --entry hybrid_nvfp4 --backend cpu --random-inputs 5 --dump %t/hybrid_nvfp4 > /dev/null
// RUN: diff -r %t/plain_nvfp4 %t/hybrid_nvfp4
// RUN: te-run %s --entry plain_identity_f32 --backend cpu --random-inputs 5 --dump %t/plain_identity_f32 > /dev/null
// RUN: te-run %s --entry hybrid_identity_f32 --backend cpu --random-inputs 5 --dump %t/hybrid_identity_f32 > /dev/null
// RUN: diff -r %t/plain_identity_f32 %t/hybrid_identity_f32
// RUN: ls %t/hybrid_mxfp8 | FileCheck %s
// CHECK: result0.npy
// CHECK: result3.npy

te.recipe @r_plain_current {
  te.rule "*", "*" -> #te.fp8_current<e4m3>
}
func.func @plain_current(%x: tensor<128x128xbf16>, %w: tensor<64x128xbf16>, %b: tensor<64xbf16>, %dy: tensor<128x64xbf16>)
    -> (tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>) {
  %y = te.linear %x, %w bias %b {recipe = @r_plain_current} : tensor<128x128xbf16>, tensor<64x128xbf16>, tensor<64xbf16> -> tensor<128x64xbf16>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @r_plain_current, bias} : tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xbf16> -> tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
  return %y, %dx, %dw, %db : tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
}

te.recipe @r_hybrid_current {
  te.rule "*", "*" -> #te.hybrid<rowwise = #te.fp8_current<e4m3>, columnwise = #te.fp8_current<e4m3>>
}
func.func @hybrid_current(%x: tensor<128x128xbf16>, %w: tensor<64x128xbf16>, %b: tensor<64xbf16>, %dy: tensor<128x64xbf16>)
    -> (tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>) {
  %y = te.linear %x, %w bias %b {recipe = @r_hybrid_current} : tensor<128x128xbf16>, tensor<64x128xbf16>, tensor<64xbf16> -> tensor<128x64xbf16>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @r_hybrid_current, bias} : tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xbf16> -> tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
  return %y, %dx, %dw, %db : tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
}

te.recipe @r_plain_delayed {
  te.rule "*", "*" -> #te.fp8_delayed<e4m3, history = 16>
}
func.func @plain_delayed(%x: tensor<128x128xbf16>, %w: tensor<64x128xbf16>, %b: tensor<64xbf16>, %dy: tensor<128x64xbf16>)
    -> (tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>) {
  %y = te.linear %x, %w bias %b {recipe = @r_plain_delayed, layer = "fc"} : tensor<128x128xbf16>, tensor<64x128xbf16>, tensor<64xbf16> -> tensor<128x64xbf16>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @r_plain_delayed, bias, layer = "fc"} : tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xbf16> -> tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
  return %y, %dx, %dw, %db : tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
}

te.recipe @r_hybrid_delayed {
  te.rule "*", "*" -> #te.hybrid<rowwise = #te.fp8_delayed<e4m3, history = 16>, columnwise = #te.fp8_delayed<e4m3, history = 16>>
}
func.func @hybrid_delayed(%x: tensor<128x128xbf16>, %w: tensor<64x128xbf16>, %b: tensor<64xbf16>, %dy: tensor<128x64xbf16>)
    -> (tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>) {
  %y = te.linear %x, %w bias %b {recipe = @r_hybrid_delayed, layer = "fc"} : tensor<128x128xbf16>, tensor<64x128xbf16>, tensor<64xbf16> -> tensor<128x64xbf16>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @r_hybrid_delayed, bias, layer = "fc"} : tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xbf16> -> tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
  return %y, %dx, %dw, %db : tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
}

te.recipe @r_plain_mxfp8 {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}
func.func @plain_mxfp8(%x: tensor<128x128xbf16>, %w: tensor<64x128xbf16>, %b: tensor<64xbf16>, %dy: tensor<128x64xbf16>)
    -> (tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>) {
  %y = te.linear %x, %w bias %b {recipe = @r_plain_mxfp8} : tensor<128x128xbf16>, tensor<64x128xbf16>, tensor<64xbf16> -> tensor<128x64xbf16>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @r_plain_mxfp8, bias} : tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xbf16> -> tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
  return %y, %dx, %dw, %db : tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
}

te.recipe @r_hybrid_mxfp8 {
  te.rule "*", "*" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.mxfp8<e4m3>>
}
func.func @hybrid_mxfp8(%x: tensor<128x128xbf16>, %w: tensor<64x128xbf16>, %b: tensor<64xbf16>, %dy: tensor<128x64xbf16>)
    -> (tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>) {
  %y = te.linear %x, %w bias %b {recipe = @r_hybrid_mxfp8} : tensor<128x128xbf16>, tensor<64x128xbf16>, tensor<64xbf16> -> tensor<128x64xbf16>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @r_hybrid_mxfp8, bias} : tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xbf16> -> tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
  return %y, %dx, %dw, %db : tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
}

te.recipe @r_plain_block_1x128 {
  te.rule "*", "*" -> #te.fp8_block<e4m3, 1x128>
}
func.func @plain_block_1x128(%x: tensor<128x128xbf16>, %w: tensor<64x128xbf16>, %b: tensor<64xbf16>, %dy: tensor<128x64xbf16>)
    -> (tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>) {
  %y = te.linear %x, %w bias %b {recipe = @r_plain_block_1x128} : tensor<128x128xbf16>, tensor<64x128xbf16>, tensor<64xbf16> -> tensor<128x64xbf16>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @r_plain_block_1x128, bias} : tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xbf16> -> tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
  return %y, %dx, %dw, %db : tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
}

te.recipe @r_hybrid_block_1x128 {
  te.rule "*", "*" -> #te.hybrid<rowwise = #te.fp8_block<e4m3, 1x128>, columnwise = #te.fp8_block<e4m3, 1x128>>
}
func.func @hybrid_block_1x128(%x: tensor<128x128xbf16>, %w: tensor<64x128xbf16>, %b: tensor<64xbf16>, %dy: tensor<128x64xbf16>)
    -> (tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>) {
  %y = te.linear %x, %w bias %b {recipe = @r_hybrid_block_1x128} : tensor<128x128xbf16>, tensor<64x128xbf16>, tensor<64xbf16> -> tensor<128x64xbf16>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @r_hybrid_block_1x128, bias} : tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xbf16> -> tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
  return %y, %dx, %dw, %db : tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
}

te.recipe @r_plain_nvfp4 {
  te.rule "*", "*" -> #te.nvfp4<>
}
func.func @plain_nvfp4(%x: tensor<128x128xbf16>, %w: tensor<64x128xbf16>, %b: tensor<64xbf16>, %dy: tensor<128x64xbf16>)
    -> (tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>) {
  %y = te.linear %x, %w bias %b {recipe = @r_plain_nvfp4} : tensor<128x128xbf16>, tensor<64x128xbf16>, tensor<64xbf16> -> tensor<128x64xbf16>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @r_plain_nvfp4, bias} : tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xbf16> -> tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
  return %y, %dx, %dw, %db : tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
}

te.recipe @r_hybrid_nvfp4 {
  te.rule "*", "*" -> #te.hybrid<rowwise = #te.nvfp4<>, columnwise = #te.nvfp4<>>
}
func.func @hybrid_nvfp4(%x: tensor<128x128xbf16>, %w: tensor<64x128xbf16>, %b: tensor<64xbf16>, %dy: tensor<128x64xbf16>)
    -> (tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>) {
  %y = te.linear %x, %w bias %b {recipe = @r_hybrid_nvfp4} : tensor<128x128xbf16>, tensor<64x128xbf16>, tensor<64xbf16> -> tensor<128x64xbf16>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @r_hybrid_nvfp4, bias} : tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xbf16> -> tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
  return %y, %dx, %dw, %db : tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
}

te.recipe @r_plain_identity_f32 {
  te.rule "*", "*" -> #te.identity<f32>
}
func.func @plain_identity_f32(%x: tensor<128x128xbf16>, %w: tensor<64x128xbf16>, %b: tensor<64xbf16>, %dy: tensor<128x64xbf16>)
    -> (tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>) {
  %y = te.linear %x, %w bias %b {recipe = @r_plain_identity_f32} : tensor<128x128xbf16>, tensor<64x128xbf16>, tensor<64xbf16> -> tensor<128x64xbf16>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @r_plain_identity_f32, bias} : tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xbf16> -> tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
  return %y, %dx, %dw, %db : tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
}

te.recipe @r_hybrid_identity_f32 {
  te.rule "*", "*" -> #te.hybrid<rowwise = #te.identity<f32>, columnwise = #te.identity<f32>>
}
func.func @hybrid_identity_f32(%x: tensor<128x128xbf16>, %w: tensor<64x128xbf16>, %b: tensor<64xbf16>, %dy: tensor<128x64xbf16>)
    -> (tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>) {
  %y = te.linear %x, %w bias %b {recipe = @r_hybrid_identity_f32} : tensor<128x128xbf16>, tensor<64x128xbf16>, tensor<64xbf16> -> tensor<128x64xbf16>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @r_hybrid_identity_f32, bias} : tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xbf16> -> tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
  return %y, %dx, %dw, %db : tensor<128x64xbf16>, tensor<128x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
}
