#!/usr/bin/env bash
#===- scripts/run-example.sh - install, build, run the main job -----------===#
#
# The README's first command: installs what is missing, builds, and runs
# te-opt's pipeline (resolve recipes, narrow quantized directions to what
# their users read, fuse all quantizations of a tensor, clean up) over
# every shipped example in examples/.
#
#===------------------------------------------------------------------------===#
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
# The main job: quantize one gradient tensor with a hybrid scheme (MXFP8
# rowwise, NVFP4 columnwise) plus its bias gradient in one generated kernel;
# --check-if-gpu compares the CUDA backend with the CPU reference bit for bit
# where there is a GPU, and elsewhere compiles the kernel and runs the CPU
# side (--check would fail there: it would compare nothing).
echo "=== te-run examples/quantize_hybrid.mlir --random-inputs 1 --check-if-gpu"
build/bin/te-run examples/quantize_hybrid.mlir --random-inputs 1 --check-if-gpu
