//===- SchemeAttrTest.cpp - the C++ API of the scheme attributes ----------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Builds every scheme attribute in C++, queries it through
// SchemeAttrInterface (block shape, element and scale formats, storage per
// direction) and checks hand-computed values; checks that the C++-built
// attribute is the one the parser produces, and that bad options are
// rejected through getChecked with a diagnostic. Checks that te.gemm's
// verifier and the MLIR-free GEMM pairing rule agree.
//
//===----------------------------------------------------------------------===//

#include "dialect/te/TeOps.h"
#include "te/formats/GemmRules.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::te;
namespace rt = ::te::rt;

namespace {

class SchemeAttrTest : public ::testing::Test {
protected:
  SchemeAttrTest() { ctx.getOrLoadDialect<TeDialect>(); }

  SchemeAttrInterface parse(StringRef text) {
    return llvm::dyn_cast_or_null<SchemeAttrInterface>(
        parseAttribute(text, &ctx));
  }

  MLIRContext ctx;
};

TEST_F(SchemeAttrTest, Fp8CurrentBuiltEqualsParsed) {
  auto attr = Fp8CurrentAttr::get(&ctx, Fp8Format::e5m2, /*pow2=*/true, 1e-12);
  EXPECT_EQ(SchemeAttrInterface(attr),
            parse("#te.fp8_current<e5m2, pow2, eps = 1.0e-12>"));
  rt::Scheme s = attr.getRuntimeScheme(Direction::rowwise);
  EXPECT_EQ(s.kind, rt::SchemeKind::Fp8Current);
  EXPECT_EQ(s.element, rt::DType::E5M2);
  EXPECT_TRUE(s.pow2);
  EXPECT_EQ(s.eps, double(1e-12f)); // eps is FP32
}

TEST_F(SchemeAttrTest, Fp8CurrentProperties) {
  SchemeAttrInterface s = Fp8CurrentAttr::get(&ctx, Fp8Format::e4m3);
  EXPECT_EQ(s.getBlockShape(Direction::rowwise), (rt::BlockShape{0, 0}));
  EXPECT_TRUE(llvm::isa<Float8E4M3FNType>(
      s.getStorageElementType(Direction::columnwise)));
  EXPECT_TRUE(s.getScaleType(Direction::rowwise).isF32());
  // Columnwise on Hopper: explicit transpose [K, M] = [1024, 4096].
  rt::DirectionStorage c = s.getStorage(Direction::columnwise, {4096, 1024});
  EXPECT_EQ(c.data, (rt::BufferDesc{rt::DType::E4M3, 1024, 4096}));
  EXPECT_TRUE(c.dataTransposed);
  EXPECT_EQ(c.scaleInv, (rt::BufferDesc{rt::DType::F32, 1, 1}));
}

TEST_F(SchemeAttrTest, Fp8DelayedDefaultsAndOptions) {
  auto attr = Fp8DelayedAttr::get(&ctx, Fp8Format::e4m3);
  EXPECT_EQ(attr.getHistory(), 1024);
  EXPECT_EQ(attr.getAlgo(), AmaxAlgo::max);
  EXPECT_EQ(attr.getMargin(), 0);
  EXPECT_EQ(SchemeAttrInterface(attr),
            parse("#te.fp8_delayed<e4m3, history = 1024, algo = max, "
                  "margin = 0>"));
  EXPECT_FALSE(attr.getPow2());
  auto other = Fp8DelayedAttr::get(&ctx, Fp8Format::e5m2, 16,
                                   AmaxAlgo::most_recent, 2, true);
  EXPECT_EQ(SchemeAttrInterface(other),
            parse("#te.fp8_delayed<e5m2, margin = 2, pow2, algo = most_recent, "
                  "history = 16>"));
  EXPECT_TRUE(other.getRuntimeScheme(Direction::columnwise).pow2);
  EXPECT_EQ(other.getRuntimeScheme(Direction::rowwise).algo,
            rt::AmaxAlgo::MostRecent);
}

TEST_F(SchemeAttrTest, Mxfp8Properties) {
  SchemeAttrInterface s = Mxfp8Attr::get(&ctx, Fp8Format::e4m3);
  EXPECT_EQ(s, parse("#te.mxfp8<e4m3>"));
  EXPECT_EQ(s.getBlockShape(Direction::rowwise), (rt::BlockShape{1, 32}));
  EXPECT_EQ(s.getBlockShape(Direction::columnwise), (rt::BlockShape{32, 1}));
  EXPECT_TRUE(llvm::isa<Float8E8M0FNUType>(s.getScaleType(Direction::rowwise)));
  // 96x64: rowwise scale [roundup(96,128), roundup(2,4)] = [128, 4];
  // columnwise [roundup(3,4), roundup(64,128)] = [4, 128], data untransposed.
  EXPECT_EQ(s.getStorage(Direction::rowwise, {96, 64}).scaleInv,
            (rt::BufferDesc{rt::DType::E8M0, 128, 4}));
  rt::DirectionStorage c = s.getStorage(Direction::columnwise, {96, 64});
  EXPECT_EQ(c.scaleInv, (rt::BufferDesc{rt::DType::E8M0, 4, 128}));
  EXPECT_EQ(c.data, (rt::BufferDesc{rt::DType::E4M3, 96, 64}));
  EXPECT_FALSE(c.dataTransposed);
}

TEST_F(SchemeAttrTest, Nvfp4Properties) {
  auto attr = Nvfp4Attr::get(&ctx, /*rht=*/true, /*sr=*/true, false);
  EXPECT_EQ(SchemeAttrInterface(attr), parse("#te.nvfp4<sr, rht>"));
  SchemeAttrInterface s = attr;
  EXPECT_TRUE(
      llvm::isa<Float4E2M1FNType>(s.getStorageElementType(Direction::rowwise)));
  EXPECT_TRUE(llvm::isa<Float8E4M3FNType>(s.getScaleType(Direction::rowwise)));
  EXPECT_EQ(s.getBlockShape(Direction::columnwise), (rt::BlockShape{16, 1}));
  // 3-D [2, 24, 80] is viewed as 48 x 80.
  rt::DirectionStorage c = s.getStorage(Direction::columnwise, {2, 24, 80});
  EXPECT_EQ(c.data, (rt::BufferDesc{rt::DType::E2M1x2, 80, 24}));
  EXPECT_EQ(c.scaleInv, (rt::BufferDesc{rt::DType::E4M3, 128, 4}));
  SchemeAttrInterface twoD = Nvfp4Attr::get(&ctx, false, false, true);
  EXPECT_EQ(twoD.getBlockShape(Direction::rowwise), (rt::BlockShape{16, 16}));
}

TEST_F(SchemeAttrTest, Fp8BlockProperties) {
  SchemeAttrInterface act = Fp8BlockAttr::get(&ctx, Fp8Format::e4m3, 1, 128);
  SchemeAttrInterface wgt =
      Fp8BlockAttr::get(&ctx, Fp8Format::e4m3, 128, 128, /*pow2=*/true);
  EXPECT_EQ(act, parse("#te.fp8_block<e4m3, 1x128>"));
  EXPECT_EQ(wgt, parse("#te.fp8_block<e4m3, 128x128, pow2, eps = 0.0>"));
  EXPECT_EQ(act.getBlockShape(Direction::columnwise), (rt::BlockShape{128, 1}));
  EXPECT_EQ(wgt.getBlockShape(Direction::columnwise),
            (rt::BlockShape{128, 128}));
  // 200x160, 1x128: rowwise scale transposed [2, 200], columnwise [2, 160].
  EXPECT_EQ(act.getStorage(Direction::rowwise, {200, 160}).scaleInv,
            (rt::BufferDesc{rt::DType::F32, 2, 200}));
  EXPECT_EQ(act.getStorage(Direction::columnwise, {200, 160}).scaleInv,
            (rt::BufferDesc{rt::DType::F32, 2, 160}));
  // 200x160, 128x128: [2, roundup(2,4)] and [2, roundup(2,4)].
  EXPECT_EQ(wgt.getStorage(Direction::rowwise, {200, 160}).scaleInv,
            (rt::BufferDesc{rt::DType::F32, 2, 4}));
  EXPECT_EQ(wgt.getStorage(Direction::columnwise, {200, 160}).data,
            (rt::BufferDesc{rt::DType::E4M3, 160, 200}));
}

TEST_F(SchemeAttrTest, IdentityProperties) {
  SchemeAttrInterface s = IdentityAttr::get(&ctx, BFloat16Type::get(&ctx));
  EXPECT_EQ(s, parse("#te.identity<bf16>"));
  EXPECT_TRUE(s.getStorageElementType(Direction::rowwise).isBF16());
  EXPECT_FALSE(s.getScaleType(Direction::rowwise));
  EXPECT_TRUE(s.getStorage(Direction::columnwise, {8, 8}).sharesRowwiseData);
}

TEST_F(SchemeAttrTest, HybridDelegatesPerDirection) {
  auto row = Mxfp8Attr::get(&ctx, Fp8Format::e4m3);
  auto col = Nvfp4Attr::get(&ctx, false, false, false);
  SchemeAttrInterface h = HybridAttr::get(&ctx, row, col);
  EXPECT_EQ(h, parse("#te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = "
                     "#te.nvfp4<>>"));
  EXPECT_TRUE(h.isHybrid());
  EXPECT_EQ(h.getDirectionScheme(Direction::rowwise), SchemeAttrInterface(row));
  EXPECT_EQ(h.getDirectionScheme(Direction::columnwise),
            SchemeAttrInterface(col));
  EXPECT_EQ(h.getBlockShape(Direction::rowwise), (rt::BlockShape{1, 32}));
  EXPECT_EQ(h.getBlockShape(Direction::columnwise), (rt::BlockShape{16, 1}));
  EXPECT_TRUE(llvm::isa<Float8E8M0FNUType>(h.getScaleType(Direction::rowwise)));
  EXPECT_TRUE(
      llvm::isa<Float8E4M3FNType>(h.getScaleType(Direction::columnwise)));
  // Each direction stores exactly what its scheme alone would.
  EXPECT_EQ(h.getStorage(Direction::columnwise, {64, 32}).data,
            SchemeAttrInterface(col)
                .getStorage(Direction::columnwise, {64, 32})
                .data);
}

TEST_F(SchemeAttrTest, QTensorTypeStorage) {
  auto scheme = Fp8BlockAttr::get(&ctx, Fp8Format::e4m3, 1, 128);
  auto t = QTensorType::get(&ctx, {200, 160}, BFloat16Type::get(&ctx), scheme,
                            Directions::rowwise | Directions::columnwise);
  EXPECT_TRUE(t.hasDirection(Direction::rowwise));
  EXPECT_TRUE(t.hasDirection(Direction::columnwise));
  EXPECT_EQ(t.getRows(), 200);
  EXPECT_EQ(t.getCols(), 160);
  EXPECT_EQ(t.getStorage(Direction::columnwise).data,
            (rt::BufferDesc{rt::DType::E4M3, 160, 200}));
}

TEST_F(SchemeAttrTest, BadOptionsAreDiagnosed) {
  std::string message;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    message = d.str();
    return success();
  });
  auto emit = [&] { return emitError(UnknownLoc::get(&ctx)); };
  EXPECT_FALSE(Fp8DelayedAttr::getChecked(emit, &ctx, Fp8Format::e4m3,
                                          int64_t(0), AmaxAlgo::max, int64_t(0),
                                          false));
  EXPECT_NE(message.find("history"), std::string::npos) << message;
  EXPECT_FALSE(Fp8CurrentAttr::getChecked(emit, &ctx, Fp8Format::e4m3, false,
                                          llvm::APFloat(-1.0f)));
  EXPECT_NE(message.find("eps"), std::string::npos) << message;
  auto hybrid = HybridAttr::get(&ctx, Mxfp8Attr::get(&ctx, Fp8Format::e4m3),
                                Mxfp8Attr::get(&ctx, Fp8Format::e4m3));
  EXPECT_FALSE(HybridAttr::getChecked(
      emit, &ctx, SchemeAttrInterface(hybrid),
      SchemeAttrInterface(Mxfp8Attr::get(&ctx, Fp8Format::e4m3))));
  EXPECT_NE(message.find("nest"), std::string::npos) << message;
  // MXFP8 rowwise needs the last dimension to be a multiple of 32.
  EXPECT_FALSE(QTensorType::getChecked(
      emit, &ctx, {64, 100}, BFloat16Type::get(&ctx),
      Mxfp8Attr::get(&ctx, Fp8Format::e4m3), Directions::rowwise));
  EXPECT_NE(message.find("multiple of the block size 32"), std::string::npos)
      << message;
}

} // namespace

/// te.gemm's verifier and the MLIR-free rule (te/formats/GemmRules.h) agree
/// on every pairing of these schemes, read in either direction: the
/// verifier accepts exactly when gemmOperandsError is empty.
TEST_F(SchemeAttrTest, GemmVerifierUsesTheSharedPairingRule) {
  const char *schemes[] = {"#te.identity<bf16>",
                           "#te.fp8_current<e4m3>",
                           "#te.fp8_delayed<e5m2>",
                           "#te.fp8_current<e5m2>",
                           "#te.mxfp8<e4m3>",
                           "#te.nvfp4<>",
                           "#te.nvfp4<rht>",
                           "#te.fp8_block<e4m3, 1x128>",
                           "#te.fp8_block<e4m3, 128x128>"};
  ScopedDiagnosticHandler silence(&ctx, [](Diagnostic &) { return success(); });
  auto bf16 = RankedTensorType::get({128, 128}, BFloat16Type::get(&ctx));
  unsigned accepted = 0, rejected = 0;
  for (const char *a : schemes)
    for (const char *b : schemes)
      for (bool ta : {false, true})
        for (bool tb : {false, true}) {
          auto type = [&](const char *s) {
            return QTensorType::get(
                &ctx, {128, 128}, BFloat16Type::get(&ctx), parse(s),
                Directions::rowwise | Directions::columnwise);
          };
          QTensorType qa = type(a), qb = type(b);
          LogicalResult verified = GemmOp::verifyTypes(
              [&] { return emitError(UnknownLoc::get(&ctx)); }, qa, qb, Type(),
              bf16, ta, tb);
          Direction da = GemmOp::getOperandDirection(0, ta, tb);
          Direction db = GemmOp::getOperandDirection(1, ta, tb);
          rt::GemmOperand ra{qa.getScheme().getRuntimeScheme(da),
                             toRuntime(da)};
          rt::GemmOperand rb{qb.getScheme().getRuntimeScheme(db),
                             toRuntime(db)};
          std::string why = rt::gemmOperandsError(ra, rb);
          EXPECT_EQ(succeeded(verified), why.empty())
              << a << " x " << b << " ta=" << ta << " tb=" << tb << ": " << why;
          ++(why.empty() ? accepted : rejected);
        }
  EXPECT_GT(accepted, 0u);
  EXPECT_GT(rejected, 0u);
}

TEST(GemmRules, ReasonsNameTheOperand) {
  rt::GemmOperand hp{std::nullopt, rt::Direction::Rowwise, rt::DType::BF16};
  rt::GemmOperand mx{rt::Scheme::mxfp8(rt::DType::E4M3),
                     rt::Direction::Columnwise};
  rt::GemmPairing p = rt::checkGemmPairing(hp, mx);
  EXPECT_EQ(p.error, rt::GemmPairingError::HighPrecisionWithQuantized);
  EXPECT_EQ(p.operand, 0);
  rt::GemmOperand id{rt::Scheme::identity(rt::DType::BF16),
                     rt::Direction::Columnwise};
  EXPECT_TRUE(rt::checkGemmPairing(hp, id).ok());
  rt::GemmOperand f32{std::nullopt, rt::Direction::Columnwise, rt::DType::F32};
  EXPECT_EQ(rt::checkGemmPairing(hp, f32).error,
            rt::GemmPairingError::ElementTypesDiffer);
  rt::GemmOperand rht{rt::Scheme::nvfp4(/*rht=*/true),
                      rt::Direction::Columnwise};
  rt::GemmOperand plain{rt::Scheme::nvfp4(), rt::Direction::Rowwise};
  p = rt::checkGemmPairing(plain, rht);
  EXPECT_EQ(p.error, rt::GemmPairingError::HadamardOneSided);
  EXPECT_EQ(p.operand, 1);
  EXPECT_NE(rt::gemmOperandsError(plain, rht).find("operand 'b'"),
            std::string::npos);
}

// Quantized operands of two families pair as the BF16 GEMM of their
// dequantized values, without the FP8 kernels' rules (e5m2 by e5m2) but
// with the Hadamard rule; an identity operand pairs with neither.
TEST(GemmRules, QuantizedFamiliesPairAsTheirDequantizedValues) {
  using rt::Direction;
  using rt::DType;
  rt::GemmOperand mx{rt::Scheme::mxfp8(DType::E5M2), Direction::Rowwise};
  rt::GemmOperand nv{rt::Scheme::nvfp4(), Direction::Columnwise};
  rt::GemmOperand blk{rt::Scheme::fp8Block(DType::E5M2, 128, 128),
                      Direction::Columnwise};
  rt::GemmOperand cur{rt::Scheme::fp8Current(DType::E5M2), Direction::Rowwise};
  rt::GemmOperand blk1{rt::Scheme::fp8Block(DType::E5M2, 1, 128),
                       Direction::Rowwise};
  for (auto [a, b] : {std::pair{mx, nv}, std::pair{mx, blk}, std::pair{cur, nv},
                      std::pair{cur, mx}, std::pair{blk1, nv}}) {
    EXPECT_TRUE(rt::checkGemmPairing(a, b).ok()) << rt::gemmOperandsError(a, b);
    EXPECT_TRUE(rt::gemmMixesFamilies(a, b));
    EXPECT_TRUE(rt::gemmMixesFamilies(b, a));
  }
  // Across families the FP8 kernels' e5m2 rule does not apply (block FP8
  // and per-tensor FP8 are two families)...
  EXPECT_EQ(rt::checkGemmPairing(blk1, cur).error, rt::GemmPairingError::None);
  // ... within one it does, and nothing mixes.
  EXPECT_FALSE(rt::gemmMixesFamilies(blk1, blk));
  EXPECT_EQ(rt::checkGemmPairing(blk1, blk).error,
            rt::GemmPairingError::E5m2ByE5m2);
  rt::GemmOperand cur4{rt::Scheme::fp8Current(DType::E4M3), Direction::Rowwise};
  rt::GemmOperand delayed{rt::Scheme::fp8Delayed(DType::E4M3),
                          Direction::Rowwise};
  EXPECT_FALSE(rt::gemmMixesFamilies(cur4, delayed)); // one per-tensor family
  // The transform must still cancel.
  rt::GemmOperand rht{rt::Scheme::nvfp4(/*rht=*/true), Direction::Columnwise};
  rt::GemmOperand mxCol{rt::Scheme::mxfp8(DType::E4M3), Direction::Columnwise};
  rt::GemmPairing p = rt::checkGemmPairing(mxCol, rht);
  EXPECT_EQ(p.error, rt::GemmPairingError::HadamardOneSided);
  EXPECT_EQ(p.operand, 1);
  // Identity is high precision, whatever the other family.
  rt::GemmOperand id{rt::Scheme::identity(DType::BF16), Direction::Rowwise};
  p = rt::checkGemmPairing(id, mx);
  EXPECT_EQ(p.error, rt::GemmPairingError::IdentityWithQuantized);
  EXPECT_EQ(p.operand, 0);
  EXPECT_FALSE(rt::gemmMixesFamilies(id, mx));
  EXPECT_NE(rt::gemmOperandsError(mx, id).find(
                "operand 'b' is identity (high precision) but operand 'a' is "
                "quantized by mxfp8"),
            std::string::npos)
      << rt::gemmOperandsError(mx, id);
}

// The NVFP4 kernel reads per-expert NVFP4 codes in the fprop only, K in
// whole 64-element stages; each refusal says which rule.
TEST(GemmRules, GroupedNvfp4CodesNeedTheFpropInWholeStages) {
  const rt::Scheme x = rt::Scheme::nvfp4(),
                   w = rt::Scheme::nvfp4(false, false, true);
  EXPECT_EQ(rt::groupedNvfp4CodesError(x, w, false, 4096), "");
  EXPECT_EQ(
      rt::groupedNvfp4CodesError(rt::Scheme::nvfp4(false, true), x, false, 64),
      "");
  EXPECT_NE(rt::groupedNvfp4CodesError(x, w, true, 4096).find("rowwise"),
            std::string::npos);
  EXPECT_NE(rt::groupedNvfp4CodesError(x, w, false, 4112).find("64"),
            std::string::npos);
  const rt::Scheme fp8 = rt::Scheme::fp8Current(rt::DType::E4M3);
  EXPECT_NE(rt::groupedNvfp4CodesError(fp8, fp8, false, 4096).find("NVFP4"),
            std::string::npos);
  // The per-expert rules come first (16x16 blocks for the stack only).
  EXPECT_EQ(rt::groupedNvfp4CodesError(w, w, false, 4096),
            rt::groupedPerExpertSchemesError(w, w, false));
}

// A grouped GEMM quantizes one or both operands per expert by a tensor-wide
// scheme: codes on the FP8 kernel only for two per-tensor FP8 operands,
// values on the BF16 kernel for every other pairing; the operand it does
// not quantize comes quantized by a scheme without a tensor-wide scale.
TEST(GemmRules, GroupedPerExpertOperandsPairAsCodesOrValues) {
  const rt::Scheme e4m3 = rt::Scheme::fp8Current(rt::DType::E4M3),
                   e5m2 = rt::Scheme::fp8Current(rt::DType::E5M2),
                   nvfp4 = rt::Scheme::nvfp4(),
                   nvfp4Rht = rt::Scheme::nvfp4(true),
                   block = rt::Scheme::fp8Block(rt::DType::E4M3, 1, 128),
                   mxfp8 = rt::Scheme::mxfp8(rt::DType::E4M3),
                   identity = rt::Scheme::identity(rt::DType::BF16);
  const std::optional<rt::Scheme> none;
  EXPECT_TRUE(rt::groupedPerExpertReadsCodes(e4m3, e5m2));
  EXPECT_FALSE(rt::groupedPerExpertReadsCodes(e4m3, nvfp4));
  EXPECT_FALSE(rt::groupedPerExpertReadsCodes(e4m3, none));
  EXPECT_FALSE(rt::groupedPerExpertReadsCodes(nvfp4, nvfp4));
  // The FP8 kernel's pairing binds codes only.
  EXPECT_NE(rt::groupedPerExpertSchemesError(e5m2, e5m2).find("e5m2"),
            std::string::npos);
  EXPECT_EQ(rt::groupedPerExpertSchemesError(e5m2, nvfp4), "");
  EXPECT_EQ(rt::groupedPerExpertSchemesError(nvfp4, e4m3, true), "");
  EXPECT_EQ(rt::groupedPerExpertSchemesError(none, nvfp4), "");
  EXPECT_EQ(rt::groupedPerExpertSchemesError(e5m2, none), "");
  EXPECT_NE(rt::groupedPerExpertSchemesError(none, none).find("no operand"),
            std::string::npos);
  // Each side's own rules hold alone too.
  EXPECT_NE(
      rt::groupedPerExpertSchemesError(none, nvfp4Rht, true).find("Hadamard"),
      std::string::npos);
  EXPECT_NE(rt::groupedPerExpertSchemesError(block, none).find("block"),
            std::string::npos);
  // The other operand.
  EXPECT_EQ(rt::groupedPerExpertPartnerError(nvfp4, mxfp8, true), "");
  EXPECT_EQ(rt::groupedPerExpertPartnerError(e4m3, block, true), "");
  EXPECT_NE(
      rt::groupedPerExpertPartnerError(e4m3, identity, false).find("identity"),
      std::string::npos);
  EXPECT_NE(
      rt::groupedPerExpertPartnerError(nvfp4, e4m3, false).find("per expert"),
      std::string::npos);
  // 128x128 tiles: the stack's own, never the tokens'.
  const rt::Scheme tiles = rt::Scheme::fp8Block(rt::DType::E4M3, 128, 128);
  EXPECT_EQ(rt::groupedPerExpertPartnerError(e4m3, tiles, false), "");
  EXPECT_NE(rt::groupedPerExpertPartnerError(e4m3, tiles, true).find("span"),
            std::string::npos);
  // The shapes: codes over 128x128 tiles; values over 64-element slabs.
  EXPECT_NE(rt::groupedPerExpertShapeError(e4m3, e4m3, false, 256, 96, 256)
                .find("N must be a multiple of 128"),
            std::string::npos);
  EXPECT_EQ(rt::groupedPerExpertShapeError(e4m3, none, false, 192, 96, 192),
            "");
  EXPECT_NE(rt::groupedPerExpertShapeError(e4m3, none, false, 200, 96, 200)
                .find("multiple of 64"),
            std::string::npos);
  EXPECT_NE(rt::groupedPerExpertShapeError(none, e4m3, true, 128, 128, 100)
                .find("16-byte pieces"),
            std::string::npos);
}
