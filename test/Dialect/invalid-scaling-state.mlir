// RUN: te-opt %s -split-input-file -verify-diagnostics

// Tests every rule of delayed-scaling state names: te.quantize's and
// te.fused_quantize's scaling_state(s), and the layer name te.linear and
// te.linear_grad need when their recipe gives a role #te.fp8_delayed.

func.func @unnamed_state(%x: tensor<64x64xbf16>) {
  // expected-error @+1 {{'te.quantize' op quantizes by #te.fp8_delayed<e4m3, history = 16, algo = max, margin = 0>, whose scale comes from an amax history kept between calls: name that state (scaling_state = "...")}}
  %q = te.quantize %x : tensor<64x64xbf16> -> !te.qtensor<64x64xbf16, #te.fp8_delayed<e4m3, history = 16>, rowwise>
  return
}

// -----

func.func @empty_state(%x: tensor<64x64xbf16>) {
  // expected-error @+1 {{'te.quantize' op scaling_state must name a state, not be empty}}
  %q = te.quantize %x {scaling_state = ""} : tensor<64x64xbf16> -> !te.qtensor<64x64xbf16, #te.fp8_delayed<e4m3, history = 16>, rowwise>
  return
}

// -----

func.func @state_without_delayed(%x: tensor<64x64xbf16>) {
  // expected-error @+1 {{'te.quantize' op names the delayed-scaling state "x.delayed_scaling", but its scheme #te.mxfp8<e4m3> has no #te.fp8_delayed direction}}
  %q = te.quantize %x {scaling_state = "x.delayed_scaling"} : tensor<64x64xbf16> -> !te.qtensor<64x64xbf16, #te.mxfp8<e4m3>, rowwise>
  return
}

// -----

// A hybrid whose delayed direction is not held may still name the state
// (te-infer-usage narrows directions after te-expand-linear named it).
func.func @state_for_a_direction_not_held(%x: tensor<64x64xbf16>) {
  %q = te.quantize %x {scaling_state = "x.delayed_scaling"} : tensor<64x64xbf16> -> !te.qtensor<64x64xbf16, #te.hybrid<rowwise = #te.fp8_delayed<e4m3>, columnwise = #te.mxfp8<e4m3>>, columnwise>
  return
}

// -----

func.func @fused_state_count(%x: tensor<64x64xbf16>) {
  // expected-error @+1 {{'te.fused_quantize' op has 1 scaling_states for 2 quantized results}}
  %a, %b = te.fused_quantize %x {scaling_states = ["x.delayed_scaling"]} : tensor<64x64xbf16>
      -> !te.qtensor<64x64xbf16, #te.fp8_delayed<e4m3>, rowwise>, !te.qtensor<64x64xbf16, #te.mxfp8<e4m3>, rowwise>
  return
}

// -----

func.func @fused_unnamed_state(%x: tensor<64x64xbf16>) {
  // expected-error @+1 {{'te.fused_quantize' op result #1 quantizes by #te.fp8_delayed<e5m2, history = 1024, algo = max, margin = 0>, whose scale comes from an amax history kept between calls: name that state (scaling_state = "...")}}
  %a, %b = te.fused_quantize %x {scaling_states = ["x.delayed_scaling", ""]} : tensor<64x64xbf16>
      -> !te.qtensor<64x64xbf16, #te.fp8_delayed<e4m3>, rowwise>, !te.qtensor<64x64xbf16, #te.fp8_delayed<e5m2>, rowwise>
  return
}

// -----

func.func @fused_no_states(%x: tensor<64x64xbf16>) {
  // expected-error @+1 {{'te.fused_quantize' op result #0 quantizes by #te.fp8_delayed}}
  %a = te.fused_quantize %x : tensor<64x64xbf16> -> !te.qtensor<64x64xbf16, #te.fp8_delayed<e4m3>, rowwise>
  return
}

// -----

te.recipe @delayed {
  te.rule "linear", "*" -> #te.fp8_delayed<e4m3, history = 16>
}
func.func @unnamed_layer(%x: tensor<64x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<64x32xbf16> {
  // expected-error @+1 {{'te.linear' op quantizes its input by #te.fp8_delayed<e4m3, history = 16, algo = max, margin = 0>, whose amax history is kept between calls under the layer's name: name the layer (layer = "...")}}
  %y = te.linear %x, %w {recipe = @delayed} : tensor<64x64xbf16>, tensor<32x64xbf16> -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}

// -----

te.recipe @delayed_grad {
  te.rule "linear", "grad_output" -> #te.fp8_delayed<e5m2, history = 16>
  te.rule "linear", "*" -> #te.mxfp8<e4m3>
}
func.func @unnamed_layer_grad(%dy: tensor<64x32xbf16>, %x: tensor<64x64xbf16>, %w: tensor<32x64xbf16>) -> (tensor<64x64xbf16>, tensor<32x64xf32>) {
  // expected-error @+1 {{'te.linear_grad' op quantizes its grad_output by #te.fp8_delayed<e5m2, history = 16, algo = max, margin = 0>}}
  %dx, %dw = te.linear_grad %dy, %x, %w {recipe = @delayed_grad} : tensor<64x32xbf16>, tensor<64x64xbf16>, tensor<32x64xbf16> -> tensor<64x64xbf16>, tensor<32x64xf32>
  return %dx, %dw : tensor<64x64xbf16>, tensor<32x64xf32>
}

// -----

te.recipe @mx {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}
func.func @empty_layer(%x: tensor<64x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<64x32xbf16> {
  // expected-error @+1 {{'te.linear' op layer name must not be empty}}
  %y = te.linear %x, %w {recipe = @mx, layer = ""} : tensor<64x64xbf16>, tensor<32x64xbf16> -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}
