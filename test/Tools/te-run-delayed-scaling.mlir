// RUN: te-run %te_src_root/examples/delayed_scaling_loop.mlir --backend cpu --random-inputs 1 --steps 3 | FileCheck %s --check-prefix=LOOP
// RUN: te-run %s --entry hybrid --random-inputs 2 --steps 3 --check-if-gpu | FileCheck %s --check-prefix=HYBRID
// RUN: te-run %s --entry options --random-inputs 3 --steps 2 --check-if-gpu | FileCheck %s --check-prefix=OPTIONS
// RUN: te-run %s --entry moe_train --random-inputs 4 --steps 3 --check-if-gpu | FileCheck %s --check-prefix=MOE

// Tests that delayed scaling keeps its state between calls (the CPU backend
// in CI; CPU against GPU where there is one): each step records one more
// amax, and the scale after a step is fp8_max / the history's max. The
// input and the gradient do not change between steps, so their scales stay
// put after the first; the weight's amax moves with AdamW.
// LOOP: step 1:
// LOOP-NEXT: fc1.input.delayed_scaling: scale=[[XS:[0-9.e+-]+]] amax=[[XA:[0-9.e+-]+]] history_max=[[XA]] (1 of 16 recorded)
// LOOP-NEXT: fc1.weight.delayed_scaling: scale={{.*}} (1 of 16 recorded)
// LOOP-NEXT: fc1.grad_output.delayed_scaling: scale=[[GS:[0-9.e+-]+]] {{.*}} (1 of 16 recorded)
// LOOP: step 3:
// LOOP-NEXT: fc1.input.delayed_scaling: scale=[[XS]] amax=[[XA]] history_max=[[XA]] (3 of 16 recorded)
// LOOP-NEXT: fc1.weight.delayed_scaling: scale={{.*}} (3 of 16 recorded)
// LOOP-NEXT: fc1.grad_output.delayed_scaling: scale=[[GS]] {{.*}} (3 of 16 recorded)

// A hybrid of two different delayed schemes has two quantizers, hence two
// states: the rowwise one and the columnwise one.
// HYBRID: step 3:
// HYBRID-NEXT: x.delayed_scaling.rowwise: scale={{.*}} (3 of 4 recorded)
// HYBRID-NEXT: x.delayed_scaling.columnwise: scale={{.*}} (3 of 4 recorded)
func.func @hybrid(%x: tensor<64x96xbf16>)
    -> !te.qtensor<64x96xbf16, #te.hybrid<rowwise = #te.fp8_delayed<e4m3, history = 4>, columnwise = #te.fp8_delayed<e5m2, history = 4, margin = 1>>, rowwise|columnwise> {
  %q = te.quantize %x {scaling_state = "x.delayed_scaling"} : tensor<64x96xbf16>
      -> !te.qtensor<64x96xbf16, #te.hybrid<rowwise = #te.fp8_delayed<e4m3, history = 4>, columnwise = #te.fp8_delayed<e5m2, history = 4, margin = 1>>, rowwise|columnwise>
  return %q : !te.qtensor<64x96xbf16, #te.hybrid<rowwise = #te.fp8_delayed<e4m3, history = 4>, columnwise = #te.fp8_delayed<e5m2, history = 4, margin = 1>>, rowwise|columnwise>
}

// Two quantizations naming one state share it (one recorded amax a step,
// their maximum); a history of one entry is only the current slot, which
// the update clears; pow2 rounds the scale down to a power of two (e5m2:
// 57344 / 3.765625 = 15228.2 -> 8192).
// OPTIONS: step 2:
// OPTIONS-NEXT: shared.delayed_scaling: scale={{[0-9.]+}} amax=0 history_max=0 (0 of 1 recorded)
// OPTIONS-NEXT: pow2.delayed_scaling: scale=8192 amax=3.765625 history_max=3.765625 (2 of 8 recorded)
func.func @options(%x: tensor<64x96xbf16>, %y: tensor<32x96xf32>)
    -> (!te.qtensor<64x96xbf16, #te.fp8_delayed<e4m3, history = 1, algo = most_recent>, rowwise>,
        !te.qtensor<32x96xf32, #te.fp8_delayed<e4m3, history = 1, algo = most_recent>, columnwise>,
        !te.qtensor<64x96xbf16, #te.fp8_delayed<e5m2, history = 8, pow2>, rowwise|columnwise>) {
  %a = te.quantize %x {scaling_state = "shared.delayed_scaling"} : tensor<64x96xbf16>
      -> !te.qtensor<64x96xbf16, #te.fp8_delayed<e4m3, history = 1, algo = most_recent>, rowwise>
  %b = te.quantize %y {scaling_state = "shared.delayed_scaling"} : tensor<32x96xf32>
      -> !te.qtensor<32x96xf32, #te.fp8_delayed<e4m3, history = 1, algo = most_recent>, columnwise>
  %c = te.quantize %x {scaling_state = "pow2.delayed_scaling"} : tensor<64x96xbf16>
      -> !te.qtensor<64x96xbf16, #te.fp8_delayed<e5m2, history = 8, pow2>, rowwise|columnwise>
  return %a, %b, %c : !te.qtensor<64x96xbf16, #te.fp8_delayed<e4m3, history = 1, algo = most_recent>, rowwise>,
      !te.qtensor<32x96xf32, #te.fp8_delayed<e4m3, history = 1, algo = most_recent>, columnwise>,
      !te.qtensor<64x96xbf16, #te.fp8_delayed<e5m2, history = 8, pow2>, rowwise|columnwise>
}

// A grouped (MoE) layer keeps one state per expert: its train step records
// each expert's amax of x, W and dy into "<layer>.<role>.delayed_scaling
// .expert<g>" (te-run's random split sizes leave one expert without tokens,
// whose input and gradient states stay fresh; the weight's always record).
// MOE: step 3:
// MOE-DAG: moe.input.delayed_scaling.expert0: scale={{.*}} (3 of 4 recorded)
// MOE-DAG: moe.weight.delayed_scaling.expert2: scale={{.*}} (3 of 4 recorded)
// MOE-DAG: moe.grad_output.delayed_scaling.expert3: scale={{.*}} (3 of 4 recorded)
// MOE-DAG: delayed_scaling.expert{{[0-3]}}: scale=1 amax=0 history_max=0 (0 of 4 recorded)
te.recipe @moe_delayed {
  te.rule "grouped_linear", "grad_output" -> #te.fp8_delayed<e5m2, history = 4>
  te.rule "*", "*" -> #te.fp8_delayed<e4m3, history = 4, pow2>
}
func.func @moe_train(%x: tensor<500x256xbf16>, %w: tensor<4x128x256xbf16>, %s: tensor<4xi64>, %dy: tensor<500x128xbf16>)
    -> (tensor<500x128xbf16>, tensor<500x256xbf16>, tensor<4x128x256xf32>) {
  %y = te.grouped_linear %x, %w, %s {recipe = @moe_delayed, layer = "moe"}
      : tensor<500x256xbf16>, tensor<4x128x256xbf16>, tensor<4xi64> -> tensor<500x128xbf16>
  %dx, %dw = te.grouped_linear_grad %dy, %x, %w, %s {recipe = @moe_delayed, layer = "moe"}
      : tensor<500x128xbf16>, tensor<500x256xbf16>, tensor<4x128x256xbf16>, tensor<4xi64>
      -> tensor<500x256xbf16>, tensor<4x128x256xf32>
  return %y, %dx, %dw : tensor<500x128xbf16>, tensor<500x256xbf16>, tensor<4x128x256xf32>
}
