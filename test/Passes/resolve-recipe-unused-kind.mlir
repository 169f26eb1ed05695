// RUN: te-opt %s --te-resolve-recipe -split-input-file -verify-diagnostics | FileCheck %s

// Tests that a rule for a module kind no op of the module uses is warned
// about at the rule (it is otherwise ignored while the layer falls through
// to "*"), and that a wildcard kind or a used kind is not.

te.recipe @moe {
  // expected-warning @+1 {{rule for module kind "grouped_linear" has no effect: no op of the module uses that kind (te.linear and te.linear_grad are "linear", te.grouped_linear and te.grouped_linear_grad "grouped_linear")}}
  te.rule "grouped_linear", "input" -> #te.mxfp8<e4m3>
  te.rule "linear", "weight" -> #te.mxfp8<e4m3>
  te.rule "*", "*" -> #te.identity<bf16>
}

// CHECK-LABEL: func.func @forward
// CHECK: te.linear {{.*}}schemes = {input = #te.identity<bf16>, weight = #te.mxfp8<e4m3>}
func.func @forward(%x: tensor<64x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<64x32xbf16> {
  %y = te.linear %x, %w {recipe = @moe} : tensor<64x64xbf16>, tensor<32x64xbf16> -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}

// -----

// A module without layers uses no kind: its "linear" rules are dead too.
te.recipe @unused {
  // expected-warning @+1 {{rule for module kind "linear" has no effect}}
  te.rule "linear", "input" -> #te.mxfp8<e4m3>
  te.rule "*", "*" -> #te.identity<bf16>
}

// CHECK-LABEL: func.func @no_layers
func.func @no_layers(%x: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  return %x : tensor<64x64xbf16>
}

// -----

// A grouped layer uses "grouped_linear": its rules take effect, and a
// "linear" rule of a module of grouped layers only is dead.
te.recipe @experts {
  te.rule "grouped_linear", "weight" -> #te.mxfp8<e4m3>
  // expected-warning @+1 {{rule for module kind "linear" has no effect}}
  te.rule "linear", "input" -> #te.mxfp8<e4m3>
  te.rule "*", "*" -> #te.identity<bf16>
}

// CHECK-LABEL: func.func @moe
// CHECK: te.grouped_linear {{.*}}schemes = {input = #te.identity<bf16>, weight = #te.mxfp8<e4m3>}
func.func @moe(%x: tensor<64x64xbf16>, %w: tensor<2x32x64xbf16>, %s: tensor<2xi64>) -> tensor<64x32xbf16> {
  %y = te.grouped_linear %x, %w, %s {recipe = @experts} : tensor<64x64xbf16>, tensor<2x32x64xbf16>, tensor<2xi64> -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}
