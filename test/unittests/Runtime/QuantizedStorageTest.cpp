//===- QuantizedStorageTest.cpp - buffers of a quantized tensor -----------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Which buffers each direction owns or borrows (CPU), and on a GPU that the
// allocation matches the plan (skipped without one).
//
//===----------------------------------------------------------------------===//

#include "te/runtime/QuantizedStorage.h"

#include <gtest/gtest.h>

using namespace te::rt;

namespace {

constexpr unsigned kBoth = 3;

TEST(QuantizedStorage, PerTensorSharesScaleAndAmaxOnHopper) {
  Scheme s = Scheme::fp8Current(DType::E4M3);
  auto p = planQuantizedStorage(s, s, kBoth, 256, 128, Target::sm90());
  EXPECT_TRUE(p[0].ownsData && p[0].ownsScaleInv && p[0].ownsAmax);
  EXPECT_TRUE(p[1].ownsData); // the explicit transpose
  EXPECT_FALSE(p[1].ownsScaleInv);
  EXPECT_FALSE(p[1].ownsAmax);
  EXPECT_EQ(p[1].layout.data, (BufferDesc{DType::E4M3, 128, 256}));
}

TEST(QuantizedStorage, PerTensorOnBlackwellBorrowsTheData) {
  Scheme s = Scheme::fp8Current(DType::E4M3);
  auto p = planQuantizedStorage(s, s, kBoth, 256, 128, Target::sm100());
  EXPECT_FALSE(p[1].ownsData);
  EXPECT_TRUE(p[1].layout.sharesRowwiseData);
}

TEST(QuantizedStorage, ColumnwiseOnlyOwnsEverything) {
  Scheme s = Scheme::fp8Current(DType::E4M3);
  auto p = planQuantizedStorage(s, s, 2, 256, 128, Target::sm100());
  EXPECT_FALSE(p[0].present);
  EXPECT_TRUE(p[1].ownsData && p[1].ownsScaleInv && p[1].ownsAmax);
  EXPECT_FALSE(p[1].layout.sharesRowwiseData);
}

TEST(QuantizedStorage, HybridDirectionsNeverShare) {
  // Rowwise per-tensor current, columnwise per-tensor delayed: both would
  // "share" the rowwise scale as one scheme, but they are two schemes.
  Scheme row = Scheme::fp8Current(DType::E4M3);
  Scheme col = Scheme::fp8Delayed(DType::E4M3);
  auto p = planQuantizedStorage(row, col, kBoth, 64, 64, Target::sm90());
  EXPECT_TRUE(p[1].ownsScaleInv);
  EXPECT_TRUE(p[1].ownsAmax);
  Scheme id = Scheme::identity(DType::BF16);
  auto q = planQuantizedStorage(Scheme::mxfp8(DType::E4M3), id, kBoth, 64, 64,
                                Target::sm90());
  EXPECT_TRUE(q[1].ownsData);
  EXPECT_FALSE(q[1].layout.sharesRowwiseData);
}

TEST(QuantizedStorage, IdentityBorrowsOneBuffer) {
  Scheme id = Scheme::identity(DType::BF16);
  auto p = planQuantizedStorage(id, id, kBoth, 64, 64, Target::sm90());
  EXPECT_TRUE(p[0].ownsData);
  EXPECT_FALSE(p[1].ownsData);
  EXPECT_FALSE(p[0].ownsScaleInv);
}

TEST(QuantizedStorage, AllocationFollowsThePlan) {
  Scheme nv = Scheme::nvfp4();
  Expected<QuantizedStorage> bad =
      QuantizedStorage::allocate(nv, nv, kBoth, 40, 64, Target::sm90());
  ASSERT_FALSE(bad); // 40 rows: NVFP4 columnwise needs M % 16 == 0
  EXPECT_EQ(bad.status().code(), StatusCode::InvalidArgument);
  Expected<Device> dev = Device::open();
  if (!dev)
    GTEST_SKIP() << dev.status().toString();
  Expected<QuantizedStorage> q =
      QuantizedStorage::allocate(nv, nv, kBoth, 48, 80, Target::sm90());
  ASSERT_TRUE(q) << q.status().toString();
  // rowwise: 48x40 data + 128x8 scales + 4; columnwise: 80x24 + 128x4 + 4.
  EXPECT_EQ(q->bytes(),
            uint64_t(48 * 40 + 128 * 8 + 4 + 80 * 24 + 128 * 4 + 4));
  EXPECT_NE(q->data(Direction::Columnwise), q->data(Direction::Rowwise));
  Scheme pt = Scheme::fp8Delayed(DType::E4M3);
  Expected<QuantizedStorage> p =
      QuantizedStorage::allocate(pt, pt, kBoth, 64, 32, Target::sm90());
  ASSERT_TRUE(p);
  EXPECT_EQ(p->scaleInv(Direction::Columnwise),
            p->scaleInv(Direction::Rowwise));
  EXPECT_EQ(p->amax(Direction::Columnwise), p->amax(Direction::Rowwise));
  EXPECT_NE(p->scaleInv(Direction::Rowwise), 0u);
}

} // namespace
