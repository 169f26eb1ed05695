#!/usr/bin/env python3
"""Bounded mutation fuzzing of tejit's tools (standard library only).

Mutates the example programs (examples/*.mlir, test/Tools/*.mlir) and small
.npy files with a fixed seed and a fixed number of mutants, and runs
`te-opt --te-to-cuda` and `te-run --backend cpu` on each (te-run only where
the program's tensors are small, so a run stays quick). Fails on a crash (a
signal, or an exit code other than 0, 1 or 2) or a hang (no exit within
the per-run timeout, nor within six times as long on a second try). Replays test/fuzz/corpus/ first: every crasher found so far.

  fuzz.py --bin BUILD/bin --src SOURCE_ROOT --out DIR [--seed N]
          [--mutants N] [--npy-mutants N] [--timeout S] [--jobs J]

New crashers are written to DIR/crashers/ and listed; after fixing one, add
it to test/fuzz/corpus/ (a .mlir is run as a program, a .npy as the
argument of test/fuzz/npy-target.mlir).
"""
import argparse
import concurrent.futures
import os
import random
import re
import struct
import subprocess
import sys
import time

INTERESTING = ["0", "1", "-1", "2", "3", "7", "127", "128", "129", "255",
               "4095", "65536", "2147483647", "2147483648",
               "9223372036854775807", "9223372036854775808", "1e9", "1.5",
               "-0", "0x10", "1000000", "18446744073709551615"]
# te-run allocates and computes what the program declares: keep its runs to
# programs whose tensors stay small (te-opt takes every mutant).
MAX_RUN_ELEMENTS = 1 << 20


def tokens(text):
    return re.findall(r"[%@#!^]?[\w.]+|\S", text)


def mutate_mlir(rng, text, donors):
    """One to three random edits of program text."""
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(7)
        if not text:
            break
        if kind == 0:  # flip a byte
            i = rng.randrange(len(text))
            text = text[:i] + chr(rng.randrange(32, 127)) + text[i + 1:]
        elif kind == 1:  # truncate
            text = text[:rng.randrange(len(text))]
        elif kind == 2:  # swap two tokens
            toks = list(re.finditer(r"[%@#!^]?[\w.]+", text))
            if len(toks) >= 2:
                a, b = sorted(rng.sample(toks, 2), key=lambda m: m.start())
                text = (text[:a.start()] + b.group() + text[a.end():b.start()]
                        + a.group() + text[b.end():])
        elif kind in (3, 4):  # change a number
            nums = list(re.finditer(r"(?<![\w.])\d+(?:\.\d+)?", text))
            if nums:
                m = rng.choice(nums)
                text = text[:m.start()] + rng.choice(INTERESTING) + \
                    text[m.end():]
        elif kind == 5:  # delete or duplicate a line
            lines = text.split("\n")
            i = rng.randrange(len(lines))
            if rng.random() < 0.5:
                del lines[i]
            else:
                lines.insert(i, lines[i])
            text = "\n".join(lines)
        else:  # splice in a line of another program
            donor = rng.choice(donors).split("\n")
            lines = text.split("\n")
            lines.insert(rng.randrange(len(lines) + 1), rng.choice(donor))
            text = "\n".join(lines)
    return text


def npy_file(descr, shape, payload):
    dims = "".join(f"{d}, " for d in shape).rstrip(" ")
    dims = dims[:-1] if len(shape) > 1 else dims
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': ({dims}), }}"
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    return (b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) +
            header.encode("latin1") + payload)


def mutate_npy(rng, data):
    """One to three random edits of an .npy file, header-aware."""
    header_end = data.find(b"\n") + 1 or len(data)
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(6)
        if kind == 0 and data:  # flip a header byte
            i = rng.randrange(min(len(data), max(header_end, 1)))
            data = data[:i] + bytes([rng.randrange(256)]) + data[i + 1:]
        elif kind == 1 and data:  # truncate
            data = data[:rng.randrange(len(data))]
        elif kind == 2 and len(data) > 10:  # header length field
            n = rng.choice([0, 1, 9, 0x7F, 0xFFFF, rng.randrange(0x10000)])
            data = data[:8] + struct.pack("<H", n) + data[10:]
        elif kind == 3:  # shape text
            shape = rng.choice(["(16, 32)", "(32, 16)", "(16, 32, 1)", "()",
                                "(16,)", "(-1, 32)", "(ab, 32)", "(16 32)",
                                "(99999999999999999999, 32)",
                                "(4294967296, 4294967296)", "(0, 32)",
                                "(16, 32", "16, 32)"])
            data = re.sub(rb"\([^)]*\)", shape.encode(), data, count=1)
        elif kind == 4:  # descr
            descr = rng.choice(["<f4", "<u2", "<f2", "|u1", "<i8", ">f4",
                                "<c8", "", "'", "<u2'"])
            data = re.sub(rb"'descr': '[^']*'",
                          b"'descr': '" + descr.encode() + b"'", data,
                          count=1)
        elif kind == 5 and len(data) > 6:  # version byte
            data = data[:6] + bytes([rng.choice([0, 2, 3, 4, 255])]) + data[7:]
    return data


def largest_tensor(text):
    largest = 0
    for dims in re.findall(r"tensor<([0-9x]+)x", text):
        n = 1
        for d in dims.split("x"):
            n *= int(d) if d else 1
        largest = max(largest, n)
    return largest


class Runner:
    def __init__(self, args):
        self.args = args
        self.bin = args.bin
        self.cache = os.path.join(args.out, "kernel-cache")
        self.exits = {}  # (tool, exit code) -> count
        self.slow = 0  # runs past the first timeout

    def run(self, cmd):
        """(verdict, returncode): verdict is None, 'crash' or 'hang'.

        A run past the timeout gets a second chance with six times as long
        before it counts as a hang: a loaded machine (ctest -j) can make a
        first NVRTC compile slow, a real hang never ends."""
        p = None
        for timeout in (self.args.timeout, 6 * self.args.timeout):
            try:
                p = subprocess.run(cmd, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, timeout=timeout)
                break
            except subprocess.TimeoutExpired:
                self.slow += 1
        if p is None:
            return "hang", None
        key = (os.path.basename(cmd[0]), p.returncode)
        self.exits[key] = self.exits.get(key, 0) + 1
        if p.returncode < 0 or p.returncode not in (0, 1, 2):
            return "crash", p.returncode
        return None, p.returncode

    def program(self, path, text):
        """Checks te-opt and (small programs only) te-run on one file."""
        found = []
        cmds = [[os.path.join(self.bin, "te-opt"), "--te-to-cuda", path]]
        if largest_tensor(text) <= MAX_RUN_ELEMENTS:
            cmds.append([os.path.join(self.bin, "te-run"), path, "--backend",
                         "cpu", "--random-inputs", "1", "--cache-dir",
                         self.cache])
        for cmd in cmds:
            verdict, code = self.run(cmd)
            if verdict:
                found.append((verdict, code, cmd))
        return found

    def npy(self, path):
        target = os.path.join(self.args.src, "test", "fuzz", "npy-target.mlir")
        cmd = [os.path.join(self.bin, "te-run"), target, "--backend", "cpu",
               "--input", "arg0=" + path, "--cache-dir", self.cache]
        verdict, code = self.run(cmd)
        return [(verdict, code, cmd)] if verdict else []


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--mutants", type=int, default=1500)
    ap.add_argument("--npy-mutants", type=int, default=500)
    ap.add_argument("--timeout", type=float, default=10)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    start = time.monotonic()
    work = os.path.join(args.out, "mutants")
    crashers = os.path.join(args.out, "crashers")
    os.makedirs(work, exist_ok=True)
    runner = Runner(args)
    rng = random.Random(args.seed)

    # Seeds: the examples and te-run's own test programs.
    seed_dirs = [os.path.join(args.src, "examples"),
                 os.path.join(args.src, "test", "Tools")]
    seeds = []
    for d in seed_dirs:
        for name in sorted(os.listdir(d)):
            if name.endswith(".mlir"):
                with open(os.path.join(d, name), encoding="utf-8") as f:
                    seeds.append((name, f.read()))
    npy_seeds = [npy_file("<u2", (16, 32), bytes(range(256)) * 4),
                 npy_file("<f4", (16, 32), struct.pack("<f", 0.5) * 512)]

    # Every job: (kind, file). The corpus first, then the mutants, all
    # written before any runs so the set depends only on the seed.
    jobs = []
    corpus = os.path.join(args.src, "test", "fuzz", "corpus")
    for name in sorted(os.listdir(corpus)):
        path = os.path.join(corpus, name)
        if name.endswith(".mlir"):
            jobs.append(("program", path))
        elif name.endswith(".npy"):
            jobs.append(("npy", path))
    replayed = len(jobs)
    donors = [text for _, text in seeds]
    for i in range(args.mutants):
        name, text = seeds[rng.randrange(len(seeds))]
        path = os.path.join(work, f"m{i:04d}-{name}")
        with open(path, "w", encoding="utf-8", errors="replace") as f:
            f.write(mutate_mlir(rng, text, donors))
        jobs.append(("program", path))
    for i in range(args.npy_mutants):
        path = os.path.join(work, f"n{i:04d}.npy")
        with open(path, "wb") as f:
            f.write(mutate_npy(rng, rng.choice(npy_seeds)))
        jobs.append(("npy", path))

    def check(job):
        kind, path = job
        if kind == "npy":
            return path, runner.npy(path)
        with open(path, encoding="utf-8", errors="replace") as f:
            return path, runner.program(path, f.read())

    failures = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for path, found in pool.map(check, jobs):
            for verdict, code, cmd in found:
                failures.append((path, verdict, code, cmd))

    for path, verdict, code, cmd in failures:
        os.makedirs(crashers, exist_ok=True)
        kept = os.path.join(crashers, os.path.basename(path))
        with open(path, "rb") as src, open(kept, "wb") as dst:
            dst.write(src.read())
        what = f"exit {code}" if verdict == "crash" else \
            f"no exit within {args.timeout:g} s"
        print(f"fuzz: {verdict.upper()} ({what}): {' '.join(cmd)}"
              f"\n  kept as {kept}")
    exits = ", ".join(f"{tool} {code}: {n}"
                      for (tool, code), n in sorted(runner.exits.items()))
    print(f"fuzz: exit codes: {exits}; {runner.slow} run(s) past "
          f"{args.timeout:g} s")
    print(f"fuzz: {replayed} corpus file(s) replayed, {args.mutants} program "
          f"and {args.npy_mutants} .npy mutant(s) from seed {args.seed}; "
          f"{len(failures)} failure(s) in {time.monotonic() - start:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
