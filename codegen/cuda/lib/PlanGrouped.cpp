//===- PlanGrouped.cpp - The GEMM engine's grouped kernels as plans -------===//
//
// Part of tejit. Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//
//
// The MoE kernels of an entry as runtime plans: the M-grouped GEMM (fprop,
// dgrad) as one persistent clustered launch whose TMA descriptors the
// executor encodes over the bound buffers, and the wgrad as the grouped
// quantizes into workspaces followed by the K-grouped GEMM.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilderInternal.h"

#include "te/codegen/GroupedGemmEmitter.h"
#include "te/codegen/GroupedQuantizeEmitter.h"
#include "te/codegen/GroupedWgradEmitter.h"
#include "te/codegen/ScalingState.h"
#include "te/formats/GemmRules.h"

#include <tuple>

namespace te::cg::detail {

using rt::ArgDesc;
using rt::Scheme;
using rt::SchemeKind;

/// A persistent launch of one of the GEMM engine's kernels: one CTA of
/// kGroupedGemmThreads per SM (whole clusters of `cluster`), compiled with
/// the CUTLASS options; `name` names the errors.
static rt::Expected<rt::KernelSpec>
engineLaunch(const std::string &name, std::string entry, std::string source,
             unsigned sharedBytes, unsigned cluster) {
  rt::Expected<rt::CompileOptions> options = groupedGemmCompileOptions();
  if (!options)
    return rt::Status(options.status().code(),
                      name + ": " + options.status().message());
  rt::KernelSpec ks;
  ks.name = name;
  ks.entry = std::move(entry);
  ks.source = std::move(source);
  ks.options = *options;
  ks.block = rt::Dim3{kGroupedGemmThreads, 1, 1};
  ks.cluster = rt::Dim3{cluster, 1, 1};
  ks.persistent = true;
  ks.grid = rt::Dim3{cluster, 1, 1}; // sized where the plan runs
  ks.sharedBytes = sharedBytes;
  return ks;
}

/// A launch of one of the grouped quantize kernels (plain CUDA, no CUTLASS)
/// with `args`.
static rt::KernelSpec quantizeLaunch(const Program &p, const std::string &entry,
                                     const std::string &source, rt::Dim3 grid,
                                     unsigned threads,
                                     std::vector<ArgDesc> args) {
  rt::KernelSpec ks;
  ks.name = ks.entry = entry;
  ks.source = source;
  ks.options.arch = p.arch;
  ks.grid = grid;
  ks.block = rt::Dim3{threads, 1, 1};
  ks.args = std::move(args);
  return ks;
}

/// The expert amax an operand's per-expert quantize takes: none (delayed
/// scaling reads its states' scales; block FP8, MXFP8 and bf16 need none),
/// of its rows, or (NVFP4 with the Hadamard transform) of its transformed
/// 16-row runs. The one rule the plans below and laterTakesExpertAmax ask.
enum class ExpertAmax { None, Rows, Transformed };
static ExpertAmax expertAmaxOf(const GroupedRowsQuantizeSpec &qs) {
  return qs.delayed() ? ExpertAmax::None : ExpertAmax::Rows;
}
static ExpertAmax expertAmaxOf(const GroupedQuantizeSpec &qs) {
  if (qs.delayed() || !qs.needsExpertAmax())
    return ExpertAmax::None;
  return qs.scheme.kind == SchemeKind::Nvfp4 && qs.scheme.rht
             ? ExpertAmax::Transformed
             : ExpertAmax::Rows;
}

/// The buffer name of expertAmax's result: by what it is computed from, the
/// input's and the splits' buffers.
static std::string expertAmaxName(const Entry &e, const EntryPlan &out,
                                  int value, int splits, int64_t groups,
                                  bool rht) {
  const int input = out.values[size_t(value)].tensor;
  const int splitBuf = splits >= 0 ? out.values[size_t(splits)].tensor : -1;
  return e.values[size_t(value)].name + ".expert_amax" + (rht ? "_rht" : "") +
         ".b" + std::to_string(input) +
         (splitBuf >= 0 ? ".b" + std::to_string(splitBuf)
                        : ".g" + std::to_string(groups));
}

/// Each expert's amax of `value` [rows, C] bf16 - max |x| over its rows
/// (the tokens under the split sizes `splits`, a value; or with splits < 0
/// the stack's rows / G rows each), or with `rht` over its Hadamard-
/// transformed 16-row runs - into a [G] f32 buffer, which it returns. An
/// entry computes each such amax once: the first kernel that needs it
/// zeroes the buffer and runs the pass in `kp` (adding the read to its
/// bytes); later kernels of the entry read that buffer (the entry's kernels
/// run in order, and a value never changes) - the dgrad and the wgrad of
/// one dy, say, or a train step's fprop and dgrad of one stack; or the
/// value's grouped GEMM took it in its epilogue (laterTakesExpertAmax).
static int expertAmax(const Program &p, const Entry &e, BufferTable &table,
                      const EntryPlan &out, KernelPlan &kp, int value,
                      int splits, int64_t groups, bool rht) {
  const Value &v = e.values[size_t(value)];
  const int64_t rows = v.rows(), cols = v.cols();
  const int input = out.values[size_t(value)].tensor;
  const int splitBuf = splits >= 0 ? out.values[size_t(splits)].tensor : -1;
  const std::string name = expertAmaxName(e, out, value, splits, groups, rht);
  if (int known = table.find(name); known >= 0)
    return known; // this entry's pass, or the epilogue of value's GEMM
  const int amax = table.add(name, uint64_t(groups * 4));
  kp.addFill(amax);
  if (rht) { // over the grouped columnwise pass's grid
    EmittedGroupedAmax pass = emitGroupedRhtAmax(groups);
    kp.addLaunch(quantizeLaunch(
        p, pass.entry, pass.source,
        groupedQuantizeGrid(groupedWgradCapacity(rows, groups), cols),
        kGroupedQuantizeThreads,
        {ArgDesc::ptr(input), ArgDesc::i64(rows), ArgDesc::i64(cols),
         ArgDesc::ptr(splitBuf), ArgDesc::ptr(amax)}));
  } else {
    EmittedGroupedAmax pass = emitGroupedExpertAmax(groups);
    kp.addLaunch(quantizeLaunch(
        p, pass.entry, pass.source, groupedRowsGrid(rows), kGroupedRowsThreads,
        {ArgDesc::ptr(input), ArgDesc::i64(rows), ArgDesc::i64(cols),
         ArgDesc::ptr(splitBuf), ArgDesc::i64(splits >= 0 ? 0 : rows / groups),
         ArgDesc::ptr(amax)}));
  }
  kp.bytesMoved += table.bytes(input) + 2 * table.bytes(amax);
  return amax;
}

/// The [G] workspace of delayedScales' gathered scales.
static std::string delayedScalesName(const std::string &kernel,
                                     const std::string &operand) {
  return kernel + "." + operand + ".expert_scales";
}

/// A delayed-scaling operand `operand` of grouped kernel `kernel`: its
/// experts' scales (the states rt::expertStateName(state, g)) gathered into
/// a [G] workspace, and its [G] amax record (groupedAmaxRecord, which the
/// entry's delayed-scaling update reads) zeroed; returns (scales, record).
static std::pair<int, int> delayedScales(const Program &p,
                                         const std::string &kernel,
                                         const std::string &operand,
                                         const std::string &state,
                                         int64_t groups, BufferTable &table,
                                         const EntryPlan &out, KernelPlan &kp) {
  std::vector<ArgDesc> scalePtrs;
  for (int64_t g = 0; g < groups; ++g)
    scalePtrs.push_back(
        ArgDesc::ptr(stateScaleBuffer(out, rt::expertStateName(state, g))));
  const int scales =
      table.add(delayedScalesName(kernel, operand), uint64_t(groups * 4));
  const int record =
      table.add(groupedAmaxRecord(kernel, operand), uint64_t(groups * 4));
  EmittedGroupedAmax gather = emitGatherScales(groups);
  kp.addLaunch(quantizeLaunch(
      p, gather.entry, gather.source, rt::Dim3{1, 1, 1},
      groupedGatherThreads(groups),
      {ArgDesc::table(std::move(scalePtrs)), ArgDesc::ptr(scales)}));
  kp.addFill(record);
  kp.bytesMoved += 3 * table.bytes(scales);
  return {scales, record};
}

/// The buffers of an operand quantized per expert that its GEMM reads.
struct PerExpertOperand {
  int data = -1;   ///< FP8 or NVFP4 codes, or the bf16 values
  int scales = -1; ///< FP8 block scales, NVFP4 E4M3 block scales, or -1
  int amax = -1;   ///< each expert's amax [G] (or delayed-scaling scale)
};

/// The name of grouped GEMM `g`'s workspace of operand `v` quantized per
/// expert (its codes or values; "_block_scale_inv" after it, their block
/// scales): where quantizePerExpert writes them, or the epilogue of the GEMM
/// that computes the tokens (laterCastsPerExpert).
static std::string perExpertName(const GroupedGemmKernel &g, const Value &v) {
  return g.name + "." + v.name + ".per_expert";
}

/// Grouped GEMM `g`'s operand `value` (the tokens, or with `weightStack`
/// the stacked weight, rowwise or for the dgrad columnwise) quantized with
/// one amax per expert into workspaces of `g`: the amax pass and the cast
/// (GroupedRowsQuantizeSpec) appended to `kp`. Returns the buffers the GEMM
/// reads: per-tensor FP8 codes and their block scales (g.readsPerExpertCodes);
/// NVFP4's codes and block scales (g.nvfp4Codes); or the bf16 values; and
/// the amaxes.
static rt::Expected<PerExpertOperand>
quantizePerExpert(const Program &p, const Entry &e, const GroupedGemmKernel &g,
                  BufferTable &table, const EntryPlan &out, KernelPlan &kp,
                  int value, const Scheme &scheme, bool weightStack) {
  const Value &v = e.values[size_t(value)];
  const int64_t groups = e.values[size_t(g.w)].shape[0];
  const int64_t rows = v.rows(), cols = v.cols();
  // The dgrad reads the stack columnwise: FP8 codes from its own transposed
  // copy; values in the stack's layout, read along N by the BF16 dgrad
  // (per-tensor FP8 and NVFP4's 16x16 blocks: the rowwise values; NVFP4's
  // 1x16: those of its 16x1 columns).
  const bool fp8Values =
      scheme.kind != SchemeKind::Nvfp4 && g.readsPerExpertValues();
  GroupedRowsQuantizeSpec qs{
      scheme,
      groups,
      cols,
      weightStack,
      weightStack && g.weightColumnwise && !fp8Values &&
          !(scheme.kind == SchemeKind::Nvfp4 && scheme.block2d),
      g.nvfp4Codes,
      fp8Values};
  if (rt::Status st = checkGroupedRowsQuantize(qs); !st.isOk())
    return rt::Status(rt::StatusCode::Unsupported,
                      g.name + ": " + st.message());
  const std::string prefix = perExpertName(g, v);
  // Tokens cast by the epilogue of the grouped GEMM that computed them
  // (planGroupedGemm, laterCastsPerExpert): codes, their block scales and
  // the gathered scales are there, the record taken.
  if (!weightStack && qs.delayed() && !qs.values() && !qs.nvfp4())
    if (int codes = table.find(prefix); codes >= 0)
      return PerExpertOperand{codes, table.find(prefix + "_block_scale_inv"),
                              table.find(delayedScalesName(g.name, "x"))};
  // FP8 codes and the expert's scales over the blocks, NVFP4's packed codes
  // and block scales, or its bf16 values (no scales: the BF16 GEMM reads
  // them as they are).
  int codes = table.add(
      prefix, uint64_t(qs.nvfp4Codes ? rows * cols / 2
                                     : rows * cols * (qs.values() ? 2 : 1)));
  // Each expert's amax (current scaling, NVFP4), or under delayed scaling
  // each expert's scale, the cast recording its amax.
  int amax = -1, record = -1;
  if (expertAmaxOf(qs) == ExpertAmax::None) // delayed scaling
    std::tie(amax, record) = delayedScales(p, g.name, weightStack ? "w" : "x",
                                           weightStack ? g.wState : g.xState,
                                           groups, table, out, kp);
  else
    amax = expertAmax(p, e, table, out, kp, value, weightStack ? -1 : g.splits,
                      groups, false);
  int scaleInv = qs.nvfp4() || qs.fp8Values
                     ? -1
                     : table.add(prefix + "_scale_inv", uint64_t(groups * 4));
  const int64_t blockScaleFloats = groupedRowsBlockScales(qs, rows);
  int blockScales = blockScaleFloats == 0
                        ? -1
                        : table.add(prefix + "_block_scale_inv",
                                    uint64_t(blockScaleFloats * 4));
  int input = out.values[size_t(value)].tensor;
  int splits = weightStack ? -1 : out.values[size_t(g.splits)].tensor;
  const int64_t perExpert = weightStack ? rows / groups : 0;
  EmittedGroupedRowsQuantize src = emitGroupedRowsQuantize(qs);
  kp.addLaunch(quantizeLaunch(
      p, src.quantizeEntry, src.source, groupedRowsCastGrid(qs, rows),
      kGroupedRowsThreads,
      {ArgDesc::ptr(input), ArgDesc::i64(rows), ArgDesc::i64(cols),
       ArgDesc::ptr(splits), ArgDesc::i64(perExpert), ArgDesc::ptr(amax),
       ArgDesc::f32(static_cast<float>(scheme.eps)), ArgDesc::ptr(codes),
       ArgDesc::ptr(scaleInv), ArgDesc::ptr(blockScales),
       ArgDesc::i64(groupedRowsBlockStride(qs, rows)),
       ArgDesc::i64(int64_t(p.random.seed)),
       ArgDesc::i64(int64_t(p.random.offset)), ArgDesc::ptr(record)}));
  // The input read, the codes and scales written (the amax pass counts its
  // own read).
  kp.bytesMoved += table.bytes(input) + table.bytes(codes) +
                   table.bytes(blockScales) + table.bytes(amax);
  return PerExpertOperand{codes, blockScales, amax};
}

/// Whether a kernel of `e` after `producer` takes the amax of each expert's
/// rows of `value` under `splits` - expertAmax(value, splits, rht = false) -
/// by expertAmaxOf, the rule the plans above follow: a grouped GEMM
/// quantizing its tokens per expert, a grouped wgrad its dy or x.
static bool laterTakesExpertAmax(const Entry &e, const Kernel &producer,
                                 int value, int splits) {
  auto takes = [&](const Kernel &k) {
    if (const auto *g = std::get_if<GroupedGemmKernel>(&k)) {
      if (!g->xScheme || g->x != value || g->splits != splits)
        return false;
      GroupedRowsQuantizeSpec qs;
      qs.scheme = *g->xScheme;
      return expertAmaxOf(qs) == ExpertAmax::Rows;
    }
    if (const auto *w = std::get_if<GroupedWgradKernel>(&k)) {
      if (w->splits != splits)
        return false;
      for (const auto &[operand, scheme] : {std::make_pair(w->dy, w->dyScheme),
                                            std::make_pair(w->x, w->xScheme)}) {
        GroupedQuantizeSpec qs;
        qs.scheme = scheme;
        if (operand == value && expertAmaxOf(qs) == ExpertAmax::Rows)
          return true;
      }
    }
    return false;
  };
  bool after = false;
  for (const Kernel &k : e.kernels) {
    if (after && takes(k))
      return true;
    after = after || &k == &producer;
  }
  return false;
}

/// The grouped GEMM of `e` after `producer` that casts the tokens `value`
/// under `splits` per expert by delayed scaling into FP8 codes for its
/// block-scaled kernel (both operands per-tensor FP8: readsPerExpertCodes),
/// the first if several do; null if none. The producer's epilogue can cast
/// them as it stores them: each expert's scale is its state's, known before
/// the producer runs (the entry updates its states when it ends).
static const GroupedGemmKernel *laterCastsPerExpert(const Entry &e,
                                                    const Kernel &producer,
                                                    int value, int splits) {
  bool after = false;
  for (const Kernel &k : e.kernels) {
    const auto *g = std::get_if<GroupedGemmKernel>(&k);
    if (after && g && g->x == value && g->splits == splits && g->xScheme &&
        g->xScheme->kind == SchemeKind::Fp8Delayed && g->readsPerExpertCodes())
      return g;
    after = after || &k == &producer;
  }
  return nullptr;
}

/// A grouped GEMM: one persistent launch of the generated Hopper kernel
/// (GroupedGemmEmitter.h) in 2-CTA clusters, its TMA descriptors over the
/// operands' buffers encoded where the plan runs.
rt::Expected<KernelPlan> planGroupedGemm(const Program &p, const Entry &e,
                                         const GroupedGemmKernel &g,
                                         BufferTable &table,
                                         const EntryPlan &out) {
  const Value &x = e.values[g.x], &w = e.values[g.w];
  const Value &y = e.values[g.output];
  auto unsupported = [&](const std::string &why) {
    return rt::Status(rt::StatusCode::Unsupported, g.name + ": " + why);
  };
  if (p.arch != "sm_90a")
    return unsupported("the grouped GEMM kernel is generated for sm_90a "
                       "(Hopper) only, the target is " +
                       p.arch);
  if (!x.isQuantized() &&
      (x.dtype != rt::DType::BF16 || w.dtype != rt::DType::BF16))
    return unsupported("the grouped GEMM kernel reads bf16 tensors, block "
                       "FP8 or MXFP8 operands, not " +
                       std::string(rt::dtypeName(x.dtype)));
  if (y.dtype != rt::DType::BF16)
    return unsupported("the grouped GEMM kernel writes a bf16 result, not " +
                       std::string(rt::dtypeName(y.dtype)));
  GroupedGemmSpec spec;
  // Quantized per expert: FP8 codes for the block-scaled kernel, NVFP4
  // codes for the NVFP4 one, or dequantized values for the BF16 one.
  const bool perExpertFp8 = g.readsPerExpertCodes();
  const bool mxfp8 =
      x.isQuantized() &&
      x.scheme(rt::Direction::Rowwise)->kind == rt::SchemeKind::Mxfp8;
  spec.operands = g.nvfp4Codes ? GroupedGemmSpec::Operands::Nvfp4
                  : mxfp8      ? GroupedGemmSpec::Operands::Mxfp8
                  : x.isQuantized() || perExpertFp8
                      ? GroupedGemmSpec::Operands::Fp8Block
                      : GroupedGemmSpec::Operands::BF16;
  if (perExpertFp8)
    spec.fp8Formats = {g.xScheme->element, g.wScheme->element};
  else if (spec.fp8())
    spec.fp8Formats = {x.scheme(rt::Direction::Rowwise)->element,
                       w.scheme(g.weightDirection())->element};
  spec.groups = w.shape[0];
  spec.n = y.shape[1];
  spec.k = x.shape[1];
  spec.weightColumnwise = g.weightColumnwise;
  // y's amax per expert from the epilogue, where a later kernel of the
  // entry would take it in a pass of its own (expertAmax finds it).
  const Kernel *self = nullptr;
  for (const Kernel &k : e.kernels)
    if (std::get_if<GroupedGemmKernel>(&k) == &g)
      self = &k;
  spec.outputAmax = self && laterTakesExpertAmax(e, *self, g.output, g.splits);
  // y quantized in the epilogue too (te-fuse-gemm-epilogue); or cast per
  // expert for a later grouped GEMM, whose record then takes the epilogue's
  // amaxes (a later amax pass over y, if any, runs as its own).
  const GroupedGemmKernel *caster =
      self && g.quantizedOutput < 0
          ? laterCastsPerExpert(e, *self, g.output, g.splits)
          : nullptr;
  if (g.quantizedOutput >= 0)
    spec.quantizeOutput = e.values[size_t(g.quantizedOutput)].rowwise;
  if (caster) {
    spec.quantizeOutput = *caster->xScheme;
    spec.outputAmax = true;
  }
  spec = spec.resolved();
  if (rt::Status st = checkGroupedGemm(spec); !st.isOk())
    return unsupported(st.message());
  rt::Expected<rt::KernelSpec> ks =
      engineLaunch(g.name, spec.kernelName(), emitGroupedGemm(spec),
                   groupedGemmSharedBytes(spec), spec.clusterSize());
  if (!ks)
    return ks.status();

  // The storage of the direction read: the data, and the scales of
  // quantized operands (x rowwise; w rowwise, or columnwise for dgrad).
  auto buffers = [&](int v, int dir) {
    const ValueBuffers &vb = out.values[size_t(v)];
    return e.values[size_t(v)].isQuantized()
               ? std::make_pair(vb.dir[dir].data, vb.dir[dir].scale)
               : std::make_pair(vb.tensor, -1);
  };
  auto [xData, xScale] = buffers(g.x, 0);
  auto [wData, wScale] = buffers(g.w, g.weightColumnwise ? 1 : 0);
  int splits = out.values[size_t(g.splits)].tensor;
  int result = out.values[size_t(g.output)].tensor;
  int bias = g.bias >= 0 ? out.values[size_t(g.bias)].tensor : -1;
  std::array<rt::TensorMapShape, 4> maps = groupedGemmMaps(spec, x.rows());

  KernelPlan kp;
  kp.name = g.name;
  int amaxX = -1, amaxW = -1; // NVFP4 codes: each expert's amaxes
  // Operands quantized per expert into workspaces first; the GEMM then
  // reads them (block-scaled FP8, NVFP4 codes or bf16 values), beside the
  // other operand's values where only one is.
  if (g.xScheme) {
    rt::Expected<PerExpertOperand> xq =
        quantizePerExpert(p, e, g, table, out, kp, g.x, *g.xScheme, false);
    if (!xq)
      return xq.status();
    xData = xq->data;
    xScale = xq->scales;
    if (g.nvfp4Codes)
      amaxX = xq->amax;
  }
  if (g.wScheme) {
    rt::Expected<PerExpertOperand> wq =
        quantizePerExpert(p, e, g, table, out, kp, g.w, *g.wScheme, true);
    if (!wq)
      return wq.status();
    wData = wq->data;
    wScale = wq->scales;
    if (g.nvfp4Codes)
      amaxW = wq->amax;
  }
  int yCodes = -1, yScales = -1;
  if (g.quantizedOutput >= 0) {
    const ValueBuffers &qb = out.values[size_t(g.quantizedOutput)];
    yCodes = qb.dir[0].data;
    yScales = qb.dir[0].scale;
    // Zero scale padding, as a quantize kernel's plan leaves it.
    if (scalesHavePadding(p, e.values[size_t(g.quantizedOutput)],
                          *spec.quantizeOutput, rt::Direction::Rowwise))
      kp.addFill(yScales);
  }
  // Added once nothing can fail, so that a plan left out (unsupported)
  // leaves no buffer that nothing computes: the caster's buffers under its
  // names, or y's amax under the name expertAmax looks for.
  int amaxY = -1, yScale = -1;
  if (caster) {
    // The caster's gathered scales and its zeroed record (which the
    // epilogue's amaxes fill), its codes and block scales under the names
    // quantizePerExpert looks for.
    std::tie(yScale, amaxY) = delayedScales(
        p, caster->name, "x", caster->xState, spec.groups, table, out, kp);
    // Sized as the caster's own cast of its tokens would size them.
    const GroupedRowsQuantizeSpec cast{*caster->xScheme, spec.groups, spec.n};
    const std::string name = perExpertName(*caster, y);
    yCodes = table.add(name, uint64_t(y.rows() * spec.n));
    yScales = table.add(name + "_block_scale_inv",
                        uint64_t(groupedRowsBlockScales(cast, y.rows()) * 4));
    // The padding columns zero, as the cast leaves them.
    if (groupedRowsBlockStride(cast, y.rows()) != y.rows())
      kp.addFill(yScales);
  } else if (spec.outputAmax) {
    amaxY = table.add(
        expertAmaxName(e, out, g.output, g.splits, spec.groups, false),
        uint64_t(spec.groups * 4));
    kp.addFill(amaxY);
  }
  ks->args = {
      rt::ArgDesc::tensorMap(xData, maps[0]),
      rt::ArgDesc::tensorMap(wData, maps[1]),
      // Block FP8 reads its x scales by TMA, MXFP8 through a
      // pointer (the kernel's sx).
      rt::ArgDesc::tensorMap(spec.fp8() && !spec.mxfp8() ? xScale : xData,
                             maps[2]),
      rt::ArgDesc::tensorMap(groupedGemmTmaStore(spec) ? result : xData,
                             maps[3]),
      rt::ArgDesc::ptr(wScale),
      // MXFP8's and NVFP4's x scales through a pointer (sx).
      rt::ArgDesc::ptr(spec.mxfp8() || spec.nvfp4() ? xScale : -1),
      rt::ArgDesc::ptr(splits), rt::ArgDesc::ptr(bias),
      rt::ArgDesc::ptr(result), rt::ArgDesc::i32(int32_t(x.rows())),
      // NVFP4: each expert's amaxes, its global scales.
      rt::ArgDesc::ptr(amaxX), rt::ArgDesc::ptr(amaxW), rt::ArgDesc::ptr(amaxY),
      // The epilogue's quantization of y: codes, scale_inv, eps.
      rt::ArgDesc::ptr(yCodes), rt::ArgDesc::ptr(yScales),
      rt::ArgDesc::f32(spec.quantizeOutput ? float(spec.quantizeOutput->eps)
                                           : 0.0f),
      // The codes' tensor map where they leave by TMA, else x's.
      spec.quantizeOutput && groupedGemmTmaCodes(spec)
          ? rt::ArgDesc::tensorMap(yCodes, groupedGemmCodesMap(spec, x.rows()))
          : rt::ArgDesc::tensorMap(xData, maps[0]),
      // Each expert's scale of the cast of y.
      rt::ArgDesc::ptr(yScale)};
  kp.addLaunch(std::move(*ks));
  for (int b : {xData, xScale, wData, wScale, splits, bias, result, amaxX,
                amaxW, amaxY, yCodes, yScales})
    kp.bytesMoved += table.bytes(b);
  kp.flops = uint64_t(2 * x.rows() * spec.n * spec.k);
  if (g.nvfp4Codes)
    kp.engine = "generated, NVFP4 operands";
  else if (g.readsPerExpertValues())
    kp.engine = "generated, dequantized operands";
  else
    kp.engine = gemmEngine(e, "generated", g.x, g.w, spec.mxfp8());
  return kp;
}

/// The wgrad of an MoE layer: dy and x quantized columnwise per expert into
/// workspaces in the grouped layout (with dy, each expert's bias gradient
/// through a partial-sum workspace), then one persistent launch of the
/// generated K-grouped GEMM over them.
rt::Expected<KernelPlan> planGroupedWgrad(const Program &p, const Entry &e,
                                          const GroupedWgradKernel &g,
                                          BufferTable &table,
                                          const EntryPlan &out) {
  const Value &dy = e.values[g.dy], &dw = e.values[g.output];
  int64_t m = dy.shape[0], n = dw.shape[1], k = dw.shape[2];
  int64_t groups = dw.shape[0];
  if (p.arch != "sm_90a")
    return rt::Status(rt::StatusCode::Unsupported,
                      g.name +
                          ": the grouped wgrad kernel is generated for "
                          "sm_90a (Hopper) only, the target is " +
                          p.arch);
  // FP8 codes in the grouped layout: block FP8, or per-tensor FP8 with one
  // scale per expert (an amax pass first, or delayed scaling's states, its
  // scale over the same blocks); else bf16 values (identity; MXFP8, NVFP4
  // and FP8 paired with another family dequantized; NVFP4's amax pass
  // first).
  const bool fp8 = rt::groupedWgradReadsCodes(g.dyScheme, g.xScheme);
  GroupedWgradSpec spec;
  spec.operands = fp8 ? GroupedGemmSpec::Operands::Fp8Block
                      : GroupedGemmSpec::Operands::BF16;
  if (fp8)
    spec.fp8Formats = {g.dyScheme.element, g.xScheme.element};
  spec.groups = groups;
  spec.n = n;
  spec.k = k;
  spec = spec.resolved();
  if (rt::Status st = checkGroupedWgrad(spec); !st.isOk())
    return rt::Status(rt::StatusCode::Unsupported,
                      g.name + ": " + st.message());
  rt::Expected<rt::KernelSpec> gemm =
      engineLaunch(g.name, spec.kernelName(), emitGroupedWgrad(spec),
                   groupedWgradSharedBytes(spec), 1);
  if (!gemm)
    return gemm.status();

  const int64_t capacity = groupedWgradCapacity(m, groups);
  const int64_t width = fp8 ? 1 : 2, blocks = capacity / 128;
  int splits = out.values[size_t(g.splits)].tensor;
  KernelPlan kp;
  kp.name = g.name;
  // Each operand into its grouped layout: [cols, capacity] data and (FP8)
  // [capacity/128][roundup(cols, 4)] scales.
  struct Layout {
    int data = -1, scales = -1;
  };
  auto quantize = [&](int value, const Scheme &scheme, int64_t cols,
                      int biasGrad) -> rt::Expected<Layout> {
    const Value &v = e.values[size_t(value)];
    GroupedQuantizeSpec qs{scheme, groups, cols, biasGrad >= 0};
    qs.fp8Values = !fp8 && (scheme.kind == SchemeKind::Fp8Block ||
                            scheme.kind == SchemeKind::Fp8Current ||
                            scheme.kind == SchemeKind::Fp8Delayed);
    if (rt::Status st = checkGroupedQuantize(qs); !st.isOk())
      return rt::Status(rt::StatusCode::Unsupported,
                        g.name + ": " + st.message());
    Layout l;
    l.data = table.add(g.name + "." + v.name + ".grouped",
                       uint64_t(cols * capacity * width));
    if (fp8)
      l.scales = table.add(g.name + "." + v.name + ".grouped_scale_inv",
                           uint64_t(blocks * ((cols + 3) / 4 * 4) * 4));
    int partial = biasGrad >= 0 ? table.add(g.name + ".bias_partial",
                                            uint64_t(blocks * cols * 4))
                                : -1;
    int amax = -1, record = -1;
    if (qs.delayed()) // each expert's scale; the pass records its amax
      std::tie(amax, record) = delayedScales(
          p, g.name, value == g.dy ? "dy" : "x",
          value == g.dy ? g.dyState : g.xState, groups, table, out, kp);
    else if (expertAmaxOf(qs) != ExpertAmax::None)
      amax = expertAmax(p, e, table, out, kp, value, g.splits, groups,
                        expertAmaxOf(qs) == ExpertAmax::Transformed);
    EmittedGroupedQuantize src = emitGroupedQuantize(qs);
    kp
        .addLaunch(quantizeLaunch(
            p, src.mainEntry, src.source, groupedQuantizeGrid(capacity, cols),
            kGroupedQuantizeThreads,
            {ArgDesc::ptr(out.values[size_t(value)].tensor), ArgDesc::i64(m),
             ArgDesc::i64(cols), ArgDesc::ptr(splits), ArgDesc::i64(capacity),
             ArgDesc::ptr(l.data), ArgDesc::ptr(l.scales),
             ArgDesc::f32(static_cast<float>(scheme.eps)),
             ArgDesc::ptr(partial), ArgDesc::ptr(amax),
             ArgDesc::i64(int64_t(p.random.seed)),
             ArgDesc::i64(int64_t(p.random.offset)), ArgDesc::ptr(record)}))
        .sharedBytes = groupedQuantizeSharedBytes(qs);
    kp.bytesMoved += table.bytes(out.values[size_t(value)].tensor) +
                     table.bytes(l.data) + table.bytes(l.scales) +
                     table.bytes(partial);
    if (biasGrad >= 0) {
      int db = out.values[size_t(biasGrad)].tensor;
      // Right after the quantize kernel, overlapping its last wave.
      kp.addLaunch(quantizeLaunch(p, src.biasEntry, src.source,
                                  groupedBiasGrid(groups, cols),
                                  kGroupedBiasThreads,
                                  {ArgDesc::ptr(partial), ArgDesc::i64(m),
                                   ArgDesc::i64(cols), ArgDesc::ptr(splits),
                                   ArgDesc::ptr(db)}))
          .overlapsPredecessor = true;
      kp.bytesMoved += table.bytes(partial) + table.bytes(db);
    }
    return l;
  };
  rt::Expected<Layout> a = quantize(g.dy, g.dyScheme, n, g.biasGrad);
  if (!a)
    return a.status();
  rt::Expected<Layout> b = quantize(g.x, g.xScheme, k, -1);
  if (!b)
    return b.status();

  std::array<rt::TensorMapShape, 5> maps = groupedWgradMaps(spec, capacity);
  int result = out.values[size_t(g.output)].tensor;
  gemm->args = {ArgDesc::tensorMap(a->data, maps[0]),
                ArgDesc::tensorMap(b->data, maps[1]),
                ArgDesc::tensorMap(fp8 ? a->scales : a->data, maps[2]),
                ArgDesc::tensorMap(fp8 ? b->scales : b->data, maps[3]),
                ArgDesc::tensorMap(
                    groupedWgradTmaStore(spec) ? result : a->data, maps[4]),
                ArgDesc::ptr(splits),
                ArgDesc::ptr(result),
                ArgDesc::i32(int32_t(m))};
  kp.addLaunch(std::move(*gemm));
  kp.bytesMoved += table.bytes(a->data) + table.bytes(a->scales) +
                   table.bytes(b->data) + table.bytes(b->scales) +
                   table.bytes(result);
  kp.flops = uint64_t(2 * m * n * k);
  kp.engine = "generated";
  return kp;
}

} // namespace te::cg::detail
