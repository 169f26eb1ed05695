"""torch's grouped GEMMs on the shapes of te-grouped-gemm-bench, the baseline
measured in the same run (docs/Performance.md):

    python3 bench/grouped_gemm_torch.py [iters]

torch._grouped_mm (BF16) and torch._scaled_grouped_mm (FP8 E4M3 with rowwise
x scales and per-column weight scales), x [M_total, K] with group offsets,
w [G, N, K] used as [G, K, N] (its transpose), bf16 out. Splits as in
bench/gemm/grouped_gemm_bench.cpp. TFLOP/s from the median of CUDA-event
timed runs.
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


def main():
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(f"{'G':<4} {'N':<6} {'K':<6} {'tokens':<22} {'_scaled_grouped_mm':>19} {'_grouped_mm bf16':>17}")
    for g, n, k, tokens, per_expert in CASES:
        splits = splits_of(g, tokens, per_expert)
        m = sum(splits)
        offs = torch.tensor(splits, device="cuda", dtype=torch.int32).cumsum(0, dtype=torch.int32)
        flops = 2.0 * m * n * k
        x = torch.randn(m, k, device="cuda").to(torch.bfloat16)
        w = torch.randn(g, n, k, device="cuda").to(torch.bfloat16)
        results = []
        try:
            x8 = x.to(torch.float8_e4m3fn)
            w8 = w.to(torch.float8_e4m3fn)
            sx = torch.ones(m, device="cuda", dtype=torch.float32)
            sw = torch.ones(g, n, device="cuda", dtype=torch.float32)
            wt8 = w8.transpose(-2, -1)
            ms = timed(lambda: torch._scaled_grouped_mm(
                x8, wt8, sx, sw, offs=offs, out_dtype=torch.bfloat16, use_fast_accum=True), iters, warmup=10)
            results.append(f"{flops / ms / 1e9:19.1f}")
            del x8, w8, wt8
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
        label = f"{tokens}{' per expert' if per_expert else ' uneven'}"
        print(f"{g:<4} {n:<6} {k:<6} {label:<22} {' '.join(results)}", flush=True)
        del x, w
        torch.cuda.empty_cache()
    print(f"(TFLOP/s; median of {iters} runs)")


if __name__ == "__main__":
    main()
