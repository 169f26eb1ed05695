//===- CompareTest.cpp - Comparing two backends' results ------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// exec::compareResults on hand-made buffers: the first differing byte is
// located, the count of differing bytes says whether one stray byte or a
// region disagrees, and elements that are NaN on both sides count as equal.
//
//===----------------------------------------------------------------------===//

#include "te/exec/Compare.h"

#include <gtest/gtest.h>

using namespace te;

namespace {

exec::ValueData fp8Buffer(std::vector<uint8_t> bytes) {
  exec::NamedBuffer b;
  b.name = "rowwise.data";
  b.desc = {rt::DType::E4M3, 2, int64_t(bytes.size() / 2)};
  b.bytes = std::move(bytes);
  return {b};
}

} // namespace

TEST(Compare, NamesTheFirstDifferenceAndCountsTheRest) {
  std::vector<uint8_t> a(16, 0x38), b = a;
  b[3] = 0x39;
  b[9] = 0x00;
  b[12] = 0x01;
  a[5] = 0x7F; // NaN on both sides, in different codes: equal
  b[5] = 0xFF;
  exec::Comparison c =
      exec::compareResults({fp8Buffer(a)}, {fp8Buffer(b)}, "cpu", "cuda");
  EXPECT_EQ(c.difference,
            "result 0 rowwise.data: byte 3 (element [0, 3] of 2x8 e4m3) cpu "
            "0x38 cuda 0x39; 3 of 16 bytes of the buffer differ");
}

TEST(Compare, NaNOnBothSidesAgrees) {
  std::vector<uint8_t> a(16, 0x38), b = a;
  a[5] = 0x7F;
  b[5] = 0xFF;
  exec::Comparison c =
      exec::compareResults({fp8Buffer(a)}, {fp8Buffer(b)}, "cpu", "cuda");
  EXPECT_EQ(c.difference, "");
  EXPECT_EQ(c.exactBuffers, 1u);
  EXPECT_EQ(c.bytes, 16u);
}
