//===- FuseQuantize.cpp - te-fuse-quantize --------------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Quantize kernels are memory-bound: their cost is the bytes they move. Two
// quantizations of one tensor in two kernels read it twice; a bias gradient
// in a third reads it again. This pass groups, per block and per input
// value, every te.quantize and te.bias_grad into one te.fused_quantize.
// The group's ops depend only on the input, so the fused op can stand where
// the first of them stood and dominate every use of the ops it replaces.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialect/te/TeOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "te-fuse-quantize"

namespace mlir::te {
#define GEN_PASS_DEF_TEFUSEQUANTIZEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;

namespace {

/// The quantize-like ops of one input within one block, in block order.
struct Group {
  SmallVector<QuantizeOp> quantizes;
  SmallVector<BiasGradOp> biasGrads;
  Operation *first = nullptr;
};

/// Replaces `g` by one te.fused_quantize.
void fuse(Value input, Group &g) {
  OpBuilder b(g.first);
  // One result per distinct quantized type and delayed-scaling state;
  // duplicates share it.
  SmallVector<std::pair<Type, StringRef>> keys;
  SmallVector<unsigned> resultOf;
  bool anyState = false;
  for (QuantizeOp q : g.quantizes) {
    std::pair<Type, StringRef> key{q.getResult().getType(),
                                   q.getScalingState().value_or("")};
    anyState |= !key.second.empty();
    auto *it = llvm::find(keys, key);
    resultOf.push_back(it - keys.begin());
    if (it == keys.end())
      keys.push_back(key);
  }
  SmallVector<Type> types;
  SmallVector<StringRef> states;
  for (auto [t, state] : keys) {
    types.push_back(t);
    states.push_back(state);
  }
  bool withBias = !g.biasGrads.empty();
  if (withBias)
    types.push_back(g.biasGrads.front().getResult().getType());
  auto fused = FusedQuantizeOp::create(
      b, g.first->getLoc(), types, input, withBias,
      anyState ? b.getStrArrayAttr(states) : ArrayAttr());
  LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << g.quantizes.size()
                          << " quantization(s) and " << g.biasGrads.size()
                          << " bias gradient(s) -> one te.fused_quantize ("
                          << types.size() << " results) at "
                          << g.first->getLoc() << "\n");
  for (auto [q, idx] : llvm::zip(g.quantizes, resultOf)) {
    q.getResult().replaceAllUsesWith(fused.getResult(idx));
    q.erase();
  }
  for (BiasGradOp bg : g.biasGrads) {
    bg.getResult().replaceAllUsesWith(fused.getResults().back());
    bg.erase();
  }
}

struct TeFuseQuantizePass
    : mlir::te::impl::TeFuseQuantizePassBase<TeFuseQuantizePass> {
  void runOnOperation() override {
    // Collect first, rewrite after: rewriting while walking would invalidate
    // the walk.
    SmallVector<std::pair<Value, Group>> work;
    getOperation().walk([&](Block *block) {
      llvm::MapVector<Value, Group> groups;
      for (Operation &op : *block) {
        // A quantize of a row shard (amax_ranks) reduces its amax over the
        // ranks: it stays on its own.
        if (auto q = dyn_cast<QuantizeOp>(op); q && !q.getAmaxRanks()) {
          Group &g = groups[q.getInput()];
          g.quantizes.push_back(q);
          g.first = g.first ? g.first : &op;
        } else if (auto bg = dyn_cast<BiasGradOp>(op)) {
          Group &g = groups[bg.getInput()];
          g.biasGrads.push_back(bg);
          g.first = g.first ? g.first : &op;
        }
      }
      for (auto &[input, g] : groups)
        if (!g.quantizes.empty() &&
            g.quantizes.size() + g.biasGrads.size() >= 2)
          work.emplace_back(input, g);
    });
    for (auto &[input, g] : work)
      fuse(input, g);
  }
};

} // namespace
