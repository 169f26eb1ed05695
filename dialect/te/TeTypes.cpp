//===- TeTypes.cpp - types of the te dialect ------------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#include "dialect/te/TeTypes.h"
#include "dialect/te/TeDialect.h"
#include "dialect/te/TeTraits.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::te;
namespace rt = ::te::rt;

#define GET_TYPEDEF_CLASSES
#include "dialect/te/TeTypes.cpp.inc"

void TeDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialect/te/TeTypes.cpp.inc"
      >();
}

/// rt::validateSize of a tensor or `!te.qtensor` (with the scheme of each
/// direction it stores); "" when addressable.
static std::string addressable(ArrayRef<int64_t> shape, Type elementType,
                               SchemeAttrInterface scheme = {},
                               Directions directions = Directions::none) {
  std::optional<rt::Scheme> schemes[2];
  for (Direction dir : {Direction::rowwise, Direction::columnwise}) {
    Directions bit = dir == Direction::rowwise ? Directions::rowwise
                                               : Directions::columnwise;
    if (scheme && bitEnumContainsAll(directions, bit))
      schemes[dir == Direction::rowwise ? 0 : 1] = scheme.getRuntimeScheme(dir);
  }
  // Sub-byte or unusual element types count as one byte: the bound is on
  // what the runtime could allocate for them at the least.
  int64_t elementBytes = 1;
  if (elementType.isIntOrFloat())
    elementBytes = std::max<int64_t>(
        1, llvm::divideCeil(elementType.getIntOrFloatBitWidth(), 8));
  return rt::validateSize(shape.data(), shape.size(), elementBytes,
                          schemes[0] ? &*schemes[0] : nullptr,
                          schemes[1] ? &*schemes[1] : nullptr);
}

LogicalResult
mlir::te::verifyAddressable(function_ref<InFlightDiagnostic()> emitError,
                            Type type, StringRef what) {
  std::string msg;
  if (auto q = dyn_cast<QTensorType>(type))
    msg = addressable(q.getShape(), q.getElementType(), q.getScheme(),
                      q.getDirections());
  else if (auto t = dyn_cast<RankedTensorType>(type))
    msg = addressable(t.getShape(), t.getElementType());
  if (msg.empty())
    return success();
  return emitError() << what << " " << type
                     << " is too large for the runtime: " << msg;
}

LogicalResult mlir::te::verifyAddressableValues(Operation *op) {
  auto check = [&](StringRef kind, unsigned i, Type t) {
    return verifyAddressable([&] { return op->emitOpError(); }, t,
                             (kind + " #" + Twine(i)).str());
  };
  for (auto [i, t] : llvm::enumerate(op->getOperandTypes()))
    if (failed(check("operand", i, t)))
      return failure();
  for (auto [i, t] : llvm::enumerate(op->getResultTypes()))
    if (failed(check("result", i, t)))
      return failure();
  return success();
}

bool QTensorType::hasDirection(Direction dir) const {
  Directions bit =
      dir == Direction::rowwise ? Directions::rowwise : Directions::columnwise;
  return bitEnumContainsAll(getDirections(), bit);
}

RankedTensorType QTensorType::getTensorType() const {
  return RankedTensorType::get(getShape(), getElementType());
}

int64_t QTensorType::getRows() const { return flattenedRows(getShape()); }

rt::DirectionStorage QTensorType::getStorage(Direction dir,
                                             const rt::Target &target) const {
  return getScheme().getStorage(dir, getShape(), target);
}

LogicalResult QTensorType::verify(function_ref<InFlightDiagnostic()> emitError,
                                  ArrayRef<int64_t> shape, Type elementType,
                                  SchemeAttrInterface scheme,
                                  Directions directions) {
  if (shape.size() < 2)
    return emitError() << "!te.qtensor needs at least 2 dimensions (it is "
                          "viewed as M x K), got rank "
                       << shape.size();
  for (auto [i, d] : llvm::enumerate(shape))
    if (d <= 0)
      return emitError() << "!te.qtensor dimension " << i
                         << " must be static and positive, got " << d;
  if (!elementType ||
      !(elementType.isBF16() || elementType.isF16() || elementType.isF32()))
    return emitError() << "!te.qtensor source element type must be bf16, f16 "
                          "or f32, got "
                       << elementType;
  if (directions == Directions::none)
    return emitError() << "!te.qtensor must hold at least one direction";
  if (!scheme)
    return emitError() << "!te.qtensor needs a quantization scheme";
  // Sizes first: the block rules below take the product of the leading
  // dimensions.
  std::string tooLarge = addressable(shape, elementType, scheme, directions);
  if (!tooLarge.empty())
    return emitError() << "!te.qtensor<" << shape.size()
                       << "-D> is too large for the runtime: " << tooLarge;
  int64_t rows = flattenedRows(shape);
  for (Direction dir : {Direction::rowwise, Direction::columnwise}) {
    Directions bit = dir == Direction::rowwise ? Directions::rowwise
                                               : Directions::columnwise;
    if (!bitEnumContainsAll(directions, bit))
      continue;
    std::string msg = rt::validateShape(scheme.getRuntimeScheme(dir),
                                        toRuntime(dir), rows, shape.back());
    if (!msg.empty())
      return emitError() << "!te.qtensor<" << shape.size() << "-D> " << msg;
  }
  // Double quantization quantizes rowwise first, held or not.
  auto hybrid = dyn_cast<HybridAttr>(scheme);
  if (hybrid && bitEnumContainsAll(directions, Directions::columnwise))
    if (std::optional<rt::Scheme> source = hybrid.getColumnwiseSource()) {
      std::string msg = rt::validateShape(*source, rt::Direction::Rowwise, rows,
                                          shape.back());
      if (!msg.empty())
        return emitError() << "!te.qtensor<" << shape.size()
                           << "-D> columnwise_source = rowwise_dequantized "
                              "quantizes rowwise first, but "
                           << msg;
    }
  return success();
}

Type QTensorType::parse(AsmParser &p) {
  SMLoc loc = p.getCurrentLocation();
  SmallVector<int64_t, 4> shape;
  Type elementType;
  if (p.parseLess() ||
      p.parseDimensionList(shape, /*allowDynamic=*/false,
                           /*withTrailingX=*/true) ||
      p.parseType(elementType) || p.parseComma())
    return {};
  SMLoc schemeLoc = p.getCurrentLocation();
  Attribute attr;
  if (p.parseAttribute(attr))
    return {};
  auto scheme = llvm::dyn_cast<SchemeAttrInterface>(attr);
  if (!scheme) {
    p.emitError(schemeLoc) << "expected a quantization scheme (e.g. "
                              "#te.mxfp8<e4m3>), got "
                           << attr;
    return {};
  }
  if (p.parseComma())
    return {};
  Directions directions = Directions::none;
  do {
    SMLoc dirLoc = p.getCurrentLocation();
    StringRef kw;
    if (p.parseKeyword(&kw))
      return {};
    std::optional<Directions> d = symbolizeDirections(kw);
    if (!d || *d == Directions::none) {
      p.emitError(dirLoc) << "expected direction 'rowwise' or 'columnwise', "
                             "got '"
                          << kw << "'";
      return {};
    }
    directions = directions | *d;
  } while (succeeded(p.parseOptionalVerticalBar()));
  if (p.parseGreater())
    return {};
  return getChecked([&] { return p.emitError(loc); }, p.getContext(), shape,
                    elementType, scheme, directions);
}

void QTensorType::print(AsmPrinter &p) const {
  p << '<';
  for (int64_t d : getShape())
    p << d << 'x';
  p << getElementType() << ", ";
  p.printAttribute(getScheme());
  p << ", " << stringifyDirections(getDirections()) << '>';
}

std::optional<::te::rt::DType> mlir::te::getRuntimeDType(Type t) {
  using ::te::rt::DType;
  if (t.isBF16())
    return DType::BF16;
  if (t.isF16())
    return DType::F16;
  if (t.isF32())
    return DType::F32;
  if (t.isInteger(64))
    return DType::I64;
  return std::nullopt;
}
