#!/usr/bin/env bash
#===- scripts/build.sh - configure (once) and build tejit -----------------===#
#
# Usage: scripts/build.sh [build-dir]   (default: build)
# Uses Ninja and ccache when present; -j defaults to the number of cores.
#
#===------------------------------------------------------------------------===#
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${1:-build}"
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++
fi
cmake --build "$BUILD_DIR" -j "$(nproc)"
