// RUN: te-run %s --random-inputs 5 --entry bf16_bias,fp8_bias,mxfp8_bias,current_bias,nvfp4_bias,bf16_grad,hybrid_grad,current_grad,mxfp8_grad,nvfp4_grad,mxfp8_nvfp4_grad | FileCheck %s
// RUN: te-run %s --random-inputs 5 --entry mxfp8_bias --grouped-mxfp8=dequantize | FileCheck %s --check-prefix=DEQUANT
// RUN: not te-run %s --entry mxfp8_bias --grouped-mxfp8=fast 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: te-run %s --random-inputs 5 --entry nvfp4_bias --grouped-nvfp4=dequantize --check-if-gpu | FileCheck %s --check-prefix=NVDEQUANT
// RUN: not te-run %s --entry nvfp4_bias --grouped-nvfp4=codes 2>&1 | FileCheck %s --check-prefix=NVBAD
// RUN: te-run %s --random-inputs 5 --entry current_chain,nvfp4_chain,current_chain_grad,block_chain,delayed_chain,delayed_chain_grad | FileCheck %s --check-prefix=CHAIN

// Tests that grouped linear layers with a bias run on the CPU backend
// (scripts/gpu-run.sh runs the same with --check against the GPU): bf16
// tensors read as they are, block FP8, and MXFP8 (dequantized, then the
// bf16 grouped GEMM; 512 rows: MXFP8 blocks need 32-row multiples) and
// per-tensor FP8 current scaling (one amax per expert, E5M2 tokens) and
// NVFP4 (each expert's tensor scale, 16x16 weight blocks; at 125 tokens an
// expert the engine's NVFP4 kernel reads their codes); 4
// experts, 500 token rows (te-run's ragged split sizes, one expert empty),
// N = 256 (2-CTA clusters on the GPU), the bias added in the GEMM epilogue.
// Then the bf16 layer's backward: the dgrad reads the stack along N, the
// wgrad gives each expert's dW and bias gradient; and the backward of TE's
// hybrid format (E5M2 gradients times E4M3 weights and activations, in the
// dgrad and in the wgrad), and under per-tensor FP8 current scaling (one
// amax per expert in the dgrad's and the wgrad's quantizes, E5M2
// gradients); last the MXFP8 backward (the dgrad on
// dequantized operands, the wgrad on each expert's 32 x 1 blocks quantized
// and dequantized, ragged experts padded to whole blocks), the NVFP4
// backward (TE's recipe: dy stochastically rounded, the wgrad's operands
// Hadamard-transformed, each expert padded to whole 16-row blocks) and the
// hybrid MXFP8 forward / NVFP4 backward's (the dgrad through the stack's
// 16x1 NVFP4 column blocks).
// The same layer with its grouped MXFP8 GEMM forced onto the dequantized
// path (te-legalize-target's grouped-mxfp8 option), and a bad value; the
// NVFP4 layer on its dequantized values (grouped-nvfp4), and a bad value.
// DEQUANT: result0 ({{.*}}): data[512x256 bf16]
// BAD: te-legalize-target: grouped-mxfp8 is auto, direct or dequantize, not 'fast'
// NVDEQUANT: result0 ({{.*}}): data[500x256 bf16]
// NVBAD: te-legalize-target: grouped-nvfp4 is auto, direct or dequantize, not 'codes'
// Two layers in a row, the second quantizing the first's output with one
// amax per expert (per-tensor FP8, then NVFP4 codes), and the backward of
// two per-tensor layers, whose second dgrad's output dh the first layer's
// dgrad and wgrad quantize: on the GPU the producing GEMM takes those
// amaxes in its epilogue, with no pass of their own (GroupedGemmPlanTest).
// Then two block-FP8 layers, whose first GEMM's epilogue writes h's 1x128
// codes and scales for the second (te-fuse-gemm-epilogue). Last two layers
// under per-tensor delayed scaling and their backward: on the GPU the
// first GEMM's epilogue casts h (the second dgrad's, dh) by each expert's
// scale of the next layer's state, into the codes the next GEMM reads, and
// records each expert's amax for that state (GroupedGemmPlanTest).
// CHAIN: call 1 current_chain: rms(result0)=
// CHAIN: call 2 nvfp4_chain: rms(result0)=
// CHAIN: call 3 current_chain_grad: rms(result0)=
// CHAIN: call 4 block_chain: rms(result0)=
// CHAIN: call 5 delayed_chain: rms(result0)=
// CHAIN: call 6 delayed_chain_grad: rms(result0)=
// CHAIN: result0 ({{.*}}): data[500x384 bf16]
// CHAIN: result1 ({{.*}}): data[1024x384 f32]
// CHECK: call 1 bf16_bias: rms(result0)=
// CHECK: call 2 fp8_bias: rms(result0)=
// CHECK: call 3 mxfp8_bias: rms(result0)=
// CHECK: call 4 current_bias: rms(result0)=
// CHECK: call 5 nvfp4_bias: rms(result0)=
// CHECK: call 6 bf16_grad: rms(result0)=
// CHECK: call 7 hybrid_grad: rms(result0)=
// CHECK: call 8 current_grad: rms(result0)=
// CHECK: call 9 mxfp8_grad: rms(result0)=
// CHECK: call 10 nvfp4_grad: rms(result0)=
// CHECK: call 11 mxfp8_nvfp4_grad: rms(result0)=
// CHECK: result0 ({{.*}}): data[500x384 bf16]
// CHECK: result1 ({{.*}}): data[1024x384 f32]
// CHECK: result2 ({{.*}}): data[4x256 f32]

te.recipe @bf16 {
  te.rule "*", "*" -> #te.identity<bf16>
}
te.recipe @mxfp8 {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}
te.recipe @fp8_block {
  te.rule "grouped_linear", "weight" -> #te.fp8_block<e4m3, 128x128>
  te.rule "grouped_linear", "input"  -> #te.fp8_block<e4m3, 1x128>
}
te.recipe @current {
  te.rule "grouped_linear", "weight" -> #te.fp8_current<e4m3>
  te.rule "grouped_linear", "input"  -> #te.fp8_current<e5m2>
}
te.recipe @nvfp4 {
  te.rule "grouped_linear", "weight" -> #te.nvfp4<block2d>
  te.rule "grouped_linear", "input"  -> #te.nvfp4<>
}
te.recipe @nvfp4_train {
  te.rule "grouped_linear", "weight" -> #te.nvfp4<block2d>
  te.rule "grouped_linear", "input"  -> #te.nvfp4<rht>
  te.rule "grouped_linear", "grad_output" -> #te.nvfp4<rht, sr>
}
te.recipe @mxfp8_nvfp4 {
  te.rule "grouped_linear", "input" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<rht>>
  te.rule "grouped_linear", "weight" -> #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>
  te.rule "grouped_linear", "grad_output" -> #te.nvfp4<rht, sr>
}
te.recipe @current_bwd {
  te.rule "grouped_linear", "grad_output" -> #te.fp8_current<e5m2>
  te.rule "grouped_linear", "*" -> #te.fp8_current<e4m3>
}
te.recipe @delayed {
  te.rule "grouped_linear", "grad_output" -> #te.fp8_delayed<e5m2, history = 4>
  te.rule "grouped_linear", "*" -> #te.fp8_delayed<e4m3, history = 4>
}
te.recipe @hybrid {
  te.rule "grouped_linear", "weight" -> #te.fp8_block<e4m3, 128x128, pow2>
  te.rule "grouped_linear", "grad_output" -> #te.fp8_block<e5m2, 1x128, pow2>
  te.rule "grouped_linear", "input"  -> #te.fp8_block<e4m3, 1x128, pow2>
}

func.func @bf16_bias(%x: tensor<500x384xbf16>, %w: tensor<4x256x384xbf16>,
                     %s: tensor<4xi64>, %b: tensor<4x256xbf16>) -> tensor<500x256xbf16> {
  %y = te.grouped_linear %x, %w, %s bias %b {recipe = @bf16}
         : tensor<500x384xbf16>, tensor<4x256x384xbf16>, tensor<4xi64>, tensor<4x256xbf16>
         -> tensor<500x256xbf16>
  return %y : tensor<500x256xbf16>
}

func.func @fp8_bias(%x: tensor<500x384xbf16>, %w: tensor<4x256x384xbf16>,
                    %s: tensor<4xi64>, %b: tensor<4x256xbf16>) -> tensor<500x256xbf16> {
  %y = te.grouped_linear %x, %w, %s bias %b {recipe = @fp8_block}
         : tensor<500x384xbf16>, tensor<4x256x384xbf16>, tensor<4xi64>, tensor<4x256xbf16>
         -> tensor<500x256xbf16>
  return %y : tensor<500x256xbf16>
}

func.func @mxfp8_bias(%x: tensor<512x384xbf16>, %w: tensor<4x256x384xbf16>,
                      %s: tensor<4xi64>, %b: tensor<4x256xbf16>) -> tensor<512x256xbf16> {
  %y = te.grouped_linear %x, %w, %s bias %b {recipe = @mxfp8}
         : tensor<512x384xbf16>, tensor<4x256x384xbf16>, tensor<4xi64>, tensor<4x256xbf16>
         -> tensor<512x256xbf16>
  return %y : tensor<512x256xbf16>
}

func.func @current_bias(%x: tensor<500x384xbf16>, %w: tensor<4x256x384xbf16>,
                        %s: tensor<4xi64>, %b: tensor<4x256xbf16>) -> tensor<500x256xbf16> {
  %y = te.grouped_linear %x, %w, %s bias %b {recipe = @current}
         : tensor<500x384xbf16>, tensor<4x256x384xbf16>, tensor<4xi64>, tensor<4x256xbf16>
         -> tensor<500x256xbf16>
  return %y : tensor<500x256xbf16>
}

func.func @nvfp4_bias(%x: tensor<500x384xbf16>, %w: tensor<4x256x384xbf16>,
                      %s: tensor<4xi64>, %b: tensor<4x256xbf16>) -> tensor<500x256xbf16> {
  %y = te.grouped_linear %x, %w, %s bias %b {recipe = @nvfp4}
         : tensor<500x384xbf16>, tensor<4x256x384xbf16>, tensor<4xi64>, tensor<4x256xbf16>
         -> tensor<500x256xbf16>
  return %y : tensor<500x256xbf16>
}

func.func @bf16_grad(%dy: tensor<500x256xbf16>, %x: tensor<500x384xbf16>,
                     %w: tensor<4x256x384xbf16>, %s: tensor<4xi64>)
    -> (tensor<500x384xbf16>, tensor<4x256x384xf32>, tensor<4x256xf32>) {
  %dx, %dw, %db = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @bf16, bias}
      : tensor<500x256xbf16>, tensor<500x384xbf16>, tensor<4x256x384xbf16>, tensor<4xi64>
      -> tensor<500x384xbf16>, tensor<4x256x384xf32>, tensor<4x256xf32>
  return %dx, %dw, %db : tensor<500x384xbf16>, tensor<4x256x384xf32>, tensor<4x256xf32>
}

func.func @hybrid_grad(%dy: tensor<500x256xbf16>, %x: tensor<500x384xbf16>,
                       %w: tensor<4x256x384xbf16>, %s: tensor<4xi64>)
    -> (tensor<500x384xbf16>, tensor<4x256x384xf32>, tensor<4x256xf32>) {
  %dx, %dw, %db = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @hybrid, bias}
      : tensor<500x256xbf16>, tensor<500x384xbf16>, tensor<4x256x384xbf16>, tensor<4xi64>
      -> tensor<500x384xbf16>, tensor<4x256x384xf32>, tensor<4x256xf32>
  return %dx, %dw, %db : tensor<500x384xbf16>, tensor<4x256x384xf32>, tensor<4x256xf32>
}

func.func @current_grad(%dy: tensor<500x256xbf16>, %x: tensor<500x384xbf16>,
                        %w: tensor<4x256x384xbf16>, %s: tensor<4xi64>)
    -> (tensor<500x384xbf16>, tensor<4x256x384xf32>, tensor<4x256xf32>) {
  %dx, %dw, %db = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @current_bwd, bias}
      : tensor<500x256xbf16>, tensor<500x384xbf16>, tensor<4x256x384xbf16>, tensor<4xi64>
      -> tensor<500x384xbf16>, tensor<4x256x384xf32>, tensor<4x256xf32>
  return %dx, %dw, %db : tensor<500x384xbf16>, tensor<4x256x384xf32>, tensor<4x256xf32>
}

func.func @mxfp8_grad(%dy: tensor<500x256xbf16>, %x: tensor<500x384xbf16>,
                      %w: tensor<4x256x384xbf16>, %s: tensor<4xi64>)
    -> (tensor<500x384xbf16>, tensor<4x256x384xf32>, tensor<4x256xf32>) {
  %dx, %dw, %db = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @mxfp8, bias}
      : tensor<500x256xbf16>, tensor<500x384xbf16>, tensor<4x256x384xbf16>, tensor<4xi64>
      -> tensor<500x384xbf16>, tensor<4x256x384xf32>, tensor<4x256xf32>
  return %dx, %dw, %db : tensor<500x384xbf16>, tensor<4x256x384xf32>, tensor<4x256xf32>
}

func.func @nvfp4_grad(%dy: tensor<500x256xbf16>, %x: tensor<500x384xbf16>,
                      %w: tensor<4x256x384xbf16>, %s: tensor<4xi64>)
    -> (tensor<500x384xbf16>, tensor<4x256x384xf32>, tensor<4x256xf32>) {
  %dx, %dw, %db = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @nvfp4_train, bias}
      : tensor<500x256xbf16>, tensor<500x384xbf16>, tensor<4x256x384xbf16>, tensor<4xi64>
      -> tensor<500x384xbf16>, tensor<4x256x384xf32>, tensor<4x256xf32>
  return %dx, %dw, %db : tensor<500x384xbf16>, tensor<4x256x384xf32>, tensor<4x256xf32>
}

func.func @mxfp8_nvfp4_grad(%dy: tensor<500x256xbf16>, %x: tensor<500x384xbf16>,
                            %w: tensor<4x256x384xbf16>, %s: tensor<4xi64>)
    -> (tensor<500x384xbf16>, tensor<4x256x384xf32>, tensor<4x256xf32>) {
  %dx, %dw, %db = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @mxfp8_nvfp4, bias}
      : tensor<500x256xbf16>, tensor<500x384xbf16>, tensor<4x256x384xbf16>, tensor<4xi64>
      -> tensor<500x384xbf16>, tensor<4x256x384xf32>, tensor<4x256xf32>
  return %dx, %dw, %db : tensor<500x384xbf16>, tensor<4x256x384xf32>, tensor<4x256xf32>
}

func.func @current_chain(%x: tensor<500x384xbf16>, %w1: tensor<4x256x384xbf16>,
                         %w2: tensor<4x384x256xbf16>, %s: tensor<4xi64>)
    -> tensor<500x384xbf16> {
  %h = te.grouped_linear %x, %w1, %s {recipe = @current}
         : tensor<500x384xbf16>, tensor<4x256x384xbf16>, tensor<4xi64>
         -> tensor<500x256xbf16>
  %y = te.grouped_linear %h, %w2, %s {recipe = @current}
         : tensor<500x256xbf16>, tensor<4x384x256xbf16>, tensor<4xi64>
         -> tensor<500x384xbf16>
  return %y : tensor<500x384xbf16>
}

func.func @nvfp4_chain(%x: tensor<500x384xbf16>, %w1: tensor<4x256x384xbf16>,
                       %w2: tensor<4x384x256xbf16>, %s: tensor<4xi64>)
    -> tensor<500x384xbf16> {
  %h = te.grouped_linear %x, %w1, %s {recipe = @fp8_block}
         : tensor<500x384xbf16>, tensor<4x256x384xbf16>, tensor<4xi64>
         -> tensor<500x256xbf16>
  %y = te.grouped_linear %h, %w2, %s {recipe = @nvfp4}
         : tensor<500x256xbf16>, tensor<4x384x256xbf16>, tensor<4xi64>
         -> tensor<500x384xbf16>
  return %y : tensor<500x384xbf16>
}

func.func @current_chain_grad(%dy: tensor<500x384xbf16>, %x: tensor<500x384xbf16>,
                              %h: tensor<500x256xbf16>,
                              %w1: tensor<4x256x384xbf16>,
                              %w2: tensor<4x384x256xbf16>, %s: tensor<4xi64>)
    -> (tensor<500x384xbf16>, tensor<4x256x384xf32>, tensor<4x384x256xf32>) {
  %dh, %dw2 = te.grouped_linear_grad %dy, %h, %w2, %s {recipe = @current_bwd}
      : tensor<500x384xbf16>, tensor<500x256xbf16>, tensor<4x384x256xbf16>, tensor<4xi64>
      -> tensor<500x256xbf16>, tensor<4x384x256xf32>
  %dx, %dw1 = te.grouped_linear_grad %dh, %x, %w1, %s {recipe = @current_bwd}
      : tensor<500x256xbf16>, tensor<500x384xbf16>, tensor<4x256x384xbf16>, tensor<4xi64>
      -> tensor<500x384xbf16>, tensor<4x256x384xf32>
  return %dx, %dw1, %dw2 : tensor<500x384xbf16>, tensor<4x256x384xf32>, tensor<4x384x256xf32>
}

func.func @block_chain(%x: tensor<500x384xbf16>, %w1: tensor<4x256x384xbf16>,
                       %w2: tensor<4x384x256xbf16>, %s: tensor<4xi64>)
    -> (tensor<500x256xbf16>, tensor<500x384xbf16>) {
  %h = te.grouped_linear %x, %w1, %s {recipe = @fp8_block}
         : tensor<500x384xbf16>, tensor<4x256x384xbf16>, tensor<4xi64>
         -> tensor<500x256xbf16>
  %y = te.grouped_linear %h, %w2, %s {recipe = @fp8_block}
         : tensor<500x256xbf16>, tensor<4x384x256xbf16>, tensor<4xi64>
         -> tensor<500x384xbf16>
  return %h, %y : tensor<500x256xbf16>, tensor<500x384xbf16>
}

func.func @delayed_chain(%x: tensor<500x384xbf16>, %w1: tensor<4x256x384xbf16>,
                         %w2: tensor<4x384x256xbf16>, %s: tensor<4xi64>)
    -> (tensor<500x256xbf16>, tensor<500x384xbf16>) {
  %h = te.grouped_linear %x, %w1, %s {recipe = @delayed, layer = "e1"}
         : tensor<500x384xbf16>, tensor<4x256x384xbf16>, tensor<4xi64>
         -> tensor<500x256xbf16>
  %y = te.grouped_linear %h, %w2, %s {recipe = @delayed, layer = "e2"}
         : tensor<500x256xbf16>, tensor<4x384x256xbf16>, tensor<4xi64>
         -> tensor<500x384xbf16>
  return %h, %y : tensor<500x256xbf16>, tensor<500x384xbf16>
}

func.func @delayed_chain_grad(%dy: tensor<500x384xbf16>, %x: tensor<500x384xbf16>,
                              %h: tensor<500x256xbf16>,
                              %w1: tensor<4x256x384xbf16>,
                              %w2: tensor<4x384x256xbf16>, %s: tensor<4xi64>)
    -> (tensor<500x384xbf16>, tensor<4x256x384xf32>, tensor<4x384x256xf32>) {
  %dh, %dw2 = te.grouped_linear_grad %dy, %h, %w2, %s {recipe = @delayed, layer = "e2"}
      : tensor<500x384xbf16>, tensor<500x256xbf16>, tensor<4x384x256xbf16>, tensor<4xi64>
      -> tensor<500x256xbf16>, tensor<4x384x256xf32>
  %dx, %dw1 = te.grouped_linear_grad %dh, %x, %w1, %s {recipe = @delayed, layer = "e1"}
      : tensor<500x256xbf16>, tensor<500x384xbf16>, tensor<4x256x384xbf16>, tensor<4xi64>
      -> tensor<500x384xbf16>, tensor<4x256x384xf32>
  return %dx, %dw1, %dw2 : tensor<500x384xbf16>, tensor<4x256x384xf32>, tensor<4x384x256xf32>
}
