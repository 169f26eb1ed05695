//===- te/formats/Sharding.h - row shards of a quantized tensor -*- C++ -*-===//
//
// Part of tejit. Plain C++17, no MLIR and no CUDA.
//
//===----------------------------------------------------------------------===//
//
// A tensor sharded along its first dimension over R ranks (FSDP): rank r
// holds rows [r * m, (r + 1) * m) of the R*m x K tensor. The one home of
// the rules for gathering quantized shards (docs/Numerics.md §16): which
// shards can be quantized on their own and gathered into exactly the
// quantization of the whole tensor, and where each storage buffer of a
// shard lands in the whole tensor's buffer. te.all_gather's verifier, the
// program checks, the plan builder, the CPU backend and the device's
// unpack kernel all follow it.
//
//===----------------------------------------------------------------------===//

#ifndef TE_FORMATS_SHARDING_H
#define TE_FORMATS_SHARDING_H

#include "te/formats/Scheme.h"

#include <string>
#include <vector>

namespace te::rt {

/// Why direction `d` of a shard of `shardRows` rows (of an R*shardRows x K
/// tensor) cannot be quantized on its own and gathered into the whole
/// tensor's quantization, or "". Scaling blocks that run down the rows
/// (columnwise blocks, 2-D tiles, NVFP4's Hadamard transform) must not
/// cross a shard boundary; stochastic rounding draws by element index, so a
/// shard's draws would differ from the whole tensor's.
std::string validateRowShard(const Scheme &s, Direction d, int64_t shardRows);

/// Schemes whose scale depends on the whole tensor's amax (per-tensor FP8,
/// NVFP4's tensor scale): their shards must be quantized with the amax
/// reduced over every rank, and their recorded amax is the reduced one.
inline bool needsRankAmax(const Scheme &s) {
  return s.isPerTensor() || s.kind == SchemeKind::Nvfp4;
}

/// Whether the columnwise direction of `s` is the rowwise one rearranged,
/// bit for bit: the data the K x M transpose of the rowwise data (or the
/// same bytes where the target stores it untransposed), the scales the
/// transpose of the rowwise scales, the same amax. True for FP8 block
/// 128x128 (a tile scales the same elements either way) and per-tensor FP8.
/// A gather of both directions then sends only the rowwise copy and derives
/// the columnwise one on each rank, halving the traffic.
bool columnwiseDerivesFromRowwise(const Scheme &s);

/// The directions (Direction bits) a gather whose result holds `whole`
/// directions reads from the shard: the same, except that a columnwise copy
/// derivable from the rowwise one is derived unless `sendColumnwise`.
/// `rowwise` / `columnwise`: the schemes of the directions (null if absent).
unsigned shardDirectionsRead(const Scheme *rowwise, const Scheme *columnwise,
                             unsigned whole, bool sendColumnwise);

/// Where one storage buffer (data, scale_inv or amax) of a shard sits in
/// the whole tensor's buffer. Both are 2-D row-major buffers (storageFor).
struct ShardPiece {
  enum class Axis : uint8_t {
    Whole, ///< one value for the tensor (a scale, an amax): every rank's
           ///< copy is the same, the whole tensor's is rank 0's
    Rows,  ///< the tensor's rows run down the buffer's rows
    Cols,  ///< ... along the buffer's columns (a transposed layout)
  };
  Axis axis = Axis::Whole;
  /// Buffer rows (Rows) or columns (Cols) one shard fills; the shard
  /// buffer's extent past it is padding. Rank r's piece starts at r *
  /// valid in the whole tensor's buffer, and what follows rank R-1's
  /// piece is padding (zero).
  int64_t valid = 0;
};

/// The piece of `buffer` (one of storageFor(s, d, shardRows, k)'s buffers:
/// 0 data, 1 scale_inv, 2 amax) of a shard of `shardRows` rows. Requires
/// validateRowShard(s, d, shardRows) == "".
ShardPiece shardPiece(const Scheme &s, Direction d, int buffer,
                      int64_t shardRows, int64_t k,
                      const Target &target = Target::sm90());

/// A buffer seen as bytes for gathering: rank r's shard buffer is `rows` x
/// `shardRowBytes`, of which the first `validBytes` of each row are its
/// piece; the whole tensor's buffer is `rows` x `wholeRowBytes`, and byte
/// (i, j) of it is byte (i, j mod validBytes) of rank j / validBytes, or 0
/// past the last rank. A Rows piece is one row of the whole buffer.
struct GatherView {
  int64_t rows = 0, shardRowBytes = 0, validBytes = 0, wholeRowBytes = 0;
  bool whole = false; ///< a Whole piece: rank 0's buffer is copied as is
};
GatherView gatherView(const ShardPiece &piece, const BufferDesc &shard,
                      const BufferDesc &whole);

//===----------------------------------------------------------------------===//
// Master shards (docs/Numerics.md §17): the row-major elements of a tensor
// split into R contiguous 1-D pieces at any offsets, as a distributed
// optimizer shards an FP32 master weight; each rank quantizes its piece
// straight into the whole tensor's layout.
//===----------------------------------------------------------------------===//

/// Why direction `d` of scheme `s` cannot be quantized from master shards
/// bit-identically to the whole tensor, or "". Amaxes that span ranks are
/// reduced, so every block shape works (and delayed scaling records the
/// whole tensor's amax); what does not is a value that mixes elements of
/// several ranks (NVFP4's Hadamard transform columnwise).
std::string validateMasterShards(const Scheme &s, Direction d);

/// Why shard sizes `sizes` cannot split a tensor of `elements` elements, or
/// "": each holds at least one element and together they hold all.
std::string validateShardSizes(const std::vector<int64_t> &sizes,
                               int64_t elements);

/// The shard sizes of one process per rank: rank r holds the row-major
/// elements [offsets[r], offsets[r + 1]).
std::vector<int64_t> shardSizes(const std::vector<int64_t> &offsets);

/// Why `offsets` cannot place one shard per process (R >= 2 ranks, R + 1
/// ascending offsets from 0 to `elements`, each rank's shard in the first
/// elements of a buffer of `capacity` elements), or "".
std::string validateRankOffsets(const std::vector<int64_t> &offsets,
                                int64_t elements, int64_t capacity);

} // namespace te::rt

#endif // TE_FORMATS_SHARDING_H
