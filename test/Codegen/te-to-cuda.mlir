// RUN: te-translate --te-to-cuda %s | FileCheck %s

// Tests that the te-to-cuda pipeline fuses the two quantizations and the
// bias gradient of one tensor into one generated kernel with one stage per
// direction (MXFP8 rowwise, NVFP4 columnwise), an amax pre-pass for NVFP4's
// tensor scale and the bias-gradient finalize.
// CHECK-LABEL: // ===== entry @hybrid_grad kernel te_fused_quantize_0 (sm_90a)
// CHECK: // launch te_fused_quantize_0_amax grid
// CHECK: // launch te_fused_quantize_0 grid 2 block 256
// CHECK: // launch te_fused_quantize_0_dbias grid 2 block 64
// CHECK: #include "te/device/QuantizeKernel.cuh"
// CHECK: extern "C" __global__ void __launch_bounds__(256, 4)
// CHECK-NEXT: te_fused_quantize_0(const void *x, long long m, long long k,
// CHECK: te::dev::quantizeTile<te::dev::SourceType::BF16, true,
// CHECK-NEXT: te::dev::Mxfp8Stage<te::dev::Fp8Format::E4M3, true>,
// CHECK-NEXT: te::dev::Nvfp4Stage<false, false, true>>(x, m, k, args, bias_partial);
// CHECK: te_fused_quantize_0_amax(const void *x, long long n, float *out)
// CHECK: te_fused_quantize_0_dbias(const float *partial
// CHECK-NOT: ===== entry @hybrid_grad kernel
func.func @hybrid_grad(%dy: tensor<256x128xbf16>)
    -> (!te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>,
        !te.qtensor<256x128xbf16, #te.nvfp4<sr>, columnwise>, tensor<128xf32>) {
  %r = te.quantize %dy : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>
  %c = te.quantize %dy : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.nvfp4<sr>, columnwise>
  %db = te.bias_grad %dy : tensor<256x128xbf16> -> tensor<128xf32>
  return %r, %c, %db : !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>,
                       !te.qtensor<256x128xbf16, #te.nvfp4<sr>, columnwise>, tensor<128xf32>
}

// Tests that an f32 tensor (an FP32 master weight, say) quantizes with the
// same tile kernel: three CTAs per SM and the low-half plane of the tile in
// dynamic shared memory.
// CHECK-LABEL: // ===== entry @f32_master kernel te_quantize_0 (sm_90a)
// CHECK: extern "C" __global__ void __launch_bounds__(256, 3)
// CHECK: te::dev::quantizeTile<te::dev::SourceType::F32, false,
// CHECK-NEXT: te::dev::Mxfp8Stage<te::dev::Fp8Format::E4M3, true>,
// CHECK-NEXT: te::dev::Mxfp8Stage<te::dev::Fp8Format::E4M3, false>>
func.func @f32_master(%w: tensor<256x384xf32>) -> !te.qtensor<256x384xf32, #te.mxfp8<e4m3>, rowwise|columnwise> {
  %q = te.quantize %w : tensor<256x384xf32> -> !te.qtensor<256x384xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
  return %q : !te.qtensor<256x384xf32, #te.mxfp8<e4m3>, rowwise|columnwise>
}

// Tests a per-tensor scheme in both directions of one value (f16 input):
// the block-scaled stage types carry the source type, the current-scaling
// stages share one amax pre-pass.
// CHECK-LABEL: // ===== entry @block_and_current kernel te_fused_quantize_0 (sm_90a)
// CHECK: te::dev::quantizeTile<te::dev::SourceType::F16, false,
// CHECK-NEXT: te::dev::Fp8BlockStage<te::dev::Fp8Format::E4M3, true, false, false, te::dev::SourceType::F16>,
// CHECK-NEXT: te::dev::Fp8BlockStage<te::dev::Fp8Format::E4M3, false, false, false, te::dev::SourceType::F16>,
// CHECK-NEXT: te::dev::Fp8PerTensorStage<te::dev::Fp8Format::E5M2, true, false, true>>
func.func @block_and_current(%x: tensor<200x160xf16>)
    -> (!te.qtensor<200x160xf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>,
        !te.qtensor<200x160xf16, #te.fp8_current<e5m2, pow2>, rowwise>) {
  %a = te.quantize %x : tensor<200x160xf16> -> !te.qtensor<200x160xf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>
  %b = te.quantize %x : tensor<200x160xf16> -> !te.qtensor<200x160xf16, #te.fp8_current<e5m2, pow2>, rowwise>
  return %a, %b : !te.qtensor<200x160xf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>,
                  !te.qtensor<200x160xf16, #te.fp8_current<e5m2, pow2>, rowwise>
}

// Tests a dequantize: a kernel of its own, with the decoder of the direction
// it reads (NVFP4 columnwise data is stored transposed) and the output type.
// CHECK-LABEL: // ===== entry @roundtrip kernel te_quantize_0 (sm_90a)
// CHECK-LABEL: // ===== entry @roundtrip kernel te_dequantize_1 (sm_90a)
// CHECK: // launch te_dequantize_1 grid {{[0-9]+}} block 256
// CHECK: #include "te/device/DequantizeKernel.cuh"
// CHECK: te_dequantize_1(const unsigned char *data, const void *scale, const float *amax,
// CHECK: te::dev::dequantizeTensor<te::dev::Nvfp4Decode<false>, 2, te::dev::DequantPath::Tiles>(
func.func @roundtrip(%x: tensor<64x128xbf16>) -> tensor<64x128xf32> {
  %q = te.quantize %x : tensor<64x128xbf16> -> !te.qtensor<64x128xbf16, #te.nvfp4<>, columnwise>
  %y = te.dequantize %q columnwise : !te.qtensor<64x128xbf16, #te.nvfp4<>, columnwise> -> tensor<64x128xf32>
  return %y : tensor<64x128xf32>
}

// Tests that each GEMM becomes one cuBLASLt call on its operands as they
// are stored: a bf16 tensor read in either orientation without a copy.
// CHECK-LABEL: // ===== entry @bf16_gemms kernel te_gemm_0 (sm_90a)
// CHECK-NEXT: // cuBLASLt GEMM M=64 N=16 K=32: A bf16 [M,K] x B bf16 [N,K] -> bf16
// CHECK-LABEL: // ===== entry @bf16_gemms kernel te_gemm_1 (sm_90a)
// CHECK-NEXT: // cuBLASLt GEMM M=32 N=16 K=64: A bf16 [K,M] x B bf16 [K,N] -> f32
func.func @bf16_gemms(%a: tensor<64x32xbf16>, %b: tensor<16x32xbf16>, %c: tensor<64x16xbf16>)
    -> (tensor<64x16xbf16>, tensor<32x16xf32>) {
  %y = te.gemm %a, %b {transpose_b} : tensor<64x32xbf16>, tensor<16x32xbf16> -> tensor<64x16xbf16>
  %z = te.gemm %a, %c {transpose_a} : tensor<64x32xbf16>, tensor<64x16xbf16> -> tensor<32x16xf32>
  return %y, %z : tensor<64x16xbf16>, tensor<32x16xf32>
}

// Tests that block-FP8 GEMMs read the K-contiguous storage of the direction
// they contract: rowwise data as stored, columnwise data through its
// transposed copy (sm_90), with the scale mode of each operand.
// CHECK-LABEL: // ===== entry @block_fp8 kernel te_gemm_3 (sm_90a)
// CHECK-NEXT: // cuBLASLt GEMM M=256 N=128 K=512: A e4m3 1x128 [M,K] x B e4m3 128x128 [N,K] -> bf16 + bias bf16
// CHECK-LABEL: // ===== entry @block_fp8 kernel te_gemm_4 (sm_90a)
// CHECK-NEXT: // cuBLASLt GEMM M=128 N=512 K=256: A e4m3 1x128 [M,K] x B e4m3 1x128 [N,K] -> f32
func.func @block_fp8(%x: tensor<256x512xbf16>, %w: tensor<128x512xbf16>, %b: tensor<128xbf16>,
                     %dy: tensor<256x128xbf16>) -> (tensor<256x128xbf16>, tensor<128x512xf32>) {
  %qx = te.quantize %x : tensor<256x512xbf16> -> !te.qtensor<256x512xbf16, #te.fp8_block<e4m3, 1x128>, rowwise | columnwise>
  %qw = te.quantize %w : tensor<128x512xbf16> -> !te.qtensor<128x512xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>
  %qdy = te.quantize %dy : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.fp8_block<e4m3, 1x128>, columnwise>
  %y = te.gemm %qx, %qw bias %b {transpose_b}
      : !te.qtensor<256x512xbf16, #te.fp8_block<e4m3, 1x128>, rowwise | columnwise>,
        !te.qtensor<128x512xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>, tensor<128xbf16> -> tensor<256x128xbf16>
  %dw = te.gemm %qdy, %qx {transpose_a}
      : !te.qtensor<256x128xbf16, #te.fp8_block<e4m3, 1x128>, columnwise>,
        !te.qtensor<256x512xbf16, #te.fp8_block<e4m3, 1x128>, rowwise | columnwise> -> tensor<128x512xf32>
  return %y, %dw : tensor<256x128xbf16>, tensor<128x512xf32>
}

// Tests that NVFP4 with the random Hadamard transform and 16x16 blocks is
// generated: the transformed-amax pre-pass, then the RHT column stage in its
// 16x16-block form.
// CHECK-LABEL: // ===== entry @rht2d kernel te_quantize_0 (sm_90a)
// CHECK-NEXT: // launch te_quantize_0_rht_amax grid 1 block 256
// CHECK-NEXT: // launch te_quantize_0 grid 1 block 256
// CHECK: te::dev::Nvfp4RhtColumnStage<false, true>>(x, m, k, args, bias_partial);
func.func @rht2d(%x: tensor<64x64xbf16>) -> !te.qtensor<64x64xbf16, #te.nvfp4<rht, block2d>, columnwise> {
  %q = te.quantize %x : tensor<64x64xbf16> -> !te.qtensor<64x64xbf16, #te.nvfp4<rht, block2d>, columnwise>
  return %q : !te.qtensor<64x64xbf16, #te.nvfp4<rht, block2d>, columnwise>
}
