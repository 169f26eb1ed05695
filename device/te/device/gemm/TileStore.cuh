//===- te/device/gemm/TileStore.cuh - Tiles out by TMA store -*- CUDA -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// How a math warpgroup's output tile leaves the grouped GEMM kernels
// (GroupedGemmSm90.cuh: bf16 y; GroupedWgradSm90.cuh: fp32 dW): through
// 64-row x 128-byte boxes in shared memory, stored by TMA. Stored from
// registers instead, a warp writes 8 rows of a few bytes each per store,
// one L2 sector a row; that stalled the math warps on the load/store unit's
// queue ("lg throttle" in Nsight Compute) - docs/Performance.md.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_GEMM_TILESTORE_CUH
#define TE_DEVICE_GEMM_TILESTORE_CUH

#include "te/device/gemm/Sm90Mma.cuh"

namespace te {
namespace gemm {
namespace detail {

/// One output box: 64 rows of 128 bytes (64 bf16 or 32 fp32 columns).
constexpr int kTileStoreBoxBytes = 64 * 128;

/// storeTileThroughShared's `extra` when nothing is added (not even +0,
/// which would turn a -0 accumulator into +0).
struct NoExtra {};
template <class E> struct AddsExtra { static constexpr bool value = true; };
template <> struct AddsExtra<NoExtra> { static constexpr bool value = false; };

/// storeTileThroughShared's `seen` when nothing watches the stored values.
struct NoSeen {
  __device__ __forceinline__ void operator()(unsigned) const {}
};

/// Stores a warpgroup's 64 rows x BlockN columns of accumulators `total`
/// (the warpgroup MMA layout: this thread's rows rowInWg and rowInWg + 8,
/// its columns 8j + colInTile and the next, accumulator j * 4 + 2h + e)
/// as bf16 (or fp32 with `F32`), plus `extra(j, col)` (a float2 added to
/// the pair at column col; NoExtra: nothing), at (col0, row0) of the tensor
/// map `tm`. bf16: `seen(pair)` is called with each packed pair stored (the
/// output's amax, GroupedGemmSm90.cuh).
///
/// The tile goes in parts of one box width, each written into box
/// p % Boxes (128-byte swizzle: 16-byte chunk c of row r at c ^ (r mod 8),
/// so a warp's stores spread over the 32 banks), fenced for the async
/// proxy and stored by TMA from one thread (columns past the map's end are
/// clipped). Before a box is written again, that thread waits until the
/// store that last read it has (cp.async.bulk.wait_group.read: with two
/// boxes the previous part's store may still run - but not at a tile's
/// first part, since the previous tile may have ended on either box). Named
/// barrier 1 + WG orders the warpgroup around it. Columns from colEnd on are
/// not written; parts wholly past it are not stored.
template <int WG, int BlockN, int Boxes, bool F32, int N, class Extra,
          class Seen = NoSeen>
__device__ __forceinline__ void
storeTileThroughShared(const float (&total)[N], unsigned char *boxes,
                       const cute::TmaDescriptor *tm, int col0, int row0,
                       int colEnd, int wgThread, int lane, int rowInWg,
                       int colInTile, Extra extra, Seen seen = Seen{}) {
  constexpr int kPartCols = F32 ? 32 : 64;
  constexpr int kParts = BlockN / kPartCols;
  constexpr int kGroupsPerPart = kPartCols / 8;
  static_assert(BlockN % kPartCols == 0 && N == BlockN / 2,
                "whole box-wide parts of a 64-row accumulator tile");
  static_assert(Boxes >= 1 && Boxes <= kParts, "1 box up to one a part");
  auto warpgroupSync = [] {
    asm volatile("bar.sync %0, 128;" ::"r"(1 + WG) : "memory");
  };
#pragma unroll
  for (int p = 0; p < kParts; ++p) {
    if (col0 + p * kPartCols >= colEnd) // the rest lies wholly past colEnd
      break;
    unsigned char *box = boxes + (p % Boxes) * kTileStoreBoxBytes;
    if (wgThread == 0) {
      if (p == 0)
        cute::tma_store_wait<0>();
      else
        cute::tma_store_wait<Boxes - 1>();
    }
    warpgroupSync();
#pragma unroll
    for (int jj = 0; jj < kGroupsPerPart; ++jj) {
      const int j = p * kGroupsPerPart + jj;
      const int col = col0 + j * 8 + colInTile;
      if (col >= colEnd)
        continue;
      float2 e = make_float2(0.f, 0.f);
      if constexpr (AddsExtra<Extra>::value)
        e = extra(j, col);
      // This thread's pair: 8 bytes at jj * 32 + (lane % 4) * 8 of the row
      // (fp32), or 4 bytes at jj * 16 + (lane % 4) * 4 (bf16).
      const int chunk = F32 ? 2 * jj + (lane % 4) / 2 : jj;
      const int within = F32 ? (lane % 2) * 8 : (lane % 4) * 4;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = rowInWg + 8 * h;
        unsigned char *at = box + r * 128 + ((chunk ^ (r % 8)) * 16) + within;
        float x = total[j * 4 + 2 * h], y = total[j * 4 + 2 * h + 1];
        if constexpr (AddsExtra<Extra>::value)
          x += e.x, y += e.y;
        if constexpr (F32)
          *reinterpret_cast<float2 *>(at) = make_float2(x, y);
        else {
          const unsigned pair = dev::floatToBF16x2(x, y);
          seen(pair);
          *reinterpret_cast<unsigned *>(at) = pair;
        }
      }
    }
    // The writes visible to the async proxy (a compiler barrier too: CuTe's
    // tma_store_fence has no memory clobber).
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    warpgroupSync();
    if (wgThread == 0) {
      cute::SM90_TMA_STORE_2D::copy(tm, box, col0 + p * kPartCols, row0);
      cute::tma_store_arrive();
    }
  }
}

/// Waits, in its destructor, for the TMA stores `issuer` started to
/// complete: a kernel's stores are done before it ends.
struct DrainTileStores {
  bool issuer;
  __device__ ~DrainTileStores() {
    if (issuer)
      asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  }
};

} // namespace detail
} // namespace gemm
} // namespace te

#endif // TE_DEVICE_GEMM_TILESTORE_CUH
