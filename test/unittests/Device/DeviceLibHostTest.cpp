//===- DeviceLibHostTest.cpp - Device library vs reference, host -*- C++
//-*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The device numerics library (device/te/device) compiled as plain
// host C++ must agree bit for bit with the reference numerics
// (te/runtime/reference), which are the specification in code. Every
// expected value comes from the reference; the device code is only ever the
// value under test. Inputs are exhaustive where the domain is small (every
// 8-bit code, every E2M1 nibble, every BF16/F16 pattern, every rbits byte)
// and otherwise cover the rounding edges (grid points, midpoints and their
// neighbouring fp32 values), the special values, and large sampled sweeps.
//
// On the host the library takes its exact software paths, so NaN codes are
// compared exactly here too; the GPU test covers the hardware paths.
//
//===----------------------------------------------------------------------===//

#include "te/device/Device.cuh"
#include "te/device/Hadamard.cuh"
#include "te/runtime/reference/Codecs.h"
#include "te/runtime/reference/Gemm.h"
#include "te/runtime/reference/Philox.h"
#include "te/runtime/reference/Quantize.h"
#include "te/runtime/reference/Scales.h"

#include "gtest/gtest.h"

#include "Support/HeldE2M1.h"
#include "Support/Tally.h"
#include "Support/TestSupport.h"
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
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
// Helpers
//===----------------------------------------------------------------------===//

/// Adds v and its neighbouring fp32 values (up to `ulps` steps each way,
/// same sign) and -v and its neighbours.
void addWithNeighbours(std::vector<float> &out, float v, int ulps = 2) {
  uint32_t b = bitsOf(std::fabs(v));
  for (int d = -ulps; d <= ulps; ++d) {
    int64_t n = static_cast<int64_t>(b) + d;
    if (n < 0 || n > 0x7F800000)
      continue;
    float x = floatOf(static_cast<uint32_t>(n));
    out.push_back(x);
    out.push_back(-x);
  }
}

/// Rounding edges of a format whose non-negative finite values, ascending,
/// are `grid`, plus `pastMax` (the value one step past the largest, whose
/// midpoint with it is the overflow threshold): every grid value, every
/// midpoint, their fp32 neighbours, and the specials.
std::vector<float> gridEdges(std::vector<float> grid, float pastMax) {
  std::vector<float> out;
  grid.push_back(pastMax);
  for (size_t i = 0; i < grid.size(); ++i) {
    addWithNeighbours(out, grid[i], 3);
    if (i + 1 < grid.size())
      addWithNeighbours(out, grid[i] / 2 + grid[i + 1] / 2, 3);
  }
  addWithNeighbours(out, grid[1] / 2, 3); // half the smallest subnormal
  addWithNeighbours(out, grid[1] / 4, 3);
  for (float x : {2 * pastMax, 1e10f, 1e30f, FLT_MAX, FLT_MIN, 0x1p-149f,
                  std::numeric_limits<float>::infinity(), 0.0f})
    addWithNeighbours(out, x, 1);
  for (uint32_t nan : {0x7FC00000u, 0x7F800001u, 0x7FFFFFFFu, 0x7FA5A5A5u}) {
    out.push_back(floatOf(nan));
    out.push_back(floatOf(nan | 0x80000000u));
  }
  return out;
}

/// The non-negative finite values of an 8-bit format, ascending.
std::vector<float> positiveGrid(float (*decode)(uint8_t)) {
  std::vector<float> grid;
  for (unsigned c = 0; c < 0x80; ++c) {
    float v = decode(static_cast<uint8_t>(c));
    if (std::isfinite(v))
      grid.push_back(v);
  }
  return grid;
}

std::vector<float> e4m3Edges() {
  return gridEdges(positiveGrid(ref::decodeE4M3), 480.0f);
}
std::vector<float> e5m2Edges() {
  return gridEdges(positiveGrid(ref::decodeE5M2), 65536.0f);
}
std::vector<float> e2m1Edges() {
  std::vector<float> grid;
  for (uint8_t c = 0; c < 8; ++c)
    grid.push_back(ref::decodeE2M1(c));
  return gridEdges(grid, 8.0f);
}

/// Every 4093rd fp32 pattern (about a million, all exponents, both signs,
/// NaNs included) and the first 4096 patterns of each sign (subnormals).
std::vector<float> fp32Sweep() {
  std::vector<float> out;
  for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 4093)
    out.push_back(floatOf(static_cast<uint32_t>(b)));
  for (uint32_t b = 0; b < 4096; ++b) {
    out.push_back(floatOf(b));
    out.push_back(floatOf(b | 0x80000000u));
  }
  return out;
}

/// Scales applied to every BF16 pattern before encoding: 1, powers of two
/// that move the data into the subnormal/overflow regions of each format,
/// and non-powers of two that make the products round.
std::vector<float> bf16Scales() {
  return {1.0f,     0.5f,    3.0f,           448.0f / 1.7f,  1.0f / 3.0f,
          0x1p-20f, 0x1p20f, 1e-30f,         1e30f,          0x1.8p-9f,
          6.0f,     0.1f,    2688.0f / 7.0f, 57344.0f / 3.0f};
}

//===----------------------------------------------------------------------===//
// Encoders
//===----------------------------------------------------------------------===//

using Encoder8 = uint8_t (*)(float);

struct EncoderPair {
  const char *name;
  std::function<uint8_t(float)> device;
  Encoder8 reference;
};

std::vector<EncoderPair> encoders() {
  return {
      {"E4M3", [](float y) { return dev::encodeE4M3(y); }, ref::encodeE4M3},
      {"E5M2", [](float y) { return dev::encodeE5M2(y); }, ref::encodeE5M2},
      {"E2M1", [](float y) { return dev::encodeE2M1(y); }, ref::encodeE2M1},
      {"E4M3 (software)", [](float y) { return dev::encodeE4M3Sw(y); },
       ref::encodeE4M3},
      {"E5M2 (software)", [](float y) { return dev::encodeE5M2Sw(y); },
       ref::encodeE5M2},
      {"E4M3 via encodeFp8",
       [](float y) { return dev::encodeFp8(dev::Fp8Format::E4M3, y); },
       ref::encodeE4M3},
      {"E5M2 via encodeFp8<>",
       [](float y) { return dev::encodeFp8<dev::Fp8Format::E5M2>(y); },
       ref::encodeE5M2},
  };
}

TEST(DeviceLibHost, EncodersOnEveryBF16TimesScales) {
  std::vector<float> scales = bf16Scales();
  for (const EncoderPair &enc : encoders()) {
    Tally tally(std::string(enc.name) + " on 65536 bf16 x " +
                std::to_string(scales.size()) + " scales");
    for (float s : scales)
      for (uint32_t p = 0; p < 0x10000; ++p) {
        float y = ref::bf16ToFloat(static_cast<uint16_t>(p)) * s;
        tally.code(describe(y), enc.device(y), enc.reference(y));
      }
  }
}

TEST(DeviceLibHost, EncodersOnRoundingEdges) {
  std::vector<float> inputs = e4m3Edges();
  for (const std::vector<float> &more : {e5m2Edges(), e2m1Edges()})
    inputs.insert(inputs.end(), more.begin(), more.end());
  for (const EncoderPair &enc : encoders()) {
    Tally tally(std::string(enc.name) + " on rounding edges");
    for (float y : inputs)
      tally.code(describe(y), enc.device(y), enc.reference(y));
  }
}

TEST(DeviceLibHost, EncodersOnFp32Sweep) {
  std::vector<float> inputs = fp32Sweep();
  for (const EncoderPair &enc : encoders()) {
    Tally tally(std::string(enc.name) + " on fp32 sweep");
    for (float y : inputs)
      tally.code(describe(y), enc.device(y), enc.reference(y));
  }
}

/// The byte-wise read of a misaligned 16-byte group (the bias gradient's
/// column strips, te/device/QuantizeKernel.cuh) gives the words a 16-byte
/// load of the same bytes would: little-endian, at every alignment.
TEST(DeviceLibHost, LittleEndianWordsOfAnyAlignment) {
  uint8_t bytes[48];
  SplitMix64 rng(11);
  for (uint8_t &b : bytes)
    b = static_cast<uint8_t>(rng.next());
  for (int offset = 0; offset < 32; ++offset) {
    uint32_t got[4], want[4];
    dev::littleEndianWords16(bytes + offset, got);
    for (int q = 0; q < 4; ++q) {
      const uint8_t *p = bytes + offset + 4 * q;
      want[q] = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
                uint32_t(p[3]) << 24;
      EXPECT_EQ(got[q], want[q]) << "offset " << offset << " word " << q;
    }
    // The bf16 elements the strips widen: the even-address element is the
    // low half of its word.
    uint16_t first;
    std::memcpy(&first, bytes + offset, 2);
    EXPECT_EQ(got[0] & 0xFFFFu, first) << "offset " << offset;
  }
}

TEST(DeviceLibHost, PairedEncodersPutTheFirstElementInTheLowByte) {
  std::vector<float> inputs = e4m3Edges();
  SplitMix64 rng(7);
  Tally tally("encodeE4M3x2 / encodeE5M2x2 / encodeE2M1x2");
  for (size_t i = 0; i < inputs.size(); ++i) {
    float a = inputs[i];
    float b = inputs[rng.next() % inputs.size()];
    std::string in = describe(a) + ", " + describe(b);
    tally.code(
        in, dev::encodeE4M3x2(a, b),
        static_cast<uint16_t>(ref::encodeE4M3(a) | (ref::encodeE4M3(b) << 8)));
    tally.code(
        in, dev::encodeE5M2x2(a, b),
        static_cast<uint16_t>(ref::encodeE5M2(a) | (ref::encodeE5M2(b) << 8)));
    tally.code(in, dev::encodeE2M1x2(a, b),
               ref::packE2M1(ref::encodeE2M1(a), ref::encodeE2M1(b)));
  }
}

/// Every input of the encoder tests in every position of an eight-element
/// group (its neighbours drawn from the same inputs), scaled by `mult`
/// inside encodeE2M1x8 as the NVFP4 stages scale it.
TEST(DeviceLibHost, EightE2M1CodesPackedAsEncodeE2M1) {
  std::vector<float> inputs = e2m1Edges();
  for (const std::vector<float> &more : {fp32Sweep(), e4m3Edges()})
    inputs.insert(inputs.end(), more.begin(), more.end());
  SplitMix64 rng(11);
  Tally tally("encodeE2M1x8, every input in every position");
  for (float mult : {1.0f, 0.75f, 0x1p-20f})
    for (size_t i = 0; i < inputs.size(); ++i)
      for (int pos = 0; pos < 8; ++pos) {
        float v[8];
        for (float &x : v)
          x = inputs[rng.next() % inputs.size()];
        v[pos] = inputs[i];
        uint32_t want = 0;
        for (int e = 0; e < 8; ++e)
          want |= uint32_t(ref::encodeE2M1(v[e] * mult)) << (4 * e);
        tally.code(describe(inputs[i]) + " at " + std::to_string(pos),
                   dev::encodeE2M1x8(v, mult), want);
      }
}

TEST(DeviceLibHost, EightStochasticE2M1CodesUseOneByteEach) {
  std::vector<float> inputs = e2m1Edges();
  SplitMix64 rng(12);
  for (int i = 0; i < 4096; ++i)
    inputs.push_back(rng.uniform(-8.0f, 8.0f));
  inputs.push_back(std::numeric_limits<float>::quiet_NaN());
  inputs.push_back(-std::numeric_limits<float>::quiet_NaN());
  inputs.push_back(std::numeric_limits<float>::infinity());
  inputs.push_back(-std::numeric_limits<float>::infinity());
  Tally tally("encodeE2M1x8Stochastic byte mapping");
  for (float mult : {1.0f, 0.5f, 1.75f})
    for (size_t i = 0; i < inputs.size(); ++i)
      for (int round = 0; round < 16; ++round) {
        float v[8];
        for (float &x : v)
          x = inputs[rng.next() % inputs.size()];
        v[i % 8] = inputs[i];
        uint32_t words[2] = {rng.next32(), rng.next32()};
        uint32_t want = 0;
        for (int e = 0; e < 8; ++e)
          want |= uint32_t(ref::encodeE2M1Stochastic(
                      v[e] * mult,
                      static_cast<uint8_t>(words[e / 4] >> (8 * (e % 4)))))
                  << (4 * e);
        tally.code(describe(inputs[i]),
                   dev::encodeE2M1x8Stochastic(v, mult, words[0], words[1]),
                   want);
      }
}

//===----------------------------------------------------------------------===//
// Decoders and packing
//===----------------------------------------------------------------------===//

TEST(DeviceLibHost, DecodersOnEveryCode) {
  {
    Tally tally("decodeE4M3/E5M2/Fp8 on all 256 codes");
    for (unsigned c = 0; c < 256; ++c) {
      uint8_t code = static_cast<uint8_t>(c);
      std::string in = std::to_string(c);
      tally.bits(in, dev::decodeE4M3(code), ref::decodeE4M3(code));
      if ((code & 0x7F) != 0x7F)
        tally.bits(in, dev::decodeE4M3NotNaN(code), ref::decodeE4M3(code));
      tally.bits(in, dev::decodeE5M2(code), ref::decodeE5M2(code));
      tally.bits(in, dev::decodeFp8(dev::Fp8Format::E4M3, code),
                 ref::decodeE4M3(code));
      tally.bits(in, dev::decodeFp8<dev::Fp8Format::E5M2>(code),
                 ref::decodeE5M2(code));
    }
  }
  {
    Tally tally("decodeE8M0 / e8m0ReciprocalScale, 256 codes");
    for (unsigned c = 0; c < 256; ++c) {
      uint8_t code = static_cast<uint8_t>(c);
      tally.bits(std::to_string(c), dev::decodeE8M0(code),
                 ref::decodeE8M0(code));
      tally.bits(std::to_string(c), dev::e8m0ReciprocalScale(code),
                 ref::e8m0ReciprocalScale(code));
    }
  }
  {
    Tally tally("decodeE2M1 on all bytes (high nibble ignored)");
    for (unsigned c = 0; c < 256; ++c)
      tally.bits(std::to_string(c), dev::decodeE2M1(static_cast<uint8_t>(c)),
                 ref::decodeE2M1(static_cast<uint8_t>(c)));
  }
  {
    Tally tally("bf16ToFloat / f16ToFloat on all 65536");
    for (uint32_t p = 0; p < 0x10000; ++p) {
      uint16_t h = static_cast<uint16_t>(p);
      tally.bits(std::to_string(p), dev::bf16ToFloat(h), ref::bf16ToFloat(h));
      tally.bits(std::to_string(p), dev::f16ToFloat(h), ref::f16ToFloat(h));
    }
  }
}

TEST(DeviceLibHost, E2M1PackingOnEveryPair) {
  Tally tally("packE2M1 / unpack on all nibble pairs");
  for (unsigned a = 0; a < 256; ++a)
    for (unsigned b = 0; b < 256; ++b) {
      uint8_t x = static_cast<uint8_t>(a), y = static_cast<uint8_t>(b);
      std::string in = std::to_string(a) + "," + std::to_string(b);
      tally.code(in, dev::packE2M1(x, y), ref::packE2M1(x, y));
    }
  for (unsigned a = 0; a < 256; ++a) {
    uint8_t x = static_cast<uint8_t>(a);
    tally.code(std::to_string(a), dev::unpackE2M1Low(x), ref::unpackE2M1Low(x));
    tally.code(std::to_string(a), dev::unpackE2M1High(x),
               ref::unpackE2M1High(x));
  }
}

TEST(DeviceLibHost, E2M1ToE4M3OnEveryFourCodes) {
  // The words and the check the GPU test uses (Support/HeldE2M1.h), on the
  // host's emulation of __byte_perm.
  Tally tally("e2m1x8ToE4M3 on every 4 codes of each half");
  for (uint32_t x : te::test::e2m1WordsOfEveryFourCodes()) {
    uint32_t lo = 0, hi = 0;
    dev::e2m1x8ToE4M3(x, lo, hi);
    te::test::checkHeldE2M1(tally, x, lo, hi);
  }
}

// The f16 operands of the GEMM engine's NVFP4 kernel: each of the eight
// codes' f16 value (-0 for code 8) in its pair's half.
TEST(DeviceLibHost, E2M1ToF16OnEveryFourCodes) {
  Tally tally("e2m1x8ToF16x2 on every 4 codes of each half");
  for (uint32_t x : te::test::e2m1WordsOfEveryFourCodes()) {
    uint32_t h[4];
    dev::e2m1x8ToF16x2(x, h);
    for (int i = 0; i < 8; ++i) {
      uint16_t half = static_cast<uint16_t>(h[i / 2] >> (16 * (i % 2)));
      float want = ref::decodeE2M1(static_cast<uint8_t>((x >> (4 * i)) & 0xF));
      tally.code(std::to_string(x) + " code " + std::to_string(i),
                 bitsOf(ref::f16ToFloat(half)), bitsOf(want));
    }
  }
}

TEST(DeviceLibHost, PermuteBytesSelectsFromBothWords) {
  // __byte_perm's selection, which the host emulates.
  EXPECT_EQ(dev::permuteBytes(0x44332211u, 0x88776655u, 0x3210u), 0x44332211u);
  EXPECT_EQ(dev::permuteBytes(0x44332211u, 0x88776655u, 0x7654u), 0x88776655u);
  EXPECT_EQ(dev::permuteBytes(0x44332211u, 0x88776655u, 0x0407u), 0x11551188u);
}

//===----------------------------------------------------------------------===//
// E8M0 encoding
//===----------------------------------------------------------------------===//

TEST(DeviceLibHost, E8M0OnEveryExponentWithEdgeMantissas) {
  Tally tally("encodeE8M0, 256 exponents x edge mantissas");
  const uint32_t mantissas[] = {0,        1,        2,        0x1FFFFF,
                                0x3FFFFF, 0x400000, 0x400001, 0x600000,
                                0x7FFFFE, 0x7FFFFF};
  SplitMix64 rng(8);
  for (uint32_t e = 0; e < 256; ++e)
    for (uint32_t sign : {0u, 0x80000000u}) {
      for (uint32_t m : mantissas) {
        float v = floatOf(sign | (e << 23) | m);
        tally.code(describe(v), dev::encodeE8M0(v), ref::encodeE8M0(v));
      }
      for (int i = 0; i < 16; ++i) {
        float v = floatOf(sign | (e << 23) | (rng.next32() & 0x7FFFFF));
        tally.code(describe(v), dev::encodeE8M0(v), ref::encodeE8M0(v));
      }
    }
}

//===----------------------------------------------------------------------===//
// BF16 / F16 encoding
//===----------------------------------------------------------------------===//

/// Every 16-bit value of a format as fp32, with the midpoints to the next
/// value and their neighbours.
std::vector<float> sixteenBitEdges(float (*decode)(uint16_t)) {
  std::vector<float> out;
  for (uint32_t p = 0; p < 0x8000; ++p) {
    float v = decode(static_cast<uint16_t>(p));
    float next = decode(static_cast<uint16_t>(p + 1));
    if (!std::isfinite(v))
      continue;
    addWithNeighbours(out, v, 1);
    if (std::isfinite(next))
      addWithNeighbours(out, v / 2 + next / 2, 1);
  }
  addWithNeighbours(out, 65520.0f, 2);             // F16 overflow tie
  addWithNeighbours(out, floatOf(0x7F7F8000u), 2); // BF16 overflow tie
  addWithNeighbours(out, FLT_MAX, 2);
  return out;
}

TEST(DeviceLibHost, OrderedStridedSumIsTheChunkedBiasGradient) {
  // The bias gradient's second stage (the per-chunk column sums added in
  // chunk order) against the reference's chunked sum; 10 and 70 chunks
  // (one partial batch, two whole batches and a partial one), values whose
  // sum depends on the order, and Inf, NaN and -0.
  for (int64_t chunks : {10, 70}) {
    const int64_t m = 128 * chunks - 37, n = 24;
    std::vector<float> dy(size_t(m * n));
    uint32_t s = 12345;
    for (float &v : dy) {
      s = s * 1664525u + 1013904223u;
      v = std::ldexp(float(int32_t(s) >> 8), int(s % 41) - 40);
    }
    dy[size_t(5 * n + 1)] = INFINITY;
    dy[size_t(600 * n + 2)] = NAN;
    for (int64_t r = 0; r < m; ++r)
      dy[size_t(r * n + 3)] = -0.0f;
    // The first stage, as the tile kernel adds: each chunk's rows in order.
    std::vector<float> partial(size_t(chunks * n), 0.0f);
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < n; ++c) {
        float &p = partial[size_t(r / 128 * n + c)];
        p = p + dy[size_t(r * n + c)];
      }
    std::vector<float> want =
        ref::biasGrad(dy.data(), ref::SourceType::F32, m, n, 128);
    for (int64_t c = 0; c < n; ++c) {
      float got = dev::orderedStridedSum(partial.data() + c, chunks, n);
      EXPECT_EQ(bitsOf(got), bitsOf(want[size_t(c)]))
          << chunks << " chunks, column " << c;
    }
  }
}

TEST(DeviceLibHost, SixteenBitEncoders) {
  std::vector<float> inputs = sixteenBitEdges(ref::bf16ToFloat);
  std::vector<float> f16 = sixteenBitEdges(ref::f16ToFloat);
  std::vector<float> sweep = fp32Sweep();
  inputs.insert(inputs.end(), f16.begin(), f16.end());
  inputs.insert(inputs.end(), sweep.begin(), sweep.end());
  SplitMix64 rng(16);
  for (int i = 0; i < 200000; ++i)
    inputs.push_back(floatOf(rng.next32()));
  // NaNs with many payloads, both signs.
  for (uint32_t m = 1; m < 0x800000; m = m * 3 + 1) {
    inputs.push_back(floatOf(0x7F800000u | m));
    inputs.push_back(floatOf(0xFF800000u | m));
  }
  Tally bf16("floatToBF16 / floatToBF16Sw / x2");
  Tally half("floatToF16 / floatToF16Sw");
  for (size_t i = 0; i < inputs.size(); ++i) {
    float x = inputs[i];
    float y = inputs[(i * 7919) % inputs.size()];
    std::string in = describe(x);
    bf16.code(in, dev::floatToBF16(x), ref::floatToBF16(x));
    bf16.code(in, dev::floatToBF16Sw(x), ref::floatToBF16(x));
    bf16.code(in + ", " + describe(y), dev::floatToBF16x2(x, y),
              static_cast<uint32_t>(ref::floatToBF16(x)) |
                  (static_cast<uint32_t>(ref::floatToBF16(y)) << 16));
    half.code(in, dev::floatToF16(x), ref::floatToF16(x));
    half.code(in, dev::floatToF16Sw(x), ref::floatToF16(x));
  }
}

//===----------------------------------------------------------------------===//
// Stochastic rounding
//===----------------------------------------------------------------------===//

TEST(DeviceLibHost, StochasticE2M1OnEdgesForEveryRbits) {
  std::vector<float> inputs = e2m1Edges();
  for (float x : {0.1f, 0.3f, 0.7f, 1.1f, 2.2f, 3.3f, 4.4f, 5.5f, 5.99f, 6.5f,
                  7.0f, 7.99f, 100.0f, 1e-20f})
    addWithNeighbours(inputs, x, 2);
  SplitMix64 rng(4);
  for (int i = 0; i < 256; ++i)
    inputs.push_back(rng.uniform(-8.0f, 8.0f));
  Tally tally("encodeE2M1Stochastic, edges x 256 rbits");
  for (float x : inputs)
    for (uint32_t r = 0; r < 256; ++r) {
      uint8_t rb = static_cast<uint8_t>(r);
      std::string in = describe(x) + " rbits " + std::to_string(r);
      tally.code(in, dev::encodeE2M1Stochastic(x, r),
                 ref::encodeE2M1Stochastic(x, rb));
      // Only the low 8 bits are used.
      tally.code(in, dev::encodeE2M1Stochastic(x, r | 0xABCD00u),
                 ref::encodeE2M1Stochastic(x, rb));
    }
}

//===----------------------------------------------------------------------===//
// Scales
//===----------------------------------------------------------------------===//

/// The amax values the brief names, their negatives where meaningful, and a
/// log-uniform random sample over the whole fp32 range.
std::vector<float> amaxValues() {
  float inf = std::numeric_limits<float>::infinity();
  float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> out = {0.0f,     -0.0f,   0x1p-149f, 1.0f,     448.0f,
                            3e38f,    FLT_MAX, inf,       nan,      -1.0f,
                            57344.0f, 2688.0f, FLT_MIN,   1e-38f,   1e-30f,
                            1e-6f,    0.5f,    6.0f,      65504.0f, 1e30f};
  SplitMix64 rng(42);
  for (int i = 0; i < 20000; ++i) {
    // Random positive patterns: every exponent, subnormals included.
    out.push_back(floatOf(rng.next32() & 0x7F7FFFFFu));
    out.push_back(rng.uniform(0.0f, 1000.0f));
  }
  return out;
}

TEST(DeviceLibHost, CurrentScalingScale) {
  std::vector<float> amaxes = amaxValues();
  Tally tally("computeScaleFromAmax / scaleInvFromScale");
  const float fp8Maxes[] = {448.0f, 57344.0f};
  const float epsilons[] = {0.0f, 1e-12f, 1.0f};
  const float forInf[] = {FLT_MAX, floatOf(0x7F7F0000u), 65504.0f};
  for (float amax : amaxes)
    for (float fp8Max : fp8Maxes)
      for (bool pow2 : {false, true})
        for (float eps : epsilons)
          for (float vInf : forInf) {
            float got =
                dev::computeScaleFromAmax(amax, fp8Max, pow2, eps, vInf);
            float want =
                ref::computeScaleFromAmax(amax, fp8Max, pow2, eps, vInf);
            tally.value(describe(amax), got, want);
          }
  for (float amax : amaxes)
    tally.value(describe(amax), dev::scaleInvFromScale(amax),
                ref::scaleInvFromScale(amax));
}

TEST(DeviceLibHost, Mxfp8BlockExponent) {
  std::vector<float> amaxes = amaxValues();
  for (uint32_t p = 0; p < 0x8000; ++p) // every non-negative bf16 amax
    amaxes.push_back(ref::bf16ToFloat(static_cast<uint16_t>(p)));
  for (int k = -140; k <= 128; ++k) // exact multiples of fp8_max * 2^k
    for (float m : {448.0f, 57344.0f})
      addWithNeighbours(amaxes, std::ldexp(m, k), 2);
  Tally tally("mxfp8BlockExponent / mxfp8MaxNormReciprocal");
  for (ref::Fp8Format f : {ref::Fp8Format::E4M3, ref::Fp8Format::E5M2}) {
    dev::Fp8Format df =
        f == ref::Fp8Format::E4M3 ? dev::Fp8Format::E4M3 : dev::Fp8Format::E5M2;
    tally.bits("rcp", dev::mxfp8MaxNormReciprocal(df),
               ref::mxfp8MaxNormReciprocal(f));
    for (float a : amaxes)
      tally.code(describe(a), dev::mxfp8BlockExponent(a, df),
                 ref::mxfp8BlockExponent(a, f));
  }
}

TEST(DeviceLibHost, Nvfp4Scales) {
  std::vector<float> amaxes = amaxValues();
  Tally constants("nvfp4 constants");
  constants.bits("1/6", dev::nvfp4OneSixth(), ref::nvfp4OneSixth());
  constants.bits("1/2688", dev::nvfp4OneOver2688(), ref::nvfp4OneOver2688());

  Tally global("nvfp4GlobalEncode/DecodeScale");
  std::vector<float> sEncs;
  for (float a : amaxes) {
    float sEnc = ref::nvfp4GlobalEncodeScale(a);
    global.value(describe(a), dev::nvfp4GlobalEncodeScale(a), sEnc);
    global.value(describe(sEnc), dev::nvfp4GlobalDecodeScale(sEnc),
                 ref::nvfp4GlobalDecodeScale(sEnc));
    sEncs.push_back(sEnc);
  }

  // Block scales: a few global amaxes against many block amaxes.
  Tally block("nvfp4BlockScale");
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
  for (int i = 0; i < 40; ++i)
    globals.push_back(floatOf(rng.next32() & 0x7F7FFFFFu));
  for (float g : globals) {
    float sEnc = ref::nvfp4GlobalEncodeScale(g);
    for (float a : amaxes)
      block.code(describe(a) + " A=" + describe(g),
                 dev::nvfp4BlockScale(a, sEnc), ref::nvfp4BlockScale(a, sEnc));
    // Block amaxes up to the global amax, as in real data.
    for (int i = 0; i < 2000; ++i) {
      float a = std::isfinite(g) ? g * rng.uniform(0.0f, 1.0f) : 1.0f;
      block.code(describe(a) + " A=" + describe(g),
                 dev::nvfp4BlockScale(a, sEnc), ref::nvfp4BlockScale(a, sEnc));
    }
  }

  // Block amaxes whose product with mult6 lands on an E4M3 rounding edge
  // (grid point or midpoint), and their fp32 neighbours: a kernel that
  // computes mult6 or the product differently by one ulp fails here.
  Tally edges("nvfp4BlockScale on E4M3 rounding edges");
  std::vector<float> e4m3 = positiveGrid(ref::decodeE4M3);
  std::vector<float> targets;
  for (size_t i = 1; i < e4m3.size(); ++i) {
    targets.push_back(e4m3[i]);
    targets.push_back(e4m3[i - 1] / 2 + e4m3[i] / 2);
  }
  targets.push_back(464.0f);
  for (int i = 0; i < 400; ++i) {
    float g =
        std::ldexp(rng.uniform(1.0f, 2.0f), static_cast<int>(i % 60) - 20);
    float sEnc = ref::nvfp4GlobalEncodeScale(g);
    float mult6 = sEnc * ref::nvfp4OneSixth();
    for (float t : targets) {
      float a0 = t / mult6;
      for (int d = -3; d <= 3; ++d) {
        float a = floatOf(bitsOf(a0) + d);
        edges.code(describe(a) + " A=" + describe(g),
                   dev::nvfp4BlockScale(a, sEnc),
                   ref::nvfp4BlockScale(a, sEnc));
      }
    }
  }

  Tally factors("nvfp4BlockEncodeFactor / nvfp4DequantFactor");
  for (float g : globals) {
    float sDec = ref::nvfp4GlobalDecodeScale(ref::nvfp4GlobalEncodeScale(g));
    std::vector<float> decodes = {sDec, 0.0f, 1.0f, FLT_MAX, 0x1p-149f};
    for (int i = 0; i < 8; ++i)
      decodes.push_back(floatOf(rng.next32() & 0x7FFFFFFFu));
    for (unsigned c = 0; c < 256; ++c) {
      uint8_t sB = static_cast<uint8_t>(c);
      std::string in = std::to_string(c) + " A=" + describe(g);
      for (float d : decodes)
        factors.value(in + " sDec=" + describe(d),
                      dev::nvfp4BlockEncodeFactor(sB, d),
                      ref::nvfp4BlockEncodeFactor(sB, d));
      factors.value(in, dev::nvfp4DequantFactor(sB, g),
                    ref::nvfp4DequantFactor(sB, g));
    }
  }
}

TEST(DeviceLibHost, Fp8BlockScales) {
  std::vector<float> amaxes = amaxValues();
  Tally tally("fp8BlockScale / sourceTypeMaxFinite");
  const std::pair<ref::SourceType, dev::SourceType> sources[] = {
      {ref::SourceType::BF16, dev::SourceType::BF16},
      {ref::SourceType::F16, dev::SourceType::F16},
      {ref::SourceType::F32, dev::SourceType::F32}};
  const std::pair<ref::Fp8Format, dev::Fp8Format> formats[] = {
      {ref::Fp8Format::E4M3, dev::Fp8Format::E4M3},
      {ref::Fp8Format::E5M2, dev::Fp8Format::E5M2}};
  for (auto [rs, ds] : sources) {
    tally.bits("src", dev::sourceTypeMaxFinite(ds),
               ref::sourceTypeMaxFinite(rs));
    for (auto [rf, df] : formats) {
      tally.bits("fmt", dev::fp8MaxNorm(df), ref::fp8MaxNorm(rf));
      for (float a : amaxes)
        for (bool pow2 : {false, true})
          for (float eps : {0.0f, 1e-10f})
            tally.value(describe(a), dev::fp8BlockScale(a, df, pow2, eps, ds),
                        ref::fp8BlockScale(a, rf, pow2, eps, rs));
    }
  }
}

// The reference computes S_dec and the block scale_inv as
// (float)(1.0 / (double)x); the device library uses rcp_rn. Check that they
// agree: every mantissa of one binade (away from the range limits only the
// mantissa decides the rounding), the binades where 1/x is subnormal or
// overflows, and a sweep over all patterns for both functions.
TEST(DeviceLibHost, ReciprocalMatchesDoubleRoundedQuotient) {
  Tally tally("rcp_rn vs (float)(1.0/(double)x)");
  auto check = [&](uint32_t b) {
    float x = floatOf(b);
    tally.value(describe(x), dev::fp8BlockScaleInv(x),
                ref::fp8BlockScaleInv(x));
  };
  for (uint32_t m = 0; m < 0x800000; ++m)
    check((127u << 23) | m);
  for (uint32_t e : {254u, 253u, 1u, 0u})
    for (uint32_t m = 0; m < 0x800000; m += 13)
      check((e << 23) | m);
  for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 65521) {
    float x = floatOf(static_cast<uint32_t>(b));
    check(static_cast<uint32_t>(b));
    tally.value(describe(x), dev::nvfp4GlobalDecodeScale(x),
                ref::nvfp4GlobalDecodeScale(x));
  }
}

TEST(DeviceLibHost, AmaxAccumulateIgnoresNaN) {
  std::vector<float> data = amaxValues();
  data.push_back(-std::numeric_limits<float>::infinity());
  // Signaling NaNs (bf16 0x7F81..0x7FBF widen to these) and quiet ones.
  for (uint32_t nan : {0x7F830000u, 0xFF800001u, 0x7FA00000u, 0xFFC00000u})
    data.insert(data.begin() + static_cast<long>(data.size() / 2),
                floatOf(nan));
  Tally tally("amaxAccumulate vs amaxOf");
  // Windows of 7 values so that NaN and Inf land in various positions. NaN
  // elements are ignored (docs/Numerics.md §3); they are dropped before calling
  // the reference, whose std::fmax returns NaN for a signaling NaN operand
  // (glibc follows IEEE 754-2008 maxNum there).
  for (size_t i = 0; i + 7 <= data.size(); ++i) {
    float amax = 0.0f;
    std::vector<float> kept;
    for (size_t j = i; j < i + 7; ++j) {
      amax = dev::amaxAccumulate(amax, data[j]);
      if (!std::isnan(data[j]))
        kept.push_back(data[j]);
    }
    tally.value(describe(data[i]), amax, ref::amaxOf(kept.data(), kept.size()));
  }
}

//===----------------------------------------------------------------------===//
// Philox
//===----------------------------------------------------------------------===//

TEST(DeviceLibHost, PhiloxKnownAnswer) {
  // Random123 kat_vectors, philox4x32_10: counter 0, key 0 and the pi
  // digits vector.
  dev::Philox4x32 zero = dev::philox4x32<10>({0, 0, 0, 0}, 0, 0);
  EXPECT_EQ(zero.w0, 0x6627E8D5u);
  EXPECT_EQ(zero.w1, 0xE169C58Du);
  EXPECT_EQ(zero.w2, 0xBC57AC4Cu);
  EXPECT_EQ(zero.w3, 0x9B00DBD8u);
  dev::Philox4x32 pi =
      dev::philox4x32<10>({0x243F6A88u, 0x85A308D3u, 0x13198A2Eu, 0x03707344u},
                          0xA4093822u, 0x299F31D0u);
  EXPECT_EQ(pi.w0, 0xD16CFE09u);
  EXPECT_EQ(pi.w1, 0x94FDCCEBu);
  EXPECT_EQ(pi.w2, 0x5001E420u);
  EXPECT_EQ(pi.w3, 0x24126EA1u);
}

TEST(DeviceLibHost, PhiloxAndSrBytesMatchReference) {
  SplitMix64 rng(1234);
  Tally words("philox4x32 (7 and 10 rounds)");
  Tally bytes("srRandomByte / srRandomWord / srRandomBlock");
  for (int i = 0; i < 100000; ++i) {
    std::array<uint32_t, 4> c = {rng.next32(), rng.next32(), rng.next32(),
                                 rng.next32()};
    std::array<uint32_t, 2> k = {rng.next32(), rng.next32()};
    std::array<uint32_t, 4> want = ref::philox4x32(c, k, 10);
    dev::Philox4x32 got =
        dev::philox4x32<10>({c[0], c[1], c[2], c[3]}, k[0], k[1]);
    std::string in = std::to_string(c[0]);
    words.code(in, got.w0, want[0]);
    words.code(in, got.w1, want[1]);
    words.code(in, got.w2, want[2]);
    words.code(in, got.w3, want[3]);
    std::array<uint32_t, 4> want7 = ref::philox4x32(c, k, 7);
    dev::Philox4x32 got7 =
        dev::philox4x32<7>({c[0], c[1], c[2], c[3]}, k[0], k[1]);
    words.code(in, got7.w3, want7[3]);

    uint64_t seed = rng.next();
    uint64_t offset = i % 3 == 0 ? rng.next() : rng.next() % 4096;
    uint64_t index = i % 2 == 0 ? rng.next() : rng.next() % 100000;
    std::string sin = std::to_string(seed) + "/" + std::to_string(offset) +
                      "/" + std::to_string(index);
    bytes.code(sin, dev::srRandomByte(seed, offset, index),
               ref::srRandomByte(seed, offset, index));
    uint64_t base = index & ~uint64_t(3);
    uint32_t wantWord = 0;
    for (int b = 0; b < 4; ++b)
      wantWord |=
          static_cast<uint32_t>(ref::srRandomByte(seed, offset, base + b))
          << (8 * b);
    bytes.code(sin, dev::srRandomWord(seed, offset, index), wantWord);
    dev::Philox4x32 block = dev::srRandomBlock(seed, offset, index / 16);
    bytes.code(sin, dev::philoxWord(block, (index % 16) / 4), wantWord);
  }
}

} // namespace

TEST(DeviceLibHost, HadamardMatchesTheReference) {
  // The 16 x 16 matrix entry by entry, then y = v * R (and its bf16
  // rounding) on random runs over many binades plus edge values.
  Tally entries("rhtEntry on all 256 (k, j)");
  for (int k = 0; k < 16; ++k)
    for (int j = 0; j < 16; ++j)
      entries.bits(std::to_string(k) + "," + std::to_string(j),
                   dev::rhtEntry(k, j), ref::rhtMatrixEntry(k, j));
  Tally outputs("rht16 / rht16Bf16 on 20000 runs");
  SplitMix64 rng(16);
  const float edges[] = {0.0f,     -0.0f,    1e-40f,    -3e-39f, 3.0e38f,
                         -3.3e38f, INFINITY, -INFINITY, NAN,     1.0f};
  for (int run = 0; run < 20000; ++run) {
    float v[16], got[16], want[16];
    for (float &x : v) {
      uint32_t r = rng.next32();
      x = run % 8 == 0 && r % 5 == 0
              ? edges[(r >> 8) % 10]
              : std::ldexp(float(int32_t(r)) / 2147483648.0f,
                           int((r >> 3) % 80) - 40);
    }
    dev::rht16(v, got);
    ref::rht16(v, want);
    for (int j = 0; j < 16; ++j)
      outputs.value(std::to_string(run) + "/" + std::to_string(j), got[j],
                    want[j]);
    dev::rht16Bf16(v, got);
    for (int j = 0; j < 16; ++j)
      outputs.value(std::to_string(run) + "/bf16 " + std::to_string(j), got[j],
                    ref::bf16ToFloat(ref::floatToBF16(want[j])));
  }
  // bf16 runs (the inputs the quantize kernels transform) spanning 0 to 16
  // binades, with zeros of both signs and subnormals: the reference's bits,
  // signed zeros included.
  Tally bf16Runs("rht16 on 20000 bf16 runs");
  for (int run = 0; run < 20000; ++run) {
    uint32_t r = rng.next32();
    const int span = int(r % 17), base = int((r >> 8) % 300) - 150;
    float v[16], got[16], want[16];
    // Every third run adversarial: full significands whose terms all add
    // with one sign in output j0, all at the top of the span but one at
    // its bottom, so that output's sums need span + 12 bits and round
    // (where the order of the additions matters) once the span passes 12.
    const bool adversarial = run % 3 == 0;
    const int j0 = int((r >> 20) % 16), kSmall = int((r >> 24) % 16);
    for (int k = 0; k < 16; ++k) {
      uint32_t q = rng.next32();
      const int exponent = base + int((q >> 4) % uint32_t(span + 1));
      float &x = v[k];
      if (adversarial) {
        bool minus =
            ((0xD7E8u >> k) ^ uint32_t(__builtin_popcount(k & j0))) & 1u;
        x = std::ldexp(minus ? -255.0f / 128.0f : 255.0f / 128.0f,
                       k == kSmall ? base : base + span);
      } else {
        x = q % 11 == 0
                ? (q & 0x100 ? -0.0f : 0.0f)
                : std::ldexp(float(int32_t(q)) / 2147483648.0f, exponent);
      }
      x = ref::bf16ToFloat(ref::floatToBF16(x));
    }
    dev::rht16(v, got);
    ref::rht16(v, want);
    for (int j = 0; j < 16; ++j)
      bf16Runs.bits(std::to_string(run) + "/" + std::to_string(j), got[j],
                    want[j]);
  }
}
