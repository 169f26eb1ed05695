// RUN: te-run %s --backend cpu --random-inputs 2 --steps 3 | FileCheck %s

// Tests a delayed-scaling weight quantized from three master shards over
// three steps: each direction of the hybrid records the whole tensor's amax
// into its own state, and the scales evolve from the recorded history
// (scripts/gpu-run.sh runs the same with --check, states compared bit for
// bit).
// The recorded amax is the whole master's (the largest |x| of all three
// shards), the scale TE's: 448 / amax rowwise (E4M3), 57344 / amax
// columnwise (E5M2); the history fills one entry per step.
// CHECK: step 1:
// CHECK-NEXT: w.delayed_scaling.rowwise: scale=118.894356 amax=3.76805115 history_max=3.76805115 (1 of 4 recorded)
// CHECK-NEXT: w.delayed_scaling.columnwise: scale=15218.4775 amax=3.76805115 history_max=3.76805115 (1 of 4 recorded)
// CHECK: step 3:
// CHECK-NEXT: w.delayed_scaling.rowwise: {{.*}} (3 of 4 recorded)
// CHECK: result0 ({{.*}}): rowwise.data[256x128 e4m3] rowwise.scale_inv[1x1 f32] rowwise.amax[1x1 f32] columnwise.data[128x256 e5m2]

func.func @update(%s0: tensor<5001xf32>, %s1: tensor<10000xf32>, %s2: tensor<17767xf32>)
    -> !te.qtensor<256x128xf32, #te.hybrid<rowwise = #te.fp8_delayed<e4m3, history = 4>, columnwise = #te.fp8_delayed<e5m2, history = 4, algo = most_recent>>, rowwise|columnwise> {
  %w = te.quantize_shards %s0, %s1, %s2 {scaling_state = "w.delayed_scaling"}
         : tensor<5001xf32>, tensor<10000xf32>, tensor<17767xf32>
        -> !te.qtensor<256x128xf32, #te.hybrid<rowwise = #te.fp8_delayed<e4m3, history = 4>, columnwise = #te.fp8_delayed<e5m2, history = 4, algo = most_recent>>, rowwise|columnwise>
  return %w : !te.qtensor<256x128xf32, #te.hybrid<rowwise = #te.fp8_delayed<e4m3, history = 4>, columnwise = #te.fp8_delayed<e5m2, history = 4, algo = most_recent>>, rowwise|columnwise>
}
