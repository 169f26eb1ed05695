// A linear layer trained with FP8 per-tensor delayed scaling (the classic
// TransformerEngine FP8 recipe): e4m3 for activations and weights, e5m2 for
// the gradient, each scale taken from an amax history of 16 steps.
//
//   te-opt examples/delayed_fp8_linear.mlir --te-to-cuda
//   te-run examples/delayed_fp8_linear.mlir --backend cpu --random-inputs 1
//
// On sm_90 the columnwise FP8 data is stored transposed, so every GEMM is
// a native TN cuBLASLt FP8 GEMM (no emulation); dy is quantized once for
// both backward GEMMs together with the bias gradient.

te.recipe @fp8_delayed {
  te.rule "linear", "grad_output" -> #te.fp8_delayed<e5m2, history = 16>
  te.rule "linear", "*"           -> #te.fp8_delayed<e4m3, history = 16>
}

func.func @train_step(%x: tensor<512x1024xbf16>, %w: tensor<1024x1024xbf16> {te.persistent = "fc1.weight"},
                      %b: tensor<1024xbf16>, %dy: tensor<512x1024xbf16>)
    -> (tensor<512x1024xbf16>, tensor<512x1024xbf16>, tensor<1024x1024xf32>,
        tensor<1024xf32>) {
  %y = te.linear %x, %w bias %b {recipe = @fp8_delayed, layer = "fc1"}
         : tensor<512x1024xbf16>, tensor<1024x1024xbf16>, tensor<1024xbf16>
         -> tensor<512x1024xbf16>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @fp8_delayed, bias, layer = "fc1"}
         : tensor<512x1024xbf16>, tensor<512x1024xbf16>, tensor<1024x1024xbf16>
         -> tensor<512x1024xbf16>, tensor<1024x1024xf32>, tensor<1024xf32>
  return %y, %dx, %dw, %db
         : tensor<512x1024xbf16>, tensor<512x1024xbf16>, tensor<1024x1024xf32>,
           tensor<1024xf32>
}
