//===- api_overhead.cpp - Host cost of one call through the C++ API -------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// te-api-overhead [calls]: loads a one-kernel function (bias gradient of a
// 128x256 bf16 tensor) through the host API and times `calls` back-to-back
// Executable::run calls on one stream, host wall time per call after a
// warm-up; then the same with a device synchronize per call. The baseline
// of bench/python_overhead.py, which times the same function from Python.
//
//===----------------------------------------------------------------------===//

#include "te/api/Tejit.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

static const char *kModule = R"mlir(
func.func @dbias(%x: tensor<128x256xbf16>) -> tensor<256xf32> {
  %db = te.bias_grad %x : tensor<128x256xbf16> -> tensor<256xf32>
  return %db : tensor<256xf32>
}
)mlir";

int main(int argc, char **argv) {
  int calls = argc > 1 ? std::atoi(argv[1]) : 20000;
  auto die = [](const te::rt::Status &s) {
    std::fprintf(stderr, "te-api-overhead: %s\n", s.toString().c_str());
    std::exit(1);
  };
  auto module = te::api::CompiledModule::fromSource(kModule);
  if (!module)
    die(module.status());
  auto device = te::rt::Device::open();
  if (!device)
    die(device.status());
  te::rt::KernelCache cache;
  auto fn = module->load("dbias", *device, cache);
  if (!fn)
    die(fn.status());
  auto stream = te::rt::Stream::create(*device);
  auto x = te::rt::DeviceBuffer::allocate(128 * 256 * 2);
  auto db = te::rt::DeviceBuffer::allocate(256 * 4);
  if (!stream || !x || !db)
    die(te::rt::Status(te::rt::StatusCode::CudaError, "stream or buffer allocation failed"));
  std::vector<te::api::DeviceSpan> args = {{x->devicePtr(), x->size()}};
  std::vector<te::api::DeviceSpan> results = {{db->devicePtr(), db->size()}};
  for (bool sync : {false, true}) {
    for (int i = 0; i < 200; ++i)
      if (te::rt::Status s = fn->run(args, results, *stream); !s.isOk())
        die(s);
    if (te::rt::Status s = stream->synchronize(); !s.isOk())
      die(s);
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) {
      if (te::rt::Status s = fn->run(args, results, *stream); !s.isOk())
        die(s);
      if (sync)
        if (te::rt::Status s = stream->synchronize(); !s.isOk())
          die(s);
    }
    if (te::rt::Status s = stream->synchronize(); !s.isOk())
      die(s);
    double us = std::chrono::duration<double, std::micro>(
                    std::chrono::steady_clock::now() - t0)
                    .count() /
                calls;
    std::printf("c++ api: %s %.2f us per call (%d calls)\n",
                sync ? "synchronized" : "enqueue", us, calls);
  }
  return 0;
}
