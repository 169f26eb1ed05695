//===- TeAttrs.cpp - quantization scheme attributes -----------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Parsers accept the options of IR.md in any order (each at most once);
// printers emit one canonical order. Verifiers build the run-time scheme and
// call its validate(), so option rules live only in formats/lib/Scheme.cpp.
//
//===----------------------------------------------------------------------===//

#include "dialect/te/TeAttrs.h"
#include "dialect/te/TeDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cstdio>
#include <cstdlib>
#include <optional>

using namespace mlir;
using namespace mlir::te;
namespace rt = ::te::rt;

#include "dialect/te/TeEnums.cpp.inc"

#include "dialect/te/TeAttrInterfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialect/te/TeAttrs.cpp.inc"

void TeDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialect/te/TeAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

int64_t mlir::te::flattenedRows(ArrayRef<int64_t> shape) {
  int64_t m = 1;
  for (int64_t d : shape.drop_back())
    m *= d;
  return m;
}

static rt::DType toRuntimeFormat(Fp8Format f) {
  return f == Fp8Format::e4m3 ? rt::DType::E4M3 : rt::DType::E5M2;
}

static std::optional<rt::DType> toRuntimeFloat(Type t) {
  if (t && t.isF32())
    return rt::DType::F32;
  if (t && t.isF16())
    return rt::DType::F16;
  if (t && t.isBF16())
    return rt::DType::BF16;
  return std::nullopt;
}

static Type toMlir(rt::DType t, MLIRContext *ctx) {
  switch (t) {
  case rt::DType::F32:
    return Float32Type::get(ctx);
  case rt::DType::F16:
    return Float16Type::get(ctx);
  case rt::DType::BF16:
    return BFloat16Type::get(ctx);
  case rt::DType::E4M3:
    return Float8E4M3FNType::get(ctx);
  case rt::DType::E5M2:
    return Float8E5M2Type::get(ctx);
  case rt::DType::E8M0:
    return Float8E8M0FNUType::get(ctx);
  case rt::DType::E2M1x2:
    return Float4E2M1FNType::get(ctx);
  case rt::DType::I64:
    return IntegerType::get(ctx, 64);
  }
  return Type();
}

/// Reports `msg` (from rt::Scheme::validate) if non-empty.
static LogicalResult checkScheme(function_ref<InFlightDiagnostic()> emitError,
                                 StringRef mnemonic, const rt::Scheme &s) {
  std::string msg = s.validate();
  if (msg.empty())
    return success();
  return emitError() << "invalid #te." << mnemonic << ": " << msg;
}

static ParseResult parseFp8Format(AsmParser &p, Fp8Format &format) {
  SMLoc loc = p.getCurrentLocation();
  StringRef kw;
  if (p.parseKeyword(&kw))
    return failure();
  std::optional<Fp8Format> f = symbolizeFp8Format(kw);
  if (!f)
    return p.emitError(loc)
           << "expected FP8 format 'e4m3' or 'e5m2', got '" << kw << "'";
  format = *f;
  return success();
}

/// Parses `(, key [= value])* >`, calling `parseItem` for each key (after
/// the key, positioned before `=` if any). Keys may appear once each. When
/// `needComma` is false the first option has no leading comma.
static ParseResult
parseOptions(AsmParser &p, bool needComma,
             function_ref<ParseResult(StringRef, SMLoc)> parseItem) {
  llvm::StringSet<> seen;
  while (failed(p.parseOptionalGreater())) {
    if (needComma && p.parseComma())
      return failure();
    needComma = true;
    SMLoc loc = p.getCurrentLocation();
    StringRef key;
    if (p.parseKeyword(&key))
      return failure();
    if (!seen.insert(key).second)
      return p.emitError(loc) << "option '" << key << "' is given twice";
    if (parseItem(key, loc))
      return failure();
  }
  return success();
}

/// eps is an FP32 value, as in TransformerEngine's kernels.
static ParseResult parseEps(AsmParser &p, APFloat &eps) {
  double v;
  if (p.parseEqual() || p.parseFloat(v))
    return failure();
  eps = APFloat(static_cast<float>(v));
  return success();
}

void mlir::te::printShortestFloat(raw_ostream &os, float v) {
  // The shortest %e form that reads back as the same FP32 value; it always
  // has a '.', so it lexes as a float literal.
  char text[32];
  for (int digits = 2; digits <= 9; ++digits) {
    std::snprintf(text, sizeof(text), "%.*e", digits - 1, double(v));
    if (static_cast<float>(std::strtod(text, nullptr)) == v)
      break;
  }
  os << text;
}

static void printEps(AsmPrinter &p, const APFloat &eps) {
  if (eps.isPosZero())
    return;
  p << ", eps = ";
  printShortestFloat(p.getStream(), eps.convertToFloat());
}

//===----------------------------------------------------------------------===//
// SchemeAttrInterface
//===----------------------------------------------------------------------===//

rt::BlockShape SchemeAttrInterface::getBlockShape(Direction dir) {
  return rt::blockShape(getRuntimeScheme(dir), toRuntime(dir));
}

Type SchemeAttrInterface::getStorageElementType(Direction dir) {
  return toMlir(getRuntimeScheme(dir).element, getContext());
}

Type SchemeAttrInterface::getScaleType(Direction dir) {
  rt::Scheme s = getRuntimeScheme(dir);
  if (!s.hasScale())
    return Type();
  return toMlir(s.scaleType(), getContext());
}

rt::DirectionStorage SchemeAttrInterface::getStorage(Direction dir,
                                                     ArrayRef<int64_t> shape,
                                                     const rt::Target &target) {
  int64_t k = shape.empty() ? 1 : shape.back();
  return rt::storageFor(getRuntimeScheme(dir), toRuntime(dir),
                        flattenedRows(shape), k, target);
}

bool SchemeAttrInterface::isHybrid() { return llvm::isa<HybridAttr>(*this); }

//===----------------------------------------------------------------------===//
// fp8_current
//===----------------------------------------------------------------------===//

static rt::Scheme fp8CurrentScheme(Fp8Format format, bool pow2,
                                   const APFloat &eps) {
  return rt::Scheme::fp8Current(toRuntimeFormat(format), pow2,
                                eps.convertToDouble());
}

rt::Scheme Fp8CurrentAttr::getRuntimeScheme(Direction) const {
  return fp8CurrentScheme(getFormat(), getPow2(), getEps());
}

LogicalResult
Fp8CurrentAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       Fp8Format format, bool pow2, APFloat eps) {
  return checkScheme(emitError, "fp8_current",
                     fp8CurrentScheme(format, pow2, eps));
}

Attribute Fp8CurrentAttr::parse(AsmParser &p, Type) {
  SMLoc loc = p.getCurrentLocation();
  Fp8Format format;
  bool pow2 = false;
  APFloat eps(0.0f);
  if (p.parseLess() || parseFp8Format(p, format) ||
      parseOptions(p, true, [&](StringRef key, SMLoc keyLoc) -> ParseResult {
        if (key == "pow2")
          return pow2 = true, success();
        if (key == "eps")
          return parseEps(p, eps);
        return p.emitError(keyLoc) << "unknown fp8_current option '" << key
                                   << "'; expected 'pow2' or 'eps'";
      }))
    return {};
  return getChecked([&] { return p.emitError(loc); }, p.getContext(), format,
                    pow2, eps);
}

void Fp8CurrentAttr::print(AsmPrinter &p) const {
  p << '<' << stringifyFp8Format(getFormat());
  if (getPow2())
    p << ", pow2";
  printEps(p, getEps());
  p << '>';
}

//===----------------------------------------------------------------------===//
// fp8_delayed
//===----------------------------------------------------------------------===//

static rt::Scheme fp8DelayedScheme(Fp8Format format, int64_t history,
                                   AmaxAlgo algo, int64_t margin, bool pow2) {
  return rt::Scheme::fp8Delayed(
      toRuntimeFormat(format), history,
      algo == AmaxAlgo::max ? rt::AmaxAlgo::Max : rt::AmaxAlgo::MostRecent,
      margin, pow2);
}

rt::Scheme Fp8DelayedAttr::getRuntimeScheme(Direction) const {
  return fp8DelayedScheme(getFormat(), getHistory(), getAlgo(), getMargin(),
                          getPow2());
}

LogicalResult
Fp8DelayedAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       Fp8Format format, int64_t history, AmaxAlgo algo,
                       int64_t margin, bool pow2) {
  return checkScheme(emitError, "fp8_delayed",
                     fp8DelayedScheme(format, history, algo, margin, pow2));
}

Attribute Fp8DelayedAttr::parse(AsmParser &p, Type) {
  SMLoc loc = p.getCurrentLocation();
  Fp8Format format;
  int64_t history = 1024, margin = 0;
  AmaxAlgo algo = AmaxAlgo::max;
  bool pow2 = false;
  auto parseItem = [&](StringRef key, SMLoc keyLoc) -> ParseResult {
    if (key == "pow2")
      return pow2 = true, success();
    if (key == "history")
      return failure(p.parseEqual() || p.parseInteger(history));
    if (key == "margin")
      return failure(p.parseEqual() || p.parseInteger(margin));
    if (key == "algo") {
      SMLoc algoLoc = p.getCurrentLocation();
      StringRef kw;
      if (p.parseEqual() || p.parseKeyword(&kw))
        return failure();
      std::optional<AmaxAlgo> a = symbolizeAmaxAlgo(kw);
      if (!a)
        return p.emitError(algoLoc)
               << "expected amax algorithm 'max' or 'most_recent', got '" << kw
               << "'";
      algo = *a;
      return success();
    }
    return p.emitError(keyLoc)
           << "unknown fp8_delayed option '" << key
           << "'; expected 'history', 'algo', 'margin' or 'pow2'";
  };
  if (p.parseLess() || parseFp8Format(p, format) ||
      parseOptions(p, true, parseItem))
    return {};
  return getChecked([&] { return p.emitError(loc); }, p.getContext(), format,
                    history, algo, margin, pow2);
}

void Fp8DelayedAttr::print(AsmPrinter &p) const {
  p << '<' << stringifyFp8Format(getFormat()) << ", history = " << getHistory()
    << ", algo = " << stringifyAmaxAlgo(getAlgo())
    << ", margin = " << getMargin();
  if (getPow2())
    p << ", pow2";
  p << '>';
}

//===----------------------------------------------------------------------===//
// mxfp8
//===----------------------------------------------------------------------===//

rt::Scheme Mxfp8Attr::getRuntimeScheme(Direction) const {
  return rt::Scheme::mxfp8(toRuntimeFormat(getFormat()));
}

LogicalResult Mxfp8Attr::verify(function_ref<InFlightDiagnostic()> emitError,
                                Fp8Format format) {
  return checkScheme(emitError, "mxfp8",
                     rt::Scheme::mxfp8(toRuntimeFormat(format)));
}

Attribute Mxfp8Attr::parse(AsmParser &p, Type) {
  SMLoc loc = p.getCurrentLocation();
  Fp8Format format;
  if (p.parseLess() || parseFp8Format(p, format) ||
      parseOptions(p, true, [&](StringRef key, SMLoc keyLoc) -> ParseResult {
        return p.emitError(keyLoc)
               << "#te.mxfp8 takes no option '" << key
               << "' (its blocks are always 32 elements with E8M0 scales)";
      }))
    return {};
  return getChecked([&] { return p.emitError(loc); }, p.getContext(), format);
}

void Mxfp8Attr::print(AsmPrinter &p) const {
  p << '<' << stringifyFp8Format(getFormat()) << '>';
}

//===----------------------------------------------------------------------===//
// nvfp4
//===----------------------------------------------------------------------===//

rt::Scheme Nvfp4Attr::getRuntimeScheme(Direction) const {
  return rt::Scheme::nvfp4(getRht(), getSr(), getBlock2d());
}

LogicalResult Nvfp4Attr::verify(function_ref<InFlightDiagnostic()> emitError,
                                bool rht, bool sr, bool block2d) {
  return checkScheme(emitError, "nvfp4", rt::Scheme::nvfp4(rht, sr, block2d));
}

Attribute Nvfp4Attr::parse(AsmParser &p, Type) {
  SMLoc loc = p.getCurrentLocation();
  bool rht = false, sr = false, block2d = false;
  auto parseItem = [&](StringRef key, SMLoc keyLoc) -> ParseResult {
    if (key == "rht")
      return rht = true, success();
    if (key == "sr")
      return sr = true, success();
    if (key == "block2d")
      return block2d = true, success();
    if (key == "e4m3" || key == "e5m2")
      return p.emitError(keyLoc)
             << "#te.nvfp4 has no element format option: its elements are "
                "always e2m1 and its block scales e4m3, so '"
             << key << "' is not allowed";
    return p.emitError(keyLoc) << "unknown nvfp4 option '" << key
                               << "'; expected 'rht', 'sr' or 'block2d'";
  };
  if (p.parseLess() || parseOptions(p, false, parseItem))
    return {};
  return getChecked([&] { return p.emitError(loc); }, p.getContext(), rht, sr,
                    block2d);
}

void Nvfp4Attr::print(AsmPrinter &p) const {
  SmallVector<StringRef, 3> flags;
  if (getRht())
    flags.push_back("rht");
  if (getSr())
    flags.push_back("sr");
  if (getBlock2d())
    flags.push_back("block2d");
  p << '<';
  llvm::interleaveComma(flags, p);
  p << '>';
}

//===----------------------------------------------------------------------===//
// fp8_block
//===----------------------------------------------------------------------===//

static rt::Scheme fp8BlockScheme(Fp8Format format, int64_t rows, int64_t cols,
                                 bool pow2, const APFloat &eps) {
  return rt::Scheme::fp8Block(toRuntimeFormat(format), rows, cols, pow2,
                              eps.convertToDouble());
}

rt::Scheme Fp8BlockAttr::getRuntimeScheme(Direction) const {
  return fp8BlockScheme(getFormat(), getTileRows(), getTileCols(), getPow2(),
                        getEps());
}

LogicalResult Fp8BlockAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   Fp8Format format, int64_t tileRows,
                                   int64_t tileCols, bool pow2, APFloat eps) {
  return checkScheme(emitError, "fp8_block",
                     fp8BlockScheme(format, tileRows, tileCols, pow2, eps));
}

Attribute Fp8BlockAttr::parse(AsmParser &p, Type) {
  SMLoc loc = p.getCurrentLocation();
  Fp8Format format;
  bool pow2 = false;
  APFloat eps(0.0f);
  SmallVector<int64_t, 2> tile;
  if (p.parseLess() || parseFp8Format(p, format) || p.parseComma())
    return {};
  SMLoc tileLoc = p.getCurrentLocation();
  if (p.parseDimensionList(tile, /*allowDynamic=*/false,
                           /*withTrailingX=*/false))
    return {};
  if (tile.size() != 2) {
    p.emitError(tileLoc) << "expected a tile shape '1x128' or '128x128'";
    return {};
  }
  if (parseOptions(p, true, [&](StringRef key, SMLoc keyLoc) -> ParseResult {
        if (key == "pow2")
          return pow2 = true, success();
        if (key == "eps")
          return parseEps(p, eps);
        return p.emitError(keyLoc) << "unknown fp8_block option '" << key
                                   << "'; expected 'pow2' or 'eps'";
      }))
    return {};
  return getChecked([&] { return p.emitError(loc); }, p.getContext(), format,
                    tile[0], tile[1], pow2, eps);
}

void Fp8BlockAttr::print(AsmPrinter &p) const {
  p << '<' << stringifyFp8Format(getFormat()) << ", " << getTileRows() << 'x'
    << getTileCols();
  if (getPow2())
    p << ", pow2";
  printEps(p, getEps());
  p << '>';
}

//===----------------------------------------------------------------------===//
// identity
//===----------------------------------------------------------------------===//

rt::Scheme IdentityAttr::getRuntimeScheme(Direction) const {
  return rt::Scheme::identity(
      toRuntimeFloat(getType()).value_or(rt::DType::BF16));
}

LogicalResult IdentityAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   Type type) {
  if (!toRuntimeFloat(type))
    return emitError() << "invalid #te.identity: it keeps a high-precision "
                          "type (f32, f16 or bf16), got "
                       << type;
  return success();
}

Attribute IdentityAttr::parse(AsmParser &p, Type) {
  SMLoc loc = p.getCurrentLocation();
  Type type;
  if (p.parseLess() || p.parseType(type) || p.parseGreater())
    return {};
  return getChecked([&] { return p.emitError(loc); }, p.getContext(), type);
}

void IdentityAttr::print(AsmPrinter &p) const { p << '<' << getType() << '>'; }

//===----------------------------------------------------------------------===//
// target
//===----------------------------------------------------------------------===//

// The arch grammar and the facts it implies live in te/formats/Scheme.h.
int TargetAttr::getSmVersion() const { return rt::smVersion(getArch().str()); }

rt::Target TargetAttr::getRuntimeTarget() const {
  return rt::Target::forArch(getArch().str());
}

LogicalResult TargetAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 StringRef arch) {
  if (rt::smVersion(arch.str()) < 0)
    return emitError() << "unknown target architecture '" << arch
                       << "'; expected sm_XY or sm_XYa (e.g. sm_90a)";
  return success();
}

//===----------------------------------------------------------------------===//
// hybrid
//===----------------------------------------------------------------------===//

rt::Scheme HybridAttr::getRuntimeScheme(Direction dir) const {
  return getDirectionScheme(dir).getRuntimeScheme(dir);
}

SchemeAttrInterface HybridAttr::getDirectionScheme(Direction dir) const {
  return dir == Direction::rowwise ? getRowwise() : getColumnwise();
}

LogicalResult HybridAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 SchemeAttrInterface rowwise,
                                 SchemeAttrInterface columnwise,
                                 bool columnwiseFromRowwise) {
  if (!rowwise || !columnwise)
    return emitError() << "#te.hybrid needs a rowwise and a columnwise scheme";
  for (auto [name, s] :
       {std::pair<StringRef, SchemeAttrInterface>{"rowwise", rowwise},
        {"columnwise", columnwise}})
    if (llvm::isa<HybridAttr>(s))
      return emitError() << "#te.hybrid cannot nest: its " << name
                         << " scheme is itself a #te.hybrid";
  if (columnwiseFromRowwise)
    for (auto [name, s] :
         {std::pair<StringRef, SchemeAttrInterface>{"rowwise", rowwise},
          {"columnwise", columnwise}}) {
      if (llvm::isa<IdentityAttr>(s))
        return emitError()
               << "columnwise_source = rowwise_dequantized quantizes the "
                  "dequantized rowwise values again: the "
               << name << " scheme must quantize, not be #te.identity";
      // The rowwise step would cast with, and record into, a delayed-scaling
      // state a second time.
      if (llvm::isa<Fp8DelayedAttr>(s))
        return emitError()
               << "columnwise_source = rowwise_dequantized is not supported "
                  "with a #te.fp8_delayed "
               << name << " scheme (its amax history is kept between calls)";
    }
  return success();
}

std::optional<rt::Scheme> HybridAttr::getColumnwiseSource() const {
  if (!getColumnwiseFromRowwise())
    return std::nullopt;
  return getRowwise().getRuntimeScheme(Direction::rowwise);
}

static ParseResult parseSubScheme(AsmParser &p, StringRef dir,
                                  SchemeAttrInterface &result) {
  if (p.parseKeyword(dir) || p.parseEqual())
    return failure();
  SMLoc loc = p.getCurrentLocation();
  Attribute attr;
  if (p.parseAttribute(attr))
    return failure();
  result = llvm::dyn_cast<SchemeAttrInterface>(attr);
  if (!result)
    return p.emitError(loc)
           << "expected a quantization scheme for the " << dir
           << " direction (e.g. #te.mxfp8<e4m3>), got " << attr;
  return success();
}

Attribute HybridAttr::parse(AsmParser &p, Type) {
  SMLoc loc = p.getCurrentLocation();
  SchemeAttrInterface rowwise, columnwise;
  if (p.parseLess() || parseSubScheme(p, "rowwise", rowwise) ||
      p.parseComma() || parseSubScheme(p, "columnwise", columnwise))
    return {};
  bool fromRowwise = false;
  if (succeeded(p.parseOptionalComma())) {
    SMLoc at = p.getCurrentLocation();
    StringRef source;
    if (p.parseKeyword("columnwise_source") || p.parseEqual() ||
        p.parseKeyword(&source))
      return {};
    if (source != "rowwise_dequantized" && source != "original") {
      p.emitError(at) << "columnwise_source is 'original' or "
                         "'rowwise_dequantized', not '"
                      << source << "'";
      return {};
    }
    fromRowwise = source == "rowwise_dequantized";
  }
  if (p.parseGreater())
    return {};
  return getChecked([&] { return p.emitError(loc); }, p.getContext(), rowwise,
                    columnwise, fromRowwise);
}

void HybridAttr::print(AsmPrinter &p) const {
  p << "<rowwise = ";
  p.printAttribute(getRowwise());
  p << ", columnwise = ";
  p.printAttribute(getColumnwise());
  if (getColumnwiseFromRowwise())
    p << ", columnwise_source = rowwise_dequantized";
  p << '>';
}
