//===- SchemeTest.cpp - storage layouts of every scheme -------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Buffer shapes for shapes that are not multiples of the padding units,
// against values computed by hand from docs/Numerics.md §2 (the arithmetic is
// written out next to each expectation).
//
//===----------------------------------------------------------------------===//

#include "te/formats/Scheme.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace te::rt;

namespace {

BufferDesc buf(DType t, int64_t r, int64_t c) { return BufferDesc{t, r, c}; }

TEST(SchemeLayout, Fp8CurrentRowwise) {
  DirectionStorage s =
      storageFor(Scheme::fp8Current(DType::E4M3), Direction::Rowwise, 200, 160);
  EXPECT_EQ(s.data, buf(DType::E4M3, 200, 160));
  EXPECT_EQ(s.scaleInv, buf(DType::F32, 1, 1));
  EXPECT_EQ(s.amax, buf(DType::F32, 1, 1));
  EXPECT_FALSE(s.dataTransposed);
}

TEST(SchemeLayout, Fp8PerTensorColumnwiseIsTransposeOnHopper) {
  Scheme sc = Scheme::fp8Delayed(DType::E5M2);
  DirectionStorage s =
      storageFor(sc, Direction::Columnwise, 200, 160, Target::sm90());
  EXPECT_EQ(s.data, buf(DType::E5M2, 160, 200)); // [K, M]
  EXPECT_TRUE(s.dataTransposed);
  EXPECT_TRUE(s.sharesRowwiseScale);
  EXPECT_FALSE(s.sharesRowwiseData);
}

TEST(SchemeLayout, Fp8PerTensorColumnwiseReusesRowwiseOnBlackwell) {
  DirectionStorage s =
      storageFor(Scheme::fp8Current(DType::E4M3), Direction::Columnwise, 200,
                 160, Target::sm100());
  EXPECT_TRUE(s.sharesRowwiseData);
  EXPECT_FALSE(s.dataTransposed);
  EXPECT_EQ(s.data, buf(DType::E4M3, 200, 160));
}

TEST(SchemeLayout, Mxfp8_96x64) {
  Scheme sc = Scheme::mxfp8(DType::E4M3);
  DirectionStorage r = storageFor(sc, Direction::Rowwise, 96, 64);
  EXPECT_EQ(r.data, buf(DType::E4M3, 96, 64));
  // [roundup(96,128), roundup(64/32,4)] = [128, 4]
  EXPECT_EQ(r.scaleInv, buf(DType::E8M0, 128, 4));
  EXPECT_FALSE(r.amax.present());
  DirectionStorage c = storageFor(sc, Direction::Columnwise, 96, 64);
  EXPECT_EQ(c.data, buf(DType::E4M3, 96, 64)); // not transposed
  EXPECT_FALSE(c.dataTransposed);
  // [roundup(96/32,4), roundup(64,128)] = [4, 128]
  EXPECT_EQ(c.scaleInv, buf(DType::E8M0, 4, 128));
}

TEST(SchemeLayout, Mxfp8Large) {
  Scheme sc = Scheme::mxfp8(DType::E5M2);
  // rowwise [roundup(4160,128), roundup(2080/32,4)] = [4224, 68]
  EXPECT_EQ(storageFor(sc, Direction::Rowwise, 4160, 2080).scaleInv,
            buf(DType::E8M0, 4224, 68));
  // columnwise [roundup(4160/32,4), roundup(2080,128)] = [132, 2176]
  EXPECT_EQ(storageFor(sc, Direction::Columnwise, 4160, 2080).scaleInv,
            buf(DType::E8M0, 132, 2176));
}

TEST(SchemeLayout, Nvfp4_48x80) {
  Scheme sc = Scheme::nvfp4();
  DirectionStorage r = storageFor(sc, Direction::Rowwise, 48, 80);
  EXPECT_EQ(r.data, buf(DType::E2M1x2, 48, 40)); // two codes per byte
  // [roundup(48,128), roundup(80/16,4)] = [128, 8]
  EXPECT_EQ(r.scaleInv, buf(DType::E4M3, 128, 8));
  EXPECT_EQ(r.amax, buf(DType::F32, 1, 1));
  DirectionStorage c = storageFor(sc, Direction::Columnwise, 48, 80);
  EXPECT_EQ(c.data, buf(DType::E2M1x2, 80, 24)); // transposed [K, M/2]
  EXPECT_TRUE(c.dataTransposed);
  // [roundup(80,128), roundup(48/16,4)] = [128, 4]
  EXPECT_EQ(c.scaleInv, buf(DType::E4M3, 128, 4));
  EXPECT_EQ(c.amax, buf(DType::F32, 1, 1));
  EXPECT_EQ(r.data.bytes(), 48 * 40);
}

TEST(SchemeLayout, Fp8Block1x128_200x160) {
  Scheme sc = Scheme::fp8Block(DType::E4M3, 1, 128);
  DirectionStorage r = storageFor(sc, Direction::Rowwise, 200, 160);
  EXPECT_EQ(r.data, buf(DType::E4M3, 200, 160));
  // transposed scale [ceil(160/128), roundup(200,4)] = [2, 200]
  EXPECT_EQ(r.scaleInv, buf(DType::F32, 2, 200));
  DirectionStorage c = storageFor(sc, Direction::Columnwise, 200, 160);
  EXPECT_EQ(c.data, buf(DType::E4M3, 160, 200));
  EXPECT_TRUE(c.dataTransposed);
  // [ceil(200/128), roundup(160,4)] = [2, 160]
  EXPECT_EQ(c.scaleInv, buf(DType::F32, 2, 160));
}

TEST(SchemeLayout, Fp8Block1x128OddRows) {
  Scheme sc = Scheme::fp8Block(DType::E4M3, 1, 128);
  // [ceil(130/128), roundup(201,4)] = [2, 204]
  EXPECT_EQ(storageFor(sc, Direction::Rowwise, 201, 130).scaleInv,
            buf(DType::F32, 2, 204));
  // [ceil(201/128), roundup(130,4)] = [2, 132]
  EXPECT_EQ(storageFor(sc, Direction::Columnwise, 201, 130).scaleInv,
            buf(DType::F32, 2, 132));
}

TEST(SchemeLayout, Fp8Block128x128_300x520) {
  Scheme sc = Scheme::fp8Block(DType::E4M3, 128, 128, /*pow2=*/true);
  // mb = ceil(300/128) = 3, kb = ceil(520/128) = 5
  DirectionStorage r = storageFor(sc, Direction::Rowwise, 300, 520);
  EXPECT_EQ(r.scaleInv, buf(DType::F32, 3, 8)); // [mb, roundup(kb,4)]
  DirectionStorage c = storageFor(sc, Direction::Columnwise, 300, 520);
  EXPECT_EQ(c.data, buf(DType::E4M3, 520, 300));
  EXPECT_EQ(c.scaleInv, buf(DType::F32, 5, 4)); // [kb, roundup(mb,4)]
}

TEST(SchemeLayout, IdentitySharesOneBuffer) {
  Scheme sc = Scheme::identity(DType::F32);
  DirectionStorage r = storageFor(sc, Direction::Rowwise, 7, 9);
  DirectionStorage c = storageFor(sc, Direction::Columnwise, 7, 9);
  EXPECT_EQ(r.data, buf(DType::F32, 7, 9));
  EXPECT_FALSE(r.scaleInv.present());
  EXPECT_TRUE(c.sharesRowwiseData);
  EXPECT_EQ(c.data, r.data);
}

TEST(SchemeBlocks, BlockShapePerDirection) {
  EXPECT_EQ(blockShape(Scheme::fp8Current(DType::E4M3), Direction::Rowwise),
            (BlockShape{0, 0}));
  EXPECT_EQ(blockShape(Scheme::mxfp8(DType::E4M3), Direction::Rowwise),
            (BlockShape{1, 32}));
  EXPECT_EQ(blockShape(Scheme::mxfp8(DType::E4M3), Direction::Columnwise),
            (BlockShape{32, 1}));
  EXPECT_EQ(blockShape(Scheme::nvfp4(), Direction::Columnwise),
            (BlockShape{16, 1}));
  EXPECT_EQ(blockShape(Scheme::nvfp4(false, false, true), Direction::Rowwise),
            (BlockShape{16, 16}));
  EXPECT_EQ(
      blockShape(Scheme::fp8Block(DType::E4M3, 1, 128), Direction::Columnwise),
      (BlockShape{128, 1}));
  EXPECT_EQ(
      blockShape(Scheme::fp8Block(DType::E4M3, 128, 128), Direction::Rowwise),
      (BlockShape{128, 128}));
  EXPECT_EQ(blockShape(Scheme::identity(DType::BF16), Direction::Rowwise),
            (BlockShape{1, 1}));
}

TEST(SchemeBlocks, ScaleTypes) {
  EXPECT_EQ(Scheme::fp8Current(DType::E4M3).scaleType(), DType::F32);
  EXPECT_EQ(Scheme::mxfp8(DType::E4M3).scaleType(), DType::E8M0);
  EXPECT_EQ(Scheme::nvfp4().scaleType(), DType::E4M3);
  EXPECT_EQ(Scheme::fp8Block(DType::E5M2, 1, 128).scaleType(), DType::F32);
  EXPECT_FALSE(Scheme::identity(DType::BF16).hasScale());
}

TEST(SchemeShapes, Mxfp8NeedsMultiplesOf32AlongTheBlock) {
  Scheme sc = Scheme::mxfp8(DType::E4M3);
  EXPECT_EQ(validateShape(sc, Direction::Rowwise, 48, 96), "");
  std::string e = validateShape(sc, Direction::Rowwise, 64, 100);
  EXPECT_NE(e.find("last dimension"), std::string::npos) << e;
  EXPECT_NE(e.find("100"), std::string::npos) << e;
  EXPECT_NE(e.find("32"), std::string::npos) << e;
  // Columnwise blocks run down M: 48 is not a multiple of 32.
  e = validateShape(sc, Direction::Columnwise, 48, 96);
  EXPECT_NE(e.find("leading"), std::string::npos) << e;
  EXPECT_NE(e.find("48"), std::string::npos) << e;
}

TEST(SchemeShapes, Nvfp4NeedsMultiplesOf16) {
  EXPECT_EQ(validateShape(Scheme::nvfp4(), Direction::Rowwise, 8, 32), "");
  EXPECT_NE(validateShape(Scheme::nvfp4(), Direction::Rowwise, 16, 40), "");
  EXPECT_NE(validateShape(Scheme::nvfp4(), Direction::Columnwise, 8, 32), "");
  // 2-D blocks need both extents.
  EXPECT_NE(validateShape(Scheme::nvfp4(false, false, true), Direction::Rowwise,
                          8, 32),
            "");
}

TEST(SchemeShapes, BlockFp8AndPerTensorAcceptRaggedShapes) {
  EXPECT_EQ(validateShape(Scheme::fp8Block(DType::E4M3, 128, 128),
                          Direction::Columnwise, 201, 130),
            "");
  EXPECT_EQ(validateShape(Scheme::fp8Current(DType::E4M3),
                          Direction::Columnwise, 3, 5),
            "");
  EXPECT_NE(
      validateShape(Scheme::fp8Current(DType::E4M3), Direction::Rowwise, 0, 5),
      "");
}

TEST(SchemeOptions, RejectsBadValues) {
  EXPECT_EQ(Scheme::fp8Delayed(DType::E4M3).validate(), "");
  EXPECT_NE(Scheme::fp8Delayed(DType::E4M3, 0).validate().find("history"),
            std::string::npos);
  EXPECT_NE(Scheme::fp8Delayed(DType::E4M3, 16, AmaxAlgo::Max, -1)
                .validate()
                .find("margin"),
            std::string::npos);
  EXPECT_NE(Scheme::fp8Current(DType::E4M3, false, -1.0).validate().find("eps"),
            std::string::npos);
  EXPECT_NE(
      Scheme::fp8Block(DType::E4M3, 1, 128, false, std::nan("")).validate(),
      "");
  EXPECT_NE(Scheme::fp8Block(DType::E4M3, 64, 128).validate(), "");
  EXPECT_NE(Scheme::fp8Current(DType::BF16).validate(), "");
  EXPECT_NE(Scheme::identity(DType::E4M3).validate(), "");
}

TEST(SchemeOptions, RangesAtTheirBounds) {
  EXPECT_EQ(
      Scheme::fp8Delayed(DType::E4M3, 65536, AmaxAlgo::Max, 32).validate(), "");
  EXPECT_NE(Scheme::fp8Delayed(DType::E4M3, 65537)
                .validate()
                .find("history must be in [1, 65536]"),
            std::string::npos);
  EXPECT_NE(Scheme::fp8Delayed(DType::E4M3, 2000000000).validate(), "");
  EXPECT_NE(Scheme::fp8Delayed(DType::E5M2, 16, AmaxAlgo::Max, 33)
                .validate()
                .find("margin must be in [0, 32]"),
            std::string::npos);
  EXPECT_EQ(Scheme::fp8Current(DType::E4M3, false, 1.0).validate(), "");
  EXPECT_NE(Scheme::fp8Current(DType::E4M3, false, 1.0e38)
                .validate()
                .find("eps must be a finite value in [0, 1]"),
            std::string::npos);
  EXPECT_NE(Scheme::fp8Block(DType::E4M3, 1, 128, false, INFINITY).validate(),
            "");
}

TEST(SchemeSizes, ElementCountAndBytes) {
  int64_t fits[] = {int64_t(1) << 24, int64_t(1) << 23};
  EXPECT_EQ(validateSize(fits, 2, 2), ""); // exactly 2^48 bytes
  EXPECT_NE(validateSize(fits, 2, 4).find("exceed the 2^48 bytes"),
            std::string::npos);
  int64_t overflow[] = {4000000000, 4000000000};
  EXPECT_NE(validateSize(overflow, 2, 2).find("overflows a 64-bit integer"),
            std::string::npos);
  int64_t dynamicOrEmpty[] = {-1, 4000000000, 4000000000};
  EXPECT_EQ(validateSize(dynamicOrEmpty, 3, 2), "");
  dynamicOrEmpty[0] = 0;
  EXPECT_EQ(validateSize(dynamicOrEmpty, 3, 2), "");
}

TEST(SchemeSizes, StorageBuffersCount) {
  // 1 x 2^47: the data fits, the rowwise MXFP8 scales padded to 128 rows
  // (128 x 2^42 bytes) do not.
  int64_t shape[] = {1, int64_t(1) << 47};
  Scheme mx = Scheme::mxfp8(DType::E4M3);
  EXPECT_EQ(validateSize(shape, 2, 2), "");
  std::string e = validateSize(shape, 2, 2, &mx);
  EXPECT_NE(e.find("rowwise mxfp8 scale_inv buffer"), std::string::npos) << e;
}

} // namespace
