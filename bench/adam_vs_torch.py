#!/usr/bin/env python3
# ===- bench/adam_vs_torch.py - tejit's AdamW against torch.optim.AdamW --=== #
#
# Runs examples/adamw_mxfp8.mlir for 10 steps with te-run (--steps: the new
# weights and moments become the next step's inputs, the step counts up)
# and torch.optim.AdamW with the same hyper-parameters on the same weights
# and (fixed) gradients, then compares the FP32 weights after 10 steps.
# The two evaluate the update in different orders (TE's formula vs
# torch's), so they agree to float32 rounding, not bit for bit: the script
# prints the largest difference in units of the float32 spacing at each
# weight's scale (its magnitude before or after the steps, at least lr)
# and fails above 64 such ulps.
#
# Usage: python3 bench/adam_vs_torch.py TE_RUN [STEPS=10]
# ===--------------------------------------------------------------------=== #
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

TE_RUN = sys.argv[1]
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 10
SHAPES = [(1024, 512), (512, 1024), (96, 160)]
LR, BETAS, EPS, WD = 1e-3, (0.9, 0.95), 1e-8, 0.1


def main():
    rng = np.random.default_rng(7)
    tmp = tempfile.mkdtemp()
    inputs = {"arg0": np.array(LR, dtype=np.float32), "arg1": np.array(1, dtype=np.int64)}
    weights, grads = [], []
    for i, (m, k) in enumerate(SHAPES):
        w = rng.standard_normal((m, k)).astype(np.float32)
        g = (rng.standard_normal((m, k)) * 1e-2).astype(np.float32)
        g_bf16 = (g.view(np.uint32) + 0x7FFF + ((g.view(np.uint32) >> 16) & 1)) >> 16
        g_bf16 = g_bf16.astype(np.uint16)  # round to nearest even
        weights.append(w)
        grads.append((g_bf16.astype(np.uint32) << 16).view(np.float32))
        base = 2 + 4 * i
        inputs[f"arg{base}"] = w
        inputs[f"arg{base + 1}"] = g_bf16
        inputs[f"arg{base + 2}"] = np.zeros((m, k), np.float32)
        inputs[f"arg{base + 3}"] = np.zeros((m, k), np.float32)
    cmd = [TE_RUN, os.path.join(os.path.dirname(__file__), "..", "examples", "adamw_mxfp8.mlir"),
           "--steps", str(STEPS), "--dump", tmp]
    for name, a in inputs.items():
        path = os.path.join(tmp, name + ".npy")
        np.save(path, a)
        cmd += ["--input", f"{name}={path}"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    print(out.stdout.splitlines()[-1] if out.stdout else "", out.stderr.strip())
    if out.returncode != 0:
        print(out.stdout, out.stderr)
        return 1

    params = [torch.nn.Parameter(torch.from_numpy(w.copy()).cuda()) for w in weights]
    opt = torch.optim.AdamW(params, lr=LR, betas=BETAS, eps=EPS, weight_decay=WD)
    for _ in range(STEPS):
        for p, g in zip(params, grads):
            p.grad = torch.from_numpy(g).cuda()
        opt.step()
    worst = 0.0
    for i, p in enumerate(params):
        ours = np.load(os.path.join(tmp, f"result{4 * i}.npy"))
        theirs = p.detach().cpu().numpy()
        # In units of the float32 spacing at the element's own scale: its
        # magnitude before or after, at least lr (the size of one update).
        scale = np.maximum(np.maximum(np.abs(theirs), np.abs(weights[i])), LR)
        ulps = np.abs(ours - theirs) / np.spacing(scale.astype(np.float32)).astype(np.float64)
        moved = np.abs(theirs - weights[i]).max()
        print(f"weight {i} {SHAPES[i]}: max |tejit - torch| = {np.abs(ours - theirs).max():.3e} "
              f"({ulps.max():.1f} ulp), the weights moved by up to {moved:.3e}")
        worst = max(worst, ulps.max())
    print(f"after {STEPS} steps: largest difference {worst:.1f} float32 ulps "
          f"({'PASS' if worst <= 64 else 'FAIL'}: bound 64)")
    return 0 if worst <= 64 else 1


if __name__ == "__main__":
    sys.exit(main())
