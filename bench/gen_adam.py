#!/usr/bin/env python3
# ===- bench/gen_adam.py - an optimizer-step program of N parameters -----=== #
#
# Prints a te program: one AdamW step over N fp32 master weights of M x K
# (bf16 gradients), each new weight requantized with SCHEME in both
# directions - the multi-tensor benchmark of docs/Performance.md.
#
# Usage: python3 bench/gen_adam.py [N=128] [M=8192] [K=1024] [SCHEME]
#   SCHEME: an attribute, default '#te.mxfp8<e4m3>'; 'none': no requantize
# ===--------------------------------------------------------------------=== #
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 128
m = int(sys.argv[2]) if len(sys.argv) > 2 else 8192
k = int(sys.argv[3]) if len(sys.argv) > 3 else 1024
scheme = sys.argv[4] if len(sys.argv) > 4 else "#te.mxfp8<e4m3>"
f32 = f"tensor<{m}x{k}xf32>"
bf16 = f"tensor<{m}x{k}xbf16>"
q = f"!te.qtensor<{m}x{k}xf32, {scheme}, rowwise|columnwise>"
args = ["%lr: tensor<f32>", "%step: tensor<i64>"]
for i in range(n):
    args += [f"%p{i}: {f32}", f"%g{i}: {bf16}", f"%m{i}: {f32}", f"%v{i}: {f32}"]
quantize = scheme != "none"
results = []
for i in range(n):
    results += [f32, f32, f32] + ([q] if quantize else [])
print(f"// {n} x {m}x{k} fp32 parameters, AdamW + {scheme} requantize (bench/gen_adam.py)")
print("func.func @step(" + ",\n    ".join(args) + ")\n    -> (" + ", ".join(results) + ") {")
rets, types = [], []
for i in range(n):
    print(f"  %a{i}, %b{i}, %c{i} = te.adam_step %p{i}, %g{i}, %m{i}, %v{i}, %lr, %step "
          "{beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.01, mode = adamw}\n"
          f"      : {f32}, {bf16}, {f32}, {f32}, tensor<f32>, tensor<i64> -> {f32}, {f32}, {f32}")
    rets += [f"%a{i}", f"%b{i}", f"%c{i}"]
    types += [f32, f32, f32]
    if quantize:
        print(f"  %q{i} = te.quantize %a{i} : {f32} -> {q}")
        rets.append(f"%q{i}")
        types.append(q)
print("  return " + ", ".join(rets) + "\n      : " + ", ".join(types))
print("}")
