#!/usr/bin/env bash
#===- scripts/install-deps.sh - install what tejit needs -------------------===#
#
# Idempotent: installs only the Debian packages that are missing (with sudo
# when not root) and checks that the CUDA 13 toolkit is in /usr/local/cuda.
# Does nothing (apart from the checks) when everything is present.
#
#===------------------------------------------------------------------------===#
set -euo pipefail

PACKAGES=(
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools libzstd-dev
  libgtest-dev cmake ninja-build python3 zlib1g-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "install-deps: not root and no sudo; install ${missing[*]} by hand" >&2; exit 1; }
    SUDO="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all Debian packages present"
fi

# The Python package: nanobind builds its extension, NumPy and pytest run
# its tests (python/tests), scikit-build-core builds the wheel (pip install .).
PY_PACKAGES=(nanobind numpy pytest scikit-build-core)
py_missing=()
for p in "${PY_PACKAGES[@]}"; do
  python3 -c "import ${p//-/_}" 2>/dev/null || py_missing+=("$p")
done
if ((${#py_missing[@]})); then
  echo "install-deps: pip installing ${py_missing[*]}"
  python3 -m pip install -q "${py_missing[@]}"
else
  echo "install-deps: all Python packages present"
fi

# The CUTLASS/CuTe headers the generated GEMMs include (NVRTC reads them at
# run time): the PyPI wheel nvidia-cutlass, unpacked into a cache directory
# the build records (runtime/CMakeLists.txt; $TE_CUTLASS_DIR overrides).
CUTLASS_VERSION=4.2.0.0
CUTLASS_DIR="${TE_DEPS_DIR:-$HOME/.cache/tejit}/cutlass-$CUTLASS_VERSION"
if [[ ! -f "$CUTLASS_DIR/include/cute/tensor.hpp" ]]; then
  echo "install-deps: unpacking the CUTLASS/CuTe $CUTLASS_VERSION headers into $CUTLASS_DIR"
  tmp=$(mktemp -d)
  python3 -m pip download -q --no-deps -d "$tmp" "nvidia-cutlass==$CUTLASS_VERSION"
  python3 - "$tmp" "$CUTLASS_DIR" <<'PY'
import glob, os, sys, zipfile
wheel, = glob.glob(os.path.join(sys.argv[1], "nvidia_cutlass-*.whl"))
prefix = "cutlass_library/source/include/"
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith(prefix) and not name.endswith("/"):
            out = os.path.join(sys.argv[2], "include", name[len(prefix):])
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with z.open(name) as src, open(out, "wb") as dst:
                dst.write(src.read())
PY
  rm -rf "$tmp"
else
  echo "install-deps: CUTLASS/CuTe $CUTLASS_VERSION headers in $CUTLASS_DIR"
fi

# ccache is optional: it only speeds up rebuilds.
command -v ccache >/dev/null || {
  if [[ $(id -u) -eq 0 ]]; then apt-get install -y -qq ccache >/dev/null 2>&1 || true; fi
}

CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
for f in include/cuda.h include/nvrtc.h include/cublasLt.h include/nccl.h; do
  if [[ ! -f "$CUDA_HOME/$f" ]]; then
    echo "install-deps: error: $CUDA_HOME/$f not found; tejit needs the CUDA 13 toolkit" \
         "(headers, NVRTC, cuBLASLt) in /usr/local/cuda or \$CUDA_HOME" >&2
    exit 1
  fi
done
ver=$(grep -m1 '#define CUDA_VERSION' "$CUDA_HOME/include/cuda.h" | awk '{print $3}')
if (( ver < 13000 )); then
  echo "install-deps: error: CUDA $ver found in $CUDA_HOME, tejit needs CUDA >= 13.0" >&2
  exit 1
fi
echo "install-deps: CUDA $ver at $CUDA_HOME"
