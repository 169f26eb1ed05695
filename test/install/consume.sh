#!/usr/bin/env bash
#===- test/install/consume.sh - install tejit, build a program against it -===#
#
# Usage: consume.sh BUILD_DIR WORK_DIR
# `cmake --install` of BUILD_DIR into WORK_DIR/prefix, then configures,
# builds and runs test/install/consumer (find_package(tejit),
# tejit::api) out of tree: what a user linking the host API does.
#
#===------------------------------------------------------------------------===#
set -euo pipefail
BUILD=$1
WORK=$2
HERE="$(cd "$(dirname "$0")" && pwd)"
rm -rf "$WORK"
cmake --install "$BUILD" --prefix "$WORK/prefix" > "$WORK.install.log"
cmake -S "$HERE/consumer" -B "$WORK/build" -G Ninja \
      -DCMAKE_PREFIX_PATH="$WORK/prefix" > "$WORK.configure.log"
cmake --build "$WORK/build"
"$WORK/build/consumer"
