#!/usr/bin/env python3
"""Writes a small .npy file for te-run's tests (standard library only).

npy.py OUT DESCR DIMS [VALUE]
  DESCR  <f4, <f2, <u2 (bf16 bit patterns), <i8 or |u1
  DIMS   "256x384", or "" for a scalar
  VALUE  every element (default 0.5; bf16 takes the top half of the f32)
"""
import struct
import sys

out, descr, dims = sys.argv[1], sys.argv[2], sys.argv[3]
value = float(sys.argv[4]) if len(sys.argv) > 4 else 0.5
shape = [int(d) for d in dims.split("x")] if dims else []
count = 1
for d in shape:
    count *= d
if descr == "<f4":
    item = struct.pack("<f", value)
elif descr == "<f2":
    item = struct.pack("<e", value)
elif descr == "<u2":
    item = struct.pack("<f", value)[2:]
elif descr == "<i8":
    item = struct.pack("<q", int(value))
else:
    item = struct.pack("B", int(value))
tuple_text = "(" + "".join(f"{d}, " for d in shape).rstrip(" ")
tuple_text = tuple_text[:-1] if len(shape) > 1 else tuple_text
header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {tuple_text}), }}"
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
with open(out, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
    f.write(header.encode("latin1") + item * count)
