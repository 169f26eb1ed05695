// RUN: te-opt %s -split-input-file --pass-pipeline='builtin.module(te-legalize-target{arch=sm_80})' -verify-diagnostics
// RUN: not te-opt %s --pass-pipeline='builtin.module(te-legalize-target{arch=hopper})' 2>&1 | FileCheck %s --check-prefix=ARCH

// ARCH: error: te-legalize-target: unknown target architecture 'hopper'; expected sm_XY or sm_XYa (e.g. sm_90a)

// FP8 tensor cores start with sm_89.
func.func @fp8_on_ampere(%x: tensor<64x64xbf16>) {
  // expected-error @+1 {{scheme #te.mxfp8<e4m3> needs FP8 (sm_89 or newer), but the target is sm_80}}
  %q = te.quantize %x : tensor<64x64xbf16> -> !te.qtensor<64x64xbf16, #te.mxfp8<e4m3>, rowwise>
  return
}

// -----

// NVFP4 is storage only (its GEMM is emulated): fine on any target.
func.func @nvfp4_on_ampere(%x: tensor<64x64xbf16>) {
  %q = te.quantize %x : tensor<64x64xbf16> -> !te.qtensor<64x64xbf16, #te.nvfp4<>, rowwise>
  return
}

// -----

// expected-error @+1 {{module was legalized for sm_90a and cannot be legalized again for sm_80}}
module attributes {te.target = #te.target<"sm_90a">} {
}

// -----

// The grouped GEMM is the GEMM engine's Hopper kernel.
func.func @grouped_gemm_off_hopper(%x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) {
  // expected-error @+1 {{te.grouped_gemm runs on the GEMM engine's Hopper kernel (sm_90a) only, but the target is sm_80}}
  %y = te.grouped_gemm %x, %w, %s : tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<64x32xbf16>
  return
}
