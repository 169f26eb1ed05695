//===- test/unittests/Runtime/LayoutTest.cpp - Layouts ----------*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR and no CUDA.
//
//===----------------------------------------------------------------------===//
//
// Pins where every element and every scale of a quantized tensor lands in
// its buffers (docs/Numerics.md §2, 5.2, 5.3, 6.6, 7.2). Each test writes the
// index formula out by hand, computes the value that belongs there from the
// already tested codec and scale functions (the values are QuantizeTest's
// business; here they only make a misplaced byte visible on random data),
// checks every logical position, and then checks that every byte no
// formula reached, the padding, is zero. Literal spot checks pin a few
// indices worked out on paper.
//
//===----------------------------------------------------------------------===//

#include "te/runtime/reference/Quantize.h"

#include "te/runtime/reference/Codecs.h"
#include "te/runtime/reference/Scales.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

using namespace te::rt;
using namespace te::rt::ref;

namespace {

uint64_t splitmix(uint64_t &state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// Random bf16 tensor whose magnitude varies from block to block.
std::vector<uint16_t> randomBf16(int64_t m, int64_t k, uint64_t seed) {
  std::vector<uint16_t> x(m * k);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < k; ++c) {
      uint64_t z = splitmix(seed);
      float u = static_cast<float>(z >> 40) / 16777216.0f * 2.0f - 1.0f;
      int e = static_cast<int>((r / 16 + c / 16 + (z & 3)) % 11) - 5;
      x[r * k + c] = floatToBF16(std::ldexp(u, e));
    }
  return x;
}

std::vector<float> widen(const std::vector<uint16_t> &x) {
  std::vector<float> f;
  for (uint16_t h : x)
    f.push_back(bf16ToFloat(h));
  return f;
}

/// Records which bytes of a buffer the formulas visited.
struct Coverage {
  std::vector<bool> seen;
  explicit Coverage(size_t n) : seen(n, false) {}
  void mark(int64_t i, int64_t width = 1) {
    for (int64_t b = 0; b < width; ++b)
      seen[i * width + b] = true;
  }
};

/// Every byte that no formula visited is zero.
void expectPaddingZero(const HostBuffer &b, const Coverage &cov,
                       const char *what) {
  ASSERT_EQ(b.bytes.size(), cov.seen.size()) << what;
  int64_t visited = 0, nonzero = 0;
  for (size_t i = 0; i < cov.seen.size(); ++i) {
    visited += cov.seen[i];
    if (!cov.seen[i] && b.bytes[i] != 0)
      ++nonzero;
  }
  EXPECT_EQ(nonzero, 0) << what;
  EXPECT_GT(visited, 0) << what;
}

int64_t roundUpTo(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

/// The swizzled index of docs/Numerics.md §5.3, written out again.
int64_t swz(int64_t i, int64_t j, int64_t cols) {
  return ((i / 128) * (cols / 4) + j / 4) * 512 + (i % 32) * 16 +
         ((i % 128) / 32) * 4 + j % 4;
}

//===----------------------------------------------------------------------===//
// Block FP8, 200 x 160 and a ragged 131 x 150
//===----------------------------------------------------------------------===//

struct BlockShapeCase {
  int64_t m, k;
};

class BlockFp8Layout : public ::testing::TestWithParam<BlockShapeCase> {};

TEST_P(BlockFp8Layout, OneByOneTwentyEight) {
  int64_t m = GetParam().m, k = GetParam().k;
  std::vector<uint16_t> x = randomBf16(m, k, 1);
  std::vector<float> f = widen(x);
  Scheme s = Scheme::fp8Block(DType::E4M3, 1, 128);
  QuantizedTensor t = quantize(x.data(), SourceType::BF16, m, k, s,
                               kBothDirections, QuantizeOptions());
  ASSERT_TRUE(t.ok()) << t.error;
  const QuantizedDirection &row = *t.rowwise, &col = *t.columnwise;
  int64_t kb = (k + 127) / 128, mb = (m + 127) / 128;
  // Rowwise: data [M][K], scales transposed [ceil(K/128)][roundup(M,4)].
  EXPECT_EQ(row.data.desc, (BufferDesc{DType::E4M3, m, k}));
  EXPECT_EQ(row.scaleInv.desc, (BufferDesc{DType::F32, kb, roundUpTo(m, 4)}));
  // Columnwise: data [K][M], scales [ceil(M/128)][roundup(K,4)].
  EXPECT_EQ(col.data.desc, (BufferDesc{DType::E4M3, k, m}));
  EXPECT_EQ(col.scaleInv.desc, (BufferDesc{DType::F32, mb, roundUpTo(k, 4)}));
  EXPECT_FALSE(row.dataTransposed);
  EXPECT_TRUE(col.dataTransposed);

  Coverage rowScale(row.scaleInv.bytes.size()),
      colScale(col.scaleInv.bytes.size());
  int64_t rowStride = roundUpTo(m, 4), colStride = roundUpTo(k, 4);
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t b = 0; b < kb; ++b) {
      int64_t c0 = b * 128, c1 = std::min(k, c0 + 128);
      float scale =
          fp8BlockScale(amaxOf(&f[r * k + c0], c1 - c0), Fp8Format::E4M3, false,
                        0.0f, SourceType::BF16);
      EXPECT_EQ(loadF32(row.scaleInv, b * rowStride + r),
                fp8BlockScaleInv(scale));
      rowScale.mark(b * rowStride + r, 4);
      for (int64_t c = c0; c < c1; ++c)
        ASSERT_EQ(row.data.bytes[r * k + c], encodeE4M3(f[r * k + c] * scale))
            << r << "," << c;
    }
  }
  for (int64_t c = 0; c < k; ++c) {
    for (int64_t b = 0; b < mb; ++b) {
      int64_t r0 = b * 128, r1 = std::min(m, r0 + 128);
      std::vector<float> column;
      for (int64_t r = r0; r < r1; ++r)
        column.push_back(f[r * k + c]);
      float scale =
          fp8BlockScale(amaxOf(column.data(), column.size()), Fp8Format::E4M3,
                        false, 0.0f, SourceType::BF16);
      EXPECT_EQ(loadF32(col.scaleInv, b * colStride + c),
                fp8BlockScaleInv(scale));
      colScale.mark(b * colStride + c, 4);
      for (int64_t r = r0; r < r1; ++r)
        ASSERT_EQ(col.data.bytes[c * m + r], encodeE4M3(f[r * k + c] * scale))
            << r << "," << c;
    }
  }
  expectPaddingZero(row.scaleInv, rowScale, "rowwise scale");
  expectPaddingZero(col.scaleInv, colScale, "columnwise scale");
}

TEST_P(BlockFp8Layout, OneTwentyEightSquared) {
  int64_t m = GetParam().m, k = GetParam().k;
  std::vector<uint16_t> x = randomBf16(m, k, 2);
  std::vector<float> f = widen(x);
  Scheme s = Scheme::fp8Block(DType::E4M3, 128, 128);
  QuantizedTensor t = quantize(x.data(), SourceType::BF16, m, k, s,
                               kBothDirections, QuantizeOptions());
  ASSERT_TRUE(t.ok()) << t.error;
  const QuantizedDirection &row = *t.rowwise, &col = *t.columnwise;
  int64_t kb = (k + 127) / 128, mb = (m + 127) / 128;
  EXPECT_EQ(row.scaleInv.desc, (BufferDesc{DType::F32, mb, roundUpTo(kb, 4)}));
  EXPECT_EQ(col.scaleInv.desc, (BufferDesc{DType::F32, kb, roundUpTo(mb, 4)}));
  Coverage rowScale(row.scaleInv.bytes.size()),
      colScale(col.scaleInv.bytes.size());
  for (int64_t bi = 0; bi < mb; ++bi) {
    for (int64_t bj = 0; bj < kb; ++bj) {
      float amax = 0.0f;
      for (int64_t r = bi * 128; r < std::min(m, bi * 128 + 128); ++r)
        for (int64_t c = bj * 128; c < std::min(k, bj * 128 + 128); ++c)
          amax = std::max(amax, std::fabs(f[r * k + c]));
      float scale =
          fp8BlockScale(amax, Fp8Format::E4M3, false, 0.0f, SourceType::BF16);
      // S[r/128][c/128] and St[c/128][r/128].
      EXPECT_EQ(loadF32(row.scaleInv, bi * roundUpTo(kb, 4) + bj),
                fp8BlockScaleInv(scale));
      EXPECT_EQ(loadF32(col.scaleInv, bj * roundUpTo(mb, 4) + bi),
                fp8BlockScaleInv(scale));
      rowScale.mark(bi * roundUpTo(kb, 4) + bj, 4);
      colScale.mark(bj * roundUpTo(mb, 4) + bi, 4);
      for (int64_t r = bi * 128; r < std::min(m, bi * 128 + 128); ++r)
        for (int64_t c = bj * 128; c < std::min(k, bj * 128 + 128); ++c)
          ASSERT_EQ(row.data.bytes[r * k + c],
                    encodeE4M3(f[r * k + c] * scale));
    }
  }
  // The columnwise data is exactly the transpose of the rowwise data.
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < k; ++c)
      ASSERT_EQ(col.data.bytes[c * m + r], row.data.bytes[r * k + c]);
  expectPaddingZero(row.scaleInv, rowScale, "rowwise scale");
  expectPaddingZero(col.scaleInv, colScale, "columnwise scale");
}

INSTANTIATE_TEST_SUITE_P(Shapes, BlockFp8Layout,
                         ::testing::Values(BlockShapeCase{200, 160},
                                           BlockShapeCase{131, 150}));

TEST(BlockFp8LayoutByHand, Positions200x160) {
  // Element (199, 150) is rowwise byte 199*160 + 150 = 31990 and
  // columnwise byte 150*200 + 199 = 30199. Its 1x128 rowwise scale is float
  // [1][199] of a [2][200] matrix = #399, its 128x1 columnwise scale float
  // [1][150] of [2][160] = #310; its 128x128 tile scale is rowwise [1][1]
  // of [2][4] = #5 and columnwise [1][1] of [2][4] = #5. Tile (1, 0) is
  // rowwise #4 and columnwise #1. Only element (199, 150) is non-zero.
  std::vector<float> x(200 * 160, 0.0f);
  x[199 * 160 + 150] = 3.0f;
  x[130 * 160 + 10] = 7.0f; // tile (1, 0)
  for (int64_t tileRows : {int64_t(1), int64_t(128)}) {
    Scheme s = Scheme::fp8Block(DType::E4M3, tileRows, 128, /*pow2=*/true);
    QuantizedTensor t = quantize(x.data(), SourceType::F32, 200, 160, s,
                                 kBothDirections, QuantizeOptions());
    ASSERT_TRUE(t.ok()) << t.error;
    // pow2 scales: 448/3 -> 128, 448/7 -> 64; 3*128 = 384 = 0x7C,
    // 7*64 = 448 = 0x7E.
    EXPECT_EQ(t.rowwise->data.bytes[31990], 0x7C);
    EXPECT_EQ(t.columnwise->data.bytes[30199], 0x7C);
    EXPECT_EQ(t.rowwise->data.bytes[130 * 160 + 10], 0x7E);
    EXPECT_EQ(t.columnwise->data.bytes[10 * 200 + 130], 0x7E);
    if (tileRows == 1) {
      EXPECT_EQ(loadF32(t.rowwise->scaleInv, 399), 1.0f / 128);
      EXPECT_EQ(loadF32(t.columnwise->scaleInv, 310), 1.0f / 128);
      EXPECT_EQ(loadF32(t.rowwise->scaleInv, 0 * 200 + 130), 1.0f / 64);
      EXPECT_EQ(loadF32(t.columnwise->scaleInv, 1 * 160 + 10), 1.0f / 64);
      // An all-zero block has scale 1.
      EXPECT_EQ(loadF32(t.rowwise->scaleInv, 1 * 200 + 198), 1.0f);
    } else {
      EXPECT_EQ(loadF32(t.rowwise->scaleInv, 5), 1.0f / 128);
      EXPECT_EQ(loadF32(t.columnwise->scaleInv, 5), 1.0f / 128);
      EXPECT_EQ(loadF32(t.rowwise->scaleInv, 4), 1.0f / 64);
      EXPECT_EQ(loadF32(t.columnwise->scaleInv, 1), 1.0f / 64);
      EXPECT_EQ(loadF32(t.rowwise->scaleInv, 0), 1.0f);
      for (int pad : {2, 3, 6, 7}) {
        EXPECT_EQ(loadF32(t.rowwise->scaleInv, pad), 0.0f);
        EXPECT_EQ(loadF32(t.columnwise->scaleInv, pad), 0.0f);
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// MXFP8, 96 x 64
//===----------------------------------------------------------------------===//

TEST(Mxfp8Layout, CompactAndSwizzled96x64) {
  const int64_t m = 96, k = 64;
  std::vector<uint16_t> x = randomBf16(m, k, 3);
  std::vector<float> f = widen(x);
  Scheme s = Scheme::mxfp8(DType::E4M3);
  for (bool swizzle : {false, true}) {
    SCOPED_TRACE(swizzle ? "swizzled" : "compact");
    QuantizeOptions o;
    o.swizzleScales = swizzle;
    QuantizedTensor t =
        quantize(x.data(), SourceType::BF16, m, k, s, kBothDirections, o);
    ASSERT_TRUE(t.ok()) << t.error;
    const QuantizedDirection &row = *t.rowwise, &col = *t.columnwise;
    // Rowwise scales [roundup(96,128)=128][roundup(2,4)=4], columnwise
    // [roundup(3,4)=4][roundup(64,128)=128]; both data untransposed.
    EXPECT_EQ(row.scaleInv.desc, (BufferDesc{DType::E8M0, 128, 4}));
    EXPECT_EQ(col.scaleInv.desc, (BufferDesc{DType::E8M0, 4, 128}));
    EXPECT_EQ(row.data.desc, (BufferDesc{DType::E4M3, m, k}));
    EXPECT_EQ(col.data.desc, (BufferDesc{DType::E4M3, m, k}));
    Coverage rowScale(512), colScale(512);
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t b = 0; b < k / 32; ++b) {
        uint8_t e =
            mxfp8BlockExponent(amaxOf(&f[r * k + b * 32], 32), Fp8Format::E4M3);
        int64_t at = swizzle ? swz(r, b, 4) : r * 4 + b;
        EXPECT_EQ(row.scaleInv.bytes[at], e) << r << "," << b;
        rowScale.mark(at);
        for (int64_t c = b * 32; c < b * 32 + 32; ++c)
          ASSERT_EQ(row.data.bytes[r * k + c],
                    encodeE4M3(f[r * k + c] * e8m0ReciprocalScale(e)));
      }
    }
    for (int64_t b = 0; b < m / 32; ++b) {
      for (int64_t c = 0; c < k; ++c) {
        float column[32];
        for (int64_t i = 0; i < 32; ++i)
          column[i] = f[(b * 32 + i) * k + c];
        uint8_t e = mxfp8BlockExponent(amaxOf(column, 32), Fp8Format::E4M3);
        // Columnwise swizzle treats the transpose: K rows, M/32 K-blocks.
        int64_t at = swizzle ? swz(c, b, 4) : b * 128 + c;
        EXPECT_EQ(col.scaleInv.bytes[at], e) << b << "," << c;
        colScale.mark(at);
        for (int64_t i = 0; i < 32; ++i)
          ASSERT_EQ(col.data.bytes[(b * 32 + i) * k + c],
                    encodeE4M3(column[i] * e8m0ReciprocalScale(e)));
      }
    }
    expectPaddingZero(row.scaleInv, rowScale, "rowwise scale");
    expectPaddingZero(col.scaleInv, colScale, "columnwise scale");
  }
}

TEST(Mxfp8Layout, HandComputedSwizzledPositions) {
  // Rowwise scale (r, b) of a [128][4] matrix swizzles to
  // (r%32)*16 + (r/32)*4 + b: (33, 1) -> 16 + 4 + 1 = 21, (95, 1) ->
  // 31*16 + 2*4 + 1 = 505. Columnwise scale (block 2, column 63) of the
  // transposed [128][4] matrix -> (63%32)*16 + (63/32)*4 + 2 = 502.
  const int64_t m = 96, k = 64;
  std::vector<float> x(m * k, 0.0f);
  x[33 * k + 40] = 1.0f;  // rowwise block (33, 1): E = e8m0(1/448) = 119
  x[95 * k + 63] = 64.0f; // rowwise block (95, 1): E = e8m0(64/448) = 125
  x[70 * k + 63] = 2.0f;  // columnwise block (2, 63) holds rows 64..95: 125
  QuantizeOptions o;
  o.swizzleScales = true;
  QuantizedTensor t = quantize(x.data(), SourceType::F32, m, k,
                               Scheme::mxfp8(DType::E4M3), kBothDirections, o);
  ASSERT_TRUE(t.ok()) << t.error;
  EXPECT_EQ(t.rowwise->scaleInv.bytes[21], 119);
  EXPECT_EQ(t.rowwise->scaleInv.bytes[505], 125);
  EXPECT_EQ(t.columnwise->scaleInv.bytes[502], 125);
  EXPECT_EQ(t.columnwise->scaleInv.bytes[swz(40, 1, 4)], 119);
  o.swizzleScales = false;
  t = quantize(x.data(), SourceType::F32, m, k, Scheme::mxfp8(DType::E4M3),
               kBothDirections, o);
  EXPECT_EQ(t.rowwise->scaleInv.bytes[33 * 4 + 1], 119);
  EXPECT_EQ(t.rowwise->scaleInv.bytes[95 * 4 + 1], 125);
  EXPECT_EQ(t.columnwise->scaleInv.bytes[2 * 128 + 63], 125);
  EXPECT_EQ(t.columnwise->scaleInv.bytes[1 * 128 + 40], 119);
}

//===----------------------------------------------------------------------===//
// NVFP4, 48 x 80
//===----------------------------------------------------------------------===//

TEST(Nvfp4Layout, PackedDataAndScales48x80) {
  const int64_t m = 48, k = 80;
  std::vector<uint16_t> x = randomBf16(m, k, 4);
  std::vector<float> f = widen(x);
  float sEnc = nvfp4GlobalEncodeScale(amaxOf(f.data(), f.size()));
  float sDec = nvfp4GlobalDecodeScale(sEnc);
  for (bool swizzle : {false, true}) {
    SCOPED_TRACE(swizzle ? "swizzled" : "compact");
    QuantizeOptions o;
    o.swizzleScales = swizzle;
    QuantizedTensor t = quantize(x.data(), SourceType::BF16, m, k,
                                 Scheme::nvfp4(), kBothDirections, o);
    ASSERT_TRUE(t.ok()) << t.error;
    const QuantizedDirection &row = *t.rowwise, &col = *t.columnwise;
    // Rowwise data [48][40] bytes, scales [128][roundup(5,4)=8];
    // columnwise data [80][24] bytes, scales [128][roundup(3,4)=4].
    EXPECT_EQ(row.data.desc, (BufferDesc{DType::E2M1x2, 48, 40}));
    EXPECT_EQ(row.scaleInv.desc, (BufferDesc{DType::E4M3, 128, 8}));
    EXPECT_EQ(col.data.desc, (BufferDesc{DType::E2M1x2, 80, 24}));
    EXPECT_EQ(col.scaleInv.desc, (BufferDesc{DType::E4M3, 128, 4}));
    EXPECT_EQ(row.amax.desc, (BufferDesc{DType::F32, 1, 1}));
    Coverage rowScale(1024), colScale(512);
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t b = 0; b < k / 16; ++b) {
        uint8_t sb = nvfp4BlockScale(amaxOf(&f[r * k + b * 16], 16), sEnc);
        float enc = nvfp4BlockEncodeFactor(sb, sDec);
        int64_t at = swizzle ? swz(r, b, 8) : r * 8 + b;
        EXPECT_EQ(row.scaleInv.bytes[at], sb);
        rowScale.mark(at);
        for (int64_t c = b * 16; c < b * 16 + 16; ++c) {
          uint8_t byte = row.data.bytes[r * 40 + c / 2];
          uint8_t code = c % 2 ? byte >> 4 : byte & 0xF;
          ASSERT_EQ(code, encodeE2M1(f[r * k + c] * enc)) << r << "," << c;
        }
      }
    }
    for (int64_t c = 0; c < k; ++c) {
      for (int64_t b = 0; b < m / 16; ++b) {
        float column[16];
        for (int64_t i = 0; i < 16; ++i)
          column[i] = f[(b * 16 + i) * k + c];
        uint8_t sb = nvfp4BlockScale(amaxOf(column, 16), sEnc);
        float enc = nvfp4BlockEncodeFactor(sb, sDec);
        int64_t at = swizzle ? swz(c, b, 4) : c * 4 + b;
        EXPECT_EQ(col.scaleInv.bytes[at], sb);
        colScale.mark(at);
        for (int64_t i = 0; i < 16; ++i) {
          int64_t r = b * 16 + i;
          uint8_t byte = col.data.bytes[c * 24 + r / 2];
          uint8_t code = r % 2 ? byte >> 4 : byte & 0xF;
          ASSERT_EQ(code, encodeE2M1(column[i] * enc)) << r << "," << c;
        }
      }
    }
    expectPaddingZero(row.scaleInv, rowScale, "rowwise scale");
    expectPaddingZero(col.scaleInv, colScale, "columnwise scale");
  }
}

TEST(Nvfp4Layout, HandComputedNibblesAndBlock2dRepeats) {
  // Element (1, 3) = 6 and (1, 2) = -1 share rowwise byte 1*40 + 1 = 41:
  // low nibble (even column 2) = code(-1) = 0xA, high nibble = code(6) = 7.
  // In the columnwise data they are (c, r) = (3, 1) and (2, 1): bytes
  // 3*24 + 0 = 72 and 2*24 + 0 = 48, high nibbles (odd r = 1). Column 2's
  // block has amax 1: scale e4m3(fl(448 * fl(1/6))) = 72, encode factor
  // 1 / (72/448) = 6.2, so -1 saturates to -6 (0xF) there.
  const int64_t m = 48, k = 80;
  std::vector<float> x(m * k, 0.0f);
  x[1 * k + 3] = 6.0f;
  x[1 * k + 2] = -1.0f;
  QuantizedTensor t = quantize(x.data(), SourceType::F32, m, k, Scheme::nvfp4(),
                               kBothDirections, QuantizeOptions());
  ASSERT_TRUE(t.ok()) << t.error;
  // amax 6: S_enc 448, block scale e4m3(448) = 0x7E, encode factor 1.
  EXPECT_EQ(t.rowwise->data.bytes[41], 0x7A);
  EXPECT_EQ(t.columnwise->data.bytes[72], 0x70);
  EXPECT_EQ(t.columnwise->data.bytes[48], 0xF0);
  EXPECT_EQ(t.rowwise->scaleInv.bytes[1 * 8 + 0], 0x7E);
  EXPECT_EQ(t.rowwise->scaleInv.bytes[0 * 8 + 0], 0x00);
  EXPECT_EQ(t.columnwise->scaleInv.bytes[3 * 4 + 0], 0x7E);
  EXPECT_EQ(t.columnwise->scaleInv.bytes[2 * 4 + 0], encodeE4M3(448.0f / 6.0f));
  // block2d: the 16x16 tile (0, 0) scale is repeated for rows 0..15 of the
  // rowwise matrix and for columns 0..15 (rows of the transposed one).
  t = quantize(x.data(), SourceType::F32, m, k,
               Scheme::nvfp4(false, false, true), kBothDirections,
               QuantizeOptions());
  ASSERT_TRUE(t.ok()) << t.error;
  for (int64_t i = 0; i < 16; ++i) {
    EXPECT_EQ(t.rowwise->scaleInv.bytes[i * 8 + 0], 0x7E) << i;
    EXPECT_EQ(t.columnwise->scaleInv.bytes[i * 4 + 0], 0x7E) << i;
    EXPECT_EQ(t.rowwise->scaleInv.bytes[i * 8 + 1], 0x00) << i;
    EXPECT_EQ(t.rowwise->scaleInv.bytes[(16 + i) * 8 + 0], 0x00) << i;
  }
  // With a shared tile scale the columnwise data is the transpose.
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < k; ++c) {
      uint8_t rb = t.rowwise->data.bytes[r * 40 + c / 2];
      uint8_t cb = t.columnwise->data.bytes[c * 24 + r / 2];
      ASSERT_EQ(c % 2 ? rb >> 4 : rb & 0xF, r % 2 ? cb >> 4 : cb & 0xF);
    }
}

//===----------------------------------------------------------------------===//
// Per-tensor FP8 and identity
//===----------------------------------------------------------------------===//

TEST(PerTensorLayout, TransposeOnTnOnlyTargetsSharedOtherwise) {
  const int64_t m = 5, k = 3;
  std::vector<float> x(m * k);
  for (int64_t i = 0; i < m * k; ++i)
    x[i] = static_cast<float>(i); // amax 14: scale 32, codes of 32*i
  Scheme s = Scheme::fp8Current(DType::E4M3, /*pow2=*/true);
  QuantizeOptions o;
  QuantizedTensor t =
      quantize(x.data(), SourceType::F32, m, k, s, kBothDirections, o);
  ASSERT_TRUE(t.ok()) << t.error;
  EXPECT_EQ(t.columnwise->data.desc, (BufferDesc{DType::E4M3, k, m}));
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < k; ++c) {
      uint8_t want = encodeE4M3(32.0f * static_cast<float>(r * k + c));
      EXPECT_EQ(t.rowwise->data.bytes[r * k + c], want);
      EXPECT_EQ(t.columnwise->data.bytes[c * m + r], want);
    }
  EXPECT_EQ(t.rowwise->data.bytes[14], encodeE4M3(448.0f));
  EXPECT_EQ(t.columnwise->data.bytes[2 * 5 + 4], 0x7E);
  EXPECT_EQ(loadF32(t.columnwise->scaleInv, 0), 1.0f / 32);
  o.target = Target::sm100();
  t = quantize(x.data(), SourceType::F32, m, k, s, kBothDirections, o);
  EXPECT_EQ(t.columnwise->data.desc, (BufferDesc{DType::E4M3, m, k}));
  EXPECT_TRUE(t.columnwise->sharesRowwiseData);
  EXPECT_EQ(t.columnwise->data.bytes, t.rowwise->data.bytes);
}

TEST(IdentityLayout, LittleEndianElements) {
  float x[2] = {1.0f, -2.5f};
  QuantizedTensor t =
      quantize(x, SourceType::F32, 1, 2, Scheme::identity(DType::BF16),
               kRowwiseMask, QuantizeOptions());
  ASSERT_TRUE(t.ok()) << t.error;
  // bf16 1.0 = 0x3F80, -2.5 = 0xC020, low byte first.
  EXPECT_EQ(t.rowwise->data.bytes,
            (std::vector<uint8_t>{0x80, 0x3F, 0x20, 0xC0}));
  EXPECT_FALSE(t.rowwise->scaleInv.present());
}

//===----------------------------------------------------------------------===//
// Swizzle helpers
//===----------------------------------------------------------------------===//

TEST(SwizzleLayout, IndexFormulaByHand) {
  EXPECT_EQ(gemmSwizzledScaleIndex(0, 0, 4), 0);
  EXPECT_EQ(gemmSwizzledScaleIndex(0, 1, 4), 1);
  EXPECT_EQ(gemmSwizzledScaleIndex(0, 4, 8), 512);
  EXPECT_EQ(gemmSwizzledScaleIndex(1, 0, 4), 16);
  EXPECT_EQ(gemmSwizzledScaleIndex(32, 0, 4), 4);
  EXPECT_EQ(gemmSwizzledScaleIndex(127, 3, 4), 511);
  EXPECT_EQ(gemmSwizzledScaleIndex(128, 0, 4), 512);
  EXPECT_EQ(gemmSwizzledScaleIndex(128, 5, 8), 3 * 512 + 1);
  EXPECT_EQ(gemmSwizzledScaleIndex(200, 6, 8), 3 * 512 + 8 * 16 + 2 * 4 + 2);
}

TEST(SwizzleLayout, PermutationRoundTripAndRejects) {
  const int64_t rows = 256, cols = 8;
  std::vector<uint8_t> compact(rows * cols);
  for (size_t i = 0; i < compact.size(); ++i)
    compact[i] = static_cast<uint8_t>(i * 37 + 11);
  std::vector<uint8_t> sw = swizzleScales(compact, rows, cols);
  ASSERT_EQ(sw.size(), compact.size());
  std::vector<bool> hit(sw.size(), false);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      int64_t at = swz(i, j, cols);
      EXPECT_FALSE(hit[at]);
      hit[at] = true;
      EXPECT_EQ(sw[at], compact[i * cols + j]);
    }
  EXPECT_EQ(unswizzleScales(sw, rows, cols), compact);
  EXPECT_TRUE(swizzleScales(compact, 128, 16).size() == compact.size());
  EXPECT_TRUE(swizzleScales(compact, 64, 32).empty()); // rows % 128
  EXPECT_TRUE(swizzleScales(compact, 512, 4).size() == compact.size());
  EXPECT_TRUE(swizzleScales(compact, 256, 4).empty()); // size mismatch
  std::vector<uint8_t> odd(128 * 6);
  EXPECT_TRUE(swizzleScales(odd, 128, 6).empty()); // cols % 4
}

TEST(SwizzleLayout, SchemeAwareHelpers) {
  // MXFP8 columnwise scales swizzle as their transpose; NVFP4 columnwise
  // scales (already transposed) and all rowwise scales swizzle as stored.
  BufferDesc colDesc{DType::E8M0, 4, 128};
  std::vector<uint8_t> compact(512);
  for (size_t i = 0; i < compact.size(); ++i)
    compact[i] = static_cast<uint8_t>(i * 7 + 1);
  Scheme mx = Scheme::mxfp8(DType::E4M3);
  std::vector<uint8_t> sw =
      swizzleScalesFor(mx, Direction::Columnwise, compact, colDesc);
  ASSERT_EQ(sw.size(), 512u);
  for (int64_t b = 0; b < 4; ++b)
    for (int64_t c = 0; c < 128; ++c)
      EXPECT_EQ(sw[swz(c, b, 4)], compact[b * 128 + c]);
  EXPECT_EQ(unswizzleScalesFor(mx, Direction::Columnwise, sw, colDesc),
            compact);
  BufferDesc nvDesc{DType::E4M3, 128, 4};
  EXPECT_EQ(
      swizzleScalesFor(Scheme::nvfp4(), Direction::Columnwise, compact, nvDesc),
      swizzleScales(compact, 128, 4));
  EXPECT_TRUE(swizzleScalesFor(Scheme::fp8Block(DType::E4M3, 1, 128),
                               Direction::Rowwise, compact, nvDesc)
                  .empty());
}

} // namespace
