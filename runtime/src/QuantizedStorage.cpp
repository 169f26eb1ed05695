//===- QuantizedStorage.cpp - a quantized tensor's buffers ----------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#include "te/runtime/QuantizedStorage.h"

namespace te::rt {

std::array<DirectionPlan, 2> planQuantizedStorage(const Scheme &rowwise,
                                                  const Scheme &columnwise,
                                                  unsigned mask, int64_t m,
                                                  int64_t k,
                                                  const Target &target) {
  std::array<DirectionPlan, 2> plans;
  bool hasRow = mask & unsigned(Direction::Rowwise);
  bool sameScheme = rowwise == columnwise;
  for (int i = 0; i < 2; ++i) {
    Direction d = i == 0 ? Direction::Rowwise : Direction::Columnwise;
    if (!(mask & unsigned(d)))
      continue;
    const Scheme &s = i == 0 ? rowwise : columnwise;
    DirectionPlan &p = plans[i];
    p.present = true;
    p.layout = storageFor(s, d, m, k, target);
    // Borrow only from a rowwise direction that exists and was quantized by
    // the very same scheme.
    bool canBorrow = i == 1 && hasRow && sameScheme;
    if (!canBorrow) {
      p.layout.sharesRowwiseData = false;
      p.layout.sharesRowwiseScale = false;
    }
    p.ownsData = p.layout.data.present() && !p.layout.sharesRowwiseData;
    p.ownsScaleInv =
        p.layout.scaleInv.present() && !p.layout.sharesRowwiseScale;
    // Per-tensor FP8 keeps one amax per tensor, next to its shared scale.
    p.ownsAmax = p.layout.amax.present() && !p.layout.sharesRowwiseScale;
  }
  return plans;
}

Expected<QuantizedStorage> QuantizedStorage::allocate(const Scheme &rowwise,
                                                      const Scheme &columnwise,
                                                      unsigned mask, int64_t m,
                                                      int64_t k,
                                                      const Target &target) {
  for (int i = 0; i < 2; ++i) {
    Direction d = i == 0 ? Direction::Rowwise : Direction::Columnwise;
    if (!(mask & unsigned(d)))
      continue;
    const Scheme &s = i == 0 ? rowwise : columnwise;
    std::string e = s.validate();
    if (e.empty())
      e = validateShape(s, d, m, k);
    if (!e.empty())
      return Status(StatusCode::InvalidArgument, e);
  }
  if ((mask & 3u) == 0)
    return Status(StatusCode::InvalidArgument,
                  "a quantized tensor needs at least one direction");
  QuantizedStorage q;
  q.plans_ = planQuantizedStorage(rowwise, columnwise, mask, m, k, target);
  for (int i = 0; i < 2; ++i) {
    const DirectionPlan &p = q.plans_[i];
    auto alloc = [](bool owns, const BufferDesc &b,
                    DeviceBuffer &out) -> Status {
      if (!owns)
        return Status::ok();
      Expected<DeviceBuffer> buf = DeviceBuffer::allocate(b.bytes());
      if (!buf)
        return buf.status();
      out = std::move(*buf);
      return Status::ok();
    };
    TE_RETURN_IF_ERROR(alloc(p.ownsData, p.layout.data, q.data_[i]));
    TE_RETURN_IF_ERROR(
        alloc(p.ownsScaleInv, p.layout.scaleInv, q.scaleInv_[i]));
    TE_RETURN_IF_ERROR(alloc(p.ownsAmax, p.layout.amax, q.amax_[i]));
  }
  return q;
}

uint64_t QuantizedStorage::data(Direction d) const {
  int i = index(d);
  if (!plans_[i].present)
    return 0;
  return plans_[i].ownsData                   ? data_[i].devicePtr()
         : plans_[i].layout.sharesRowwiseData ? data_[0].devicePtr()
                                              : 0;
}

uint64_t QuantizedStorage::scaleInv(Direction d) const {
  int i = index(d);
  if (!plans_[i].present)
    return 0;
  return plans_[i].ownsScaleInv                ? scaleInv_[i].devicePtr()
         : plans_[i].layout.sharesRowwiseScale ? scaleInv_[0].devicePtr()
                                               : 0;
}

uint64_t QuantizedStorage::amax(Direction d) const {
  int i = index(d);
  if (!plans_[i].present)
    return 0;
  return plans_[i].ownsAmax                    ? amax_[i].devicePtr()
         : plans_[i].layout.sharesRowwiseScale ? amax_[0].devicePtr()
                                               : 0;
}

uint64_t QuantizedStorage::bytes() const {
  uint64_t n = 0;
  for (int i = 0; i < 2; ++i)
    n += data_[i].size() + scaleInv_[i].size() + amax_[i].size();
  return n;
}

} // namespace te::rt
