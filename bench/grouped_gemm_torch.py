"""torch's grouped GEMMs on the shapes of te-grouped-gemm-bench, the baseline
measured in the same run (docs/Performance.md):

    python3 bench/grouped_gemm_torch.py [iters]

torch._grouped_mm (BF16) and torch._scaled_grouped_mm (FP8 E4M3 with rowwise
x scales and per-column weight scales), x [M_total, K] with group offsets,
w [G, N, K] used as [G, K, N] (its transpose), bf16 out; and the per-expert
loop a PyTorch user writes for block FP8 today (issue 14's reference): one
torch._scaled_mm per expert with 1x128 x scales and 128x128 weight scales,
enqueued from Python. Splits as in bench/gemm/grouped_gemm_bench.cpp. TFLOP/s
from the median of CUDA-event timed runs.
"""

import sys

import torch

from timing import timed

CASES = [(8, 4096, 7168, 32768, False), (8, 7168, 2048, 32768, False),
         (32, 4096, 7168, 32768, False), (32, 7168, 2048, 32768, False),
         (8, 4096, 7168, 256, True), (8, 7168, 2048, 256, True),
         (32, 4096, 7168, 256, True), (32, 7168, 2048, 256, True)]


def splits_of(g, tokens, per_expert):
    if per_expert:
        return [tokens] * g
    w = [1 + (7 * i) % 5 for i in range(g)]
    s = [tokens * wi // sum(w) // 16 * 16 for wi in w[:-1]]
    return s + [tokens - sum(s)]


def block_fp8_loop(x8, w8, splits, k, n):
    """The per-expert block-FP8 GEMMs as torch._scaled_mm calls: x's 1x128
    scales M-major ([m, K/128], strides (1, m)), w's 128x128 scales
    [ceil(N/128), K/128] row-major, passed transposed with w."""
    scales = []
    for m in splits:
        sa = torch.ones(k // 128, max(m, 1), device="cuda").t()[:m]
        sb = torch.ones((n + 127) // 128, k // 128, device="cuda").t()
        scales.append((sa, sb))
    rows = [0]
    for m in splits:
        rows.append(rows[-1] + m)

    def run():
        for e, m in enumerate(splits):
            if m == 0:
                continue
            sa, sb = scales[e]
            torch._scaled_mm(x8[rows[e]:rows[e + 1]], w8[e].t(), sa, sb,
                             out_dtype=torch.bfloat16)
    return run


def main():
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(f"{'G':<4} {'N':<6} {'K':<6} {'tokens':<22} {'_scaled_grouped_mm':>19} {'_grouped_mm bf16':>17} {'_scaled_mm loop':>16}")
    for g, n, k, tokens, per_expert in CASES:
        splits = splits_of(g, tokens, per_expert)
        m = sum(splits)
        offs = torch.tensor(splits, device="cuda", dtype=torch.int32).cumsum(0, dtype=torch.int32)
        flops = 2.0 * m * n * k
        x = torch.randn(m, k, device="cuda").to(torch.bfloat16)
        w = torch.randn(g, n, k, device="cuda").to(torch.bfloat16)
        results = []
        x8 = x.to(torch.float8_e4m3fn)
        w8 = w.to(torch.float8_e4m3fn)
        try:
            sx = torch.ones(m, device="cuda", dtype=torch.float32)
            sw = torch.ones(g, n, device="cuda", dtype=torch.float32)
            wt8 = w8.transpose(-2, -1)
            ms = timed(lambda: torch._scaled_grouped_mm(
                x8, wt8, sx, sw, offs=offs, out_dtype=torch.bfloat16, use_fast_accum=True), iters, warmup=10)
            results.append(f"{flops / ms / 1e9:19.1f}")
            del wt8
        except Exception as e:  # report and go on: the other rows still count
            results.append(f"{'error':>19}")
            print(f"  _scaled_grouped_mm: {type(e).__name__}: {str(e).splitlines()[0]}", file=sys.stderr)
        try:
            wt = w.transpose(-2, -1)
            ms = timed(lambda: torch._grouped_mm(x, wt, offs=offs, out_dtype=torch.bfloat16), iters, warmup=10)
            results.append(f"{flops / ms / 1e9:17.1f}")
        except Exception as e:
            results.append(f"{'error':>17}")
            print(f"  _grouped_mm: {type(e).__name__}: {str(e).splitlines()[0]}", file=sys.stderr)
        try:
            ms = timed(block_fp8_loop(x8, w8, splits, k, n), iters, warmup=10)
            results.append(f"{flops / ms / 1e9:16.1f}")
        except Exception as e:
            results.append(f"{'error':>16}")
            print(f"  _scaled_mm loop: {type(e).__name__}: {str(e).splitlines()[0]}", file=sys.stderr)
        del x8, w8
        label = f"{tokens}{' per expert' if per_expert else ' uneven'}"
        print(f"{g:<4} {n:<6} {k:<6} {label:<22} {' '.join(results)}", flush=True)
        del x, w
        torch.cuda.empty_cache()
    print(f"(TFLOP/s; median of {iters} runs)")


if __name__ == "__main__":
    main()
