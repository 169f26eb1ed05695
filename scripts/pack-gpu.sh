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
for t in "$BUILD_DIR"/bin/*; do
  [[ -x "$t" && -f "$t" ]] && strip -o "$PACK/bin/$(basename "$t")" "$t"
done
find "$BUILD_DIR/test" -maxdepth 3 -type f -perm -u+x \( -name '*Tests' -o -name '*GpuTest' \) \
  -exec sh -c 'strip -o "$0/tests/$(basename "$1")" "$1"' "$PACK" {} \;
cp scripts/gpu-run.sh "$PACK/"
du -sh "$PACK"
