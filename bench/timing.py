"""CUDA-event timing shared by the bench/ baselines: warm-up runs, then the
median of `runs` timed calls, in milliseconds. Thirty warm-up runs, as te-run
--bench does: the first few dozen runs after other heavy work can measure
slow on the H100."""
import statistics

import torch


def timed(fn, runs, warmup=30):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)
