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
for f in examples/*.mlir; do
  echo "=== te-opt --te-resolve-recipe --te-infer-usage --te-fuse-quantize --canonicalize --cse $f"
  build/bin/te-opt "$f" --te-resolve-recipe --te-infer-usage --te-fuse-quantize --canonicalize --cse
done
