"""The te programs behind tejit.torch, as text: recipes, a linear layer's
forward / backward / eval functions, a multi-tensor Adam step. No torch
here, so they compile and run on the CPU backend too (python/tests)."""

from __future__ import annotations

import math
import re
from typing import Dict, Union

from . import Error


def float_literal(x: float) -> str:
    """``x`` as an MLIR float literal that reads back as the same double
    (MLIR wants a dot before an exponent: 1.0e-08, not 1e-08)."""
    x = float(x)
    if not math.isfinite(x):
        raise Error(f"{x} is not a finite hyper-parameter")
    r = repr(x)
    mantissa, _, exponent = r.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + ("e" + exponent if exponent else "")


# -- recipes ----------------------------------------------------------------------

PRESETS: Dict[str, Dict[str, object]] = {
    "bf16": {"input": "#te.identity<bf16>", "weight": "#te.identity<bf16>",
             "grad_output": "#te.identity<bf16>"},
    # DeepSeek-style block scaling: 1x128 activations and gradients, 128x128
    # weight tiles, power-of-two scales.
    "fp8_block": {"input": "#te.fp8_block<e4m3, 1x128, pow2>",
                  "weight": "#te.fp8_block<e4m3, 128x128, pow2>",
                  "grad_output": "#te.fp8_block<e4m3, 1x128, pow2>"},
    "mxfp8": {"input": "#te.mxfp8<e4m3>", "weight": "#te.mxfp8<e4m3>",
              "grad_output": "#te.mxfp8<e4m3>"},
    # NVFP4 with the random Hadamard transform on both wgrad operands (the
    # transform cancels only when both apply it) and stochastic rounding on
    # the gradient.
    "nvfp4": {"input": {"rowwise": "#te.nvfp4<>", "columnwise": "#te.nvfp4<rht>"},
              "weight": "#te.nvfp4<>", "grad_output": "#te.nvfp4<rht, sr>"},
    # MXFP8 forward, NVFP4 backward (examples/hybrid_linear.mlir).
    "mxfp8_nvfp4": {
        "input": {"rowwise": "#te.mxfp8<e4m3>", "columnwise": "#te.nvfp4<rht>"},
        "weight": {"rowwise": "#te.mxfp8<e4m3>", "columnwise": "#te.nvfp4<>"},
        "grad_output": "#te.nvfp4<rht, sr>"},
}


def _scheme(s) -> str:
    if isinstance(s, dict):
        return f"#te.hybrid<rowwise = {s['rowwise']}, columnwise = {s['columnwise']}>"
    return str(s)


class Recipe:
    """A recipe as te IR: the ``te.recipe`` op text and the weight's scheme
    (the type of the quantized weight the layer keeps). `kind` is the layer
    kind its rules name: "linear", or "grouped_linear" for an MoE layer."""

    def __init__(self, recipe: Union[str, Dict[str, object]] = "bf16",
                 kind: str = "linear"):
        self.kind = kind
        if isinstance(recipe, str) and "te.recipe" in recipe:
            m = re.search(r"te\.recipe\s+@([\w.$-]+)", recipe)
            if not m:
                raise Error("the recipe text has no te.recipe @name")
            self.name = m.group(1)
            self.text = recipe
            self.weight = self._rule(recipe, "weight", kind)
            return
        if isinstance(recipe, str) and recipe not in PRESETS:
            raise Error(f"unknown recipe {recipe!r}; presets: {sorted(PRESETS)}")
        rules = PRESETS[recipe] if isinstance(recipe, str) else recipe
        missing = {"input", "weight", "grad_output"} - set(rules)
        if missing:
            raise Error(f"the recipe names no scheme for {sorted(missing)}")
        self.name = "r"
        lines = [f'  te.rule "{kind}", "{role}" -> {_scheme(rules[role])}'
                 for role in ("input", "weight", "grad_output")]
        lines.append('  te.rule "*", "*" -> #te.identity<bf16>')
        self.text = "te.recipe @r {\n" + "\n".join(lines) + "\n}\n"
        self.weight = _scheme(rules["weight"])

    @staticmethod
    def _rule(text: str, role: str, layer: str = "linear") -> str:
        # The most specific rule wins, as te-resolve-recipe resolves it.
        for kind, r in ((layer, role), ("*", role), (layer, "*"), ("*", "*")):
            m = re.search(rf'te\.rule\s+"{re.escape(kind)}"\s*,\s*"{re.escape(r)}"\s*->\s*(#te\.[^\n]*)', text)
            if m:
                return m.group(1).strip()
        raise Error(f"the recipe has no rule for the {layer} {role}")


def weight_type(n: int, k: int, recipe: Recipe) -> str:
    """The type of a linear layer's stored weight: the FP32 master quantized
    by the recipe's weight rule, both directions (fprop and dgrad)."""
    return f"!te.qtensor<{n}x{k}xf32, {recipe.weight}, rowwise|columnwise>"


def linear_program(m: int, k: int, n: int, recipe: Recipe, bias: bool) -> str:
    """The te program of a linear layer on an m x k input: ``forward``
    quantizes the FP32 master weight into the persistent "weight" (both
    directions: fprop reads it rowwise, dgrad columnwise) and computes
    y = x W^T (+ b); ``forward_stored`` computes y from the stored weight
    (an optimizer requantized it); ``backward`` reads that weight; ``evaluate`` is the
    forward of an eval step (nothing kept)."""
    x, y = f"tensor<{m}x{k}xbf16>", f"tensor<{m}x{n}xbf16>"
    w = f"tensor<{n}x{k}xf32>"
    qw = weight_type(n, k, recipe)
    b_arg = f", %b: tensor<{n}xbf16>" if bias else ""
    b_use = " bias %b" if bias else ""
    b_type = f", tensor<{n}xbf16>" if bias else ""
    grads = f"tensor<{m}x{k}xbf16>, tensor<{n}x{k}xf32>" + (f", tensor<{n}xf32>" if bias else "")
    names = "%dx, %dw" + (", %db" if bias else "")
    # The layer is named "linear": a delayed-scaling role keeps its state
    # under "linear.<role>.delayed_scaling", the weight's cast included.
    state = ' {scaling_state = "linear.weight.delayed_scaling"}' \
        if "fp8_delayed" in recipe.weight else ""
    layer = 'layer = "linear"'
    return f"""{recipe.text}
func.func @forward(%x: {x}, %w: {w}{b_arg})
    -> ({y}, {qw} {{te.persistent = "weight"}}) {{
  %qw = te.quantize %w{state} : {w} -> {qw}
  %y = te.linear %x, %qw{b_use} {{recipe = @{recipe.name}, {layer}}} : {x}, {qw}{b_type} -> {y}
  return %y, %qw : {y}, {qw}
}}

func.func @forward_stored(%x: {x}, %qw: {qw} {{te.persistent = "weight"}}{b_arg}) -> {y} {{
  %y = te.linear %x, %qw{b_use} {{recipe = @{recipe.name}, {layer}}} : {x}, {qw}{b_type} -> {y}
  return %y : {y}
}}

func.func @backward(%dy: {y}, %x: {x}, %qw: {qw} {{te.persistent = "weight"}})
    -> ({grads}) {{
  {names} = te.linear_grad %dy, %x, %qw {{recipe = @{recipe.name}{", bias" if bias else ""}, {layer}}}
      : {y}, {x}, {qw} -> {grads}
  return {names} : {grads}
}}

func.func @evaluate(%x: {x}, %w: {w}{b_arg}) -> {y} {{
  %y = te.linear %x, %w{b_use} {{recipe = @{recipe.name}, {layer}}} : {x}, {w}{b_type} -> {y}
  return %y : {y}
}}
"""


def grouped_linear_program(m: int, k: int, n: int, groups: int,
                           recipe: Recipe, bias: bool) -> str:
    """The te program of an MoE layer of `groups` experts on m token rows
    sorted by expert (split sizes a device i64 tensor): ``forward`` computes
    y_g = x_g W_g^T (+ b_g) from the bf16 stack [G, N, K]; ``backward`` the
    grouped dgrad, wgrad (dW f32) and (with `bias`) db. The layer is named
    "moe": a delayed-scaling role keeps one state per expert,
    "moe.<role>.delayed_scaling.expert<g>" (docs/Numerics.md 7.4)."""
    x, y = f"tensor<{m}x{k}xbf16>", f"tensor<{m}x{n}xbf16>"
    w, s = f"tensor<{groups}x{n}x{k}xbf16>", f"tensor<{groups}xi64>"
    b_arg = f", %b: tensor<{groups}x{n}xbf16>" if bias else ""
    b_use = " bias %b" if bias else ""
    b_type = f", tensor<{groups}x{n}xbf16>" if bias else ""
    grads = f"tensor<{m}x{k}xbf16>, tensor<{groups}x{n}x{k}xf32>" + \
        (f", tensor<{groups}x{n}xf32>" if bias else "")
    names = "%dx, %dw" + (", %db" if bias else "")
    attrs = f'recipe = @{recipe.name}, layer = "moe"'
    return f"""{recipe.text}
func.func @forward(%x: {x}, %w: {w}, %s: {s}{b_arg}) -> {y} {{
  %y = te.grouped_linear %x, %w, %s{b_use} {{{attrs}}} : {x}, {w}, {s}{b_type} -> {y}
  return %y : {y}
}}

func.func @backward(%dy: {y}, %x: {x}, %w: {w}, %s: {s}) -> ({grads}) {{
  {names} = te.grouped_linear_grad %dy, %x, %w, %s {{{attrs}{", bias" if bias else ""}}}
      : {y}, {x}, {w}, {s} -> {grads}
  return {names} : {grads}
}}
"""


def adam_program(shapes, grad_dtypes, betas, eps, weight_decay, adamw: bool,
                 requantize=None) -> str:
    """One multi-tensor Adam step over FP32 parameters of ``shapes``: lr and
    step are device scalars; each parameter, gradient and moment is an
    argument and each new value a result (the caller binds results to the
    argument's own memory: an in-place update). ``requantize[i]``, a
    ``!te.qtensor`` type, also returns parameter i's new value quantized to
    it, in the same kernel (te-fuse-optimizer)."""
    requantize = requantize or [None] * len(shapes)
    args, results, body, ret, rtypes = ["%lr: tensor<f32>", "%step: tensor<i64>"], [], [], [], []
    mode = "adamw" if adamw else "adam"
    for i, (shape, g) in enumerate(zip(shapes, grad_dtypes)):
        dims = "x".join(str(d) for d in shape)
        t = f"tensor<{dims}xf32>"
        gt = f"tensor<{dims}x{g}>"
        args += [f"%p{i}: {t}", f"%g{i}: {gt}", f"%m{i}: {t}", f"%v{i}: {t}"]
        body.append(
            f"  %np{i}, %nm{i}, %nv{i} = te.adam_step %p{i}, %g{i}, %m{i}, %v{i}, %lr, %step\n"
            f"      {{beta1 = {float_literal(betas[0])}, beta2 = {float_literal(betas[1])}, "
            f"eps = {float_literal(eps)}, weight_decay = {float_literal(weight_decay)}, mode = {mode}}}\n"
            f"      : {t}, {gt}, {t}, {t}, tensor<f32>, tensor<i64> -> {t}, {t}, {t}")
        ret += [f"%np{i}", f"%nm{i}", f"%nv{i}"]
        rtypes += [t, t, t]
        if requantize[i]:
            # Delayed scaling keeps a state per requantized parameter.
            state = f' {{scaling_state = "p{i}.delayed_scaling"}}' \
                if "fp8_delayed" in requantize[i] else ""
            body.append(f"  %q{i} = te.quantize %np{i}{state} : {t} -> {requantize[i]}")
            ret.append(f"%q{i}")
            rtypes.append(requantize[i])
    return (f"func.func @step({', '.join(args)})\n    -> ({', '.join(rtypes)}) {{\n"
            + "\n".join(body) + f"\n  return {', '.join(ret)} : {', '.join(rtypes)}\n}}\n")


