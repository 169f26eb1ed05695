"""Host cost of one call of a tejit function from Python, against the same
call through the C++ API (te-api-overhead) in the same run.

    python3 bench/python_overhead.py PATH/TO/te-api-overhead [calls] [rounds]

Both time back-to-back calls of a one-kernel function (the bias gradient of
a 128x256 bf16 tensor) on one stream: "enqueue" is host wall time per call
(the kernel is shorter than the host work), "synchronized" adds a device
synchronize per call.
"""

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


def main():
    binary = sys.argv[1]
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    m = tejit.compile(MODULE)
    x = torch.randn(128, 256, device="cuda").to(torch.bfloat16)
    fn = m.session("cuda").dbias
    out = torch.empty(256, device="cuda")
    # C++ and Python alternate, so that both see the same state of the machine.
    for r in range(rounds):
        print(f"round {r + 1}")
        print(subprocess.run([binary, str(calls)], check=True, capture_output=True, text=True).stdout, end="")
        run_python(fn, x, out, calls, "")
        # The C++ baseline enqueues on a stream of its own (non-blocking);
        # torch's current stream is the legacy default stream unless one is
        # set. The same calls on a stream of torch's own:
        with torch.cuda.stream(torch.cuda.Stream()):
            run_python(fn, x, out, calls, " [side stream]")


def run_python(fn, x, out, calls, where):
    # torch's own allocation of the result, which fn(x) includes and the
    # C++ baseline (caller's buffers) does not.
    for label, call in (("torch.empty(256) alone", lambda: torch.empty(256, device="cuda")),
                        ("python (returns a new tensor)", lambda: fn(x)),
                        ("python call_into (caller's output)", lambda: fn.call_into([x], [out]))):
        for sync in (False, True):
            for _ in range(200):
                call()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(calls):
                call()
                if sync:
                    torch.cuda.synchronize()
            torch.cuda.synchronize()
            us = (time.perf_counter() - t0) / calls * 1e6
            print(f"{label}{where}: {'synchronized' if sync else 'enqueue'} {us:.2f} us per call ({calls} calls)")


if __name__ == "__main__":
    main()
