"""Baseline for bench/linear_block_fp8_8192.mlir: the GEMMs of one FP8
block-scaling linear train step, called directly through PyTorch's
cuBLASLt path (torch.nn.functional.scaled_mm), timed like te-run --bench
(CUDA events, 3 warm-ups, median), for docs/Performance.md.

  fprop  y  = x W^T    1x128 x 128x128 -> bf16
  dgrad  dx = dy W     1x128 x 128x128 -> bf16 (W's columnwise copy)
  wgrad  dW = dy^T x   1x128 x 1x128   -> f32  (dy's and x's columnwise copies)

Usage: python3 bench/linear_torch.py [SIZE=8192] [RUNS=20]
"""
import sys

import torch

from timing import timed


def main():
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    m = n = k = size
    dev = torch.device("cuda")
    print("torch", torch.__version__, torch.cuda.get_device_name(0))
    F = torch.nn.functional
    if not (hasattr(F, "scaled_mm") and hasattr(F, "ScalingType")):
        print("torch.nn.functional.scaled_mm not available: no baseline")
        return 1
    st = F.ScalingType
    kb = k // 128

    def data(rows, cols):
        # te-run --random-inputs' distribution: sign * 2^e * (1 + f), e in
        # [-8, 8] (tensor-core power, so speed, depends on the data).
        e = torch.randint(-8, 9, (rows, cols), device=dev).float()
        f = torch.rand(rows, cols, device=dev)
        sign = torch.where(torch.rand(rows, cols, device=dev) < 0.5, -1.0, 1.0)
        return (sign * torch.exp2(e) * (1 + f)).to(torch.bfloat16).float()

    def pow2_scale(amax):
        return torch.exp2(torch.floor(torch.log2(448.0 / amax)))

    def quantize_1x128(x):
        # e4m3 codes [rows, K] and scale_inv as F.scaled_mm wants it:
        # [rows, K/128], outer-dim-major.
        rows = x.shape[0]
        blocks = x.view(rows, kb, 128)
        scale = pow2_scale(blocks.abs().amax(-1))
        q = (blocks * scale[..., None]).to(torch.float8_e4m3fn).view(rows, k)
        s_inv = torch.empty(kb, rows, device=dev).t()
        s_inv.copy_(1.0 / scale)
        return q, s_inv

    def quantize_128x128(x):
        rows = x.shape[0]
        tiles = x.view(rows // 128, 128, kb, 128)
        scale = pow2_scale(tiles.abs().amax(dim=(1, 3)))
        q = (tiles * scale[:, None, :, None]).to(torch.float8_e4m3fn).view(rows, k)
        s_inv = torch.zeros(rows // 128, (kb + 3) // 4 * 4, device=dev)
        s_inv[:, :kb] = 1.0 / scale
        return q, s_inv.t()

    # Operands as the GEMMs read them: [rows, K] e4m3, K contiguous.
    a, sa = quantize_1x128(data(m, k))
    b_src = data(n, k)
    b, sb2 = quantize_128x128(b_src)
    b1, sb1 = quantize_1x128(b_src)
    cases = [
        ("fprop 1x128 x 128x128 -> bf16", lambda: F.scaled_mm(
            a, b.t(), sa, st.BlockWise1x128, sb2, st.BlockWise128x128,
            output_dtype=torch.bfloat16)),
        ("dgrad 1x128 x 128x128 -> bf16", lambda: F.scaled_mm(
            a, b.t(), sa, st.BlockWise1x128, sb2, st.BlockWise128x128,
            output_dtype=torch.bfloat16)),
        ("wgrad 1x128 x 1x128 -> f32", lambda: F.scaled_mm(
            a, b1.t(), sa, st.BlockWise1x128, sb1, st.BlockWise1x128,
            output_dtype=torch.float32)),
    ]
    total = 0.0
    for name, fn in cases:
        try:
            ms = timed(fn, runs)
        except Exception as e:  # noqa: BLE001 - report and go on
            print(f"{name:34s} unsupported: {str(e).splitlines()[0][:100]}")
            continue
        total += ms
        print(f"torch {name:34s} {m}x{n}x{k} {ms*1e3:9.1f} us "
              f"{2*m*n*k/(ms*1e-3)/1e12:7.1f} TFLOP/s")
    print(f"torch GEMMs of the step: {total*1e3:.1f} us (fprop without bias)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
