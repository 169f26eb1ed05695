// RUN: te-run %s --random-inputs 5 --entry mxfp8_nvfp4,block_mxfp8,current_nvfp4,hybrid_block,grouped_mxfp8_block,grouped_mxfp8_block_grad,grouped_block_mxfp8_grad,grouped_current_mxfp8,grouped_delayed_block,grouped_nvfp4_mxfp8_grad | FileCheck %s

// Tests linear layers whose GEMMs pair operands quantized by two scheme
// families, each dequantized to bf16 in the direction read, then the bf16
// GEMM (docs/Numerics.md §11), on the CPU backend (scripts/gpu-run.sh runs
// the same with --check against the GPU). A train step (fprop, dgrad,
// wgrad, bias gradient) per recipe:
// - mxfp8_nvfp4: MXFP8 x and W, NVFP4 gradients - the dgrad and the wgrad
//   pair NVFP4 dy with MXFP8 W and x;
// - block_mxfp8: FP8 block x and dy (E5M2), MXFP8 W - fprop and dgrad pair
//   the two, the wgrad is block by block on cuBLASLt;
// - current_nvfp4: per-tensor current x and dy (E5M2), NVFP4 W with 16x16
//   blocks;
// - hybrid_block: TE's MXFP8 forward / NVFP4 backward, but W's columnwise
//   copy in FP8 128x128 blocks: the dgrad pairs NVFP4 dy with it, the
//   wgrad keeps NVFP4 (with the Hadamard transform) on both sides.
// Then a grouped layer of 4 experts (ragged splits) with MXFP8 tokens and
// a block-FP8 stack, forward and backward with MXFP8 E5M2 gradients: the
// fprop and the dgrad run the engine's BF16 kernel on dequantized
// operands, the wgrad pairs MXFP8 with MXFP8; then the backward of block-FP8
// tokens and stack with MXFP8 gradients and a bias, whose wgrad pairs
// MXFP8 dy with block-FP8 x, each expert's codes laid out as their values.
// Last a grouped layer under a tensor-wide scheme on one operand only
// (grouped_current_mxfp8: per-tensor current tokens by an MXFP8 stack, then
// the hybrid backward of NVFP4 gradients by the MXFP8 stack read
// columnwise; grouped_delayed_block: delayed-scaling tokens, each expert's
// own amax history, by a block-FP8 stack): the grouped GEMM quantizes that
// operand per expert to its values, the other is dequantized, the BF16
// kernel multiplies them.
// CHECK: call 1 mxfp8_nvfp4: rms(result0)=
// CHECK: call 2 block_mxfp8: rms(result0)=
// CHECK: call 3 current_nvfp4: rms(result0)=
// CHECK: call 4 hybrid_block: rms(result0)=
// CHECK: call 5 grouped_mxfp8_block: rms(result0)=
// CHECK: call 6 grouped_mxfp8_block_grad: rms(result0)=
// CHECK: call 7 grouped_block_mxfp8_grad: rms(result0)=
// CHECK: call 8 grouped_current_mxfp8: rms(result0)=
// CHECK: call 9 grouped_delayed_block: rms(result0)=
// CHECK: call 10 grouped_nvfp4_mxfp8_grad: rms(result0)=
// CHECK: result0 ({{.*}}): data[512x256 bf16]
// CHECK: result1 ({{.*}}): data[512x256 f32]

te.recipe @mxfp8_nvfp4_recipe {
  te.rule "linear", "grad_output" -> #te.nvfp4<sr>
  te.rule "linear", "*"           -> #te.mxfp8<e4m3>
  te.rule "*", "*"                -> #te.identity<bf16>
}
te.recipe @block_mxfp8_recipe {
  te.rule "linear", "input"       -> #te.fp8_block<e4m3, 1x128>
  te.rule "linear", "weight"      -> #te.mxfp8<e4m3>
  te.rule "linear", "grad_output" -> #te.fp8_block<e5m2, 1x128>
  te.rule "*", "*"                -> #te.identity<bf16>
}
te.recipe @current_nvfp4_recipe {
  te.rule "linear", "input"       -> #te.fp8_current<e4m3>
  te.rule "linear", "weight"      -> #te.nvfp4<block2d>
  te.rule "linear", "grad_output" -> #te.fp8_current<e5m2>
  te.rule "*", "*"                -> #te.identity<bf16>
}
te.recipe @hybrid_block_recipe {
  te.rule "linear", "input"       -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<rht>>
  te.rule "linear", "weight"      -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.fp8_block<e4m3, 128x128>>
  te.rule "linear", "grad_output" -> #te.nvfp4<rht, sr>
  te.rule "*", "*"                -> #te.identity<bf16>
}
te.recipe @grouped {
  te.rule "grouped_linear", "input"       -> #te.mxfp8<e4m3>
  te.rule "grouped_linear", "weight"      -> #te.fp8_block<e4m3, 128x128>
  te.rule "grouped_linear", "grad_output" -> #te.mxfp8<e5m2>
  te.rule "*", "*"                        -> #te.identity<bf16>
}
te.recipe @grouped_block {
  te.rule "grouped_linear", "input"       -> #te.fp8_block<e4m3, 1x128>
  te.rule "grouped_linear", "weight"      -> #te.fp8_block<e4m3, 128x128>
  te.rule "grouped_linear", "grad_output" -> #te.mxfp8<e5m2>
  te.rule "*", "*"                        -> #te.identity<bf16>
}
te.recipe @grouped_delayed {
  te.rule "grouped_linear", "input"       -> #te.fp8_delayed<e4m3, history = 4>
  te.rule "grouped_linear", "weight"      -> #te.fp8_block<e4m3, 128x128>
  te.rule "*", "*"                        -> #te.identity<bf16>
}
te.recipe @grouped_tensor_wide {
  te.rule "grouped_linear", "input"       -> #te.fp8_current<e4m3>
  te.rule "grouped_linear", "weight"      -> #te.mxfp8<e4m3>
  te.rule "grouped_linear", "grad_output" -> #te.nvfp4<sr>
  te.rule "*", "*"                        -> #te.identity<bf16>
}

func.func @mxfp8_nvfp4(%x: tensor<256x256xbf16>, %w: tensor<128x256xbf16>, %b: tensor<128xbf16>, %dy: tensor<256x128xbf16>)
    -> (tensor<256x128xbf16>, tensor<256x256xbf16>, tensor<128x256xf32>, tensor<128xf32>) {
  %y = te.linear %x, %w bias %b {recipe = @mxfp8_nvfp4_recipe} : tensor<256x256xbf16>, tensor<128x256xbf16>, tensor<128xbf16> -> tensor<256x128xbf16>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @mxfp8_nvfp4_recipe, bias} : tensor<256x128xbf16>, tensor<256x256xbf16>, tensor<128x256xbf16> -> tensor<256x256xbf16>, tensor<128x256xf32>, tensor<128xf32>
  return %y, %dx, %dw, %db : tensor<256x128xbf16>, tensor<256x256xbf16>, tensor<128x256xf32>, tensor<128xf32>
}

func.func @block_mxfp8(%x: tensor<256x256xbf16>, %w: tensor<128x256xbf16>, %b: tensor<128xbf16>, %dy: tensor<256x128xbf16>)
    -> (tensor<256x128xbf16>, tensor<256x256xbf16>, tensor<128x256xf32>, tensor<128xf32>) {
  %y = te.linear %x, %w bias %b {recipe = @block_mxfp8_recipe} : tensor<256x256xbf16>, tensor<128x256xbf16>, tensor<128xbf16> -> tensor<256x128xbf16>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @block_mxfp8_recipe, bias} : tensor<256x128xbf16>, tensor<256x256xbf16>, tensor<128x256xbf16> -> tensor<256x256xbf16>, tensor<128x256xf32>, tensor<128xf32>
  return %y, %dx, %dw, %db : tensor<256x128xbf16>, tensor<256x256xbf16>, tensor<128x256xf32>, tensor<128xf32>
}

func.func @current_nvfp4(%x: tensor<256x256xbf16>, %w: tensor<128x256xbf16>, %b: tensor<128xbf16>, %dy: tensor<256x128xbf16>)
    -> (tensor<256x128xbf16>, tensor<256x256xbf16>, tensor<128x256xf32>, tensor<128xf32>) {
  %y = te.linear %x, %w bias %b {recipe = @current_nvfp4_recipe} : tensor<256x256xbf16>, tensor<128x256xbf16>, tensor<128xbf16> -> tensor<256x128xbf16>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @current_nvfp4_recipe, bias} : tensor<256x128xbf16>, tensor<256x256xbf16>, tensor<128x256xbf16> -> tensor<256x256xbf16>, tensor<128x256xf32>, tensor<128xf32>
  return %y, %dx, %dw, %db : tensor<256x128xbf16>, tensor<256x256xbf16>, tensor<128x256xf32>, tensor<128xf32>
}

func.func @hybrid_block(%x: tensor<256x256xbf16>, %w: tensor<128x256xbf16>, %b: tensor<128xbf16>, %dy: tensor<256x128xbf16>)
    -> (tensor<256x128xbf16>, tensor<256x256xbf16>, tensor<128x256xf32>, tensor<128xf32>) {
  %y = te.linear %x, %w bias %b {recipe = @hybrid_block_recipe} : tensor<256x256xbf16>, tensor<128x256xbf16>, tensor<128xbf16> -> tensor<256x128xbf16>
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {recipe = @hybrid_block_recipe, bias} : tensor<256x128xbf16>, tensor<256x256xbf16>, tensor<128x256xbf16> -> tensor<256x256xbf16>, tensor<128x256xf32>, tensor<128xf32>
  return %y, %dx, %dw, %db : tensor<256x128xbf16>, tensor<256x256xbf16>, tensor<128x256xf32>, tensor<128xf32>
}

func.func @grouped_mxfp8_block(%x: tensor<512x256xbf16>, %w: tensor<4x128x256xbf16>, %b: tensor<4x128xbf16>, %s: tensor<4xi64>) -> tensor<512x128xbf16> {
  %y = te.grouped_linear %x, %w, %s bias %b {recipe = @grouped} : tensor<512x256xbf16>, tensor<4x128x256xbf16>, tensor<4xi64>, tensor<4x128xbf16> -> tensor<512x128xbf16>
  return %y : tensor<512x128xbf16>
}

func.func @grouped_mxfp8_block_grad(%dy: tensor<512x128xbf16>, %x: tensor<512x256xbf16>, %w: tensor<4x128x256xbf16>, %s: tensor<4xi64>)
    -> (tensor<512x256xbf16>, tensor<4x128x256xf32>) {
  %dx, %dw = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @grouped} : tensor<512x128xbf16>, tensor<512x256xbf16>, tensor<4x128x256xbf16>, tensor<4xi64> -> tensor<512x256xbf16>, tensor<4x128x256xf32>
  return %dx, %dw : tensor<512x256xbf16>, tensor<4x128x256xf32>
}

func.func @grouped_block_mxfp8_grad(%dy: tensor<512x128xbf16>, %x: tensor<512x256xbf16>, %w: tensor<4x128x256xbf16>, %s: tensor<4xi64>)
    -> (tensor<512x256xbf16>, tensor<4x128x256xf32>, tensor<4x128xf32>) {
  %dx, %dw, %db = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @grouped_block, bias} : tensor<512x128xbf16>, tensor<512x256xbf16>, tensor<4x128x256xbf16>, tensor<4xi64> -> tensor<512x256xbf16>, tensor<4x128x256xf32>, tensor<4x128xf32>
  return %dx, %dw, %db : tensor<512x256xbf16>, tensor<4x128x256xf32>, tensor<4x128xf32>
}

func.func @grouped_current_mxfp8(%x: tensor<512x256xbf16>, %w: tensor<4x128x256xbf16>, %b: tensor<4x128xbf16>, %s: tensor<4xi64>) -> tensor<512x128xbf16> {
  %y = te.grouped_linear %x, %w, %s bias %b {recipe = @grouped_tensor_wide} : tensor<512x256xbf16>, tensor<4x128x256xbf16>, tensor<4xi64>, tensor<4x128xbf16> -> tensor<512x128xbf16>
  return %y : tensor<512x128xbf16>
}

func.func @grouped_delayed_block(%x: tensor<512x256xbf16>, %w: tensor<4x128x256xbf16>, %s: tensor<4xi64>) -> tensor<512x128xbf16> {
  %y = te.grouped_linear %x, %w, %s {recipe = @grouped_delayed, layer = "moe_delayed"} : tensor<512x256xbf16>, tensor<4x128x256xbf16>, tensor<4xi64> -> tensor<512x128xbf16>
  return %y : tensor<512x128xbf16>
}

func.func @grouped_nvfp4_mxfp8_grad(%dy: tensor<512x128xbf16>, %x: tensor<512x256xbf16>, %w: tensor<4x128x256xbf16>, %s: tensor<4xi64>)
    -> (tensor<512x256xbf16>, tensor<4x128x256xf32>) {
  %dx, %dw = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @grouped_tensor_wide} : tensor<512x128xbf16>, tensor<512x256xbf16>, tensor<4x128x256xbf16>, tensor<4xi64> -> tensor<512x256xbf16>, tensor<4x128x256xf32>
  return %dx, %dw : tensor<512x256xbf16>, tensor<4x128x256xf32>
}
