"""A linear layer's training step (forward + backward) through
tejit.torch.Linear against torch.nn.Linear in BF16, measured in the same run.

    python3 bench/linear_vs_torch.py [size=8192] [runs=20]

x is size x size bf16, the layer size -> size with bias. Median of `runs`
CUDA-event-timed steps after warm-up; the speed-up is torch BF16 time over
tejit time per recipe.
"""

import sys

import torch

import tejit.torch as tt
from timing import timed


def step_time(layer, x, dy, runs):
    def step():
        layer(x).backward(dy)

    return timed(step, runs, warmup=5)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    print(torch.cuda.get_device_name(), f"linear {n}x{n} -> {n}, forward + backward, median of {runs}")
    x = torch.randn(n, n, device="cuda").to(torch.bfloat16).requires_grad_()
    dy = (torch.randn(n, n, device="cuda") * 0.01).to(torch.bfloat16)
    ref = torch.nn.Linear(n, n, device="cuda", dtype=torch.bfloat16)
    base = step_time(ref, x, dy, runs)
    print(f"torch.nn.Linear bf16: {base:8.3f} ms")
    for recipe in ("bf16", "fp8_block", "mxfp8"):
        layer = tt.Linear(n, n, recipe=recipe).cuda()
        t = step_time(layer, x, dy, runs)
        print(f"tejit.torch.Linear {recipe:9s}: {t:8.3f} ms  ({base / t:.2f}x torch bf16)")


if __name__ == "__main__":
    main()
