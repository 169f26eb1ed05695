// The DeepSeek-V3-like expert GEMM of docs/Performance.md under per-tensor
// FP8 current scaling: 8 experts, 32768 token rows sorted by expert
// (te-run's random split sizes: uneven, one expert empty), K = 7168,
// N = 4096. Each expert's tokens and weight are scaled by their own amax,
// so the grouped GEMM quantizes both itself (an amax pass and a cast per
// operand) before the block-scaled GEMM; @current_grad is its backward (the
// dgrad quantizes dy and the stack's columnwise copy, the grouped wgrad dy
// and x, each per expert). @block and @block_grad are the same layer under
// FP8 block scaling, @nvfp4 its forward under NVFP4 (each expert's tensor
// scale; quantized and dequantized per expert for the BF16 kernel on
// Hopper) and @nvfp4_grad its backward under TE's NVFP4 recipe (dy
// stochastically rounded, the wgrad's operands Hadamard-transformed, each
// expert's values for the BF16 kernels), @bf16 and @bf16_grad in BF16, for
// the comparison in one run; @nvfp4_1d_grad is @nvfp4_grad with 1x16 weight
// blocks (the dgrad casts the stack's 16x1 columns); @mlp and @mlp_grad are
// two such layers in a row and their backward, @mlp_delayed the two under
// delayed scaling:
//
//   te-run bench/moe_fp8_current_32768.mlir --random-inputs 1 --bench 20 --entry current
//   te-run bench/moe_fp8_current_32768.mlir --random-inputs 1 --bench 20 --entry block

te.recipe @per_tensor {
  te.rule "grouped_linear", "*" -> #te.fp8_current<e4m3>
}
te.recipe @nv {
  te.rule "grouped_linear", "weight" -> #te.nvfp4<block2d>
  te.rule "grouped_linear", "*"      -> #te.nvfp4<>
}
te.recipe @nv_train {
  te.rule "grouped_linear", "weight"      -> #te.nvfp4<block2d>
  te.rule "grouped_linear", "input"       -> #te.nvfp4<rht>
  te.rule "grouped_linear", "grad_output" -> #te.nvfp4<rht, sr>
}
// TE's NVFP4 training recipe with 1x16 weight blocks instead of 16x16: the
// dgrad then reads the stack's own 16x1 columnwise quantization.
te.recipe @nv_train_1d {
  te.rule "grouped_linear", "weight"      -> #te.nvfp4<>
  te.rule "grouped_linear", "input"       -> #te.nvfp4<rht>
  te.rule "grouped_linear", "grad_output" -> #te.nvfp4<rht, sr>
}
te.recipe @delayed {
  te.rule "grouped_linear", "*" -> #te.fp8_delayed<e4m3, history = 16>
}
te.recipe @high_precision {
  te.rule "*", "*" -> #te.identity<bf16>
}
te.recipe @fp8_block {
  te.rule "grouped_linear", "weight" -> #te.fp8_block<e4m3, 128x128, pow2>
  te.rule "grouped_linear", "*"      -> #te.fp8_block<e4m3, 1x128, pow2>
}

func.func @current(%x: tensor<32768x7168xbf16>,
                   %w: tensor<8x4096x7168xbf16> {te.persistent = "experts.w1"},
                   %splits: tensor<8xi64>) -> tensor<32768x4096xbf16> {
  %h = te.grouped_linear %x, %w, %splits {recipe = @per_tensor}
         : tensor<32768x7168xbf16>, tensor<8x4096x7168xbf16>, tensor<8xi64>
         -> tensor<32768x4096xbf16>
  return %h : tensor<32768x4096xbf16>
}

func.func @block(%x: tensor<32768x7168xbf16>,
                 %w: tensor<8x4096x7168xbf16> {te.persistent = "experts.w1"},
                 %splits: tensor<8xi64>) -> tensor<32768x4096xbf16> {
  %h = te.grouped_linear %x, %w, %splits {recipe = @fp8_block}
         : tensor<32768x7168xbf16>, tensor<8x4096x7168xbf16>, tensor<8xi64>
         -> tensor<32768x4096xbf16>
  return %h : tensor<32768x4096xbf16>
}

func.func @current_grad(%dh: tensor<32768x4096xbf16>, %x: tensor<32768x7168xbf16>,
                        %w: tensor<8x4096x7168xbf16> {te.persistent = "experts.w1"},
                        %splits: tensor<8xi64>)
    -> (tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>) {
  %dx, %dw = te.grouped_linear_grad %dh, %x, %w, %splits {recipe = @per_tensor}
         : tensor<32768x4096xbf16>, tensor<32768x7168xbf16>,
           tensor<8x4096x7168xbf16>, tensor<8xi64>
         -> tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>
  return %dx, %dw : tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>
}

func.func @block_grad(%dh: tensor<32768x4096xbf16>, %x: tensor<32768x7168xbf16>,
                      %w: tensor<8x4096x7168xbf16> {te.persistent = "experts.w1"},
                      %splits: tensor<8xi64>)
    -> (tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>) {
  %dx, %dw = te.grouped_linear_grad %dh, %x, %w, %splits {recipe = @fp8_block}
         : tensor<32768x4096xbf16>, tensor<32768x7168xbf16>,
           tensor<8x4096x7168xbf16>, tensor<8xi64>
         -> tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>
  return %dx, %dw : tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>
}

func.func @nvfp4(%x: tensor<32768x7168xbf16>,
                 %w: tensor<8x4096x7168xbf16> {te.persistent = "experts.w1"},
                 %splits: tensor<8xi64>) -> tensor<32768x4096xbf16> {
  %h = te.grouped_linear %x, %w, %splits {recipe = @nv}
         : tensor<32768x7168xbf16>, tensor<8x4096x7168xbf16>, tensor<8xi64>
         -> tensor<32768x4096xbf16>
  return %h : tensor<32768x4096xbf16>
}

func.func @bf16(%x: tensor<32768x7168xbf16>,
                %w: tensor<8x4096x7168xbf16> {te.persistent = "experts.w1"},
                %splits: tensor<8xi64>) -> tensor<32768x4096xbf16> {
  %h = te.grouped_linear %x, %w, %splits {recipe = @high_precision}
         : tensor<32768x7168xbf16>, tensor<8x4096x7168xbf16>, tensor<8xi64>
         -> tensor<32768x4096xbf16>
  return %h : tensor<32768x4096xbf16>
}

func.func @nvfp4_grad(%dh: tensor<32768x4096xbf16>, %x: tensor<32768x7168xbf16>,
                      %w: tensor<8x4096x7168xbf16> {te.persistent = "experts.w1"},
                      %splits: tensor<8xi64>)
    -> (tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>) {
  %dx, %dw = te.grouped_linear_grad %dh, %x, %w, %splits {recipe = @nv_train}
         : tensor<32768x4096xbf16>, tensor<32768x7168xbf16>,
           tensor<8x4096x7168xbf16>, tensor<8xi64>
         -> tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>
  return %dx, %dw : tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>
}

func.func @bf16_grad(%dh: tensor<32768x4096xbf16>, %x: tensor<32768x7168xbf16>,
                     %w: tensor<8x4096x7168xbf16> {te.persistent = "experts.w1"},
                     %splits: tensor<8xi64>)
    -> (tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>) {
  %dx, %dw = te.grouped_linear_grad %dh, %x, %w, %splits {recipe = @high_precision}
         : tensor<32768x4096xbf16>, tensor<32768x7168xbf16>,
           tensor<8x4096x7168xbf16>, tensor<8xi64>
         -> tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>
  return %dx, %dw : tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>
}

// The forward and backward of the per-tensor layer as one train step: the
// entry computes each expert amax once (x's for the fprop and the wgrad,
// the stack's for the fprop and the dgrad, dy's for the dgrad and the
// wgrad).
func.func @current_step(%x: tensor<32768x7168xbf16>,
                        %w: tensor<8x4096x7168xbf16> {te.persistent = "experts.w1"},
                        %splits: tensor<8xi64>, %dh: tensor<32768x4096xbf16>)
    -> (tensor<32768x4096xbf16>, tensor<32768x7168xbf16>,
        tensor<8x4096x7168xf32>) {
  %h = te.grouped_linear %x, %w, %splits {recipe = @per_tensor}
         : tensor<32768x7168xbf16>, tensor<8x4096x7168xbf16>, tensor<8xi64>
         -> tensor<32768x4096xbf16>
  %dx, %dw = te.grouped_linear_grad %dh, %x, %w, %splits {recipe = @per_tensor}
         : tensor<32768x4096xbf16>, tensor<32768x7168xbf16>,
           tensor<8x4096x7168xbf16>, tensor<8xi64>
         -> tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>
  return %h, %dx, %dw : tensor<32768x4096xbf16>, tensor<32768x7168xbf16>,
                        tensor<8x4096x7168xf32>
}

// The same train step under delayed scaling: each expert's scale from its
// own amax history, each cast recording its expert's amax (no amax pass).
func.func @delayed_step(%x: tensor<32768x7168xbf16>,
                        %w: tensor<8x4096x7168xbf16> {te.persistent = "experts.w1"},
                        %splits: tensor<8xi64>, %dh: tensor<32768x4096xbf16>)
    -> (tensor<32768x4096xbf16>, tensor<32768x7168xbf16>,
        tensor<8x4096x7168xf32>) {
  %h = te.grouped_linear %x, %w, %splits {recipe = @delayed, layer = "experts"}
         : tensor<32768x7168xbf16>, tensor<8x4096x7168xbf16>, tensor<8xi64>
         -> tensor<32768x4096xbf16>
  %dx, %dw = te.grouped_linear_grad %dh, %x, %w, %splits {recipe = @delayed, layer = "experts"}
         : tensor<32768x4096xbf16>, tensor<32768x7168xbf16>,
           tensor<8x4096x7168xbf16>, tensor<8xi64>
         -> tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>
  return %h, %dx, %dw : tensor<32768x4096xbf16>, tensor<32768x7168xbf16>,
                        tensor<8x4096x7168xf32>
}

func.func @nvfp4_1d_grad(%dh: tensor<32768x4096xbf16>, %x: tensor<32768x7168xbf16>,
                         %w: tensor<8x4096x7168xbf16> {te.persistent = "experts.w1"},
                         %splits: tensor<8xi64>)
    -> (tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>) {
  %dx, %dw = te.grouped_linear_grad %dh, %x, %w, %splits {recipe = @nv_train_1d}
         : tensor<32768x4096xbf16>, tensor<32768x7168xbf16>,
           tensor<8x4096x7168xbf16>, tensor<8xi64>
         -> tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>
  return %dx, %dw : tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>
}

// Two expert layers in a row under per-tensor current scaling (K = 7168 ->
// N = 4096 -> 7168; no activation between them, which the dialect has no op
// for): the first GEMM's epilogue takes each expert's amax of h, so the
// second layer casts h without an amax pass of its own. @mlp_grad is their
// backward: the second layer's dgrad takes dh's amaxes for the first
// layer's dgrad and wgrad.
func.func @mlp(%x: tensor<32768x7168xbf16>,
               %w1: tensor<8x4096x7168xbf16> {te.persistent = "experts.w1"},
               %w2: tensor<8x7168x4096xbf16> {te.persistent = "experts.w2"},
               %splits: tensor<8xi64>) -> tensor<32768x7168xbf16> {
  %h = te.grouped_linear %x, %w1, %splits {recipe = @per_tensor}
         : tensor<32768x7168xbf16>, tensor<8x4096x7168xbf16>, tensor<8xi64>
         -> tensor<32768x4096xbf16>
  %y = te.grouped_linear %h, %w2, %splits {recipe = @per_tensor}
         : tensor<32768x4096xbf16>, tensor<8x7168x4096xbf16>, tensor<8xi64>
         -> tensor<32768x7168xbf16>
  return %y : tensor<32768x7168xbf16>
}

// @mlp under delayed scaling: the first GEMM's epilogue casts h by each
// expert's scale of the second layer's state into the codes that layer's
// GEMM reads (and records h's amaxes for that state), so the second layer
// casts only its stack.
func.func @mlp_delayed(%x: tensor<32768x7168xbf16>,
                       %w1: tensor<8x4096x7168xbf16> {te.persistent = "experts.w1"},
                       %w2: tensor<8x7168x4096xbf16> {te.persistent = "experts.w2"},
                       %splits: tensor<8xi64>) -> tensor<32768x7168xbf16> {
  %h = te.grouped_linear %x, %w1, %splits {recipe = @delayed, layer = "experts1"}
         : tensor<32768x7168xbf16>, tensor<8x4096x7168xbf16>, tensor<8xi64>
         -> tensor<32768x4096xbf16>
  %y = te.grouped_linear %h, %w2, %splits {recipe = @delayed, layer = "experts2"}
         : tensor<32768x4096xbf16>, tensor<8x7168x4096xbf16>, tensor<8xi64>
         -> tensor<32768x7168xbf16>
  return %y : tensor<32768x7168xbf16>
}

func.func @mlp_grad(%dy: tensor<32768x7168xbf16>, %x: tensor<32768x7168xbf16>,
                    %h: tensor<32768x4096xbf16>,
                    %w1: tensor<8x4096x7168xbf16> {te.persistent = "experts.w1"},
                    %w2: tensor<8x7168x4096xbf16> {te.persistent = "experts.w2"},
                    %splits: tensor<8xi64>)
    -> (tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>,
        tensor<8x7168x4096xf32>) {
  %dh, %dw2 = te.grouped_linear_grad %dy, %h, %w2, %splits {recipe = @per_tensor}
         : tensor<32768x7168xbf16>, tensor<32768x4096xbf16>,
           tensor<8x7168x4096xbf16>, tensor<8xi64>
         -> tensor<32768x4096xbf16>, tensor<8x7168x4096xf32>
  %dx, %dw1 = te.grouped_linear_grad %dh, %x, %w1, %splits {recipe = @per_tensor}
         : tensor<32768x4096xbf16>, tensor<32768x7168xbf16>,
           tensor<8x4096x7168xbf16>, tensor<8xi64>
         -> tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>
  return %dx, %dw1, %dw2 : tensor<32768x7168xbf16>, tensor<8x4096x7168xf32>,
                           tensor<8x7168x4096xf32>
}
