"""Host cost of one call of a tejit function from Python, against the same
call through the C++ API in the same process, on the same stream.

    python3 bench/python_overhead.py [PATH/TO/te-api-overhead] [calls] [rounds]

The function is a one-kernel-pair function (the bias gradient of a 128x256
bf16 tensor) whose kernels are shorter than the host work, so "per call" is
host wall time of back-to-back enqueues. Every variant runs `calls` calls
per round; the rounds interleave the variants, so all see the same state of
the machine, and the median and the smallest round are printed. The C++
baseline is Executable::run in a C++ loop (`time_runs`, what te-api-overhead
times in its own process; that binary, if given, runs once as well).
"""

import statistics
import subprocess
import sys
import time

import torch

import tejit

MODULE = """
func.func @dbias(%x: tensor<128x256xbf16>) -> tensor<256xf32> {
  %db = te.bias_grad %x : tensor<128x256xbf16> -> tensor<256xf32>
  return %db : tensor<256xf32>
}
"""


def timed(call, calls):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        call()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / calls * 1e6


def main():
    args = sys.argv[1:]
    binary = args.pop(0) if args and not args[0].isdigit() else None
    calls = int(args[0]) if args else 2000
    rounds = int(args[1]) if len(args) > 1 else 15
    m = tejit.compile(MODULE)
    x = torch.randn(128, 256, device="cuda").to(torch.bfloat16)
    fn = m.session("cuda").dbias
    out = torch.empty(256, device="cuda")
    dev = out.device
    exe, stream = fn._exe, fn._stream()
    ptrs, sizes = [x.data_ptr()], fn._arg_bytes
    rptrs, rsizes = [out.data_ptr()], fn._result_bytes
    variants = {
        "c++ api, Executable::run loop": lambda n: exe.time_runs(ptrs, sizes, rptrs, rsizes, stream, n) / n * 1e6,
        "python fn(x) (returns a new tensor)": lambda n: timed(lambda: fn(x), n),
        "python fn.call_into([x], [out])": lambda n: timed(lambda: fn.call_into([x], [out]), n),
        "  of which: exe.run(...) from Python": lambda n: timed(lambda: exe.run(ptrs, sizes, rptrs, rsizes, stream), n),
        "  of which: torch.empty(256) alone": lambda n: timed(lambda: torch.empty((256,), dtype=torch.float32, device=dev), n),
    }
    if binary:
        print(subprocess.run([binary, "20000"], check=True, capture_output=True, text=True).stdout, end="")
    for v in variants.values():  # warm-up
        v(200)
    times = {k: [] for k in variants}
    for _ in range(rounds):
        for k, v in variants.items():
            times[k].append(v(calls))
    base = statistics.median(times["c++ api, Executable::run loop"])
    print(f"{rounds} rounds of {calls} calls, us per call: median (smallest round) [median above the c++ loop]")
    for k, t in times.items():
        med = statistics.median(t)
        extra = f" [+{med - base:.2f}]" if k.startswith("python") else ""
        print(f"{k}: {med:.2f} ({min(t):.2f}){extra}")


if __name__ == "__main__":
    main()
