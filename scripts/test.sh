#!/usr/bin/env bash
#===- scripts/test.sh - install, build and run every test -----------------===#
#
# The README's test command and what CI runs (.ci/run). Ends with CTest's
# summary line. GPU tests skip cleanly where no GPU is present.
#
#===------------------------------------------------------------------------===#
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
ctest --test-dir build --output-on-failure -j "$(nproc)"
