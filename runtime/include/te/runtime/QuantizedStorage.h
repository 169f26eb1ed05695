//===- te/runtime/QuantizedStorage.h - a quantized tensor's buffers -*- C++
//-*-===//
//
// Part of tejit. Plain C++17.
//
//===----------------------------------------------------------------------===//
//
// The device buffers of one quantized M x K tensor: per direction its data,
// scale-inverse and amax, shaped by storageFor (docs/Numerics.md §2). A
// direction that shares the rowwise data or scale (per-tensor FP8 on non-TN
// targets, identity, the per-tensor scale) gets no buffer of its own - but only
// when both directions use the same scheme: a hybrid's directions never share.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_QUANTIZEDSTORAGE_H
#define TE_RUNTIME_QUANTIZEDSTORAGE_H

#include "te/formats/Scheme.h"
#include "te/runtime/Device.h"

#include <array>

namespace te::rt {

/// Which buffers a direction owns and which it borrows from the rowwise one.
struct DirectionPlan {
  bool present = false;
  DirectionStorage layout;
  bool ownsData = false, ownsScaleInv = false, ownsAmax = false;
};

/// The buffer plan of a tensor quantized by `rowwise` / `columnwise`
/// (equal schemes = not hybrid) in the directions of `mask` (bit 1 rowwise,
/// bit 2 columnwise). Index 0 is rowwise, 1 columnwise. Shapes must have
/// passed validateShape.
std::array<DirectionPlan, 2>
planQuantizedStorage(const Scheme &rowwise, const Scheme &columnwise,
                     unsigned mask, int64_t m, int64_t k, const Target &target);

/// Device buffers laid out by planQuantizedStorage.
class QuantizedStorage {
public:
  static Expected<QuantizedStorage> allocate(const Scheme &rowwise,
                                             const Scheme &columnwise,
                                             unsigned mask, int64_t m,
                                             int64_t k, const Target &target);

  const DirectionPlan &plan(Direction d) const { return plans_[index(d)]; }
  /// Device addresses (0 where the direction has no such buffer); borrowed
  /// buffers resolve to the rowwise ones.
  uint64_t data(Direction d) const;
  uint64_t scaleInv(Direction d) const;
  uint64_t amax(Direction d) const;
  /// Total bytes allocated (what a quantize kernel writes at most).
  uint64_t bytes() const;

private:
  static int index(Direction d) { return d == Direction::Rowwise ? 0 : 1; }
  std::array<DirectionPlan, 2> plans_;
  std::array<DeviceBuffer, 2> data_, scaleInv_, amax_;
};

} // namespace te::rt

#endif // TE_RUNTIME_QUANTIZEDSTORAGE_H
