// RUN: rm -rf %t && mkdir -p %t/dir
// RUN: not te-run %s --input arg0=%t/dir 2>&1 | FileCheck %s --check-prefix=NPYDIR
// RUN: not te-run %s --input arg0=/dev/zero 2>&1 | FileCheck %s --check-prefix=NPYDEV
// RUN: not te-run /dev/zero 2>&1 | FileCheck %s --check-prefix=RUNDEV
// RUN: not te-run %t/dir 2>&1 | FileCheck %s --check-prefix=RUNDIR
// RUN: not te-opt /dev/zero 2>&1 | FileCheck %s --check-prefix=OPTDEV
// RUN: not te-translate --te-to-cuda /dev/zero 2>&1 | FileCheck %s --check-prefix=TRDEV
// RUN: not te-opt - < /dev/zero 2>&1 | FileCheck %s --check-prefix=STDIN
// RUN: %python %S/Inputs/npy.py %t/big.npy '<u2' 512x128
// RUN: not te-run %s --input arg0=%t/big.npy 2>&1 | FileCheck %s --check-prefix=SHAPE
// RUN: %python %S/Inputs/npy.py %t/ok.npy '<u2' 256x128
// RUN: head -c 1000 %t/ok.npy > %t/truncated.npy
// RUN: not te-run %s --input arg0=%t/truncated.npy 2>&1 | FileCheck %s --check-prefix=TRUNC
// RUN: sed -e 's/(256, 128)/(25x, 128)/' %t/ok.npy > %t/badshape.npy
// RUN: not te-run %s --input arg0=%t/badshape.npy 2>&1 | FileCheck %s --check-prefix=BADSHAPE
// RUN: not te-run %S/Inputs/no-functions.mlir 2>&1 | FileCheck %s --check-prefix=NOFUNC
// RUN: not te-run %s --random-inputs 1 --backend cpu --bench 3 2>&1 | FileCheck %s --check-prefix=BENCHCPU
// RUN: not te-run %s --random-inputs 1 --bench -1 2>&1 | FileCheck %s --check-prefix=BENCHNEG
// RUN: not te-run %s --random-inputs 1 --bench-idle-ms 100 2>&1 | FileCheck %s --check-prefix=BENCHIDLE
// RUN: not te-run %s --random-inputs 1 --bench 0 --bench-idle-ms 100 2>&1 | FileCheck %s --check-prefix=BENCHIDLE
// RUN: not te-run %s --random-inputs -1 2>&1 | FileCheck %s --check-prefix=SEEDNEG
// RUN: env CUDA_VISIBLE_DEVICES= not te-run %s --random-inputs 1 --check 2>&1 | FileCheck %s --check-prefix=NOGPU
// RUN: env CUDA_VISIBLE_DEVICES= te-run %s --random-inputs 1 --check-if-gpu | FileCheck %s --check-prefix=IFGPU
// RUN: te-run --help | FileCheck %s --check-prefix=HELP

// Tests that what a new user gets wrong ends in one line naming the file or
// option and exit code 1: no abort, no hang.
// NPYDIR: te-run: '{{.*}}dir' is a directory, not an .npy file
// NPYDEV: te-run: '/dev/zero' is not a regular file
// RUNDEV: te-run: '/dev/zero' is not a regular file (give a file, or - for stdin)
// RUNDIR: te-run: '{{.*}}dir' is a directory, not a program file
// OPTDEV: te-opt: '/dev/zero' is not a regular file (give a file, or - for stdin)
// TRDEV: te-translate: '/dev/zero' is not a regular file (give a file, or - for stdin)
// STDIN: te-opt: stdin holds more than 256 MiB, the largest program a tool reads
// The header is checked against the argument before the payload is read.
// SHAPE: te-run: '{{.*}}big.npy' has shape 512x128, argument 'arg0' needs 256x128
// TRUNC: te-run: '{{.*}}truncated.npy' holds {{[0-9]+}} data bytes, its header says 65536
// BADSHAPE: te-run: '{{.*}}badshape.npy' has a malformed shape (25x, 128)
// NOFUNC: te-run: '{{.*}}no-functions.mlir' has no functions
// BENCHCPU: te-run: --bench times the CUDA backend's kernels; --backend cpu runs none (use --backend cuda or both)
// BENCHNEG: te-run: --bench wants a number of runs >= 0, got -1
// BENCHIDLE: te-run: --bench-idle-ms applies to --bench N with N > 0
// SEEDNEG: te-run: --random-inputs wants a seed >= 0, got -1
// NOGPU: te-run: --check compared nothing: no GPU ({{.*}}); --check-if-gpu compiles the kernels and runs the CPU backend only where there is none
// IFGPU: running the CPU backend only (--check-if-gpu: no GPU to compare)
// IFGPU: result1 ({{.*}}): data[1x128 f32]
// HELP: --check-if-gpu
// HELP: --random-inputs=<SEED> {{.*}}approximately normal, mean 0, standard deviation 1
func.func @quantize_grad(%dy: tensor<256x128xbf16>)
    -> (!te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>, tensor<128xf32>) {
  %q = te.quantize %dy : tensor<256x128xbf16> -> !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>
  %db = te.bias_grad %dy : tensor<256x128xbf16> -> tensor<128xf32>
  return %q, %db : !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>, tensor<128xf32>
}
