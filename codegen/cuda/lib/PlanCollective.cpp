//===- PlanCollective.cpp - all-gathers of row shards ---------------------===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilderInternal.h"

#include "te/formats/Sharding.h"

#include <algorithm>
#include <sstream>

namespace te::cg::detail {

namespace {

constexpr unsigned kGatherThreads = 256;
constexpr int64_t kGatherMaxCtas = 132 * 8;

/// The widest word (16 bytes down to 1) every extent of `v` is a multiple
/// of, so that each word comes from one rank and stays aligned.
int wordBytes(const rt::GatherView &v) {
  for (int unit : {16, 8, 4, 2})
    if (v.shardRowBytes % unit == 0 && v.validBytes % unit == 0 &&
        v.wholeRowBytes % unit == 0)
      return unit;
  return 1;
}

std::string gatherEntry(const std::string &kernel, int unit) {
  return kernel + "_u" + std::to_string(unit);
}

/// One buffer to gather: the shard's, the whole tensor's, their layout.
struct Piece {
  std::string name;
  int shard = -1, whole = -1;
  rt::GatherView view;
};

/// A derived buffer: `to` (toRows x toCols) is the transpose of the
/// rows x cols block of `from` (row stride `stride`), zero past it.
struct Transpose {
  std::string name;
  int from = -1, to = -1;
  int64_t rows = 0, cols = 0, stride = 0, toRows = 0, toCols = 0;
  int elementBytes = 1;
};

std::string transposeEntry(const std::string &kernel, int elementBytes) {
  return kernel + "_t" + std::to_string(elementBytes);
}

} // namespace

rt::Expected<KernelPlan> planAllGather(const Program &p, const Entry &e,
                                       const AllGatherKernel &g,
                                       BufferTable &table,
                                       const EntryPlan &out) {
  const Value &in = e.values[g.input], &whole = e.values[g.output];
  std::vector<Piece> pieces;
  if (!in.isQuantized()) {
    rt::BufferDesc shard{in.dtype, in.rows(), in.cols()};
    rt::BufferDesc all{in.dtype, whole.rows(), whole.cols()};
    pieces.push_back(
        {"data", out.values[g.input].tensor, out.values[g.output].tensor,
         rt::gatherView({rt::ShardPiece::Axis::Rows, in.rows()}, shard, all)});
  }
  const int ValueBuffers::Direction::*fields[] = {
      &ValueBuffers::Direction::data, &ValueBuffers::Direction::scale,
      &ValueBuffers::Direction::amax};
  const rt::BufferDesc rt::DirectionStorage::*descs[] = {
      &rt::DirectionStorage::data, &rt::DirectionStorage::scaleInv,
      &rt::DirectionStorage::amax};
  const char *names[] = {"data", "scale_inv", "amax"};
  unsigned read = g.shardDirections(e);
  std::vector<Transpose> transposes;
  for (Direction d : {Direction::Rowwise, Direction::Columnwise}) {
    if (!in.isQuantized() || !whole.scheme(d))
      continue;
    int i = d == Direction::Rowwise ? 0 : 1;
    const ValueBuffers::Direction &src = out.values[g.input].dir[i];
    const ValueBuffers::Direction &dst = out.values[g.output].dir[i];
    rt::DirectionStorage wholeSt = directionStorage(whole, d, p.target);
    if (!(read & unsigned(d))) {
      // Derived from the gathered rowwise copy (columnwiseDerivesFromRowwise).
      const ValueBuffers::Direction &row = out.values[g.output].dir[0];
      rt::DirectionStorage rowSt =
          directionStorage(whole, Direction::Rowwise, p.target);
      for (int b = 0; b < 3; ++b) {
        int from = row.*fields[b];
        const rt::BufferDesc &r = rowSt.*descs[b], &c = wholeSt.*descs[b];
        if (from < 0 || dst.*fields[b] < 0 || !c.present())
          continue;
        std::string name = std::string("columnwise.") + names[b];
        if (b == 0 && !wholeSt.dataTransposed) {
          // The same bytes: a copy.
          rt::GatherView copy{1, r.bytes(), r.bytes(), c.bytes(), true};
          pieces.push_back({name, from, dst.*fields[b], copy});
          continue;
        }
        transposes.push_back({name, from, dst.*fields[b],
                              std::min(r.rows, c.cols),
                              std::min(r.cols, c.rows), r.cols, c.rows, c.cols,
                              int(rt::dtypeSize(c.dtype))});
      }
      continue;
    }
    rt::DirectionStorage shardSt = directionStorage(in, d, p.target);
    for (int b = 0; b < 3; ++b) {
      if (dst.*fields[b] < 0)
        continue; // a buffer the direction shares with the rowwise one
      rt::ShardPiece piece =
          rt::shardPiece(*in.scheme(d), d, b, in.rows(), in.cols(), p.target);
      pieces.push_back(
          {std::string(rt::directionName(d)) + "." + names[b], src.*fields[b],
           dst.*fields[b],
           rt::gatherView(piece, shardSt.*descs[b], wholeSt.*descs[b])});
    }
  }

  // One source with an unpack entry per word size the pieces need.
  std::vector<int> units;
  for (const Piece &pc : pieces)
    units.push_back(wordBytes(pc.view));
  std::sort(units.begin(), units.end());
  units.erase(std::unique(units.begin(), units.end()), units.end());
  std::ostringstream src;
  src << "// Generated by tejit: " << g.name << " lays the row shards of '"
      << in.name << "' gathered from " << g.ranks << " ranks into '"
      << whole.name << "'.\n#include \"te/device/GatherKernel.cuh\"\n";
  for (int unit : units)
    src << "\nextern \"C\" __global__ void __launch_bounds__(" << kGatherThreads
        << ")\n"
        << gatherEntry(g.name, unit)
        << "(const te::dev::u8 *staging, te::dev::u8 *whole, long long rows,\n"
           "    long long shardRowBytes, long long validBytes,\n"
           "    long long wholeRowBytes, int ranks) {\n"
           "  te::dev::gatherShards<"
        << unit
        << ">(staging, whole, rows, shardRowBytes, validBytes,\n"
           "                          wholeRowBytes, ranks);\n}\n";
  std::vector<int> widths;
  for (const Transpose &t : transposes)
    widths.push_back(t.elementBytes);
  std::sort(widths.begin(), widths.end());
  widths.erase(std::unique(widths.begin(), widths.end()), widths.end());
  for (int width : widths) {
    const char *type = width == 1 ? "te::dev::u8" : "te::dev::u32";
    src << "\nextern \"C\" __global__ void __launch_bounds__(256)\n"
        << transposeEntry(g.name, width) << "(const " << type
        << " *from, long long rows, long long cols,\n"
           "    long long stride, "
        << type << " *to, long long toRows, long long toCols) {\n  "
        << (width == 1 ? "te::dev::transposeBytes" : "te::dev::transposePadded")
        << "(from, rows, cols, stride, to, toRows, toCols);\n}\n";
  }

  KernelPlan kp;
  kp.name = g.name;
  kp.ranks = g.ranks;
  // Every all-gather first - consecutive collectives run as one NCCL group,
  // so the small scale gathers overlap the data's - then the launches that
  // lay out staged pieces, copy shared values and derive copies.
  std::vector<int> staged(pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Piece &pc = pieces[i];
    const rt::GatherView &v = pc.view;
    staged[i] = pc.shard; // a Whole piece is read where it is
    kp.bytesMoved += table.bytes(pc.whole);
    if (v.whole)
      continue;
    uint64_t shardBytes = uint64_t(v.rows * v.shardRowBytes);
    rt::CollectiveCall c;
    c.kind = rt::CollectiveCall::Kind::AllGather;
    c.ranks = g.ranks;
    c.send = {pc.shard, 0};
    c.bytes = shardBytes;
    kp.gatheredBytes += table.bytes(pc.whole);
    // Contiguous pieces with no padding land in place.
    if (v.rows == 1 && v.validBytes == v.shardRowBytes &&
        uint64_t(v.wholeRowBytes) == shardBytes * uint64_t(g.ranks)) {
      c.recv = {pc.whole, 0};
      staged[i] = -1;
    } else {
      staged[i] = table.add(g.name + "." + pc.name + ".staging",
                            shardBytes * uint64_t(g.ranks));
      c.recv = {staged[i], 0};
      kp.bytesMoved += 2 * table.bytes(staged[i]);
    }
    kp.addCollective(c);
  }
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Piece &pc = pieces[i];
    const rt::GatherView &v = pc.view;
    if (staged[i] < 0)
      continue; // landed in place
    int ranks =
        v.whole ? 1 : g.ranks; // a Whole piece: rank 0's is every rank's
    int unit = wordBytes(v);
    int64_t words = v.rows * v.wholeRowBytes / unit;
    rt::KernelSpec spec;
    spec.name = gatherEntry(g.name, unit);
    spec.entry = spec.name;
    spec.source = src.str();
    spec.options.arch = p.arch;
    spec.grid = rt::Dim3{
        unsigned(std::clamp<int64_t>(
            rt::ceilDiv(words, int64_t(kGatherThreads)), 1, kGatherMaxCtas)),
        1, 1};
    spec.block = rt::Dim3{kGatherThreads, 1, 1};
    spec.args = {
        rt::ArgDesc::ptr(staged[i]),    rt::ArgDesc::ptr(pc.whole),
        rt::ArgDesc::i64(v.rows),       rt::ArgDesc::i64(v.shardRowBytes),
        rt::ArgDesc::i64(v.validBytes), rt::ArgDesc::i64(v.wholeRowBytes),
        rt::ArgDesc::i32(ranks)};
    kp.addLaunch(std::move(spec));
  }
  for (const Transpose &t : transposes) {
    rt::KernelSpec spec;
    spec.name = transposeEntry(g.name, t.elementBytes);
    spec.entry = spec.name;
    spec.source = src.str();
    spec.options.arch = p.arch;
    // Bytes go through 128 x 128 tiles of 256 threads, wider elements
    // through 32 x 32 tiles of 32 x 8 threads (GatherKernel.cuh).
    int64_t side = t.elementBytes == 1 ? 128 : 32;
    int64_t tiles = rt::ceilDiv(t.toRows, side) * rt::ceilDiv(t.toCols, side);
    spec.grid =
        rt::Dim3{unsigned(std::clamp<int64_t>(tiles, 1, kGatherMaxCtas)), 1, 1};
    spec.block = t.elementBytes == 1 ? rt::Dim3{256, 1, 1} : rt::Dim3{32, 8, 1};
    spec.args = {rt::ArgDesc::ptr(t.from),  rt::ArgDesc::i64(t.rows),
                 rt::ArgDesc::i64(t.cols),  rt::ArgDesc::i64(t.stride),
                 rt::ArgDesc::ptr(t.to),    rt::ArgDesc::i64(t.toRows),
                 rt::ArgDesc::i64(t.toCols)};
    kp.addLaunch(std::move(spec));
    kp.bytesMoved += 2 * table.bytes(t.to);
  }
  return kp;
}

} // namespace te::cg::detail
