//===- DeviceCodecsGpuTest.cu - Device library on the GPU -------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Runs the device numerics library (te/device) on a real GPU, where it takes
// its hardware paths (cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32, cvt.rn.bf16.f32,
// cvt.rn.f16.f32, {mul,div,rcp,fma}.rn.f32, __umulhi), and compares every
// result with the plain C++ reference numerics bit for bit: every encoder
// over all 65,536 BF16 patterns times a set of scales, rounding edges and an
// fp32 sweep; every decoder over every code; stochastic rounding for all 256
// random bytes; every scale function over edge and random values; Philox.
//
// The one documented exception: for a NaN input the hardware FP8/BF16/F16
// conversions return their own NaN code, so there any NaN code of the format
// is accepted (E4M3: 0x7F/0xFF; E5M2: 0x7D..0x7F/0xFD..0xFF; BF16/F16: any
// NaN pattern) and the codes seen are printed. The software encoders, also
// run on the device, must match the reference's NaN codes exactly. fp32
// results of arithmetic match when the bits are equal or both are NaN (IEEE
// leaves NaN payloads of arithmetic open).
//
// Without a CUDA device every test is skipped (GTEST_SKIP), so the binary
// runs in CI and on machines without a GPU.
//
//===----------------------------------------------------------------------===//

#include "te/device/Device.cuh"
#include "te/runtime/reference/Codecs.h"
#include "te/runtime/reference/Philox.h"
#include "te/runtime/reference/Scales.h"

#include "gtest/gtest.h"

#include <cuda_runtime.h>

#include "Support/HeldE2M1.h"
#include "Support/Tally.h"
#include "Support/TestSupport.h"
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace ref = te::rt::ref;
namespace dev = te::dev;

namespace {

using te::test::bitsOf;
using te::test::describe;
using te::test::floatOf;
using te::test::SplitMix64;
using te::test::Tally;

//===----------------------------------------------------------------------===//
// CUDA plumbing
//===----------------------------------------------------------------------===//

void cudaCheck(cudaError_t err, const char *what) {
  if (err != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " +
                             cudaGetErrorString(err));
}

/// out[i] = fn(in[i]) for every i (grid-stride).
template <typename In, typename Out, typename Fn>
__global__ void mapKernel(const In *in, size_t n, Out *out, Fn fn) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = fn(in[i]);
}

/// Runs `fn` over `in` on the device and returns the results.
template <typename Out, typename In, typename Fn>
std::vector<Out> runOnDevice(const std::vector<In> &in, Fn fn) {
  std::vector<Out> out(in.size());
  if (in.empty())
    return out;
  In *dIn = nullptr;
  Out *dOut = nullptr;
  cudaCheck(cudaMalloc(&dIn, in.size() * sizeof(In)), "cudaMalloc");
  cudaCheck(cudaMalloc(&dOut, in.size() * sizeof(Out)), "cudaMalloc");
  cudaCheck(cudaMemcpy(dIn, in.data(), in.size() * sizeof(In),
                       cudaMemcpyHostToDevice),
            "cudaMemcpy H2D");
  // Poison the output so that an element the kernel skips cannot pass.
  cudaCheck(cudaMemset(dOut, 0xA5, in.size() * sizeof(Out)), "cudaMemset");
  size_t blocks = (in.size() + 255) / 256;
  mapKernel<<<unsigned(blocks < 4096 ? blocks : 4096), 256>>>(dIn, in.size(),
                                                              dOut, fn);
  cudaCheck(cudaGetLastError(), "kernel launch");
  cudaCheck(cudaDeviceSynchronize(), "kernel");
  cudaCheck(cudaMemcpy(out.data(), dOut, in.size() * sizeof(Out),
                       cudaMemcpyDeviceToHost),
            "cudaMemcpy D2H");
  cudaFree(dIn);
  cudaFree(dOut);
  return out;
}

class DeviceCodecsGpu : public ::testing::Test {
protected:
  void SetUp() override {
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0)
      GTEST_SKIP() << "SKIPPED: no CUDA device ("
                   << (err != cudaSuccess ? cudaGetErrorString(err)
                                          : "0 devices")
                   << ")";
  }
};

//===----------------------------------------------------------------------===//
// NaN codes of the hardware conversions (Tally::hardware)
//===----------------------------------------------------------------------===//

bool isE4M3NaN(uint64_t c) { return (c & 0x7F) == 0x7F && c <= 0xFF; }
bool isE5M2NaN(uint64_t c) { return (c & 0x7F) > 0x7C && c <= 0xFF; }
bool isBF16NaN(uint64_t c) { return (c & 0x7FFF) > 0x7F80 && c <= 0xFFFF; }
bool isF16NaN(uint64_t c) { return (c & 0x7FFF) > 0x7C00 && c <= 0xFFFF; }

//===----------------------------------------------------------------------===//
// Inputs
//===----------------------------------------------------------------------===//

void addWithNeighbours(std::vector<float> &out, float v, int ulps) {
  uint32_t b = bitsOf(std::fabs(v));
  for (int d = -ulps; d <= ulps; ++d) {
    int64_t n = static_cast<int64_t>(b) + d;
    if (n < 0 || n > 0x7F800000)
      continue;
    out.push_back(floatOf(static_cast<uint32_t>(n)));
    out.push_back(-floatOf(static_cast<uint32_t>(n)));
  }
}

/// Grid values, midpoints and their neighbours of a format whose
/// non-negative finite values are `grid` (ascending); `pastMax` is one step
/// beyond the largest.
void addGridEdges(std::vector<float> &out, std::vector<float> grid,
                  float pastMax) {
  grid.push_back(pastMax);
  for (size_t i = 0; i < grid.size(); ++i) {
    addWithNeighbours(out, grid[i], 2);
    if (i + 1 < grid.size())
      addWithNeighbours(out, grid[i] / 2 + grid[i + 1] / 2, 2);
  }
  addWithNeighbours(out, grid[1] / 2, 2);
}

const std::vector<float> &bf16Scales() {
  static const std::vector<float> scales = {
      1.0f,     0.5f,    3.0f,           448.0f / 1.7f,  1.0f / 3.0f,
      0x1p-20f, 0x1p20f, 1e-30f,         1e30f,          0x1.8p-9f,
      6.0f,     0.1f,    2688.0f / 7.0f, 57344.0f / 3.0f};
  return scales;
}

/// Every input of the encoder checks: all BF16 patterns times every scale
/// (products computed here), the rounding edges of every format, every
/// 4093rd fp32 pattern, fp32 subnormals and NaNs with many payloads.
const std::vector<float> &encoderInputs() {
  static const std::vector<float> inputs = [] {
    std::vector<float> in;
    for (float s : bf16Scales())
      for (uint32_t p = 0; p < 0x10000; ++p)
        in.push_back(ref::bf16ToFloat(static_cast<uint16_t>(p)) * s);
    std::vector<float> e4m3, e5m2, e2m1;
    for (unsigned c = 0; c < 0x7F; ++c)
      e4m3.push_back(ref::decodeE4M3(static_cast<uint8_t>(c)));
    for (unsigned c = 0; c < 0x7C; ++c)
      e5m2.push_back(ref::decodeE5M2(static_cast<uint8_t>(c)));
    for (unsigned c = 0; c < 8; ++c)
      e2m1.push_back(ref::decodeE2M1(static_cast<uint8_t>(c)));
    addGridEdges(in, e4m3, 480.0f);
    addGridEdges(in, e5m2, 65536.0f);
    addGridEdges(in, e2m1, 8.0f);
    for (uint32_t p = 0; p < 0x7C00; ++p) { // F16 and BF16 midpoints
      addWithNeighbours(in,
                        ref::f16ToFloat(static_cast<uint16_t>(p)) / 2 +
                            ref::f16ToFloat(static_cast<uint16_t>(p + 1)) / 2,
                        1);
      addWithNeighbours(in,
                        ref::bf16ToFloat(static_cast<uint16_t>(p)) / 2 +
                            ref::bf16ToFloat(static_cast<uint16_t>(p + 1)) / 2,
                        1);
    }
    for (float x : {65520.0f, floatOf(0x7F7F8000u), FLT_MAX, FLT_MIN, 0x1p-149f,
                    std::numeric_limits<float>::infinity()})
      addWithNeighbours(in, x, 2);
    for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 4093)
      in.push_back(floatOf(static_cast<uint32_t>(b)));
    for (uint32_t b = 0; b < 4096; ++b) {
      in.push_back(floatOf(b));
      in.push_back(floatOf(b | 0x80000000u));
    }
    for (uint32_t m = 1; m < 0x800000; m = m * 3 + 1) {
      in.push_back(floatOf(0x7F800000u | m));
      in.push_back(floatOf(0xFF800000u | m));
    }
    return in;
  }();
  return inputs;
}

/// Amax-like values: the named edge values and random ones over the whole
/// fp32 range.
std::vector<float> amaxValues() {
  std::vector<float> out = {0.0f,
                            -0.0f,
                            0x1p-149f,
                            1.0f,
                            448.0f,
                            3e38f,
                            FLT_MAX,
                            std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            -1.0f,
                            57344.0f,
                            2688.0f,
                            FLT_MIN,
                            1e-38f,
                            1e-30f,
                            1e-6f,
                            0.5f,
                            6.0f,
                            65504.0f,
                            1e30f};
  SplitMix64 rng(42);
  for (int i = 0; i < 20000; ++i) {
    out.push_back(floatOf(rng.next32() & 0x7F7FFFFFu));
    out.push_back(rng.uniform(0.0f, 1000.0f));
  }
  for (uint32_t p = 0; p < 0x8000; p += 3)
    out.push_back(ref::bf16ToFloat(static_cast<uint16_t>(p)));
  return out;
}

//===----------------------------------------------------------------------===//
// Device functors (one per library function under test)
//===----------------------------------------------------------------------===//

#define TE_UNARY_FUNCTOR(Name, In, Out, expr)                                  \
  struct Name {                                                                \
    __device__ Out operator()(In x) const { return expr; }                     \
  }

TE_UNARY_FUNCTOR(EncE4M3, float, uint8_t, dev::encodeE4M3(x));
TE_UNARY_FUNCTOR(EncE5M2, float, uint8_t, dev::encodeE5M2(x));
TE_UNARY_FUNCTOR(EncE4M3Sw, float, uint8_t, dev::encodeE4M3Sw(x));
TE_UNARY_FUNCTOR(EncE5M2Sw, float, uint8_t, dev::encodeE5M2Sw(x));
TE_UNARY_FUNCTOR(EncE2M1, float, uint8_t, dev::encodeE2M1(x));
TE_UNARY_FUNCTOR(EncE8M0, float, uint8_t, dev::encodeE8M0(x));
TE_UNARY_FUNCTOR(EncBF16, float, uint16_t, dev::floatToBF16(x));
TE_UNARY_FUNCTOR(EncBF16Sw, float, uint16_t, dev::floatToBF16Sw(x));
TE_UNARY_FUNCTOR(EncF16, float, uint16_t, dev::floatToF16(x));
TE_UNARY_FUNCTOR(EncF16Sw, float, uint16_t, dev::floatToF16Sw(x));

struct FloatPair {
  float first, second;
};
TE_UNARY_FUNCTOR(EncE4M3x2, FloatPair, uint16_t,
                 dev::encodeE4M3x2(x.first, x.second));
TE_UNARY_FUNCTOR(EncE5M2x2, FloatPair, uint16_t,
                 dev::encodeE5M2x2(x.first, x.second));
TE_UNARY_FUNCTOR(EncBF16x2, FloatPair, uint32_t,
                 dev::floatToBF16x2(x.first, x.second));
TE_UNARY_FUNCTOR(EncE2M1x2, FloatPair, uint8_t,
                 dev::encodeE2M1x2(x.first, x.second));

/// All 65536 codes through every decoder; lower 8 / 4 bits for the narrow
/// formats.
struct Decoded {
  float bf16, f16, e4m3, e5m2, e8m0, e8m0Rcp, e2m1, e4m3NotNaN;
};
TE_UNARY_FUNCTOR(
    DecodeAll, uint32_t, Decoded,
    (Decoded{dev::bf16ToFloat(uint16_t(x)), dev::f16ToFloat(uint16_t(x)),
             dev::decodeE4M3(uint8_t(x)), dev::decodeE5M2(uint8_t(x)),
             dev::decodeE8M0(uint8_t(x)), dev::e8m0ReciprocalScale(uint8_t(x)),
             dev::decodeE2M1(uint8_t(x)), dev::decodeE4M3NotNaN(uint8_t(x))}));

/// Both paired FP8 decoders on one pair of codes.
struct PairDecoded {
  float e4m3[2], e5m2[2], e2m1[2];
};
struct DecodePairs {
  __device__ PairDecoded operator()(uint32_t x) const {
    PairDecoded d;
    dev::decodeFp8x2<dev::Fp8Format::E4M3>(uint16_t(x), d.e4m3[0], d.e4m3[1]);
    dev::decodeFp8x2<dev::Fp8Format::E5M2>(uint16_t(x), d.e5m2[0], d.e5m2[1]);
    dev::decodeE2M1x2(x, d.e2m1[0], d.e2m1[1]);
    return d;
  }
};

/// bf16 pattern times a scale, multiplied on the device (mulRn).
struct Bf16Scaled {
  uint32_t pattern;
  float scale;
};
struct Bf16ScaledCodes {
  uint8_t e4m3, e5m2, e2m1, pad;
};
TE_UNARY_FUNCTOR(EncBf16Scaled, Bf16Scaled, Bf16ScaledCodes, ([&] {
                   float y = dev::mulRn(dev::bf16ToFloat(uint16_t(x.pattern)),
                                        x.scale);
                   return Bf16ScaledCodes{dev::encodeE4M3(y),
                                          dev::encodeE5M2(y),
                                          dev::encodeE2M1(y), 0};
                 }()));

/// Eight elements, their scale and (stochastic rounding) two random words.
struct E2M1x8Input {
  float v[8];
  float mult;
  uint32_t rbits[2];
};
TE_UNARY_FUNCTOR(EncE2M1x8, E2M1x8Input, uint32_t,
                 dev::encodeE2M1x8(x.v, x.mult));
TE_UNARY_FUNCTOR(EncE2M1x8Sr, E2M1x8Input, uint32_t,
                 dev::encodeE2M1x8Stochastic(x.v, x.mult, x.rbits[0],
                                             x.rbits[1]));

struct SrInput {
  float x;
  uint32_t rbits;
};
TE_UNARY_FUNCTOR(EncE2M1Sr, SrInput, uint8_t,
                 dev::encodeE2M1Stochastic(x.x, x.rbits));
struct ScaleParams {
  float fp8Max;
  bool pow2;
  float eps;
  float valueForInf;
  __device__ float operator()(float amax) const {
    return dev::computeScaleFromAmax(amax, fp8Max, pow2, eps, valueForInf);
  }
};
TE_UNARY_FUNCTOR(ScaleInv, float, float, dev::scaleInvFromScale(x));
TE_UNARY_FUNCTOR(MxExpE4M3, float, uint8_t,
                 dev::mxfp8BlockExponent(x, dev::Fp8Format::E4M3));
TE_UNARY_FUNCTOR(MxExpE5M2, float, uint8_t,
                 dev::mxfp8BlockExponent(x, dev::Fp8Format::E5M2));
TE_UNARY_FUNCTOR(NvGlobalEnc, float, float, dev::nvfp4GlobalEncodeScale(x));
TE_UNARY_FUNCTOR(NvGlobalDec, float, float, dev::nvfp4GlobalDecodeScale(x));
TE_UNARY_FUNCTOR(BlockScaleInv, float, float, dev::fp8BlockScaleInv(x));
TE_UNARY_FUNCTOR(AmaxPair, FloatPair, float,
                 dev::amaxAccumulate(dev::amaxAccumulate(0.0f, x.first),
                                     x.second));
struct NvBlockScale {
  float sEnc;
  __device__ uint8_t operator()(float amax) const {
    return dev::nvfp4BlockScale(amax, sEnc);
  }
};
struct NvFactors {
  float sDec, globalAmax;
  __device__ FloatPair operator()(uint32_t sB) const {
    return FloatPair{dev::nvfp4BlockEncodeFactor(uint8_t(sB), sDec),
                     dev::nvfp4DequantFactor(uint8_t(sB), globalAmax)};
  }
};
struct Fp8BlockScale {
  dev::Fp8Format format;
  bool pow2;
  float eps;
  dev::SourceType src;
  __device__ float operator()(float amax) const {
    return dev::fp8BlockScale(amax, format, pow2, eps, src);
  }
};

struct RngInput {
  unsigned long long seed, offset, index;
};
struct RngOutput {
  uint32_t w0, w1, w2, w3, word;
  uint8_t byte, pad[3];
};
TE_UNARY_FUNCTOR(SrRandom, RngInput, RngOutput, ([&] {
                   dev::Philox4x32 p = dev::philox4x32<10>(
                       {uint32_t(x.seed), uint32_t(x.offset), uint32_t(x.index),
                        uint32_t(x.seed >> 32)},
                       uint32_t(x.offset >> 32), uint32_t(x.index >> 32));
                   return RngOutput{
                       p.w0,
                       p.w1,
                       p.w2,
                       p.w3,
                       dev::srRandomWord(x.seed, x.offset, x.index),
                       dev::srRandomByte(x.seed, x.offset, x.index),
                       {0, 0, 0}};
                 }()));

//===----------------------------------------------------------------------===//
// Tests
//===----------------------------------------------------------------------===//

template <typename Fn>
void checkEncoder8(const char *name, Fn fn, uint8_t (*reference)(float),
                   bool (*isNaNCode)(uint64_t)) {
  const std::vector<float> &in = encoderInputs();
  std::vector<uint8_t> got = runOnDevice<uint8_t>(in, fn);
  Tally tally(name);
  for (size_t i = 0; i < in.size(); ++i) {
    if (isNaNCode)
      tally.hardware(in[i], got[i], reference(in[i]), isNaNCode);
    else
      tally.code(describe(in[i]), got[i], reference(in[i]));
  }
}

TEST_F(DeviceCodecsGpu, Fp8AndFp4Encoders) {
  std::printf("[   info   ] %zu encoder inputs (65536 bf16 x %zu scales, "
              "edges, fp32 sweep)\n",
              encoderInputs().size(), bf16Scales().size());
  checkEncoder8("encodeE4M3 (hardware cvt)", EncE4M3{}, ref::encodeE4M3,
                isE4M3NaN);
  checkEncoder8("encodeE5M2 (hardware cvt)", EncE5M2{}, ref::encodeE5M2,
                isE5M2NaN);
  checkEncoder8("encodeE4M3Sw on the device", EncE4M3Sw{}, ref::encodeE4M3,
                nullptr);
  checkEncoder8("encodeE5M2Sw on the device", EncE5M2Sw{}, ref::encodeE5M2,
                nullptr);
  checkEncoder8("encodeE2M1", EncE2M1{}, ref::encodeE2M1, nullptr);
  checkEncoder8("encodeE8M0", EncE8M0{}, ref::encodeE8M0, nullptr);
}

TEST_F(DeviceCodecsGpu, SixteenBitEncoders) {
  const std::vector<float> &in = encoderInputs();
  std::vector<uint16_t> bf16 = runOnDevice<uint16_t>(in, EncBF16{});
  std::vector<uint16_t> bf16Sw = runOnDevice<uint16_t>(in, EncBF16Sw{});
  std::vector<uint16_t> f16 = runOnDevice<uint16_t>(in, EncF16{});
  std::vector<uint16_t> f16Sw = runOnDevice<uint16_t>(in, EncF16Sw{});
  Tally tBf16("floatToBF16 (hardware cvt)"), tBf16Sw("floatToBF16Sw");
  Tally tF16("floatToF16 (hardware cvt)"), tF16Sw("floatToF16Sw");
  for (size_t i = 0; i < in.size(); ++i) {
    uint16_t wantBf16 = ref::floatToBF16(in[i]);
    uint16_t wantF16 = ref::floatToF16(in[i]);
    tBf16.hardware(in[i], bf16[i], wantBf16, isBF16NaN);
    tBf16Sw.code(describe(in[i]), bf16Sw[i], wantBf16);
    tF16.hardware(in[i], f16[i], wantF16, isF16NaN);
    tF16Sw.code(describe(in[i]), f16Sw[i], wantF16);
  }
}

TEST_F(DeviceCodecsGpu, PairedEncodersPutTheFirstElementInTheLowPart) {
  const std::vector<float> &all = encoderInputs();
  std::vector<FloatPair> in;
  SplitMix64 rng(3);
  for (size_t i = 0; i < all.size(); i += 3)
    in.push_back({all[i], all[rng.next() % all.size()]});
  std::vector<uint16_t> e4m3 = runOnDevice<uint16_t>(in, EncE4M3x2{});
  std::vector<uint16_t> e5m2 = runOnDevice<uint16_t>(in, EncE5M2x2{});
  std::vector<uint32_t> bf16 = runOnDevice<uint32_t>(in, EncBF16x2{});
  std::vector<uint8_t> e2m1 = runOnDevice<uint8_t>(in, EncE2M1x2{});
  Tally t4("encodeE4M3x2"), t5("encodeE5M2x2"), tb("floatToBF16x2"),
      t1("encodeE2M1x2");
  for (size_t i = 0; i < in.size(); ++i) {
    float a = in[i].first, b = in[i].second;
    // A NaN in either half: check each half separately.
    t4.hardware(a, e4m3[i] & 0xFF, ref::encodeE4M3(a), isE4M3NaN);
    t4.hardware(b, e4m3[i] >> 8, ref::encodeE4M3(b), isE4M3NaN);
    t5.hardware(a, e5m2[i] & 0xFF, ref::encodeE5M2(a), isE5M2NaN);
    t5.hardware(b, e5m2[i] >> 8, ref::encodeE5M2(b), isE5M2NaN);
    tb.hardware(a, bf16[i] & 0xFFFF, ref::floatToBF16(a), isBF16NaN);
    tb.hardware(b, bf16[i] >> 16, ref::floatToBF16(b), isBF16NaN);
    t1.code(describe(a) + ", " + describe(b), e2m1[i],
            ref::packE2M1(ref::encodeE2M1(a), ref::encodeE2M1(b)));
  }
}

TEST_F(DeviceCodecsGpu, Bf16TimesScaleMultipliedOnTheDevice) {
  std::vector<Bf16Scaled> in;
  for (float s : bf16Scales())
    for (uint32_t p = 0; p < 0x10000; ++p)
      in.push_back({p, s});
  std::vector<Bf16ScaledCodes> got =
      runOnDevice<Bf16ScaledCodes>(in, EncBf16Scaled{});
  Tally tally("mulRn(bf16ToFloat(p), s) -> E4M3/E5M2/E2M1");
  for (size_t i = 0; i < in.size(); ++i) {
    float y =
        ref::bf16ToFloat(static_cast<uint16_t>(in[i].pattern)) * in[i].scale;
    tally.hardware(y, got[i].e4m3, ref::encodeE4M3(y), isE4M3NaN);
    tally.hardware(y, got[i].e5m2, ref::encodeE5M2(y), isE5M2NaN);
    tally.code(describe(y), got[i].e2m1, ref::encodeE2M1(y));
  }
}

/// Every encoder input in each of two positions of an eight-element group,
/// under four scales; stochastic rounding on random groups and words.
TEST_F(DeviceCodecsGpu, EightE2M1CodesAtOnce) {
  const std::vector<float> &all = encoderInputs();
  SplitMix64 rng(13);
  std::vector<E2M1x8Input> in;
  for (float mult : {1.0f, 0.75f, 3.0f, 0x1p-20f})
    for (size_t i = 0; i < all.size(); i += 4) {
      E2M1x8Input g{};
      for (float &x : g.v)
        x = all[rng.next() % all.size()];
      g.v[(i / 4) % 8] = all[i];
      g.v[(i / 4 + 3) % 8] = all[(i + 1) % all.size()];
      g.mult = mult;
      g.rbits[0] = rng.next32();
      g.rbits[1] = rng.next32();
      in.push_back(g);
    }
  std::vector<uint32_t> rn = runOnDevice<uint32_t>(in, EncE2M1x8{});
  std::vector<uint32_t> sr = runOnDevice<uint32_t>(in, EncE2M1x8Sr{});
  Tally tRn("encodeE2M1x8"), tSr("encodeE2M1x8Stochastic");
  for (size_t i = 0; i < in.size(); ++i) {
    uint32_t wantRn = 0, wantSr = 0;
    for (int e = 0; e < 8; ++e) {
      float y = in[i].v[e] * in[i].mult;
      wantRn |= uint32_t(ref::encodeE2M1(y)) << (4 * e);
      wantSr |=
          uint32_t(ref::encodeE2M1Stochastic(
              y, static_cast<uint8_t>(in[i].rbits[e / 4] >> (8 * (e % 4)))))
          << (4 * e);
    }
    tRn.code(describe(in[i].v[0]), rn[i], wantRn);
    tSr.code(describe(in[i].v[0]), sr[i], wantSr);
  }
}

TEST_F(DeviceCodecsGpu, DecodersOnEveryCode) {
  std::vector<uint32_t> codes(0x10000);
  for (uint32_t c = 0; c < 0x10000; ++c)
    codes[c] = c;
  std::vector<Decoded> got = runOnDevice<Decoded>(codes, DecodeAll{});
  Tally wide("bf16ToFloat / f16ToFloat, 65536 codes");
  Tally narrow("decodeE4M3/E5M2/E8M0/E2M1, e8m0Rcp");
  for (uint32_t c = 0; c < 0x10000; ++c) {
    uint16_t h = static_cast<uint16_t>(c);
    uint8_t b = static_cast<uint8_t>(c);
    std::string in = std::to_string(c);
    wide.bits(in, got[c].bf16, ref::bf16ToFloat(h));
    wide.bits(in, got[c].f16, ref::f16ToFloat(h));
    if (c >= 0x100)
      continue;
    narrow.bits(in, got[c].e4m3, ref::decodeE4M3(b));
    narrow.bits(in, got[c].e5m2, ref::decodeE5M2(b));
    narrow.bits(in, got[c].e8m0, ref::decodeE8M0(b));
    narrow.bits(in, got[c].e8m0Rcp, ref::e8m0ReciprocalScale(b));
    narrow.bits(in, got[c].e2m1, ref::decodeE2M1(b));
    if ((b & 0x7F) != 0x7F)
      narrow.bits(in, got[c].e4m3NotNaN, ref::decodeE4M3(b));
  }
}

/// e2m1x8ToE4M3 on the device (__byte_perm itself, which the host emulates).
struct HeldE2M1 {
  uint32_t lo, hi;
};
struct E2M1ToE4M3 {
  __device__ HeldE2M1 operator()(uint32_t x) const {
    HeldE2M1 h;
    dev::e2m1x8ToE4M3(x, h.lo, h.hi);
    return h;
  }
};

TEST_F(DeviceCodecsGpu, E2M1ToE4M3OnEveryFourCodes) {
  std::vector<uint32_t> words = te::test::e2m1WordsOfEveryFourCodes();
  std::vector<HeldE2M1> got = runOnDevice<HeldE2M1>(words, E2M1ToE4M3{});
  Tally tally("e2m1x8ToE4M3 on every 4 codes of each half");
  for (size_t w = 0; w < words.size(); ++w)
    te::test::checkHeldE2M1(tally, words[w], got[w].lo, got[w].hi);
}

// The paired decoders (the hardware f16x2 conversion on sm_90): every value
// bit for bit, the low byte first; a NaN code gives a NaN (its sign and
// payload are left open: the dequantize kernels multiply it). E2M1 reads
// the low nibble of each byte (the high one must not matter).
TEST_F(DeviceCodecsGpu, PairedDecodersOnEveryPair) {
  std::vector<uint32_t> pairs(0x10000);
  for (uint32_t c = 0; c < 0x10000; ++c)
    pairs[c] = c;
  std::vector<PairDecoded> got = runOnDevice<PairDecoded>(pairs, DecodePairs{});
  int64_t wrong = 0;
  std::string first;
  auto check = [&](uint32_t pair, float g, float want, const char *what) {
    uint32_t gb, wb;
    std::memcpy(&gb, &g, 4);
    std::memcpy(&wb, &want, 4);
    bool ok = std::isnan(want) ? std::isnan(g) : gb == wb;
    if (!ok && wrong++ == 0)
      first = std::string(what) + " of pair " + std::to_string(pair);
  };
  for (uint32_t c = 0; c < 0x10000; ++c) {
    for (int h = 0; h < 2; ++h) {
      uint8_t code = uint8_t(c >> (8 * h));
      check(c, got[c].e4m3[h], ref::decodeE4M3(code), "decodeFp8x2<E4M3>");
      check(c, got[c].e5m2[h], ref::decodeE5M2(code), "decodeFp8x2<E5M2>");
      check(c, got[c].e2m1[h], ref::decodeE2M1(code & 0xF), "decodeE2M1x2");
    }
  }
  EXPECT_EQ(wrong, 0) << "first: " << first;
}

TEST_F(DeviceCodecsGpu, StochasticE2M1ForEveryRbits) {
  std::vector<float> xs;
  std::vector<float> grid;
  for (unsigned c = 0; c < 8; ++c)
    grid.push_back(ref::decodeE2M1(static_cast<uint8_t>(c)));
  addGridEdges(xs, grid, 8.0f);
  for (float x : {0.1f, 0.3f, 0.7f, 1.1f, 2.2f, 3.3f, 4.4f, 5.5f, 5.99f, 6.5f,
                  7.0f, 7.99f, 100.0f, 1e-20f, 0x1p-149f,
                  std::numeric_limits<float>::infinity()})
    addWithNeighbours(xs, x, 2);
  xs.push_back(std::numeric_limits<float>::quiet_NaN());
  xs.push_back(-std::numeric_limits<float>::quiet_NaN());
  SplitMix64 rng(4);
  for (int i = 0; i < 256; ++i)
    xs.push_back(rng.uniform(-8.0f, 8.0f));
  std::vector<SrInput> in;
  for (float x : xs)
    for (uint32_t r = 0; r < 256; ++r)
      in.push_back({x, r | (rng.next32() & 0xFFFFFF00u)});
  std::vector<uint8_t> got = runOnDevice<uint8_t>(in, EncE2M1Sr{});
  Tally tally("encodeE2M1Stochastic, edges x 256 rbits");
  for (size_t i = 0; i < in.size(); ++i)
    tally.code(
        describe(in[i].x) + " rbits " + std::to_string(in[i].rbits), got[i],
        ref::encodeE2M1Stochastic(in[i].x, static_cast<uint8_t>(in[i].rbits)));
}

TEST_F(DeviceCodecsGpu, ScaleFunctions) {
  std::vector<float> amaxes = amaxValues();
  {
    Tally tally("computeScaleFromAmax (all parameter sets)");
    for (float fp8Max : {448.0f, 57344.0f})
      for (bool pow2 : {false, true})
        for (float eps : {0.0f, 1e-12f, 1.0f})
          for (float vInf : {FLT_MAX, floatOf(0x7F7F0000u), 65504.0f}) {
            std::vector<float> got = runOnDevice<float>(
                amaxes, ScaleParams{fp8Max, pow2, eps, vInf});
            for (size_t i = 0; i < amaxes.size(); ++i)
              tally.value(describe(amaxes[i]), got[i],
                          ref::computeScaleFromAmax(amaxes[i], fp8Max, pow2,
                                                    eps, vInf));
          }
  }
  {
    Tally tally("scaleInvFromScale / fp8BlockScaleInv / S_dec");
    std::vector<float> in = amaxes;
    for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 1021)
      in.push_back(floatOf(static_cast<uint32_t>(b)));
    std::vector<float> a = runOnDevice<float>(in, ScaleInv{});
    std::vector<float> b = runOnDevice<float>(in, BlockScaleInv{});
    std::vector<float> c = runOnDevice<float>(in, NvGlobalDec{});
    for (size_t i = 0; i < in.size(); ++i) {
      tally.value(describe(in[i]), a[i], ref::scaleInvFromScale(in[i]));
      tally.value(describe(in[i]), b[i], ref::fp8BlockScaleInv(in[i]));
      tally.value(describe(in[i]), c[i], ref::nvfp4GlobalDecodeScale(in[i]));
    }
  }
  {
    Tally tally("mxfp8BlockExponent (E4M3, E5M2)");
    std::vector<uint8_t> e4 = runOnDevice<uint8_t>(amaxes, MxExpE4M3{});
    std::vector<uint8_t> e5 = runOnDevice<uint8_t>(amaxes, MxExpE5M2{});
    for (size_t i = 0; i < amaxes.size(); ++i) {
      tally.code(describe(amaxes[i]), e4[i],
                 ref::mxfp8BlockExponent(amaxes[i], ref::Fp8Format::E4M3));
      tally.code(describe(amaxes[i]), e5[i],
                 ref::mxfp8BlockExponent(amaxes[i], ref::Fp8Format::E5M2));
    }
  }
  {
    Tally tally("fp8BlockScale (formats x pow2 x sources)");
    for (auto f : {std::make_pair(ref::Fp8Format::E4M3, dev::Fp8Format::E4M3),
                   std::make_pair(ref::Fp8Format::E5M2, dev::Fp8Format::E5M2)})
      for (auto s :
           {std::make_pair(ref::SourceType::BF16, dev::SourceType::BF16),
            std::make_pair(ref::SourceType::F16, dev::SourceType::F16),
            std::make_pair(ref::SourceType::F32, dev::SourceType::F32)})
        for (bool pow2 : {false, true}) {
          std::vector<float> got = runOnDevice<float>(
              amaxes, Fp8BlockScale{f.second, pow2, 0.0f, s.second});
          for (size_t i = 0; i < amaxes.size(); ++i)
            tally.value(
                describe(amaxes[i]), got[i],
                ref::fp8BlockScale(amaxes[i], f.first, pow2, 0.0f, s.first));
        }
  }
  {
    Tally tally("amaxAccumulate (pairs)");
    std::vector<FloatPair> in;
    SplitMix64 rng(9);
    for (size_t i = 0; i < amaxes.size(); ++i)
      in.push_back({amaxes[i], amaxes[rng.next() % amaxes.size()]});
    std::vector<float> got = runOnDevice<float>(in, AmaxPair{});
    for (size_t i = 0; i < in.size(); ++i) {
      // NaN elements are ignored (docs/Numerics.md §3). The reference's amaxOf
      // uses std::fmax, which glibc makes return NaN for a *signaling* NaN
      // operand (IEEE 754-2008 maxNum), so the NaNs are dropped before the
      // reference sees them.
      std::vector<float> kept;
      for (float v : {in[i].first, in[i].second})
        if (!std::isnan(v))
          kept.push_back(v);
      tally.value(describe(in[i].first) + ", " + describe(in[i].second), got[i],
                  ref::amaxOf(kept.data(), kept.size()));
    }
  }
}

TEST_F(DeviceCodecsGpu, Nvfp4Scales) {
  std::vector<float> amaxes = amaxValues();
  std::vector<float> globals = {0.0f,
                                1e-30f,
                                0x1p-149f,
                                1.0f,
                                6.0f,
                                448.0f,
                                2688.0f,
                                1e4f,
                                3e38f,
                                FLT_MAX,
                                std::numeric_limits<float>::infinity(),
                                std::numeric_limits<float>::quiet_NaN()};
  SplitMix64 rng(6);
  for (int i = 0; i < 30; ++i)
    globals.push_back(floatOf(rng.next32() & 0x7F7FFFFFu));

  Tally global("nvfp4GlobalEncodeScale");
  std::vector<float> sEnc = runOnDevice<float>(amaxes, NvGlobalEnc{});
  for (size_t i = 0; i < amaxes.size(); ++i)
    global.value(describe(amaxes[i]), sEnc[i],
                 ref::nvfp4GlobalEncodeScale(amaxes[i]));

  // Block amaxes on E4M3 rounding edges of amax * mult6, plus the amax set.
  std::vector<float> e4m3Targets;
  for (unsigned c = 1; c < 0x7F; ++c) {
    e4m3Targets.push_back(ref::decodeE4M3(static_cast<uint8_t>(c)));
    e4m3Targets.push_back(ref::decodeE4M3(static_cast<uint8_t>(c - 1)) / 2 +
                          ref::decodeE4M3(static_cast<uint8_t>(c)) / 2);
  }
  Tally block("nvfp4BlockScale");
  Tally factors("nvfp4BlockEncodeFactor / nvfp4DequantFactor");
  std::vector<uint32_t> codes(256);
  for (uint32_t c = 0; c < 256; ++c)
    codes[c] = c;
  for (float g : globals) {
    float s = ref::nvfp4GlobalEncodeScale(g);
    float mult6 = s * ref::nvfp4OneSixth();
    std::vector<float> in = amaxes;
    for (float t : e4m3Targets)
      for (int d = -2; d <= 2; ++d)
        in.push_back(floatOf(bitsOf(t / mult6) + d));
    std::vector<uint8_t> got = runOnDevice<uint8_t>(in, NvBlockScale{s});
    for (size_t i = 0; i < in.size(); ++i)
      block.code(describe(in[i]) + " A=" + describe(g), got[i],
                 ref::nvfp4BlockScale(in[i], s));

    float sDec = ref::nvfp4GlobalDecodeScale(s);
    std::vector<FloatPair> f =
        runOnDevice<FloatPair>(codes, NvFactors{sDec, g});
    for (uint32_t c = 0; c < 256; ++c) {
      std::string name = std::to_string(c) + " A=" + describe(g);
      factors.value(name, f[c].first,
                    ref::nvfp4BlockEncodeFactor(static_cast<uint8_t>(c), sDec));
      factors.value(name, f[c].second,
                    ref::nvfp4DequantFactor(static_cast<uint8_t>(c), g));
    }
  }
}

TEST_F(DeviceCodecsGpu, PhiloxAndSrRandomBytes) {
  SplitMix64 rng(1234);
  std::vector<RngInput> in;
  for (int i = 0; i < 200000; ++i) {
    uint64_t seed = rng.next();
    uint64_t offset = i % 3 == 0 ? rng.next() : rng.next() % 4096;
    uint64_t index = i % 2 == 0 ? rng.next() : rng.next() % 100000;
    in.push_back({seed, offset, index});
  }
  std::vector<RngOutput> got = runOnDevice<RngOutput>(in, SrRandom{});
  Tally words("philox4x32<10>");
  Tally bytes("srRandomByte / srRandomWord");
  for (size_t i = 0; i < in.size(); ++i) {
    const RngInput &r = in[i];
    std::array<uint32_t, 4> want =
        ref::philox4x32({uint32_t(r.seed), uint32_t(r.offset),
                         uint32_t(r.index), uint32_t(r.seed >> 32)},
                        {uint32_t(r.offset >> 32), uint32_t(r.index >> 32)});
    std::string name = std::to_string(r.seed);
    words.code(name, got[i].w0, want[0]);
    words.code(name, got[i].w1, want[1]);
    words.code(name, got[i].w2, want[2]);
    words.code(name, got[i].w3, want[3]);
    bytes.code(name, got[i].byte, ref::srRandomByte(r.seed, r.offset, r.index));
    uint64_t base = r.index & ~uint64_t(3);
    uint32_t wantWord = 0;
    for (int b = 0; b < 4; ++b)
      wantWord |= uint32_t(ref::srRandomByte(r.seed, r.offset, base + b))
                  << (8 * b);
    bytes.code(name, got[i].word, wantWord);
  }
}

} // namespace
