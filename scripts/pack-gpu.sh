#!/usr/bin/env bash
#===- scripts/pack-gpu.sh - pack binaries for the GPU machine -------------===#
#
# Copies the stripped tools and test executables of build/ into
# .device-pack/ (git-ignored), with the examples and the lit tests' inputs,
# so that `device run` can carry them (64 MiB limit). The GPU machine has no
# MLIR: the tools are linked statically (docs/Building.md).
#
#===------------------------------------------------------------------------===#
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${1:-build}"
PACK=.device-pack
rm -rf "$PACK" && mkdir -p "$PACK/bin" "$PACK/tests"
# The tools scripts/gpu-run.sh runs (the 64 MiB carry limit leaves no room
# for the others).
for t in te-opt te-run te-rt-bench te-api-overhead te-grouped-gemm-bench; do
  strip -o "$PACK/bin/$t" "$BUILD_DIR/bin/$t"
done
find "$BUILD_DIR/test" -maxdepth 3 -type f -perm -u+x \( -name '*Tests' -o -name '*GpuTest' \) \
  -exec sh -c 'strip -o "$0/tests/$(basename "$1")" "$1"' "$PACK" {} \;
cp scripts/gpu-run.sh "$PACK/"
# The Python package is built on the GPU machine against its own Python
# (scripts/gpu-run.sh): carry the installed host library and nanobind.
cmake --install "$BUILD_DIR" --prefix "$PACK/tejit" > /dev/null
strip "$PACK"/tejit/lib/libtejit.so.*
# The CUTLASS/CuTe headers (1 MB compressed; gpu-run.sh unpacks them and
# points TE_CUTLASS_DIR there).
CUTLASS_DIR=$(ls -d "${TE_DEPS_DIR:-$HOME/.cache/tejit}"/cutlass-* 2>/dev/null | tail -1)
if [[ -n "$CUTLASS_DIR" ]]; then
  tar -C "$(dirname "$CUTLASS_DIR")" -cJf "$PACK/cutlass.tar.xz" "$(basename "$CUTLASS_DIR")"
fi
NANOBIND=$(python3 -m nanobind --cmake_dir 2>/dev/null || true)
if [[ -n "$NANOBIND" ]]; then
  cp -r "$(dirname "$NANOBIND")" "$PACK/nanobind"
  rm -rf "$PACK/nanobind/__pycache__"
fi
du -sh "$PACK"
