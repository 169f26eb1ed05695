// RUN: te-opt %s --te-resolve-recipe -split-input-file -verify-diagnostics | FileCheck %s

// Tests that a rule for a module kind no op of the module uses is warned
// about at the rule (it is otherwise ignored while the layer falls through
// to "*"), and that a wildcard kind or a used kind is not.

te.recipe @moe {
  // expected-warning @+1 {{rule for module kind "grouped_linear" has no effect: no op of the module uses that kind (te.linear and te.linear_grad are "linear")}}
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
