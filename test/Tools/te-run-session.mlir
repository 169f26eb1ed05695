// RUN: te-run %s --random-inputs 3 --check-if-gpu --entry init,train_step,eval_step,train_step,optimizer_step,eval_step,train_step,optimizer_step,train_step | FileCheck %s
// RUN: te-run %s --random-inputs 3 --entry optimizer_step --dump %t | FileCheck %s --check-prefix=DUMP
// RUN: te-run %s --random-inputs 3 --input fc1.master=%t/result0.npy --entry init,eval_step | FileCheck %s --check-prefix=INPUT
// RUN: not te-run %s --random-inputs 3 --input eval_step.arg0=%t/x.npy --entry init,eval_step 2>&1 | FileCheck %s --check-prefix=NOFILE
// RUN: not te-run %s --random-inputs 3 --entry train_step 2>&1 | FileCheck %s --check-prefix=UNWRITTEN
// RUN: not te-run %s --random-inputs 3 --entry init --input fc1.moment=%t/result0.npy 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not te-run %s --random-inputs 3 --entry takes_quantized 2>&1 | FileCheck %s --check-prefix=QARG
// RUN: te-run %s --random-inputs 3 --entry optimizer_step --steps 3 | FileCheck %s --check-prefix=STEPS
// RUN: te-run %s --random-inputs 3 --check-if-gpu --entry init,snap_master,snap_master,init,eval_step | FileCheck %s --check-prefix=SNAP
// RUN: mkdir -p %t.in && %python %S/Inputs/npy.py %t.in/master.npy '<f4' 384x256 && %python %S/Inputs/npy.py %t.in/x.npy '<u2' 256x256 && %python %S/Inputs/npy.py %t.in/dy.npy '<u2' 256x384 && %python %S/Inputs/npy.py %t.in/lr.npy '<f4' '' 0.001 && %python %S/Inputs/npy.py %t.in/step.npy '<i8' '' 1
// RUN: te-run %s --entry init,train_step,optimizer_step --input fc1.master=%t.in/master.npy --input train_step.arg0=%t.in/x.npy --input train_step.arg1=%t.in/dy.npy --input optimizer_step.arg0=%t.in/lr.npy --input optimizer_step.arg1=%t.in/step.npy --input fc1.exp_avg=%t.in/master.npy --input fc1.exp_avg_sq=%t.in/master.npy | FileCheck %s --check-prefix=WRITTEN
// RUN: not te-run %s --random-inputs 3 --entry init,train_step,optimizer_step --input optimizer_step.arg3=%t.in/master.npy 2>&1 | FileCheck %s --check-prefix=OVERWRITTEN

// Tests a session of calls sharing persistent values (te.persistent): the
// FP32 master weight and moments, the block-FP8 weight the GEMMs read and
// the weight gradient live between calls. The optimizer and the eval step
// declare the weight rowwise only; the store holds the union, so the
// training step after an eval step still reads the columnwise data, and an
// eval step changes nothing: calls 2 and 4 give the same results. With a
// GPU, --check-if-gpu compares every call of the CUDA session (device-resident
// state, in-place optimizer) with the CPU one.
// CHECK: call 1 init:
// CHECK-NEXT: call 2 train_step: [[TRAIN:rms\(result0\)=[^ ]+ rms\(result1\)=[^ ]+]] rms(result2)=
// CHECK-NEXT: call 3 eval_step: rms(result0)=
// CHECK-NEXT: call 4 train_step: [[TRAIN]] rms(result2)=
// CHECK-NEXT: call 5 optimizer_step: rms(result0)=
// CHECK-NEXT: call 6 eval_step: rms(result0)=
// CHECK-NEXT: call 7 train_step: rms(result0)=
// CHECK-NEXT: call 8 optimizer_step: rms(result0)=
// CHECK-NEXT: call 9 train_step: rms(result0)=
// CHECK: result2 ({{.*}}): data[384x256 f32]

// A persistent tensor a single call reads is initialised like an argument.
// DUMP: result0 ({{.*}}): data[384x256 f32]
// DUMP: dumped 4 result(s)
// INPUT: call 2 eval_step: rms(result0)=
// ENTRY.argN names one entry's argument.
// NOFILE: te-run: cannot open '{{.*}}x.npy'

// --steps repeats one entry in a session: the persistent master weight and
// moments move from call to call (the store carries them, in place on a GPU).
// STEPS: step 1: rms(result0)=[[P1:[^ ]+]] rms(result1)=[[M1:[^ ]+]] rms(result2)=
// STEPS-NOT: rms(result0)=[[P1]] rms(result1)=[[M1]]
// STEPS: step 3: rms(result0)=

// A persistent result the entry cannot write in place (a quantize-dequantize
// round trip of the master weight: the quantize kernel still reads the old
// value) is written to the entry's own buffer and copied into the store; a
// second round trip changes nothing (MXFP8 values requantize exactly).
// SNAP: call 2 snap_master: rms(result0)=[[SNAPPED:[^ ]+]]
// SNAP-NEXT: call 3 snap_master: rms(result0)=[[SNAPPED]]{{$}}
// SNAP: call 5 eval_step: rms(result0)=

// A persistent value an earlier call writes needs no data of its own
// (optimizer_step reads fc1.grad, which train_step writes); naming it for
// the later call is an error.
// WRITTEN: call 3 optimizer_step: rms(result0)=
// OVERWRITTEN: te-run: --input names 'optimizer_step.arg3', the persistent 'fc1.grad', which an earlier call writes before 'optimizer_step' reads it

// UNWRITTEN: te-run: 'train_step' reads the persistent quantized 'fc1.weight' before any entry wrote it; run one that writes it first (init, optimizer_step)
// UNKNOWN: te-run: --input names 'fc1.moment', which no entry run takes
// QARG: te-run: argument 'arg0' of 'takes_quantized' is quantized: te-run holds quantized arguments only as persistent values an earlier entry writes (te.persistent)

func.func @init(%master: tensor<384x256xf32> {te.persistent = "fc1.master"})
    -> (!te.qtensor<384x256xf32, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise> {te.persistent = "fc1.weight"}) {
  %q = te.quantize %master : tensor<384x256xf32> -> !te.qtensor<384x256xf32, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>
  return %q : !te.qtensor<384x256xf32, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise>
}

// y = x W^T, dx = dy W, dW = dy^T x (DeepSeek's block FP8).
func.func @train_step(%x: tensor<256x256xbf16>, %dy: tensor<256x384xbf16>,
    %w: !te.qtensor<384x256xf32, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise> {te.persistent = "fc1.weight"})
    -> (tensor<256x384xbf16>, tensor<256x256xbf16>, tensor<384x256xf32> {te.persistent = "fc1.grad"}) {
  %qx = te.quantize %x : tensor<256x256xbf16> -> !te.qtensor<256x256xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>
  %qdy = te.quantize %dy : tensor<256x384xbf16> -> !te.qtensor<256x384xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>
  %y = te.gemm %qx, %w {transpose_b}
      : !te.qtensor<256x256xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>,
        !te.qtensor<384x256xf32, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise> -> tensor<256x384xbf16>
  %dx = te.gemm %qdy, %w
      : !te.qtensor<256x384xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>,
        !te.qtensor<384x256xf32, #te.fp8_block<e4m3, 128x128>, rowwise|columnwise> -> tensor<256x256xbf16>
  %dw = te.gemm %qdy, %qx {transpose_a}
      : !te.qtensor<256x384xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise>,
        !te.qtensor<256x256xbf16, #te.fp8_block<e4m3, 1x128>, rowwise|columnwise> -> tensor<384x256xf32>
  return %y, %dx, %dw : tensor<256x384xbf16>, tensor<256x256xbf16>, tensor<384x256xf32>
}

func.func @optimizer_step(%lr: tensor<f32>, %step: tensor<i64>,
    %p: tensor<384x256xf32> {te.persistent = "fc1.master"},
    %g: tensor<384x256xf32> {te.persistent = "fc1.grad"},
    %m: tensor<384x256xf32> {te.persistent = "fc1.exp_avg"},
    %v: tensor<384x256xf32> {te.persistent = "fc1.exp_avg_sq"})
    -> (tensor<384x256xf32> {te.persistent = "fc1.master"},
        tensor<384x256xf32> {te.persistent = "fc1.exp_avg"},
        tensor<384x256xf32> {te.persistent = "fc1.exp_avg_sq"},
        !te.qtensor<384x256xf32, #te.fp8_block<e4m3, 128x128>, rowwise> {te.persistent = "fc1.weight"}) {
  %p1, %m1, %v1 = te.adam_step %p, %g, %m, %v, %lr, %step
      {beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8, weight_decay = 0.1, mode = adamw}
      : tensor<384x256xf32>, tensor<384x256xf32>, tensor<384x256xf32>, tensor<384x256xf32>, tensor<f32>, tensor<i64>
      -> tensor<384x256xf32>, tensor<384x256xf32>, tensor<384x256xf32>
  %q = te.quantize %p1 : tensor<384x256xf32> -> !te.qtensor<384x256xf32, #te.fp8_block<e4m3, 128x128>, rowwise>
  return %p1, %m1, %v1, %q : tensor<384x256xf32>, tensor<384x256xf32>, tensor<384x256xf32>,
      !te.qtensor<384x256xf32, #te.fp8_block<e4m3, 128x128>, rowwise>
}

func.func @eval_step(%x: tensor<256x256xbf16>,
    %w: !te.qtensor<384x256xf32, #te.fp8_block<e4m3, 128x128>, rowwise> {te.persistent = "fc1.weight"})
    -> tensor<256x384xbf16> {
  %qx = te.quantize %x : tensor<256x256xbf16> -> !te.qtensor<256x256xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>
  %y = te.gemm %qx, %w {transpose_b}
      : !te.qtensor<256x256xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>,
        !te.qtensor<384x256xf32, #te.fp8_block<e4m3, 128x128>, rowwise> -> tensor<256x384xbf16>
  return %y : tensor<256x384xbf16>
}

func.func @snap_master(%p: tensor<384x256xf32> {te.persistent = "fc1.master"})
    -> (tensor<384x256xf32> {te.persistent = "fc1.master"}) {
  %q = te.quantize %p : tensor<384x256xf32> -> !te.qtensor<384x256xf32, #te.mxfp8<e4m3>, rowwise>
  %d = te.dequantize %q rowwise : !te.qtensor<384x256xf32, #te.mxfp8<e4m3>, rowwise> -> tensor<384x256xf32>
  return %d : tensor<384x256xf32>
}

func.func @takes_quantized(%q: !te.qtensor<256x256xbf16, #te.fp8_block<e4m3, 1x128>, rowwise>) -> tensor<256x256xbf16> {
  %y = te.dequantize %q rowwise : !te.qtensor<256x256xbf16, #te.fp8_block<e4m3, 1x128>, rowwise> -> tensor<256x256xbf16>
  return %y : tensor<256x256xbf16>
}
