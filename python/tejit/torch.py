"""tejit in a PyTorch training loop: a drop-in ``Linear`` whose forward and
backward are tejit's compiled linear program under a quantization recipe, a
``GroupedLinear`` (the experts of an MoE layer, one grouped GEMM each way),
and a ``FusedAdam`` whose step is tejit's fused multi-tensor Adam kernel.

    layer = tejit.torch.Linear(4096, 4096, recipe="mxfp8").cuda()
    opt = tejit.torch.FusedAdam(layer.parameters(), lr=1e-3)
    loss = layer(x).float().square().mean(); loss.backward(); opt.step()

A recipe is a preset name ("bf16", "fp8_block", "mxfp8", "nvfp4",
"mxfp8_nvfp4"), a dict of scheme attributes per role ("input", "weight",
"grad_output"; a role may map to {"rowwise": ..., "columnwise": ...} for a
hybrid), or te IR text holding one ``te.recipe``.
"""

from __future__ import annotations

import re
import weakref
from typing import Dict, Iterable, Optional, Tuple, Union

import torch

from . import Error, compile as _compile
from .programs import (PRESETS, Recipe, adam_program,  # noqa: F401
                       grouped_linear_program, linear_program, weight_type)

# -- Linear -----------------------------------------------------------------------


def _keep_bias_type(ctx, bias) -> None:
    ctx.has_bias = bias is not None
    ctx.bias_dtype = bias.dtype if bias is not None else None


def _gradients(ctx, out):
    """dx, dW and db (in the bias parameter's type) of a backward call."""
    return out[0], out[1], (out[2].to(ctx.bias_dtype) if ctx.has_bias else None)



class _LinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x2d, weight, bias, layer):
        rows = x2d.shape[0]
        session = layer._session(rows)
        b = (bias.to(torch.bfloat16),) if bias is not None else ()
        if layer._stored == (rows, weight._version):
            # The session's weight is this master's quantization (written by
            # FusedAdam's requantize or the last forward): use it as is.
            y = session.forward_stored(x2d, *b)
        else:
            y = session.forward(x2d, weight, *b)
            layer._stored = (rows, weight._version)
        ctx.save_for_backward(x2d)
        ctx.session = session
        _keep_bias_type(ctx, bias)
        return y

    @staticmethod
    def backward(ctx, dy):
        (x2d,) = ctx.saved_tensors
        dx, dw, db = _gradients(ctx, ctx.session.backward(dy.to(torch.bfloat16).contiguous(), x2d))
        return dx, dw, db, None


class Linear(torch.nn.Module):
    """``torch.nn.Linear`` run by tejit: y = x W^T + b with the GEMMs and
    quantizations of ``recipe``. The weight is an FP32 master parameter,
    kept quantized (every direction the backward reads) in the layer's
    compiled session, which the backward reads: a training forward
    quantizes it unless that stored weight is already the master's
    quantization (FusedAdam requantized it in its step, or the master has
    not changed since - torch's version counter tells), so train and eval
    steps alternate safely. Inputs are bf16 (other float
    types are cast), the output is bf16. Each input shape compiles once
    (then the kernel cache serves it)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 recipe: Union[str, Dict[str, object], Recipe] = "bf16",
                 device=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.recipe = recipe if isinstance(recipe, Recipe) else Recipe(recipe)
        self.weight = torch.nn.Parameter(torch.empty(out_features, in_features, dtype=torch.float32, device=device))
        self.bias = (torch.nn.Parameter(torch.empty(out_features, dtype=torch.float32, device=device))
                     if bias else None)
        self._modules_by_rows: Dict[int, object] = {}
        # (rows, weight._version) whose quantization the session of `rows`
        # holds; None when no session holds the current master's.
        self._stored = None
        self.weight._tejit_linear = weakref.ref(self)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self._stored = None
        torch.nn.init.kaiming_uniform_(self.weight, a=5 ** 0.5)
        if self.bias is not None:
            bound = 1 / self.in_features ** 0.5
            torch.nn.init.uniform_(self.bias, -bound, bound)

    def program(self, rows: int) -> str:
        return linear_program(rows, self.in_features, self.out_features, self.recipe, self.bias is not None)

    def _module(self, rows: int):
        if rows not in self._modules_by_rows:
            self._modules_by_rows[rows] = _compile(self.program(rows), name=f"<tejit.torch.Linear {rows}x{self.in_features}>")
        return self._modules_by_rows[rows]

    def _session(self, rows: int):
        return self._module(rows).session("cuda")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not x.is_cuda:
            raise Error("tejit.torch.Linear runs on CUDA tensors")
        lead = x.shape[:-1]
        x2d = x.reshape(-1, self.in_features).to(torch.bfloat16).contiguous()
        if self.training and torch.is_grad_enabled():
            y = _LinearFunction.apply(x2d, self.weight, self.bias, self)
        else:
            args = (x2d, self.weight.detach()) + (
                (self.bias.detach().to(torch.bfloat16),) if self.bias is not None else ())
            y = self._session(x2d.shape[0]).evaluate(*args)
        return y.reshape(*lead, self.out_features)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


# -- GroupedLinear ----------------------------------------------------------------


class _GroupedLinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x2d, weight, splits, bias, layer):
        session = layer._session(x2d.shape[0])
        w16 = weight.to(torch.bfloat16).contiguous()
        b = (bias.to(torch.bfloat16).contiguous(),) if bias is not None else ()
        y = session.forward(x2d, w16, splits, *b)
        ctx.save_for_backward(x2d, w16, splits)
        ctx.session = session
        _keep_bias_type(ctx, bias)
        return y

    @staticmethod
    def backward(ctx, dy):
        x2d, w16, splits = ctx.saved_tensors
        dx, dw, db = _gradients(
            ctx, ctx.session.backward(dy.to(torch.bfloat16).contiguous(), x2d, w16, splits))
        return dx, dw, None, db, None


class GroupedLinear(torch.nn.Module):
    """The experts of a Mixture-of-Experts layer run by tejit: for tokens
    ``x`` [M, in_features] sorted by expert and ``split_sizes`` (an int64
    CUDA tensor of ``num_experts`` row counts, read on the device: no host
    synchronisation), expert g's rows get y = x_g W_g^T + b_g; rows past the
    split sizes' sum are zeros. The weight is an FP32 master parameter
    [num_experts, out_features, in_features], cast to bf16 for each step;
    the grouped GEMMs and each expert's quantization (its own scales,
    docs/Numerics.md 7.4) follow ``recipe``. Inputs are bf16 (other float
    types are cast), the output is bf16. Each token count compiles once; a
    delayed-scaling recipe keeps one amax history per expert in the
    compiled session of that token count."""

    def __init__(self, num_experts: int, in_features: int, out_features: int,
                 bias: bool = True,
                 recipe: Union[str, Dict[str, object], Recipe] = "bf16",
                 device=None):
        super().__init__()
        self.num_experts = num_experts
        self.in_features = in_features
        self.out_features = out_features
        self.recipe = recipe if isinstance(recipe, Recipe) else Recipe(recipe, kind="grouped_linear")
        if self.recipe.kind != "grouped_linear":
            self.recipe = Recipe(self.recipe.text, kind="grouped_linear")
        self.weight = torch.nn.Parameter(torch.empty(
            num_experts, out_features, in_features, dtype=torch.float32, device=device))
        self.bias = (torch.nn.Parameter(torch.empty(num_experts, out_features, dtype=torch.float32,
                                                    device=device)) if bias else None)
        self._modules_by_rows: Dict[int, object] = {}
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for g in range(self.num_experts):
            torch.nn.init.kaiming_uniform_(self.weight[g], a=5 ** 0.5)
        if self.bias is not None:
            bound = 1 / self.in_features ** 0.5
            torch.nn.init.uniform_(self.bias, -bound, bound)

    def program(self, rows: int) -> str:
        return grouped_linear_program(rows, self.in_features, self.out_features,
                                      self.num_experts, self.recipe, self.bias is not None)

    def _session(self, rows: int):
        if rows not in self._modules_by_rows:
            self._modules_by_rows[rows] = _compile(
                self.program(rows),
                name=f"<tejit.torch.GroupedLinear {self.num_experts}x{rows}x{self.in_features}>")
        return self._modules_by_rows[rows].session("cuda")

    def forward(self, x: torch.Tensor, split_sizes: torch.Tensor) -> torch.Tensor:
        if not x.is_cuda:
            raise Error("tejit.torch.GroupedLinear runs on CUDA tensors")
        if split_sizes.shape != (self.num_experts,):
            raise Error(f"split_sizes must hold {self.num_experts} row counts, "
                        f"got shape {tuple(split_sizes.shape)}")
        splits = split_sizes.to(device=x.device, dtype=torch.int64).contiguous()
        x2d = x.reshape(-1, self.in_features).to(torch.bfloat16).contiguous()
        if self.training and torch.is_grad_enabled():
            return _GroupedLinearFunction.apply(x2d, self.weight, splits, self.bias, self)
        args = (x2d, self.weight.detach().to(torch.bfloat16).contiguous(), splits) + (
            (self.bias.detach().to(torch.bfloat16).contiguous(),) if self.bias is not None else ())
        return self._session(x2d.shape[0]).forward(*args)

    def extra_repr(self) -> str:
        return (f"num_experts={self.num_experts}, in_features={self.in_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


# -- FusedAdam --------------------------------------------------------------------


_GRAD_TYPES = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16"}


class FusedAdam(torch.optim.Optimizer):
    """Adam / AdamW over FP32 master parameters in one tejit kernel launch per
    parameter group (te.adam_step, IEEE fp32 arithmetic as
    docs/Numerics.md §9 states), updated in place. lr and step live on the
    device, so the step is ``capturable``: it records into a CUDA graph and
    replays with a new lr (``set_lr``) and the step counting up on the
    device. With ``requantize`` (the default), the weight of a
    ``tejit.torch.Linear`` is also requantized in the same kernel into the
    layer's stored weight, so the next forward quantizes nothing."""

    def __init__(self, params: Iterable, lr: float = 1e-3, betas: Tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, adamw: bool = True,
                 requantize: bool = True):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, adamw=adamw)
        super().__init__(params, defaults)
        self.requantize = requantize
        self._programs: Dict[tuple, object] = {}

    @staticmethod
    def _layer_of(p):
        ref = getattr(p, "_tejit_linear", None)
        return ref() if ref is not None else None

    def _target_of(self, p):
        """The Linear session whose stored weight this step rewrites, as
        (layer, rows), or None."""
        layer = self._layer_of(p)
        if not self.requantize or layer is None or layer._stored is None:
            return None
        return layer, layer._stored[0]

    def _group_state(self, group):
        params = [p for p in group["params"] if p.grad is not None]
        for p in params:
            if p.dtype != torch.float32 or not p.is_cuda:
                raise Error("FusedAdam updates FP32 CUDA master parameters")
        targets = [self._target_of(p) for p in params]
        qtypes = tuple(weight_type(t[0].out_features, t[0].in_features, t[0].recipe) if t else None
                       for t in targets)
        key = (tuple(tuple(p.shape) for p in params), tuple(_GRAD_TYPES[p.grad.dtype] for p in params),
               tuple(group["betas"]), group["eps"], group["weight_decay"], group["adamw"], qtypes)
        if key not in self._programs:
            text = adam_program(key[0], key[1], key[2], key[3], key[4], key[5], list(qtypes))
            self._programs[key] = _compile(text, name="<tejit.torch.FusedAdam>").session("cuda").step
        dev = params[0].device
        if "lr_tensor" not in group:
            group["lr_tensor"] = torch.tensor(group["lr"], dtype=torch.float32, device=dev)
            group["step_tensor"] = torch.zeros((), dtype=torch.int64, device=dev)
        for p in params:
            st = self.state[p]
            if not st:
                st["exp_avg"] = torch.zeros_like(p)
                st["exp_avg_sq"] = torch.zeros_like(p)
        return params, targets, self._programs[key]

    def set_lr(self, lr: float) -> None:
        """Writes a new lr into the device scalar (graph-safe)."""
        for group in self.param_groups:
            group["lr"] = lr
            if "lr_tensor" in group:
                group["lr_tensor"].fill_(lr)

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            params, targets, entry = self._group_state(group)
            if not params:
                continue
            group["step_tensor"] += 1
            args = [group["lr_tensor"], group["step_tensor"]]
            for p in params:
                st = self.state[p]
                args += [p, p.grad.contiguous(), st["exp_avg"], st["exp_avg_sq"]]
            # One buffer per result slot: the parameter and moments in place,
            # a requantized weight into the layer session's own buffers.
            stored = {}
            for i, t in enumerate(targets):
                if t:
                    stored[i] = t[0]._session(t[1]).buffers("weight").parts
            outs = []
            for name, index, part, *_ in entry.result_slots():
                i, k = self._result_owner(index, targets)
                if k < 3:
                    p = params[i]
                    outs.append(p if k == 0 else self.state[p]["exp_avg" if k == 1 else "exp_avg_sq"])
                else:
                    outs.append(stored[i][part].view(torch.uint8))
            entry.call_into(args, outs)
            for p, t in zip(params, targets):
                layer = self._layer_of(p)
                if layer is not None:
                    # The kernel wrote p in place (its version did not move):
                    # the stored weight is current only where it was rewritten.
                    layer._stored = (t[1], p._version) if t else None
        return loss

    @staticmethod
    def _result_owner(index, targets):
        """(parameter, role) of result `index`: role 0-2 the new parameter
        and moments, 3 the requantized weight."""
        at = 0
        for i, t in enumerate(targets):
            n = 4 if t else 3
            if index < at + n:
                return i, index - at
            at += n
        raise Error(f"result {index} of the optimizer step has no owner")
