//===- PlanSerialize.cpp - Plan validation and (de)serialisation ----------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Encoding: "TEJITPLAN" u32(version) then each table as u32 count + records
// of little-endian fixed-width fields and u32-length-prefixed strings. The
// reader checks every length against what is left and every enumerator
// against its range, then validates indices: a damaged file is an error,
// never a crash.
//
//===----------------------------------------------------------------------===//

#include "te/runtime/Plan.h"

#include <cstring>

namespace te::rt {

static constexpr char kPlanMagic[9] = {'T', 'E', 'J', 'I', 'T',
                                       'P', 'L', 'A', 'N'};
/// 7: a kernel's launch flags (persistent, overlapsPredecessor) as bits.
static constexpr uint32_t kPlanVersion = 7;
enum : uint8_t { kPersistentBit = 1, kOverlapsPredecessorBit = 2 };

namespace {

class Writer {
public:
  template <typename T> void put(T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out.append(b, sizeof(T));
  }
  void str(const std::string &s) {
    put<uint32_t>(s.size());
    out += s;
  }
  void ref(const BufferRef &r) {
    put<int32_t>(r.buffer);
    put<uint64_t>(r.offset);
  }
  std::string out;
};

class Reader {
public:
  explicit Reader(const std::string &s) : s_(s) {}
  template <typename T> bool get(T &v) {
    if (s_.size() - pos_ < sizeof(T))
      return fail();
    std::memcpy(&v, s_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool str(std::string &v) {
    uint32_t n;
    if (!get(n) || s_.size() - pos_ < n)
      return fail();
    v.assign(s_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  template <typename E> bool enumOf(E &e, uint8_t last) {
    uint8_t v;
    if (!get(v) || v > last)
      return fail();
    e = static_cast<E>(v);
    return true;
  }
  bool ref(BufferRef &r) { return get(r.buffer) && get(r.offset); }
  /// A count that cannot exceed the bytes left (each record >= 1 byte).
  bool count(uint32_t &n) { return get(n) && n <= s_.size() - pos_; }
  bool atEnd() const { return pos_ == s_.size(); }
  bool ok() const { return ok_; }

private:
  bool fail() {
    ok_ = false;
    return false;
  }
  const std::string &s_;
  size_t pos_ = 0;
  bool ok_ = true;
};

} // namespace

std::string Plan::validate() const {
  auto checkRef = [&](const BufferRef &r, const std::string &where,
                      uint64_t bytesNeeded) -> std::string {
    if (r.buffer == -1)
      return "";
    if (r.buffer < 0 || size_t(r.buffer) >= buffers.size())
      return where + " names buffer " + std::to_string(r.buffer) +
             ", but the plan has " + std::to_string(buffers.size());
    if (r.offset + bytesNeeded > buffers[r.buffer].bytes)
      return where + " reaches past the end of buffer '" +
             buffers[r.buffer].name + "'";
    return "";
  };
  for (size_t k = 0; k < kernels.size(); ++k) {
    const KernelSpec &ks = kernels[k];
    if (ks.entry.empty() || ks.source.empty())
      return "kernel " + std::to_string(k) + " has no entry or source";
    if (ks.cluster.x < 1 || ks.cluster.y < 1 || ks.cluster.z < 1 ||
        (ks.persistent && (ks.grid.y != 1 || ks.grid.z != 1 ||
                           ks.cluster.y != 1 || ks.cluster.z != 1)))
      return "kernel '" + ks.name +
             "' has an invalid cluster or persistent "
             "grid (persistent grids and their clusters are 1-D)";
    for (size_t a = 0; a < ks.args.size(); ++a) {
      const ArgDesc &arg = ks.args[a];
      std::string where =
          "kernel '" + ks.name + "' argument " + std::to_string(a);
      if (arg.kind == ArgDesc::Kind::Table && arg.items.size() > kMaxTableWords)
        return where + " is a table of " + std::to_string(arg.items.size()) +
               " words; at most " + std::to_string(kMaxTableWords) +
               " fit the kernel parameter space";
      if (arg.kind != ArgDesc::Kind::Table && !arg.items.empty())
        return where + " has items but is not a table";
      for (const ArgDesc &item : arg.items)
        if (item.kind == ArgDesc::Kind::Table ||
            item.kind == ArgDesc::Kind::TensorMap)
          return where + " puts a table or tensor map into a table";
      if (arg.kind == ArgDesc::Kind::TensorMap) {
        const TensorMapShape &m = arg.map;
        if (arg.pointer.buffer < 0)
          return where + " is a tensor map over no buffer";
        if (m.rows < 1 || m.cols < 1 || m.boxRows < 1 || m.boxRows > 256 ||
            m.boxCols < 1 || m.boxCols > 256 ||
            m.rowStrideBytes < m.cols * dtypeSize(m.dtype))
          return where + " is a tensor map with an invalid shape";
        std::string e = checkRef(arg.pointer, where, m.bytesSpanned());
        if (!e.empty())
          return e;
      }
      std::vector<const ArgDesc *> scalars = {&arg};
      for (const ArgDesc &item : arg.items)
        scalars.push_back(&item);
      for (const ArgDesc *s : scalars)
        if (s->kind == ArgDesc::Kind::Pointer) {
          std::string e = checkRef(s->pointer, where, 0);
          if (!e.empty())
            return e;
        }
    }
  }
  for (size_t g = 0; g < gemms.size(); ++g) {
    const GemmCall &c = gemms[g];
    std::string where = "gemm " + std::to_string(g);
    std::string e = BlasLt::validate(c.shape());
    if (!e.empty())
      return where + ": " + e;
    for (const BufferRef *r :
         {&c.a, &c.aScale, &c.b, &c.bScale, &c.out, &c.bias})
      if (!(e = checkRef(*r, where, 0)).empty())
        return e;
    if (c.a.buffer < 0 || c.b.buffer < 0 || c.out.buffer < 0)
      return where + " lacks an operand or output buffer";
  }
  for (size_t c = 0; c < collectives.size(); ++c) {
    const CollectiveCall &call = collectives[c];
    std::string where = "collective " + std::to_string(c);
    bool gather = call.kind == CollectiveCall::Kind::AllGather;
    bool floats = call.kind == CollectiveCall::Kind::AllReduceMax;
    if (call.ranks < 1 || call.bytes == 0 || call.send.buffer < 0 ||
        (gather && call.recv.buffer < 0) || (floats && call.bytes % 4 != 0))
      return where + " has no ranks, bytes or buffers";
    std::string e = checkRef(call.send, where, call.bytes);
    if (e.empty() && gather)
      e = checkRef(call.recv, where, call.bytes * uint64_t(call.ranks));
    if (!e.empty())
      return e;
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step &st = steps[i];
    size_t limit = st.kind == Step::Kind::Launch       ? kernels.size()
                   : st.kind == Step::Kind::Gemm       ? gemms.size()
                   : st.kind == Step::Kind::Collective ? collectives.size()
                                                       : buffers.size();
    if (st.index >= limit)
      return "step " + std::to_string(i) + " names a missing " +
             (st.kind == Step::Kind::Launch       ? "kernel"
              : st.kind == Step::Kind::Gemm       ? "gemm"
              : st.kind == Step::Kind::Collective ? "collective"
                                                  : "buffer");
  }
  return "";
}

static void putOperand(Writer &w, const BlasLtOperand &o) {
  w.put<uint8_t>(uint8_t(o.dtype));
  w.put<uint8_t>(uint8_t(o.scaling));
  w.put<uint8_t>(o.transposed);
}

std::string Plan::serialize() const {
  Writer w;
  w.out.append(kPlanMagic, sizeof(kPlanMagic));
  w.put<uint32_t>(kPlanVersion);
  w.put<uint32_t>(buffers.size());
  for (const BufferDecl &b : buffers) {
    w.str(b.name);
    w.put<uint64_t>(b.bytes);
    w.put<uint8_t>(b.external);
  }
  w.put<uint32_t>(kernels.size());
  for (const KernelSpec &k : kernels) {
    w.str(k.name);
    w.str(k.entry);
    w.str(k.source);
    w.str(k.options.arch);
    w.put<uint32_t>(k.options.flags.size());
    for (const std::string &f : k.options.flags)
      w.str(f);
    for (unsigned v :
         {k.grid.x, k.grid.y, k.grid.z, k.block.x, k.block.y, k.block.z,
          unsigned(k.sharedBytes), k.cluster.x, k.cluster.y, k.cluster.z})
      w.put<uint32_t>(v);
    w.put<uint8_t>((k.persistent ? kPersistentBit : 0) |
                   (k.overlapsPredecessor ? kOverlapsPredecessorBit : 0));
    w.put<uint32_t>(k.args.size());
    auto putArg = [&w](const ArgDesc &a) {
      w.put<uint8_t>(uint8_t(a.kind));
      w.ref(a.pointer);
      w.put<int64_t>(a.i);
      w.put<float>(a.f);
      w.put<uint32_t>(a.items.size());
      if (a.kind != ArgDesc::Kind::TensorMap)
        return;
      w.put<uint8_t>(uint8_t(a.map.dtype));
      w.put<int64_t>(a.map.rows);
      w.put<int64_t>(a.map.cols);
      w.put<int64_t>(a.map.rowStrideBytes);
      w.put<int32_t>(a.map.boxRows);
      w.put<int32_t>(a.map.boxCols);
      w.put<uint8_t>(uint8_t(a.map.swizzle));
    };
    for (const ArgDesc &a : k.args) {
      putArg(a);
      for (const ArgDesc &item : a.items)
        putArg(item);
    }
  }
  w.put<uint32_t>(gemms.size());
  for (const GemmCall &g : gemms) {
    const GemmProblem &p = g.problem;
    w.put<int64_t>(p.m);
    w.put<int64_t>(p.n);
    w.put<int64_t>(p.k);
    putOperand(w, p.a);
    putOperand(w, p.b);
    w.put<uint8_t>(uint8_t(p.outType));
    w.put<uint8_t>(uint8_t(p.biasType));
    w.put<uint8_t>(p.accumulate);
    w.put<uint8_t>(p.fastAccum);
    for (const BufferRef *r :
         {&g.a, &g.aScale, &g.b, &g.bScale, &g.out, &g.bias})
      w.ref(*r);
  }
  w.put<uint32_t>(collectives.size());
  for (const CollectiveCall &c : collectives) {
    w.put<uint8_t>(uint8_t(c.kind));
    w.put<int32_t>(c.ranks);
    w.ref(c.send);
    w.ref(c.recv);
    w.put<uint64_t>(c.bytes);
  }
  w.put<uint32_t>(steps.size());
  for (const Step &s : steps) {
    w.put<uint8_t>(uint8_t(s.kind));
    w.put<uint32_t>(s.index);
    w.put<uint8_t>(s.fillByte);
  }
  return w.out;
}

Expected<Plan> Plan::deserialize(const std::string &bytes) {
  auto bad = [](const std::string &why) {
    return Status(StatusCode::InvalidArgument,
                  "not a valid tejit plan: " + why);
  };
  if (bytes.size() < sizeof(kPlanMagic) ||
      std::memcmp(bytes.data(), kPlanMagic, sizeof(kPlanMagic)) != 0)
    return bad("bad magic");
  std::string body = bytes.substr(sizeof(kPlanMagic));
  Reader r(body);
  uint32_t version = 0;
  if (!r.get(version) || version != kPlanVersion)
    return bad("unsupported version " + std::to_string(version));
  const uint8_t lastDType = uint8_t(DType::E2M1x2);
  const uint8_t lastScaling = uint8_t(GemmScaling::Block128x128);
  Plan p;
  uint32_t n = 0;
  if (!r.count(n))
    return bad("truncated");
  p.buffers.resize(n);
  for (BufferDecl &b : p.buffers) {
    uint8_t ext = 0;
    if (!r.str(b.name) || !r.get(b.bytes) || !r.get(ext))
      return bad("truncated buffer table");
    b.external = ext != 0;
  }
  if (!r.count(n))
    return bad("truncated");
  p.kernels.resize(n);
  for (KernelSpec &k : p.kernels) {
    uint32_t nf = 0, na = 0;
    if (!r.str(k.name) || !r.str(k.entry) || !r.str(k.source) ||
        !r.str(k.options.arch) || !r.count(nf))
      return bad("truncated kernel table");
    k.options.flags.resize(nf);
    for (std::string &f : k.options.flags)
      if (!r.str(f))
        return bad("truncated kernel flags");
    uint32_t smem = 0;
    uint8_t flags = 0;
    if (!r.get(k.grid.x) || !r.get(k.grid.y) || !r.get(k.grid.z) ||
        !r.get(k.block.x) || !r.get(k.block.y) || !r.get(k.block.z) ||
        !r.get(smem) || !r.get(k.cluster.x) || !r.get(k.cluster.y) ||
        !r.get(k.cluster.z) || !r.get(flags) || !r.count(na))
      return bad("truncated launch shape");
    if (flags & ~(kPersistentBit | kOverlapsPredecessorBit))
      return bad("unknown launch flags");
    k.sharedBytes = smem;
    k.persistent = flags & kPersistentBit;
    k.overlapsPredecessor = flags & kOverlapsPredecessorBit;
    k.args.resize(na);
    auto getArg = [&](ArgDesc &a, uint32_t &items) {
      if (!r.enumOf(a.kind, uint8_t(ArgDesc::Kind::Rank)) ||
          !r.ref(a.pointer) || !r.get(a.i) || !r.get(a.f) || !r.count(items))
        return false;
      if (a.kind != ArgDesc::Kind::TensorMap)
        return true;
      TensorMapShape &m = a.map;
      return r.enumOf(m.dtype, lastDType) && r.get(m.rows) && r.get(m.cols) &&
             r.get(m.rowStrideBytes) && r.get(m.boxRows) && r.get(m.boxCols) &&
             r.enumOf(m.swizzle, uint8_t(TensorMapSwizzle::B128));
    };
    for (ArgDesc &a : k.args) {
      uint32_t items = 0, none = 0;
      if (!getArg(a, items))
        return bad("bad kernel argument");
      a.items.resize(items);
      for (ArgDesc &item : a.items)
        if (!getArg(item, none) || none != 0)
          return bad("bad kernel table item");
    }
  }
  if (!r.count(n))
    return bad("truncated");
  p.gemms.resize(n);
  for (GemmCall &g : p.gemms) {
    GemmProblem &q = g.problem;
    uint8_t acc = 0, fast = 0, ta = 0, tb = 0;
    if (!r.get(q.m) || !r.get(q.n) || !r.get(q.k) ||
        !r.enumOf(q.a.dtype, lastDType) ||
        !r.enumOf(q.a.scaling, lastScaling) || !r.get(ta) ||
        !r.enumOf(q.b.dtype, lastDType) ||
        !r.enumOf(q.b.scaling, lastScaling) || !r.get(tb) ||
        !r.enumOf(q.outType, lastDType) || !r.enumOf(q.biasType, lastDType) ||
        !r.get(acc) || !r.get(fast))
      return bad("bad gemm");
    q.accumulate = acc != 0;
    q.fastAccum = fast != 0;
    q.a.transposed = ta != 0;
    q.b.transposed = tb != 0;
    for (BufferRef *ref : {&g.a, &g.aScale, &g.b, &g.bScale, &g.out, &g.bias})
      if (!r.ref(*ref))
        return bad("truncated gemm buffers");
  }
  if (!r.count(n))
    return bad("truncated");
  p.collectives.resize(n);
  for (CollectiveCall &c : p.collectives)
    if (!r.enumOf(c.kind, uint8_t(CollectiveCall::Kind::AllReduceBytesMax)) ||
        !r.get(c.ranks) || !r.ref(c.send) || !r.ref(c.recv) || !r.get(c.bytes))
      return bad("bad collective");
  if (!r.count(n))
    return bad("truncated");
  p.steps.resize(n);
  for (Step &s : p.steps)
    if (!r.enumOf(s.kind, uint8_t(Step::Kind::Collective)) || !r.get(s.index) ||
        !r.get(s.fillByte))
      return bad("bad step");
  if (!r.atEnd())
    return bad("trailing bytes");
  std::string invalid = p.validate();
  if (!invalid.empty())
    return bad(invalid);
  return p;
}

} // namespace te::rt
