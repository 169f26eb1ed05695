// RUN: not te-run %s --backend cpu --random-inputs 1 2>&1 | FileCheck %s
// RUN: not te-run %s --backend cpu 2>&1 | FileCheck %s

// Tests that te-run refuses, before allocating anything, a valid program
// whose tensors do not fit in the host's memory (4 TB each, well inside
// the addressable bound), naming what the CPU backend would need, instead
// of aborting on std::bad_alloc.
// CHECK: te-run: the CPU backend needs {{[0-9.]+}} GiB for 'huge' ({{[0-9.]+}} GiB available)
func.func @huge(%a: tensor<1000000x1000000xf32>, %b: tensor<1000000x1000000xf32>)
    -> (!te.qtensor<1000000x1000000xf32, #te.mxfp8<e4m3>, rowwise>,
        !te.qtensor<1000000x1000000xf32, #te.mxfp8<e4m3>, rowwise>) {
  %qa = te.quantize %a : tensor<1000000x1000000xf32> -> !te.qtensor<1000000x1000000xf32, #te.mxfp8<e4m3>, rowwise>
  %qb = te.quantize %b : tensor<1000000x1000000xf32> -> !te.qtensor<1000000x1000000xf32, #te.mxfp8<e4m3>, rowwise>
  return %qa, %qb : !te.qtensor<1000000x1000000xf32, #te.mxfp8<e4m3>, rowwise>, !te.qtensor<1000000x1000000xf32, #te.mxfp8<e4m3>, rowwise>
}
