"""DeepGEMM's block-FP8 GEMMs on the shapes of te-grouped-gemm-bench, a
baseline measured in the same run (docs/Performance.md):

    python3 bench/grouped_gemm_deepgemm.py DEEPGEMM_DIR [iters] [row]

DEEPGEMM_DIR is a checkout of DeepGEMM's first release line (its Python
package JIT-compiles the kernels with nvcc; measured with commit c57699a).
Its CUTLASS headers are taken from $TE_CUTLASS_DIR where the checkout has
none. Its kernels take the operands tejit's generated kernel takes (E4M3
x E4M3, 1x128 x scales, 128x128 weight scales, bf16 out) and promote in
fp32 per 128-K block; the script checks expert 0's rows with unit scales
only. The grouped shapes run its contiguous M-grouped kernel, which wants
every expert's rows padded to a multiple of 128: TFLOP/s are counted over the
real rows (the padding is part of its cost), the padded rows' rate alongside.
The last row (G = 1, 8192^3) is its dense kernel. TFLOP/s from the median of
CUDA-event timed runs (bench/timing.py). `row` (0-based) runs one shape
only, e.g. under a profiler.
"""

import os
import sys

import torch

from grouped_gemm_torch import CASES, splits_of
from timing import timed


def import_deep_gemm(path):
    include = os.path.join(path, "deep_gemm", "include")
    cutlass = os.environ.get("TE_CUTLASS_DIR")
    for d in ("cute", "cutlass"):
        if not os.path.lexists(os.path.join(include, d)):
            if not cutlass:
                sys.exit(f"{include}/{d} is missing: set TE_CUTLASS_DIR")
            os.symlink(os.path.join(cutlass, d), os.path.join(include, d))
    # CUDA 13's cudaTypedefs.h names only the versioned driver-entry type,
    # which that release's host code spells unversioned.
    os.environ.setdefault(
        "NVCC_APPEND_FLAGS",
        "-DPFN_cuTensorMapEncodeTiled=PFN_cuTensorMapEncodeTiled_v12000")
    sys.path.insert(0, path)
    import deep_gemm
    return deep_gemm


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    dg = import_deep_gemm(sys.argv[1])
    iters = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    only = int(sys.argv[3]) if len(sys.argv) > 3 else None
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(f"{'G':<4} {'N':<6} {'K':<6} {'tokens':<22} {'DeepGEMM':>9} {'padded rows':>12}")
    for row, (g, n, k, tokens, per_expert) in enumerate(
            CASES + [(1, 8192, 8192, 8192, True)]):
        if only is not None and row != only:
            continue
        splits = splits_of(g, tokens, per_expert)
        padded = [(m + 127) // 128 * 128 for m in splits]
        m, mp = sum(splits), sum(padded)
        x8 = torch.randn(mp, k, device="cuda").to(torch.float8_e4m3fn)
        w8 = torch.randn(g, n, k, device="cuda").to(torch.float8_e4m3fn)
        sx = dg.get_col_major_tma_aligned_tensor(
            torch.ones(mp, k // 128, device="cuda"))
        sw = torch.ones(g, (n + 127) // 128, k // 128, device="cuda")
        out = torch.empty(mp, n, device="cuda", dtype=torch.bfloat16)
        if g == 1:
            def run():
                dg.gemm_fp8_fp8_bf16_nt((x8, sx), (w8[0], sw[0]), out)
        else:
            groups = torch.repeat_interleave(
                torch.arange(g, device="cuda", dtype=torch.int32),
                torch.tensor(padded, device="cuda"))

            def run():
                dg.m_grouped_gemm_fp8_fp8_bf16_nt_contiguous(
                    (x8, sx), (w8, sw), out, groups)
        run()
        # Unit scales: the result is the plain product of the codes.
        want = x8[:padded[0]].float() @ w8[0].float().t()
        err = (out[:padded[0]].float() - want).abs().max().item()
        assert err <= 1e-2 * want.abs().max().item(), f"DeepGEMM off by {err}"
        ms = timed(run, iters, warmup=10)
        label = f"{tokens}{' per expert' if per_expert else ' uneven'}"
        print(f"{g:<4} {n:<6} {k:<6} {label:<22} "
              f"{2.0 * m * n * k / ms / 1e9:9.1f} {2.0 * mp * n * k / ms / 1e9:12.1f}",
              flush=True)
        del x8, w8, out
        torch.cuda.empty_cache()
    print(f"(TFLOP/s; median of {iters} runs)")


if __name__ == "__main__":
    main()
