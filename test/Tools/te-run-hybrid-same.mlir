// Tests that a hybrid with the same scheme in both directions stores
// exactly what that scheme alone stores, for every scheme: te-run dumps both
// (the CUDA results where a GPU is present, else the CPU backend's) and the
// dumps must be identical file for file.
// RUN: rm -rf %t && mkdir -p %t
// RUN: te-run %s --entry plain_current --random-inputs 3 --cache-dir %t/cache --dump %t/plain_current > /dev/null
// RUN: te-run %s --entry hybrid_current --random-inputs 3 --cache-dir %t/cache --dump %t/hybrid_current > /dev/null
// RUN: diff -r %t/plain_current %t/hybrid_current
// RUN: te-run %s --entry plain_delayed --random-inputs 3 --cache-dir %t/cache --dump %t/plain_delayed > /dev/null
// RUN: te-run %s --entry hybrid_delayed --random-inputs 3 --cache-dir %t/cache --dump %t/hybrid_delayed > /dev/null
// RUN: diff -r %t/plain_delayed %t/hybrid_delayed
// RUN: te-run %s --entry plain_mxfp8_e4m3 --random-inputs 3 --cache-dir %t/cache --dump %t/plain_mxfp8_e4m3 > /dev/null
// RUN: te-run %s --entry hybrid_mxfp8_e4m3 --random-inputs 3 --cache-dir %t/cache --dump %t/hybrid_mxfp8_e4m3 > /dev/null
// RUN: diff -r %t/plain_mxfp8_e4m3 %t/hybrid_mxfp8_e4m3
// RUN: te-run %s --entry plain_mxfp8_e5m2 --random-inputs 3 --cache-dir %t/cache --dump %t/plain_mxfp8_e5m2 > /dev/null
// RUN: te-run %s --entry hybrid_mxfp8_e5m2 --random-inputs 3 --cache-dir %t/cache --dump %t/hybrid_mxfp8_e5m2 > /dev/null
// RUN: diff -r %t/plain_mxfp8_e5m2 %t/hybrid_mxfp8_e5m2
// RUN: te-run %s --entry plain_block_1x128 --random-inputs 3 --cache-dir %t/cache --dump %t/plain_block_1x128 > /dev/null
// RUN: te-run %s --entry hybrid_block_1x128 --random-inputs 3 --cache-dir %t/cache --dump %t/hybrid_block_1x128 > /dev/null
// RUN: diff -r %t/plain_block_1x128 %t/hybrid_block_1x128
// RUN: te-run %s --entry plain_block_128x128 --random-inputs 3 --cache-dir %t/cache --dump %t/plain_block_128x128 > /dev/null
// RUN: te-run %s --entry hybrid_block_128x128 --random-inputs 3 --cache-dir %t/cache --dump %t/hybrid_block_128x128 > /dev/null
// RUN: diff -r %t/plain_block_128x128 %t/hybrid_block_128x128
// RUN: te-run %s --entry plain_nvfp4 --random-inputs 3 --cache-dir %t/cache --dump %t/plain_nvfp4 > /dev/null
// RUN: te-run %s --entry hybrid_nvfp4 --random-inputs 3 --cache-dir %t/cache --dump %t/hybrid_nvfp4 > /dev/null
// RUN: diff -r %t/plain_nvfp4 %t/hybrid_nvfp4
// RUN: te-run %s --entry plain_nvfp4_sr --random-inputs 3 --cache-dir %t/cache --dump %t/plain_nvfp4_sr > /dev/null
// RUN: te-run %s --entry hybrid_nvfp4_sr --random-inputs 3 --cache-dir %t/cache --dump %t/hybrid_nvfp4_sr > /dev/null
// RUN: diff -r %t/plain_nvfp4_sr %t/hybrid_nvfp4_sr
// RUN: te-run %s --entry plain_nvfp4_rht --random-inputs 3 --cache-dir %t/cache --dump %t/plain_nvfp4_rht > /dev/null
// RUN: te-run %s --entry hybrid_nvfp4_rht --random-inputs 3 --cache-dir %t/cache --dump %t/hybrid_nvfp4_rht > /dev/null
// RUN: diff -r %t/plain_nvfp4_rht %t/hybrid_nvfp4_rht
// RUN: te-run %s --entry plain_nvfp4_2d --random-inputs 3 --cache-dir %t/cache --dump %t/plain_nvfp4_2d > /dev/null
// RUN: te-run %s --entry hybrid_nvfp4_2d --random-inputs 3 --cache-dir %t/cache --dump %t/hybrid_nvfp4_2d > /dev/null
// RUN: diff -r %t/plain_nvfp4_2d %t/hybrid_nvfp4_2d
// RUN: te-run %s --entry plain_identity --random-inputs 3 --cache-dir %t/cache --dump %t/plain_identity > /dev/null
// RUN: te-run %s --entry hybrid_identity --random-inputs 3 --cache-dir %t/cache --dump %t/hybrid_identity > /dev/null
// RUN: diff -r %t/plain_identity %t/hybrid_identity
// RUN: ls %t/hybrid_nvfp4_rht | FileCheck %s
// CHECK: result0.columnwise.amax.npy
// CHECK: result0.columnwise.data.npy
// CHECK: result0.rowwise.scale_inv.npy

func.func @plain_current(%x: tensor<128x256xbf16>) -> !te.qtensor<128x256xbf16, #te.fp8_current<e4m3>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<128x256xbf16> -> !te.qtensor<128x256xbf16, #te.fp8_current<e4m3>, rowwise|columnwise>
  return %q : !te.qtensor<128x256xbf16, #te.fp8_current<e4m3>, rowwise|columnwise>
}

func.func @hybrid_current(%x: tensor<128x256xbf16>) -> !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.fp8_current<e4m3>, columnwise = #te.fp8_current<e4m3>>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<128x256xbf16> -> !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.fp8_current<e4m3>, columnwise = #te.fp8_current<e4m3>>, rowwise|columnwise>
  return %q : !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.fp8_current<e4m3>, columnwise = #te.fp8_current<e4m3>>, rowwise|columnwise>
}

func.func @plain_delayed(%x: tensor<128x256xbf16>) -> !te.qtensor<128x256xbf16, #te.fp8_delayed<e4m3, history = 16>, rowwise|columnwise> {
  %q = te.quantize %x {scaling_state = "x.delayed_scaling"} : tensor<128x256xbf16> -> !te.qtensor<128x256xbf16, #te.fp8_delayed<e4m3, history = 16>, rowwise|columnwise>
  return %q : !te.qtensor<128x256xbf16, #te.fp8_delayed<e4m3, history = 16>, rowwise|columnwise>
}

func.func @hybrid_delayed(%x: tensor<128x256xbf16>) -> !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.fp8_delayed<e4m3, history = 16>, columnwise = #te.fp8_delayed<e4m3, history = 16>>, rowwise|columnwise> {
  %q = te.quantize %x {scaling_state = "x.delayed_scaling"} : tensor<128x256xbf16> -> !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.fp8_delayed<e4m3, history = 16>, columnwise = #te.fp8_delayed<e4m3, history = 16>>, rowwise|columnwise>
  return %q : !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.fp8_delayed<e4m3, history = 16>, columnwise = #te.fp8_delayed<e4m3, history = 16>>, rowwise|columnwise>
}

func.func @plain_mxfp8_e4m3(%x: tensor<128x256xbf16>) -> !te.qtensor<128x256xbf16, #te.mxfp8<e4m3>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<128x256xbf16> -> !te.qtensor<128x256xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>
  return %q : !te.qtensor<128x256xbf16, #te.mxfp8<e4m3>, rowwise|columnwise>
}

func.func @hybrid_mxfp8_e4m3(%x: tensor<128x256xbf16>) -> !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.mxfp8<e4m3>>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<128x256xbf16> -> !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.mxfp8<e4m3>>, rowwise|columnwise>
  return %q : !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.mxfp8<e4m3>>, rowwise|columnwise>
}

func.func @plain_mxfp8_e5m2(%x: tensor<128x256xbf16>) -> !te.qtensor<128x256xbf16, #te.mxfp8<e5m2>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<128x256xbf16> -> !te.qtensor<128x256xbf16, #te.mxfp8<e5m2>, rowwise|columnwise>
  return %q : !te.qtensor<128x256xbf16, #te.mxfp8<e5m2>, rowwise|columnwise>
}

func.func @hybrid_mxfp8_e5m2(%x: tensor<128x256xbf16>) -> !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.mxfp8<e5m2>, columnwise = #te.mxfp8<e5m2>>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<128x256xbf16> -> !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.mxfp8<e5m2>, columnwise = #te.mxfp8<e5m2>>, rowwise|columnwise>
  return %q : !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.mxfp8<e5m2>, columnwise = #te.mxfp8<e5m2>>, rowwise|columnwise>
}

func.func @plain_block_1x128(%x: tensor<128x256xbf16>) -> !te.qtensor<128x256xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<128x256xbf16> -> !te.qtensor<128x256xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>
  return %q : !te.qtensor<128x256xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>
}

func.func @hybrid_block_1x128(%x: tensor<128x256xbf16>) -> !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.fp8_block<e4m3, 1x128>, columnwise = #te.fp8_block<e4m3, 1x128>>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<128x256xbf16> -> !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.fp8_block<e4m3, 1x128>, columnwise = #te.fp8_block<e4m3, 1x128>>, rowwise|columnwise>
  return %q : !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.fp8_block<e4m3, 1x128>, columnwise = #te.fp8_block<e4m3, 1x128>>, rowwise|columnwise>
}

func.func @plain_block_128x128(%x: tensor<128x256xbf16>) -> !te.qtensor<128x256xbf16, #te.fp8_block<e4m3, 128x128, pow2>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<128x256xbf16> -> !te.qtensor<128x256xbf16, #te.fp8_block<e4m3, 128x128, pow2>, rowwise|columnwise>
  return %q : !te.qtensor<128x256xbf16, #te.fp8_block<e4m3, 128x128, pow2>, rowwise|columnwise>
}

func.func @hybrid_block_128x128(%x: tensor<128x256xbf16>) -> !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.fp8_block<e4m3, 128x128, pow2>, columnwise = #te.fp8_block<e4m3, 128x128, pow2>>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<128x256xbf16> -> !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.fp8_block<e4m3, 128x128, pow2>, columnwise = #te.fp8_block<e4m3, 128x128, pow2>>, rowwise|columnwise>
  return %q : !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.fp8_block<e4m3, 128x128, pow2>, columnwise = #te.fp8_block<e4m3, 128x128, pow2>>, rowwise|columnwise>
}

func.func @plain_nvfp4(%x: tensor<128x256xbf16>) -> !te.qtensor<128x256xbf16, #te.nvfp4<>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<128x256xbf16> -> !te.qtensor<128x256xbf16, #te.nvfp4<>, rowwise|columnwise>
  return %q : !te.qtensor<128x256xbf16, #te.nvfp4<>, rowwise|columnwise>
}

func.func @hybrid_nvfp4(%x: tensor<128x256xbf16>) -> !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.nvfp4<>, columnwise = #te.nvfp4<>>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<128x256xbf16> -> !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.nvfp4<>, columnwise = #te.nvfp4<>>, rowwise|columnwise>
  return %q : !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.nvfp4<>, columnwise = #te.nvfp4<>>, rowwise|columnwise>
}

func.func @plain_nvfp4_sr(%x: tensor<128x256xbf16>) -> !te.qtensor<128x256xbf16, #te.nvfp4<sr>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<128x256xbf16> -> !te.qtensor<128x256xbf16, #te.nvfp4<sr>, rowwise|columnwise>
  return %q : !te.qtensor<128x256xbf16, #te.nvfp4<sr>, rowwise|columnwise>
}

func.func @hybrid_nvfp4_sr(%x: tensor<128x256xbf16>) -> !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.nvfp4<sr>, columnwise = #te.nvfp4<sr>>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<128x256xbf16> -> !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.nvfp4<sr>, columnwise = #te.nvfp4<sr>>, rowwise|columnwise>
  return %q : !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.nvfp4<sr>, columnwise = #te.nvfp4<sr>>, rowwise|columnwise>
}

func.func @plain_nvfp4_rht(%x: tensor<128x256xbf16>) -> !te.qtensor<128x256xbf16, #te.nvfp4<rht>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<128x256xbf16> -> !te.qtensor<128x256xbf16, #te.nvfp4<rht>, rowwise|columnwise>
  return %q : !te.qtensor<128x256xbf16, #te.nvfp4<rht>, rowwise|columnwise>
}

func.func @hybrid_nvfp4_rht(%x: tensor<128x256xbf16>) -> !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.nvfp4<rht>, columnwise = #te.nvfp4<rht>>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<128x256xbf16> -> !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.nvfp4<rht>, columnwise = #te.nvfp4<rht>>, rowwise|columnwise>
  return %q : !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.nvfp4<rht>, columnwise = #te.nvfp4<rht>>, rowwise|columnwise>
}

func.func @plain_nvfp4_2d(%x: tensor<128x256xbf16>) -> !te.qtensor<128x256xbf16, #te.nvfp4<block2d>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<128x256xbf16> -> !te.qtensor<128x256xbf16, #te.nvfp4<block2d>, rowwise|columnwise>
  return %q : !te.qtensor<128x256xbf16, #te.nvfp4<block2d>, rowwise|columnwise>
}

func.func @hybrid_nvfp4_2d(%x: tensor<128x256xbf16>) -> !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.nvfp4<block2d>, columnwise = #te.nvfp4<block2d>>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<128x256xbf16> -> !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.nvfp4<block2d>, columnwise = #te.nvfp4<block2d>>, rowwise|columnwise>
  return %q : !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.nvfp4<block2d>, columnwise = #te.nvfp4<block2d>>, rowwise|columnwise>
}

func.func @plain_identity(%x: tensor<128x256xbf16>) -> !te.qtensor<128x256xbf16, #te.identity<bf16>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<128x256xbf16> -> !te.qtensor<128x256xbf16, #te.identity<bf16>, rowwise|columnwise>
  return %q : !te.qtensor<128x256xbf16, #te.identity<bf16>, rowwise|columnwise>
}

func.func @hybrid_identity(%x: tensor<128x256xbf16>) -> !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.identity<bf16>, columnwise = #te.identity<bf16>>, rowwise|columnwise> {
  %q = te.quantize %x : tensor<128x256xbf16> -> !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.identity<bf16>, columnwise = #te.identity<bf16>>, rowwise|columnwise>
  return %q : !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.identity<bf16>, columnwise = #te.identity<bf16>>, rowwise|columnwise>
}
