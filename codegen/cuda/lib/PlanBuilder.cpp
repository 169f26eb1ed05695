//===- PlanBuilder.cpp - Entry -> runtime plans ---------------------------===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//

#include "te/codegen/PlanBuilder.h"

#include "PlanBuilderInternal.h"

#include "te/codegen/AdamEmitter.h"
#include "te/codegen/DequantizeEmitter.h"
#include "te/codegen/QuantizeEmitter.h"
#include "te/codegen/ScalingState.h"
#include "te/runtime/BlasLt.h"

#include <algorithm>

namespace te::cg {

using detail::BufferTable;
using detail::KernelPlanWriter;
using detail::StageBuffers;
using detail::stageBuffers;
using rt::ArgDesc;
using rt::Direction;
using rt::Scheme;
using rt::SchemeKind;

namespace {

/// Logical (unpadded) scale entries of a direction; fewer than the buffer
/// holds means padding the plan must zero.
int64_t logicalScales(const Scheme &s, Direction d, int64_t m, int64_t k) {
  bool row = d == Direction::Rowwise;
  switch (s.kind) {
  case SchemeKind::Mxfp8:
    return row ? m * (k / 32) : (m / 32) * k;
  case SchemeKind::Nvfp4:
    return row ? m * (k / 16) : k * (m / 16);
  case SchemeKind::Fp8Block: {
    int64_t mb = rt::ceilDiv(m, 128), kb = rt::ceilDiv(k, 128);
    if (s.tileRows == 128)
      return mb * kb;
    return row ? kb * m : mb * k;
  }
  default:
    return 1;
  }
}

} // namespace

bool detail::scalesHavePadding(const Program &p, const Value &v,
                               const Scheme &s, Direction d) {
  return logicalScales(s, d, v.rows(), v.cols()) <
         directionStorage(v, d, p.target).scaleInv.numElements();
}

std::vector<ValueStorage> valueStorage(const Entry &e, const EntryPlan &plan,
                                       int index, const rt::Target &target) {
  const Value &v = e.values[size_t(index)];
  const ValueBuffers &vb = plan.values[size_t(index)];
  if (!v.isQuantized())
    return {{vb.tensor, "data", {v.dtype, v.rows(), v.cols()}}};
  std::vector<ValueStorage> out;
  for (Direction d : {Direction::Rowwise, Direction::Columnwise}) {
    if (!v.scheme(d))
      continue;
    rt::DirectionStorage ds = directionStorage(v, d, target);
    const ValueBuffers::Direction &bd = vb.dir[d == Direction::Rowwise ? 0 : 1];
    std::string prefix = std::string(rt::directionName(d)) + ".";
    if (bd.data >= 0)
      out.push_back({bd.data, prefix + "data", ds.data});
    if (bd.scale >= 0)
      out.push_back({bd.scale, prefix + "scale_inv", ds.scaleInv});
    if (bd.amax >= 0)
      out.push_back({bd.amax, prefix + "amax", ds.amax});
  }
  return out;
}

StageBuffers detail::stageBuffers(const Program &p, const Entry &e,
                                  const Stage &s, int value, int tensorAmax,
                                  BufferTable &table, const EntryPlan &out,
                                  KernelPlanWriter &w) {
  const Value &v = e.values[value];
  const ValueBuffers::Direction &bd =
      out.values[value].dir[s.dir == Direction::Rowwise ? 0 : 1];
  StageBuffers b{bd.data, bd.scale, bd.amax, -1};
  if (usesRht(s) || s.scheme.scalesByTensorAmax()) {
    b.in = tensorAmax;
  } else if (s.scheme.kind == SchemeKind::Fp8Delayed) {
    b.in = detail::stateScaleBuffer(out, s.state);
    w.fill(bd.amax);
    w.kp.bytesMoved += 4;
  }
  if (bd.scale >= 0 && detail::scalesHavePadding(p, v, s.scheme, s.dir))
    w.fill(bd.scale);
  w.kp.bytesMoved +=
      table.bytes(bd.data) + table.bytes(bd.scale) + table.bytes(bd.amax);
  return b;
}

static rt::Expected<KernelPlan> planQuantize(const Program &p, const Entry &e,
                                             const QuantizeKernel &q,
                                             BufferTable &table,
                                             EntryPlan &out) {
  const Value &in = e.values[q.input];
  int64_t m = in.rows(), k = in.cols();
  int input = out.values[q.input].tensor;
  EmittedQuantize src = emitQuantize(q, e);
  KernelPlanWriter w(p, table, q.name, src.source);
  uint64_t inputBytes = uint64_t(m * k * rt::dtypeSize(in.dtype));
  w.kp.bytesMoved += inputBytes;
  if (int64_t strips = biasGradStrips(q, e)) {
    int db = out.values[q.biasGrad].tensor;
    w.kp.bytesMoved += table.bytes(db);
    w.launch(src.mainEntry, rt::Dim3{unsigned(strips), 1, 1},
             {ArgDesc::ptr(input), ArgDesc::i64(m), ArgDesc::i64(k),
              ArgDesc::ptr(db)});
    return std::move(w.kp);
  }

  int globalAmax = -1;
  if (!src.amaxEntry.empty())
    globalAmax = w.tensorAmax(q.name, src.amaxEntry, input, m * k, inputBytes);

  // A row shard scales by the whole tensor's amax: reduce it over the ranks
  // before the cast reads it.
  auto reduceOverRanks = [&](int buffer) {
    rt::CollectiveCall c;
    c.kind = rt::CollectiveCall::Kind::AllReduceMax;
    c.ranks = q.amaxRanks;
    c.send = {buffer, 0};
    c.bytes = 4;
    w.kp.addCollective(c);
  };
  if (globalAmax >= 0 && q.amaxRanks > 1)
    reduceOverRanks(globalAmax);

  int rhtAmax = -1;
  if (!src.rhtAmaxEntry.empty()) {
    rhtAmax = table.add(q.name + ".rht_amax", 4);
    w.fill(rhtAmax);
    std::vector<ArgDesc> args = {ArgDesc::ptr(input), ArgDesc::i64(m),
                                 ArgDesc::i64(k), ArgDesc::ptr(rhtAmax)};
    if (src.rhtPrepassTakesTensorAmax) {
      globalAmax = table.add(q.name + ".tensor_amax", 4);
      w.fill(globalAmax);
      args.push_back(ArgDesc::ptr(globalAmax));
    }
    int64_t tasks = std::max<int64_t>(m / 16 * k, 1);
    int64_t grid = std::min<int64_t>(rt::ceilDiv(tasks, 256), 132 * 16);
    w.launch(src.rhtAmaxEntry, rt::Dim3{unsigned(grid), 1, 1}, std::move(args));
    w.kp.bytesMoved += inputBytes;
    if (q.amaxRanks > 1) {
      reduceOverRanks(rhtAmax);
      if (src.rhtPrepassTakesTensorAmax)
        reduceOverRanks(globalAmax);
    }
  }

  std::vector<ArgDesc> args = {ArgDesc::ptr(input), ArgDesc::i64(m),
                               ArgDesc::i64(k)};
  for (const Stage &s : q.stages) {
    StageBuffers b = stageBuffers(
        p, e, s, s.value, usesRht(s) ? rhtAmax : globalAmax, table, out, w);
    for (int buffer : {b.data, b.scale, b.amax, b.in})
      args.push_back(ArgDesc::ptr(buffer));
    args.push_back(ArgDesc::f32(static_cast<float>(s.scheme.eps)));
    args.push_back(ArgDesc::i64(int64_t(p.random.seed)));
    args.push_back(ArgDesc::i64(int64_t(p.random.offset)));
  }
  int partial = -1;
  int64_t chunks = rt::ceilDiv(m, int64_t(kQuantizeTileRows));
  if (q.biasGrad >= 0) {
    partial = table.add(q.name + ".bias_partial", uint64_t(chunks * k * 4));
    w.kp.bytesMoved +=
        2 * table.bytes(partial) + table.bytes(out.values[q.biasGrad].tensor);
  }
  args.push_back(ArgDesc::ptr(partial));
  // Right after an amax pre-pass (no scale padding filled, no reduction
  // over ranks between them) the tile kernel overlaps it: its CTAs load
  // their tiles, then wait for the amax (quantizeTileIn).
  const bool afterPrepass =
      (globalAmax >= 0 || rhtAmax >= 0) && w.kp.lastStepLaunches();
  w.launchTiles(src.mainEntry, m, k, in.dtype, std::move(args))
      .overlapsPredecessor = afterPrepass;
  // Delayed scaling records the amax as it casts: the record of a shard
  // becomes the whole tensor's afterwards.
  if (q.amaxRanks > 1)
    for (const Stage &s : q.stages)
      if (s.scheme.kind == SchemeKind::Fp8Delayed)
        reduceOverRanks(
            out.values[s.value].dir[s.dir == Direction::Rowwise ? 0 : 1].amax);
  if (q.biasGrad >= 0) {
    // Overlaps the tile kernel right before it (not a reduction over ranks
    // of delayed scaling's amax).
    const bool afterTiles = w.kp.lastStepLaunches();
    rt::KernelSpec &finish = w.launch(
        src.biasEntry,
        rt::Dim3{unsigned(rt::ceilDiv(k, int64_t(kBiasFinalizeThreads))), 1, 1},
        {ArgDesc::ptr(partial), ArgDesc::i64(chunks), ArgDesc::i64(k),
         ArgDesc::ptr(out.values[q.biasGrad].tensor)});
    finish.block = rt::Dim3{kBiasFinalizeThreads, 1, 1};
    finish.overlapsPredecessor = afterTiles;
  }
  return std::move(w.kp);
}

/// Appends `b`'s kernels, GEMMs, collectives and steps to `a` (one kernel
/// of the entry made of several plans).
static void append(KernelPlan &a, KernelPlan b) {
  uint32_t kernels = uint32_t(a.plan.kernels.size()),
           gemms = uint32_t(a.plan.gemms.size()),
           collectives = uint32_t(a.plan.collectives.size());
  for (rt::KernelSpec &k : b.plan.kernels)
    a.plan.kernels.push_back(std::move(k));
  for (rt::GemmCall &g : b.plan.gemms)
    a.plan.gemms.push_back(g);
  for (rt::CollectiveCall &c : b.plan.collectives)
    a.plan.collectives.push_back(c);
  for (rt::Step st : b.plan.steps) {
    if (st.kind == rt::Step::Kind::Launch)
      st.index += kernels;
    else if (st.kind == rt::Step::Kind::Gemm)
      st.index += gemms;
    else if (st.kind == rt::Step::Kind::Collective)
      st.index += collectives;
    a.plan.steps.push_back(st);
  }
  a.launches += b.launches;
  a.bytesMoved += b.bytesMoved;
  a.flops += b.flops;
}

static rt::Expected<KernelPlan> planDequantize(const Program &p, const Entry &e,
                                               const DequantizeKernel &d,
                                               const BufferTable &table,
                                               const EntryPlan &out);

/// Double quantization in one read (DoubleQuantizeKernel.cuh): stage
/// `second` (columnwise, value 2 of `sub`) from the dequantized rowwise
/// values of value 1 (the target's own rowwise buffers or a workspace),
/// both quantized from value 0 in one pass.
static KernelPlan planDoubleQuantize(const Program &p, const Entry &sub,
                                     const std::string &name,
                                     BufferTable &table, EntryPlan &subPlan) {
  const Value &in = sub.values[0], &rowwise = sub.values[1];
  const Stage first{*rowwise.rowwise, Direction::Rowwise, 1};
  const Stage second{*sub.values[2].columnwise, Direction::Columnwise, 2};
  rt::DirectionStorage st =
      directionStorage(rowwise, Direction::Rowwise, p.target);
  EmittedQuantize src = emitDoubleQuantize(name, in.dtype, first.scheme,
                                           second.scheme, st.dataTransposed);
  KernelPlanWriter w(p, table, name, src.source);
  int64_t m = in.rows(), k = in.cols();
  int input = subPlan.values[0].tensor;
  uint64_t inputBytes = uint64_t(m * k * rt::dtypeSize(in.dtype));
  w.kp.bytesMoved += inputBytes;
  int tensorAmax = -1;
  if (!src.amaxEntry.empty())
    tensorAmax = w.tensorAmax(name, src.amaxEntry, input, m * k, inputBytes);
  std::vector<ArgDesc> args = {ArgDesc::ptr(input), ArgDesc::i64(m),
                               ArgDesc::i64(k)};
  for (const Stage *s : {&first, &second}) {
    StageBuffers b =
        stageBuffers(p, sub, *s, s->value, tensorAmax, table, subPlan, w);
    for (int buffer : {b.data, b.scale, b.amax, b.in})
      args.push_back(ArgDesc::ptr(buffer));
    args.push_back(ArgDesc::f32(static_cast<float>(s->scheme.eps)));
    args.push_back(ArgDesc::i64(int64_t(p.random.seed)));
    args.push_back(ArgDesc::i64(int64_t(p.random.offset)));
  }
  args.push_back(ArgDesc::i64(st.scaleInv.cols));
  w.launchTiles(src.mainEntry, m, k, in.dtype, std::move(args));
  return std::move(w.kp);
}

/// A quantize kernel whose stages include double quantization (a columnwise
/// direction quantized from the dequantized rowwise values,
/// Value::columnwiseSource): the other stages as usual, then per such stage
/// either one read (planDoubleQuantize) or the rowwise quantization, its
/// dequantize to the input's type and the columnwise quantization of that -
/// each a kernel pinned to the reference on its own, so the composition is
/// too. The rowwise result lands in the value's own rowwise buffers where
/// it holds them (not written twice), else in a workspace.
static rt::Expected<KernelPlan>
planQuantizeKernel(const Program &p, const Entry &e, const QuantizeKernel &q,
                   BufferTable &table, EntryPlan &out) {
  QuantizeKernel direct = q;
  direct.stages.clear();
  std::vector<Stage> doubled;
  for (const Stage &s : q.stages)
    (s.dir == Direction::Columnwise && e.values[s.value].columnwiseSource
         ? doubled
         : direct.stages)
        .push_back(s);
  if (doubled.empty())
    return planQuantize(p, e, q, table, out);
  // The double quantization's rowwise step writes the rowwise direction of
  // a value that holds it itself: the direct pass does not write it again.
  auto inOneRead = [&](const Stage &s) {
    const Value &v = e.values[s.value];
    return doubleQuantizesInOneRead(*v.columnwiseSource, s.scheme);
  };
  for (const Stage &s : doubled)
    direct.stages.erase(std::remove_if(direct.stages.begin(),
                                       direct.stages.end(),
                                       [&](const Stage &d) {
                                         return d.value == s.value &&
                                                d.dir == Direction::Rowwise;
                                       }),
                        direct.stages.end());
  KernelPlan kp;
  kp.name = q.name;
  if (!direct.stages.empty() || direct.biasGrad >= 0) {
    rt::Expected<KernelPlan> k = planQuantize(p, e, direct, table, out);
    if (!k)
      return k.status();
    append(kp, std::move(*k));
  }
  const Value &in = e.values[q.input];
  for (size_t i = 0; i < doubled.size(); ++i) {
    const Stage &s = doubled[i];
    const Value &target = e.values[s.value];
    const Scheme &source = *target.columnwiseSource;
    // The three kernels' values: the input, the rowwise workspace, its
    // dequantized values, the target.
    Value rowwise = target;
    rowwise.name = target.name + "_source";
    rowwise.rowwise = source;
    rowwise.columnwise.reset();
    rowwise.columnwiseSource.reset();
    Value values = in;
    values.name = target.name + "_source_values";
    Entry sub;
    sub.name = e.name;
    sub.values = {in, rowwise, values, target};
    EntryPlan subPlan;
    subPlan.values.resize(4);
    subPlan.values[0] = out.values[q.input];
    subPlan.values[3] = out.values[s.value];
    rt::DirectionStorage st =
        directionStorage(rowwise, Direction::Rowwise, p.target);
    ValueBuffers::Direction &ws = subPlan.values[1].dir[0];
    std::string base = q.name + "_double" + std::to_string(i);
    // The rowwise result goes where the value keeps it, else to a
    // workspace.
    if (target.rowwise) {
      ws = out.values[s.value].dir[0];
    } else {
      ws.data = table.add(rowwise.name + ".rowwise.data", st.data.bytes());
      if (st.scaleInv.present())
        ws.scale =
            table.add(rowwise.name + ".rowwise.scale_inv", st.scaleInv.bytes());
      if (st.amax.present())
        ws.amax = table.add(rowwise.name + ".rowwise.amax", st.amax.bytes());
    }
    if (inOneRead(s)) {
      Entry one;
      one.name = e.name;
      one.values = {in, rowwise, target};
      EntryPlan onePlan;
      onePlan.values = {subPlan.values[0], subPlan.values[1],
                        subPlan.values[3]};
      append(kp, planDoubleQuantize(p, one, base, table, onePlan));
      continue;
    }
    subPlan.values[2].tensor = table.add(
        values.name, uint64_t(in.rows() * in.cols() * rt::dtypeSize(in.dtype)));
    QuantizeKernel first{
        base + "_rowwise", 0, {{source, Direction::Rowwise, 1}}};
    DequantizeKernel back{base + "_dequantize", 1, Direction::Rowwise, 2};
    QuantizeKernel second{base + "_columnwise", 2, {{s.scheme, s.dir, 3}}};
    rt::Expected<KernelPlan> a = planQuantize(p, sub, first, table, subPlan);
    if (!a)
      return a.status();
    append(kp, std::move(*a));
    rt::Expected<KernelPlan> b = planDequantize(p, sub, back, table, subPlan);
    if (!b)
      return b.status();
    append(kp, std::move(*b));
    rt::Expected<KernelPlan> c = planQuantize(p, sub, second, table, subPlan);
    if (!c)
      return c.status();
    append(kp, std::move(*c));
  }
  return kp;
}

/// Tiles of an M x K tensor.
static int64_t tilesOf(const Value &v) {
  return rt::ceilDiv(v.rows(), int64_t(kQuantizeTileRows)) *
         rt::ceilDiv(v.cols(), int64_t(kQuantizeTileCols));
}

/// A multi-tensor Adam kernel: launches of at most as many tensors as one
/// table holds, each over the tiles of its tensors (and, when a stage
/// scales by an amax of the whole new parameter, the requantize kernel
/// after the update, which reads the new parameter once more).
static rt::Expected<KernelPlan> planAdam(const Program &p, const Entry &e,
                                         const AdamKernel &a,
                                         BufferTable &table, EntryPlan &out) {
  size_t words = kAdamTensorWords + kAdamStageWords * a.stages.size();
  size_t perLaunch = std::min(a.tensors.size(), rt::kMaxTableWords / words);
  EmittedAdam src = emitAdam(a, e, perLaunch);
  KernelPlanWriter w(p, table, a.name, src.source);
  int lr = out.values[a.lr].tensor, step = out.values[a.step].tensor;
  for (size_t first = 0; first < a.tensors.size(); first += perLaunch) {
    size_t count = std::min(perLaunch, a.tensors.size() - first);
    std::vector<ArgDesc> items;
    int64_t tiles = 0;
    for (size_t i = first; i < first + count; ++i) {
      const AdamTensor &t = a.tensors[i];
      const Value &param = e.values[t.param];
      for (int v : {t.param, t.grad, t.expAvg, t.expAvgSq, t.newParam,
                    t.newExpAvg, t.newExpAvgSq}) {
        items.push_back(ArgDesc::ptr(out.values[v].tensor));
        w.kp.bytesMoved += table.bytes(out.values[v].tensor);
      }
      items.push_back(ArgDesc::i64(param.rows()));
      items.push_back(ArgDesc::i64(param.cols()));
      items.push_back(ArgDesc::i64(tiles));
      tiles += tilesOf(param);
      // The amaxes the update produces for the requantize kernel.
      auto producedAmax = [&](bool needed, const char *suffix) {
        if (!needed)
          return -1;
        int buffer = table.add(param.name + suffix, 4);
        w.fill(buffer); // counts its 4 bytes
        return buffer;
      };
      int tensorAmax = producedAmax(src.amaxStage >= 0, ".new_amax");
      int rhtAmax = producedAmax(src.rhtStage >= 0, ".new_rht_amax");
      if (!src.requantizeEntry.empty())
        w.kp.bytesMoved += table.bytes(out.values[t.newParam].tensor);
      for (size_t i : src.stageOrder) {
        const Stage &s = a.stages[i];
        StageBuffers b =
            stageBuffers(p, e, s, t.quantized[size_t(s.value)],
                         usesRht(s) ? rhtAmax : tensorAmax, table, out, w);
        for (int buffer : {b.data, b.scale, b.amax, b.in})
          items.push_back(ArgDesc::ptr(buffer));
      }
    }
    items.resize(perLaunch * words, ArgDesc::i64(0));
    rt::Dim3 grid{unsigned(tiles), 1, 1};
    // Stages [first, last) of the table order's eps, seed and offset.
    auto scalars = [&](std::vector<ArgDesc> args, size_t first, size_t last) {
      for (size_t i = first; i < last; ++i) {
        const Stage &s = a.stages[src.stageOrder[i]];
        args.push_back(ArgDesc::f32(static_cast<float>(s.scheme.eps)));
        args.push_back(ArgDesc::i64(int64_t(p.random.seed)));
        args.push_back(ArgDesc::i64(int64_t(p.random.offset)));
      }
      return args;
    };
    std::vector<ArgDesc> tensors = {ArgDesc::table(items),
                                    ArgDesc::i32(int32_t(count))};
    std::vector<ArgDesc> update = tensors;
    update.push_back(ArgDesc::ptr(lr));
    update.push_back(ArgDesc::ptr(step));
    bool keepsTile = src.updateStages > 0 || src.rhtStage >= 0;
    w.launch(src.mainEntry, grid, scalars(update, 0, src.updateStages))
        .sharedBytes = keepsTile ? quantizeDynamicSmem(rt::DType::F32) : 0;
    if (!src.requantizeEntry.empty())
      w.launch(src.requantizeEntry, grid,
               scalars(tensors, src.updateStages, src.stageOrder.size()))
          .sharedBytes = quantizeDynamicSmem(rt::DType::F32);
  }
  return std::move(w.kp);
}

static rt::Expected<KernelPlan> planDequantize(const Program &p, const Entry &e,
                                               const DequantizeKernel &d,
                                               const BufferTable &table,
                                               const EntryPlan &out) {
  const Value &in = e.values[d.input];
  const ValueBuffers &vb = out.values[d.input];
  int self = d.dir == Direction::Rowwise ? 0 : 1;
  // A direction that shares the rowwise data or scale reads those buffers.
  auto pick = [&](int ValueBuffers::Direction::*field) {
    int b = vb.dir[self].*field;
    return b >= 0 ? b : vb.dir[0].*field;
  };
  int data = pick(&ValueBuffers::Direction::data);
  int scale = pick(&ValueBuffers::Direction::scale);
  int amax = pick(&ValueBuffers::Direction::amax);
  rt::DirectionStorage st = directionStorage(in, d.dir, p.target);
  rt::DirectionStorage scaleSt =
      vb.dir[self].scale >= 0
          ? st
          : directionStorage(in, Direction::Rowwise, p.target);
  int64_t m = in.rows(), k = in.cols(), n = m * k;

  KernelPlan kp;
  kp.name = d.name;
  rt::KernelSpec spec;
  spec.name = d.name;
  spec.entry = d.name;
  spec.source = emitDequantize(d, e, p.target);
  spec.options.arch = p.arch;
  spec.grid = rt::Dim3{unsigned(rt::dequantizeGrid(n)), 1, 1};
  spec.block = rt::Dim3{kDequantizeThreads, 1, 1};
  int output = out.values[d.output].tensor;
  spec.args = {ArgDesc::ptr(data),
               ArgDesc::ptr(scale),
               ArgDesc::ptr(amax),
               ArgDesc::ptr(output),
               ArgDesc::i64(m),
               ArgDesc::i64(k),
               ArgDesc::i64(scaleSt.scaleInv.cols)};
  kp.addLaunch(std::move(spec));
  kp.bytesMoved = table.bytes(data) + table.bytes(scale) + table.bytes(amax) +
                  table.bytes(output);
  return kp;
}

/// The GEMM view of operand `index` read in direction `d`: its buffers, its
/// element type and scaling, and whether the stored matrix has the
/// contraction dimension contiguous. `logicalKContiguous`: the logical
/// matrix (as the value is shaped) is [rows, K].
static rt::Expected<std::pair<rt::BlasLtOperand, std::pair<int, int>>>
gemmOperand(const Program &p, const Entry &e, const GemmKernel &g, int index,
            Direction d, bool logicalKContiguous, const EntryPlan &out) {
  const Value &v = e.values[index];
  const ValueBuffers &vb = out.values[index];
  rt::BlasLtOperand op;
  if (!v.isQuantized()) {
    op.dtype = v.dtype;
    op.transposed = !logicalKContiguous;
    return std::make_pair(op, std::make_pair(vb.tensor, -1));
  }
  const Scheme &s = *v.scheme(d);
  rt::DirectionStorage st = directionStorage(v, d, p.target);
  int self = d == Direction::Rowwise ? 0 : 1;
  int data = vb.dir[self].data >= 0 ? vb.dir[self].data : vb.dir[0].data;
  int scale = vb.dir[self].scale >= 0 ? vb.dir[self].scale : vb.dir[0].scale;
  bool storedTransposed = d == Direction::Columnwise && st.dataTransposed;
  op.dtype = st.data.dtype;
  op.transposed = logicalKContiguous == storedTransposed;
  switch (s.kind) {
  case SchemeKind::Identity:
    return std::make_pair(op, std::make_pair(data, -1));
  case SchemeKind::Fp8Delayed:
  case SchemeKind::Fp8Current:
    op.scaling = rt::GemmScaling::PerTensor;
    break;
  case SchemeKind::Fp8Block:
    op.scaling = s.tileRows == 128 ? rt::GemmScaling::Block128x128
                                   : rt::GemmScaling::Block1x128;
    break;
  default:
    return rt::Status(rt::StatusCode::Unsupported,
                      g.name + ": '" + v.name + "' " + rt::directionName(d) +
                          " is " + rt::schemeKindName(s.kind) + ", which no " +
                          p.arch +
                          " GEMM reads natively (te-legalize-target "
                          "lowers such GEMMs through dequantize kernels)");
  }
  if (op.transposed)
    return rt::Status(rt::StatusCode::Unsupported,
                      g.name + ": '" + v.name + "' " + rt::directionName(d) +
                          " is stored with the contraction dimension "
                          "strided; FP8 GEMMs read K-contiguous data only");
  return std::make_pair(op, std::make_pair(data, scale));
}

static rt::Expected<KernelPlan> planGemm(const Program &p, const Entry &e,
                                         const GemmKernel &g,
                                         const BufferTable &table,
                                         const EntryPlan &out) {
  const Value &a = e.values[g.a], &b = e.values[g.b];
  // op(A) is M x K: A is [M, K] unless transposed; op(B) is K x N: B is
  // [K, N] unless transposed, when it is [N, K].
  auto ga = gemmOperand(p, e, g, g.a, g.directionA(), !g.transposeA, out);
  if (!ga)
    return ga.status();
  auto gb = gemmOperand(p, e, g, g.b, g.directionB(), g.transposeB, out);
  if (!gb)
    return gb.status();
  rt::GemmCall call;
  rt::GemmProblem &pr = call.problem;
  pr.m = g.transposeA ? a.cols() : a.rows();
  pr.k = g.transposeA ? a.rows() : a.cols();
  pr.n = g.transposeB ? b.rows() : b.cols();
  pr.a = ga->first;
  pr.b = gb->first;
  pr.outType = e.values[g.output].dtype;
  call.a = {ga->second.first, 0};
  call.aScale = {ga->second.second, 0};
  call.b = {gb->second.first, 0};
  call.bScale = {gb->second.second, 0};
  call.out = {out.values[g.output].tensor, 0};
  if (g.bias >= 0) {
    call.bias = {out.values[g.bias].tensor, 0};
    pr.biasType = e.values[g.bias].dtype;
  }
  std::string invalid = rt::BlasLt::validate(call.shape());
  if (!invalid.empty())
    return rt::Status(rt::StatusCode::Unsupported, g.name + ": " + invalid);

  KernelPlan kp;
  kp.name = g.name;
  kp.plan.gemms.push_back(call);
  rt::Step step;
  step.kind = rt::Step::Kind::Gemm;
  step.index = 0;
  kp.plan.steps.push_back(step);
  kp.launches = 1;
  for (rt::BufferRef r :
       {call.a, call.aScale, call.b, call.bScale, call.out, call.bias})
    kp.bytesMoved += table.bytes(r.buffer);
  kp.flops = uint64_t(2 * pr.m * pr.n * pr.k);
  kp.engine = detail::gemmEngine(e, "cuBLASLt", g.a, g.b);
  return kp;
}

bool detail::isDequantized(const Entry &e, int value) {
  for (const Kernel &k : e.kernels)
    if (auto *d = std::get_if<DequantizeKernel>(&k); d && d->output == value)
      return true;
  return false;
}

std::string detail::gemmEngine(const Entry &e, const char *library, int a,
                               int b, bool mxfp8) {
  if (isDequantized(e, a) || isDequantized(e, b))
    return std::string(library) + ", dequantized operands";
  return std::string(library) + (mxfp8 ? ", MXFP8 operands" : "");
}

rt::Expected<EntryPlan> buildEntryPlan(const Program &p, const Entry &e,
                                       bool keepUnsupported) {
  std::string why = validate(e);
  if (why.empty())
    why = validateScalingStates(p);
  if (!why.empty())
    return rt::Status(rt::StatusCode::InvalidArgument, e.name + ": " + why);
  EntryPlan out;
  BufferTable table(out);
  for (const Value &v : e.values)
    table.addValue(v, p.target);
  detail::addStateBuffers(e, table, out);
  for (const Kernel &k : e.kernels) {
    rt::Expected<KernelPlan> kp = std::visit(
        Overloaded{
            [&](const QuantizeKernel &q) {
              return planQuantizeKernel(p, e, q, table, out);
            },
            [&](const DequantizeKernel &d) {
              return planDequantize(p, e, d, table, out);
            },
            [&](const GemmKernel &g) { return planGemm(p, e, g, table, out); },
            [&](const AdamKernel &a) { return planAdam(p, e, a, table, out); },
            [&](const GroupedGemmKernel &g) {
              return detail::planGroupedGemm(p, e, g, table, out);
            },
            [&](const GroupedWgradKernel &g) {
              return detail::planGroupedWgrad(p, e, g, table, out);
            },
            [&](const AllGatherKernel &g) {
              return detail::planAllGather(p, e, g, table, out);
            },
            [&](const ShardedQuantizeKernel &q) {
              return detail::planShardedQuantize(p, e, q, table, out);
            }},
        k);
    if (!kp && keepUnsupported &&
        kp.status().code() == rt::StatusCode::Unsupported) {
      KernelPlan unsupported;
      unsupported.name = kernelName(k);
      unsupported.unsupported = kp.status().message();
      out.kernels.push_back(std::move(unsupported));
      continue;
    }
    if (!kp)
      return kp.status();
    out.kernels.push_back(std::move(*kp));
  }
  rt::Expected<std::optional<KernelPlan>> update =
      detail::planScalingUpdate(p, e, table, out);
  if (!update)
    return update.status();
  if (*update)
    out.kernels.push_back(std::move(**update));
  // Every plan declares the whole (final) buffer list.
  for (KernelPlan &kp : out.kernels)
    kp.plan.buffers = out.buffers;
  return out;
}

} // namespace te::cg
