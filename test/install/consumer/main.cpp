// An out-of-tree program using the installed tejit: compiles a module from
// text, then runs it on the CPU backend (no GPU needed) in a HostSession
// with a persistent value, and checks what it computed. Prints "ok" last.

#include "te/api/Tejit.h"

#include <cstdio>
#include <cstring>

static const char *kModule = R"mlir(
func.func @bias_grad(%dy: tensor<256x128xbf16>)
    -> (!te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>, tensor<128xf32>) {
  %q = te.quantize %dy : tensor<256x128xbf16>
         -> !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>
  %db = te.bias_grad %dy : tensor<256x128xbf16> -> tensor<128xf32>
  return %q, %db : !te.qtensor<256x128xbf16, #te.mxfp8<e4m3>, rowwise>,
                   tensor<128xf32>
}
func.func @column_sums(%w: tensor<64x128xf32> {te.persistent = "w"},
                       %scale: tensor<64x128xf32>) -> tensor<128xf32> {
  %db = te.bias_grad %w : tensor<64x128xf32> -> tensor<128xf32>
  return %db : tensor<128xf32>
}
)mlir";

static int fail(const char *what, const te::rt::Status &s) {
  std::fprintf(stderr, "consumer: %s: %s\n", what, s.toString().c_str());
  return 1;
}

int main() {
  auto module = te::api::CompiledModule::fromSource(kModule, {}, "consumer");
  if (!module)
    return fail("compile", module.status());

  // bias_grad on the CPU: every element of dy is 1.0 (bf16 0x3F80), so
  // each column sums to 256.
  std::vector<uint8_t> dy(256 * 128 * 2);
  for (size_t i = 0; i < dy.size(); i += 2) {
    dy[i] = 0x80;
    dy[i + 1] = 0x3F;
  }
  auto out = module->runOnCpu("bias_grad", {dy});
  if (!out)
    return fail("bias_grad", out.status());
  float db0 = 0;
  for (const te::api::HostBuffer &b : *out)
    if (b.name == "result1")
      std::memcpy(&db0, b.bytes.data(), 4);
  if (db0 != 256.0f) {
    std::fprintf(stderr, "consumer: bias gradient %g, expected 256\n", db0);
    return 1;
  }
  std::printf("consumer: %zu result buffers, bias gradient %g\n", out->size(),
              db0);

  // A session holds the persistent "w" between calls; calls take only the
  // other arguments.
  auto session = te::api::HostSession::create(*module);
  if (!session)
    return fail("session", session.status());
  std::vector<float> w(64 * 128, 0.5f), unused(64 * 128, 0.0f);
  std::vector<uint8_t> unusedBytes(unused.size() * 4);
  if (te::rt::Status s = session->set("w", w.data(), w.size() * 4); !s.isOk())
    return fail("set", s);
  auto sums = session->call("column_sums", {unusedBytes});
  if (!sums)
    return fail("column_sums", sums.status());
  float sum0 = 0;
  std::memcpy(&sum0, sums->at(0).bytes.data(), 4);
  if (sum0 != 32.0f) {
    std::fprintf(stderr, "consumer: column sum %g, expected 32\n", sum0);
    return 1;
  }
  auto held = session->read("w");
  if (!held || held->at(0).second.size() != w.size() * 4)
    return fail("read", held ? te::rt::Status::ok() : held.status());
  std::printf("consumer: session column sum %g\n", sum0);

  // The device is optional: without a driver the program says so and goes
  // on with the CPU backend.
  auto device = te::rt::Device::open();
  std::printf("consumer: GPU: %s\n",
              device ? "present" : device.status().message().c_str());
  std::printf("ok\n");
  return 0;
}
