"""Baseline GEMM throughput through PyTorch, for docs/Performance.md.

Times the GEMMs that te-rt-bench times through tejit's cuBLASLt wrapper, in
the same way (CUDA events, warm-up, median), so the two can be compared when
run back to back on the same GPU:
  torch.matmul (bf16), torch._scaled_mm FP8 per-tensor (split accumulator),
  and, where this PyTorch supports it, torch._scaled_mm block-scaled FP8
  (1x128 x 128x128 and 1x128 x 1x128).
"""
import sys

import torch

from timing import timed


def report(name, m, n, k, fn):
    try:
        ms = timed(fn, 50, warmup=5)
        print(f"{name:30s} {m:5d}x{n}x{k}  {ms:8.3f} ms  {2*m*n*k/(ms*1e-3)/1e12:7.1f} TFLOP/s")
    except Exception as e:  # noqa: BLE001 - report and go on
        print(f"{name:30s} {m:5d}x{n}x{k}  unsupported: {str(e).splitlines()[0][:90]}")


def main():
    dev = torch.device("cuda")
    print("torch", torch.__version__, torch.cuda.get_device_name(0))
    for m, n, k in [(8192, 8192, 8192), (4096, 7168, 16384)]:
        a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        b = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
        report("torch.matmul bf16", m, n, k, lambda: torch.matmul(a, b.t()))
        a8 = a.to(torch.float8_e4m3fn)
        b8 = b.to(torch.float8_e4m3fn)
        one = torch.ones((), device=dev, dtype=torch.float32)
        report("_scaled_mm fp8 per-tensor", m, n, k,
               lambda: torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=one,
                                        out_dtype=torch.bfloat16, use_fast_accum=False))
        kb = k // 128
        l4 = (kb + 3) // 4 * 4
        # torch.nn.functional.scaled_mm (v2 API): 1x128 scales are [rows,
        # K/128] outer-dim-major; 128x128 scales [N/128, roundup(K/128, 4)]
        # passed transposed.
        sa = torch.ones(kb, m, device=dev, dtype=torch.float32).t()
        sb1 = torch.ones(kb, n, device=dev, dtype=torch.float32).t()
        sb2 = torch.ones(n // 128, l4, device=dev, dtype=torch.float32).t()
        F = torch.nn.functional
        if hasattr(F, "scaled_mm") and hasattr(F, "ScalingType"):
            st = F.ScalingType
            report("F.scaled_mm fp8 1x128x128x128", m, n, k,
                   lambda: F.scaled_mm(a8, b8.t(), sa, st.BlockWise1x128, sb2,
                                       st.BlockWise128x128,
                                       output_dtype=torch.bfloat16))
            report("F.scaled_mm fp8 1x128x1x128", m, n, k,
                   lambda: F.scaled_mm(a8, b8.t(), sa, st.BlockWise1x128, sb1,
                                       st.BlockWise1x128,
                                       output_dtype=torch.bfloat16))
        else:
            print("torch.nn.functional.scaled_mm not available: no block-scaled baseline")
    return 0


if __name__ == "__main__":
    sys.exit(main())
