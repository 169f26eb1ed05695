#!/usr/bin/env python3
# ===- bench/quantize_torch.py - torch.compile quantize baselines ---------=== #
#
# The quantizations tejit's generated kernels are compared against, written
# the way a PyTorch user would (torch.compile, default mode) for a bf16
# M x K tensor, both directions: rowwise data + columnwise data (transposed
# where the format stores it so) + scales, as docs/Numerics.md lays them out.
# Prints one line per scheme: median ms over N runs (CUDA events, several
# input buffers so L2 does not flatter), GB/s over the same byte count
# te-run uses (input read once, twice with an amax pass, + every output).
#
# Usage: python3 bench/quantize_torch.py [M K N]
# ===--------------------------------------------------------------------=== #
import sys

import torch

M, K = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 else (16384, 8192)
RUNS = int(sys.argv[3]) if len(sys.argv) > 3 else 20
E4M3_MAX = 448.0
E4M3 = torch.float8_e4m3fn


def mxfp8(x):
    def one(b):  # b: [..., 32] blocks along the last dim
        amax = b.abs().amax(-1, keepdim=True).float()
        e = torch.ceil(torch.log2(amax / E4M3_MAX)).clamp(-127, 127)
        q = (b.float() * torch.exp2(-e)).clamp(-E4M3_MAX, E4M3_MAX).to(E4M3)
        return q, (e + 127).to(torch.uint8)
    qr, sr = one(x.view(M, K // 32, 32))
    qc, sc = one(x.view(M // 32, 32, K).transpose(1, 2))
    return qr.view(M, K), sr, qc.transpose(1, 2).reshape(M, K), sc


def block_1x128(x):
    def one(b):
        amax = b.abs().amax(-1, keepdim=True).float()
        s = torch.where(amax > 0, E4M3_MAX / amax, torch.ones_like(amax))
        return (b.float() * s).to(E4M3), 1.0 / s
    qr, sr = one(x.view(M, K // 128, 128))
    qc, sc = one(x.t().reshape(K, M // 128, 128))  # columnwise stored K x M
    return qr.view(M, K), sr, qc.view(K, M), sc


def block_128x128(x):
    t = x.view(M // 128, 128, K // 128, 128)
    amax = t.abs().amax(dim=(1, 3), keepdim=True).float()
    s = torch.where(amax > 0, E4M3_MAX / amax, torch.ones_like(amax))
    q = (t.float() * s).to(E4M3).view(M, K)
    return q, 1.0 / s, q.t().contiguous(), 1.0 / s


def nvfp4(x):
    gamax = x.abs().amax().float()
    s_enc = torch.where(gamax > 0, 2688.0 / gamax, torch.ones_like(gamax))
    grid = torch.tensor([0, .5, 1, 1.5, 2, 3, 4, 6], device=x.device)

    def one(b):  # [..., 16]
        amax = b.abs().amax(-1, keepdim=True).float()
        sb = (amax * (s_enc / 6)).to(E4M3)
        enc = s_enc / sb.float().clamp_min(2 ** -9)
        y = (b.float() * enc).abs().clamp(max=6)
        code = torch.bucketize(y, (grid[1:] + grid[:-1]) / 2).to(torch.uint8)
        code = code | ((b < 0).to(torch.uint8) << 3)
        code = code.view(*code.shape[:-1], 8, 2)
        return code[..., 0] | (code[..., 1] << 4), sb
    qr, sr = one(x.view(M, K // 16, 16))
    qc, sc = one(x.t().reshape(K, M // 16, 16))
    return qr, sr, qc, sc, gamax


def fp8_current(x):
    amax = x.abs().amax().float()
    s = torch.where(amax > 0, E4M3_MAX / amax, torch.ones_like(amax))
    q = (x.float() * s).to(E4M3)
    return q, q.t().contiguous(), 1.0 / s, amax


# Bytes: input (+ input again for an amax pass) + outputs, as te-run counts.
N = M * K
BYTES = {
    "mxfp8": 2 * N + 2 * N + 2 * N // 32,
    "fp8_block_1x128": 2 * N + 2 * N + 2 * 4 * N // 128,
    "fp8_block_128x128": 2 * N + 2 * N + 2 * 4 * N // (128 * 128),
    "nvfp4": 4 * N + N + 2 * N // 16 + 8,
    "fp8_current": 4 * N + 2 * N + 16,
}
FUNCS = {"mxfp8": mxfp8, "fp8_block_1x128": block_1x128,
         "fp8_block_128x128": block_128x128, "nvfp4": nvfp4,
         "fp8_current": fp8_current}


def main():
    torch.manual_seed(0)
    xs = [torch.randn(M, K, device="cuda", dtype=torch.bfloat16) for _ in range(4)]
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, {M}x{K} bf16")
    for name, fn in FUNCS.items():
        f = torch.compile(fn)
        for x in xs:
            f(x)
        torch.cuda.synchronize()
        times = []
        for i in range(RUNS):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            f(xs[i % len(xs)])
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
        t = sorted(times)[len(times) // 2]
        print(f"torch.compile {name:20s} {t * 1e3:9.1f} us  {BYTES[name] / (t * 1e-3) / 1e9:7.0f} GB/s")


if __name__ == "__main__":
    main()
