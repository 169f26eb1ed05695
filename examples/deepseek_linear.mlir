// A linear layer trained with FP8 block scaling (DeepSeek-style): 1x128
// tiles with power-of-two scales for activations and gradients, 128x128
// tiles for the weight.
//
//   te-opt examples/deepseek_linear.mlir --te-to-cuda
//   te-run examples/deepseek_linear.mlir --random-inputs 1 --check
//
// Every GEMM is a native cuBLASLt block-scaled GEMM on sm_90: fprop and
// dgrad pair 1x128 with 128x128 (x and dy rowwise with W, W columnwise
// through its transposed copy), wgrad pairs 1x128 with 1x128 (dy and x
// columnwise). x, W and dy are each quantized once, dy together with the
// bias gradient. bench/linear_block_fp8_8192.mlir is the same step at
// 8192x8192x8192.

te.recipe @fp8_block {
  te.rule "linear", "weight" -> #te.fp8_block<e4m3, 128x128, pow2>
  te.rule "linear", "*"      -> #te.fp8_block<e4m3, 1x128, pow2>
}

func.func @train_step(%x: tensor<1024x512xbf16>, %w: tensor<768x512xbf16> {te.persistent = "fc1.weight"},
                      %b: tensor<768xbf16>, %dy: tensor<1024x768xbf16>)
    -> (tensor<1024x768xbf16>, tensor<1024x512xbf16>, tensor<768x512xf32>,
        tensor<768xf32>) {
  %y = te.linear %x, %w bias %b {recipe = @fp8_block}
         : tensor<1024x512xbf16>, tensor<768x512xbf16>, tensor<768xbf16>
         -> tensor<1024x768xbf16>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @fp8_block, bias}
         : tensor<1024x768xbf16>, tensor<1024x512xbf16>, tensor<768x512xbf16>
         -> tensor<1024x512xbf16>, tensor<768x512xf32>, tensor<768xf32>
  return %y, %dx, %dw, %db
         : tensor<1024x768xbf16>, tensor<1024x512xbf16>, tensor<768x512xf32>,
           tensor<768xf32>
}
