//===- PlanTest.cpp - plan validation and serialisation -------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#include "te/runtime/Plan.h"

#include <gtest/gtest.h>

using namespace te::rt;

namespace {

Plan samplePlan() {
  Plan p;
  p.buffers = {{"x", 4096, true},
               {"lr", 4, true},
               {"y", 4096, false},
               {"w", 128 * 64 * 2, true},
               {"d", 32 * 64 * 2, true}};
  KernelSpec k;
  k.name = "scale";
  k.entry = "scale";
  k.source =
      "extern \"C\" __global__ void scale(float*a,const float*l,int n){}";
  k.options.flags = {"-lineinfo"};
  k.grid = {4, 1, 1};
  k.block = {256, 1, 1};
  k.sharedBytes = 1024;
  k.args = {
      ArgDesc::ptr(2),
      ArgDesc::ptr(1),
      ArgDesc::i32(1024),
      ArgDesc::f32(0.5f),
      ArgDesc::i64(-7),
      ArgDesc::table({ArgDesc::ptr(0), ArgDesc::i64(3), ArgDesc::ptr(-1)})};
  p.kernels.push_back(k);
  // A clustered persistent launch taking a TMA descriptor over "w".
  KernelSpec t = k;
  t.name = t.entry = "tma";
  t.cluster = {2, 1, 1};
  t.persistent = true;
  t.overlapsPredecessor = true;
  t.grid = {2, 1, 1};
  t.args = {ArgDesc::tensorMap(
                3, {DType::BF16, 128, 64, 128, 64, 64, TensorMapSwizzle::B128}),
            ArgDesc::i32(128)};
  p.kernels.push_back(t);
  GemmCall g;
  g.problem.m = 32, g.problem.n = 64, g.problem.k = 64;
  g.problem.b.transposed = true;
  g.a = {0, 0};
  g.b = {3, 0};
  g.out = {4, 0};
  p.gemms.push_back(g);
  CollectiveCall gather;
  gather.kind = CollectiveCall::Kind::AllGather;
  gather.ranks = 2;
  gather.send = {0, 0};
  gather.recv = {2, 0};
  gather.bytes = 2048;
  CollectiveCall amax;
  amax.kind = CollectiveCall::Kind::AllReduceMax;
  amax.ranks = 2;
  amax.send = {1, 0};
  amax.bytes = 4;
  p.collectives = {gather, amax};
  p.steps = {{Step::Kind::Fill, 2, 0},       {Step::Kind::Launch, 0, 0},
             {Step::Kind::Collective, 1, 0}, {Step::Kind::Launch, 1, 0},
             {Step::Kind::Collective, 0, 0}, {Step::Kind::Gemm, 0, 0}};
  return p;
}

TEST(Plan, SerialisationRoundTrips) {
  Plan p = samplePlan();
  ASSERT_EQ(p.validate(), "");
  std::string bytes = p.serialize();
  Expected<Plan> q = Plan::deserialize(bytes);
  ASSERT_TRUE(q) << q.status().toString();
  EXPECT_EQ(q->serialize(), bytes);
  EXPECT_EQ(q->kernels[0].args, p.kernels[0].args);
  EXPECT_EQ(q->kernels[0].options.flags, p.kernels[0].options.flags);
  EXPECT_EQ(q->kernels[0].sharedBytes, 1024u);
  EXPECT_EQ(q->kernels[1].args, p.kernels[1].args);
  EXPECT_EQ(q->kernels[1].args[0].map.boxCols, 64);
  EXPECT_EQ(q->kernels[1].cluster.x, 2u);
  EXPECT_TRUE(q->kernels[1].persistent);
  EXPECT_FALSE(q->kernels[0].persistent);
  EXPECT_TRUE(q->kernels[1].overlapsPredecessor);
  EXPECT_FALSE(q->kernels[0].overlapsPredecessor);
  EXPECT_EQ(q->gemms[0].out, (BufferRef{4, 0}));
  EXPECT_FALSE(q->gemms[0].problem.a.transposed);
  EXPECT_TRUE(q->gemms[0].problem.b.transposed);
  EXPECT_EQ(q->buffers[2].name, "y");
  EXPECT_FALSE(q->buffers[2].external);
  EXPECT_EQ(q->collectives, p.collectives);
  EXPECT_EQ(q->steps[2].kind, Step::Kind::Collective);
}

TEST(Plan, CollectivesStayInsideTheirBuffers) {
  Plan p = samplePlan();
  p.collectives[0].bytes = 4096; // 2 ranks x 4096 bytes: past "y"
  EXPECT_NE(p.validate().find("past the end of buffer 'y'"), std::string::npos)
      << p.validate();
  p = samplePlan();
  p.collectives[1].bytes = 6; // not whole floats
  EXPECT_NE(p.validate().find("collective 1"), std::string::npos);
  p = samplePlan();
  p.steps.push_back({Step::Kind::Collective, 2, 0});
  EXPECT_NE(p.validate().find("missing collective"), std::string::npos);
}

TEST(Plan, EveryTruncationIsRejected) {
  std::string bytes = samplePlan().serialize();
  for (size_t n = 0; n < bytes.size(); ++n) {
    Expected<Plan> q = Plan::deserialize(bytes.substr(0, n));
    ASSERT_FALSE(q) << "prefix of " << n << " bytes accepted";
    EXPECT_EQ(q.status().code(), StatusCode::InvalidArgument);
  }
  EXPECT_FALSE(Plan::deserialize(bytes + "x"));
}

TEST(Plan, CorruptBytesNeverCrash) {
  std::string bytes = samplePlan().serialize();
  // Flip every byte in turn: the reader either rejects the plan or yields a
  // valid one; it must never crash or read out of bounds.
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string b = bytes;
    b[i] = char(b[i] ^ 0xff);
    Expected<Plan> q = Plan::deserialize(b);
    if (q) {
      EXPECT_EQ(q->validate(), "");
    }
  }
}

TEST(Plan, TablesAreBoundedAndFlat) {
  Plan p = samplePlan();
  p.kernels[0].args.back().items.push_back(ArgDesc::table({ArgDesc::i64(1)}));
  EXPECT_NE(p.validate().find("into a table"), std::string::npos);
  p = samplePlan();
  p.kernels[0].args.back().items.assign(kMaxTableWords + 1, ArgDesc::i64(0));
  EXPECT_NE(p.validate().find("kernel parameter space"), std::string::npos);
  p = samplePlan();
  p.kernels[0].args.back().items[0] = ArgDesc::ptr(99);
  EXPECT_NE(p.validate().find("names buffer 99"), std::string::npos);
}

TEST(Plan, ValidationNamesTheProblem) {
  Plan p = samplePlan();
  p.kernels[0].args[0] = ArgDesc::ptr(9);
  EXPECT_NE(p.validate().find("names buffer 9"), std::string::npos);
  p = samplePlan();
  p.gemms[0].out = {4, 32 * 64 * 2};
  EXPECT_EQ(p.validate(), "") << "an offset at the end with 0 bytes is fine";
  p.gemms[0].out = {4, 32 * 64 * 2 + 1};
  EXPECT_NE(p.validate().find("past the end"), std::string::npos);
  p = samplePlan();
  p.steps.push_back({Step::Kind::Gemm, 3, 0});
  EXPECT_NE(p.validate().find("missing gemm"), std::string::npos);
  p = samplePlan();
  p.gemms[0].problem.a.dtype = DType::E4M3;
  EXPECT_NE(p.validate().find("gemm 0:"), std::string::npos);
}

TEST(Plan, TensorMapsStayInsideTheirBuffer) {
  Plan p = samplePlan();
  TensorMapShape &m = p.kernels[1].args[0].map;
  m.rows = 129; // one row past buffer "w"
  EXPECT_NE(p.validate().find("past the end of buffer 'w'"), std::string::npos)
      << p.validate();
  p = samplePlan();
  p.kernels[1].args[0].map.boxRows = 257;
  EXPECT_NE(p.validate().find("tensor map with an invalid shape"),
            std::string::npos);
  p = samplePlan();
  p.kernels[1].args[0].map.rowStrideBytes = 64; // rows overlap
  EXPECT_NE(p.validate().find("invalid shape"), std::string::npos);
  p = samplePlan();
  p.kernels[1].args[0].pointer.buffer = -1;
  EXPECT_NE(p.validate().find("over no buffer"), std::string::npos);
  p = samplePlan();
  p.kernels[0].args.back().items[0] = p.kernels[1].args[0];
  EXPECT_NE(p.validate().find("into a table"), std::string::npos);
  p = samplePlan();
  p.kernels[1].grid.y = 2;
  EXPECT_NE(p.validate().find("persistent grids"), std::string::npos);
  p = samplePlan();
  p.kernels[1].cluster.x = 0;
  EXPECT_NE(p.validate().find("invalid cluster"), std::string::npos);
}

} // namespace
