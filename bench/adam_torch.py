#!/usr/bin/env python3
# ===- bench/adam_torch.py - the optimizer step a PyTorch user runs ------=== #
#
# Baseline for bench/gen_adam.py's program: torch.optim.AdamW(fused=True)
# over N fp32 parameters of M x K (torch's fused AdamW needs gradients of
# the parameters' dtype: fp32), then each new parameter quantized to MXFP8
# in both directions by torch.compile (the formula of bench/quantize_torch.py
# on an fp32 tensor). Median of RUNS CUDA-event-timed steps after warm-up.
#
# Usage: python3 bench/adam_torch.py [N=128] [M=8192] [K=1024] [RUNS=10]
# ===--------------------------------------------------------------------=== #
import sys

import torch

from timing import timed

N = int(sys.argv[1]) if len(sys.argv) > 1 else 128
M = int(sys.argv[2]) if len(sys.argv) > 2 else 8192
K = int(sys.argv[3]) if len(sys.argv) > 3 else 1024
RUNS = int(sys.argv[4]) if len(sys.argv) > 4 else 10
E4M3_MAX = 448.0


def mxfp8(x):
    def one(b):
        amax = b.abs().amax(-1, keepdim=True)
        e = torch.ceil(torch.log2(amax / E4M3_MAX)).clamp(-127, 127)
        q = (b * torch.exp2(-e)).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)
        return q, (e + 127).to(torch.uint8)
    qr, sr = one(x.view(M, K // 32, 32))
    qc, sc = one(x.view(M // 32, 32, K).transpose(1, 2))
    return qr.view(M, K), sr, qc.transpose(1, 2).reshape(M, K), sc


def main():
    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(M, K, device="cuda")) for _ in range(N)]
    for p in params:
        p.grad = torch.randn(M, K, device="cuda") * 1e-2
    opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01, fused=True)
    quantize = torch.compile(mxfp8)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, "
          f"{N} x {M}x{K} fp32 = {N * M * K / 1e9:.3f} B parameters")
    t_adam = timed(opt.step, RUNS)
    t_quant = timed(lambda: [quantize(p.detach()) for p in params], RUNS)
    t_both = timed(lambda: (opt.step(), [quantize(p.detach()) for p in params]), RUNS)
    elems = N * M * K
    print(f"torch AdamW(fused=True) step       {t_adam * 1e3:10.1f} us  "
          f"{28 * elems / (t_adam * 1e-3) / 1e9:6.0f} GB/s (28 B/param)")
    print(f"torch.compile MXFP8 quantize (x{N}) {t_quant * 1e3:10.1f} us  "
          f"{(4 + 2 + 2 / 32) * elems / (t_quant * 1e-3) / 1e9:6.0f} GB/s")
    print(f"torch step + quantize              {t_both * 1e3:10.1f} us")


if __name__ == "__main__":
    main()
