//===- TeTraits.h - op traits shared by the te and tek dialects -*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_TETRAITS_H
#define TE_DIALECT_TE_TETRAITS_H

#include "mlir/IR/OpDefinition.h"

namespace mlir::te {

/// Checks that the runtime can address a value of `type`: a ranked tensor
/// or `!te.qtensor` whose element count or byte size (for a `!te.qtensor`
/// also every storage buffer of its scheme) overflows or exceeds
/// ::te::rt::kMaxBufferBytes is reported through `emitError`, prefixed by
/// `what` and the type. Other types pass.
LogicalResult verifyAddressable(function_ref<InFlightDiagnostic()> emitError,
                                Type type, StringRef what);

/// verifyAddressable on every operand and result type of `op`.
LogicalResult verifyAddressableValues(Operation *op);

/// Every te and tek op carries this trait (Te_Op, Tek_Op): sizes are checked
/// before an op's own verifier computes grids or storage from them.
template <typename ConcreteType>
class AddressableValues
    : public OpTrait::TraitBase<ConcreteType, AddressableValues> {
public:
  static LogicalResult verifyTrait(Operation *op) {
    return verifyAddressableValues(op);
  }
};

} // namespace mlir::te

#endif // TE_DIALECT_TE_TETRAITS_H
