//===- te/device/gemm/GroupedGemmConfig.cuh - Kernel shape --*- CUDA -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The compile-time configuration of one generated grouped GEMM kernel
// (GroupedGemmSm90.cuh): tile, cluster, stage ring, operand kinds, and the
// shared-memory layout derived from them. Codegen's GroupedGemmEmitter
// instantiates it and checks kSharedBytes against its own count.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_GEMM_GROUPEDGEMMCONFIG_CUH
#define TE_DEVICE_GEMM_GROUPEDGEMMCONFIG_CUH

#include "te/device/gemm/Nvfp4Steps.cuh"
#include "te/device/gemm/Sm90Mma.cuh"
#include "te/device/gemm/TileStore.cuh"

namespace te {
namespace gemm {

/// One instantiation's compile-time shape. N, K and G are the layer's; only
/// the split sizes and M_total vary between calls. Cluster 2: the two CTAs
/// of a cluster compute the same rows and adjacent column blocks (always of
/// one expert) and each loads half of the x tile for both (TMA multicast),
/// which cuts the tile traffic from L2 by a quarter to a third; ClusterM 2
/// doubles that along M (below).
template <bool Fp8Block, int BlockN, int Cluster, int Stages, int N_, int K_,
          int Groups_, bool WeightColumnwise = false, bool XE5M2 = false,
          bool WE5M2 = false, int ClusterM = 1, int BandUnits = 1,
          int OutBoxes = 1, bool Mx = false, bool Fp4 = false,
          int RawStages = 0>
struct GroupedGemmConfig
    : Sm90TileShape<Fp8Block, Stages, BlockN, XE5M2, WE5M2> {
  using Shape = Sm90TileShape<Fp8Block, Stages, BlockN, XE5M2, WE5M2>;
  using Shape::kBlockK, Shape::kBlockM, Shape::kBlockN, Shape::kStageA,
      Shape::kStageB, Shape::kStages;
  /// W is a [N, G·K] matrix (a stack's FP8 columnwise storage): expert g's
  /// reduction is columns g·K .. g·K + K - 1; or (BF16) the stack [G·K, N]
  /// itself, read MN-major: expert g's reduction is rows g·K .. g·K + K - 1.
  static constexpr bool kWeightColumnwise = WeightColumnwise;
  static constexpr bool kWeightMnMajor = WeightColumnwise && !Fp8Block;
  /// CTAs of a cluster along N (sharing the x tile) and along M (with
  /// ClusterM = 2, two row tiles of one expert sharing the W tile: a 2 x 2
  /// cluster loads a quarter of each operand tile per CTA; an expert's row
  /// tiles are padded to pairs, the pad tile computing rows it never
  /// stores).
  static constexpr int kCluster = Cluster;
  static constexpr int kClusterM = ClusterM;
  static constexpr int kClusterSize = Cluster * ClusterM;
  /// The rows of a work item's tiles: one row tile, or a pair.
  static constexpr int kRowUnit = kBlockM * ClusterM;
  /// Row units per band of the schedule (locate): the work items of a band
  /// are walked row unit first, so the CTAs working at one time share a few
  /// W tiles and a band of x rows that stay in L2. 1: row by row.
  static constexpr int kBandUnits = BandUnits;
  static constexpr int kN = N_, kK = K_, kGroups = Groups_;
  static constexpr int kKBlocks = (kK + kBlockK - 1) / kBlockK;
  static constexpr int kNBlocks = (kN + kBlockN - 1) / kBlockN;
  /// The x scales of one stage: TMA reads a box whose start is 16-byte
  /// aligned, so kBlockM + 4 floats from the row rounded down to a multiple
  /// of 4 (a 128-byte aligned slot each).
  static constexpr int kScaleBox = kBlockM + 4;
  /// MXFP8 (both operands 1x32 E8M0 blocks along K): the stage's scales as
  /// fp32, [4 K steps][128 x rows] then [4][128 W rows] - decoded once by
  /// the scale warp, not by every math thread at every K step.
  static constexpr bool kMx = Mx;
  /// NVFP4 (both operands 1x16 E4M3 blocks along K, Nvfp4Steps.cuh): the
  /// stages hold f16 tiles (kBlockK = 64, as BF16's); the packed codes of
  /// a stage - kRawA bytes of x then kBlockN x 32 of W - arrive by TMA in a
  /// ring of their own, kRawStages deep, which the converting warps read
  /// and free: the loads run that far ahead of the conversion, which the f16
  /// ring (the math warpgroups hold two of its stages) could not afford.
  static constexpr bool kFp4 = Fp4;
  static constexpr int kRawA = Fp4 ? Shape::kBlockM * 32 : 0;
  static constexpr int kRawStages = Fp4 ? RawStages : 0;
  static constexpr bool kScaleTma = Fp8Block && !Mx;
  static constexpr int kStageSA =
      Fp4  ? kRawA + BlockN * 32
      : Mx ? 2 * 4 * 128 * 4
           : (Fp8Block ? (kScaleBox * 4 + 127) / 128 * 128 : 0);
  /// Stages of the kStageSA areas: the scale stages' (one a stage) or the
  /// packed-code ring's.
  static constexpr int kSAStages = Fp4 ? RawStages : Stages;
  /// Bytes between the rows of an MXFP8 scale matrix ([rows][K/32] E8M0).
  static constexpr int kMxScaleStride = K_ / 32;
  /// Arrivals that fill a stage: the TMA thread's, or (MXFP8) that and
  /// every lane of the scale warp that publishes it, or (NVFP4) every lane
  /// of the warps that convert it, each after its stores.
  static constexpr int kFullArrivals = Mx    ? 1 + 32
                                       : Fp4 ? 32 * detail::kFp4Converters
                                             : 1;
  /// Barriers: full and empty a stage, and (NVFP4) full and empty a stage
  /// of the packed-code ring.
  static constexpr int kBarriers = 2 * Stages + 2 * kRawStages;
  /// Registers a thread after the warpgroups' reallocation: the math
  /// warpgroups' accumulators (NVFP4: and their share of the conversion),
  /// the producer's TMA issue or (NVFP4) its warps' conversion. Together at
  /// most the CTA's pool, 168 a thread at 384 threads (ptxas's allocation for
  /// one CTA an SM): a larger request waits for registers forever.
  static constexpr int kMathRegisters = Fp4 ? 208 : 232;
  static constexpr int kProducerRegisters = Fp4 ? 88 : 40;
  static_assert(Shape::kMathWarpgroups * 128 * kMathRegisters +
                        128 * kProducerRegisters <=
                    Shape::kThreads * 168,
                "the warpgroups' registers exceed the CTA's");
  /// Arrivals of one math warpgroup that free a stage: its thread 0 once
  /// the stage's MMAs are done, or (MXFP8, whose promotions read the
  /// stage's scales after the MMAs) each of its warps.
  static constexpr int kReleasesPerWarpgroup = Mx ? 4 : 1;
  /// Row stride of the weight scales: roundup(ceil(K/128), 4), or, read
  /// columnwise, roundup(G·K/128, 4).
  static constexpr int kSwStride =
      ((WeightColumnwise ? kGroups * kK / 128 : (kK + 127) / 128) + 3) / 4 * 4;
  static constexpr int kTableBytes = 2 * 4 * (kGroups + 1);
  /// Tiles leave through shared memory and TMA stores (rows of bf16 whose
  /// 16-byte TMA stride needs N a multiple of 8): a warpgroup's 64 rows in
  /// 64-column parts, 128-byte swizzled boxes of 8 KB (TileStore.cuh). The
  /// 4-byte global stores of the register epilogue had throttled the
  /// load/store unit (Nsight Compute: "lg throttle" stalls, five times
  /// DeepGEMM's L2 write requests). OutBoxes 1: one box a warpgroup, each
  /// part waiting for the previous part's store to read it, which leaves 16
  /// KB more for the stage ring (FP8: a sixth stage); 2: a part's store
  /// runs while the next is written.
  static constexpr bool kTmaStore = N_ % 8 == 0;
  /// The epilogue's FP8 codes of y (Epilogue::kBlockQuant) leave by TMA too,
  /// a 64 x 128-byte box a block, where their rows' stride (N bytes) keeps
  /// the TMA's 16-byte alignment.
  static constexpr bool kTmaCodes = kTmaStore && N_ % 16 == 0;
  static constexpr int kOutBoxes = OutBoxes;
  static constexpr int kOutBytes =
      kTmaStore ? 2 * kOutBoxes * detail::kTileStoreBoxBytes : 0;
  /// Dynamic shared memory: the stage ring (1024-aligned for the swizzle),
  /// the output boxes, the x scales, the barriers, the per-expert tables.
  static constexpr int kSharedBytes = kStages * (kStageA + kStageB) +
                                      kSAStages * kStageSA + kOutBytes +
                                      kBarriers * 8 + kTableBytes + 1024;

  static_assert(Fp8Block ? kBlockN == 128 : (kBlockN == 128 || kBlockN == 256),
                "tile widths: FP8 128 (partial sums and total: two "
                "accumulators), BF16 128 or 256");
  static_assert(Cluster == 1 || (Cluster == 2 && kNBlocks % 2 == 0),
                "a 2-CTA cluster pairs column blocks: their count must be "
                "even");
  static_assert(ClusterM == 1 || (ClusterM == 2 && !kWeightMnMajor),
                "row-tile pairs share a K-major W tile (not the BF16 stack "
                "read along N)");
  static_assert(!Fp8Block || kBlockK == 128, "one FP8 scale block per stage");
  static_assert(!Mx || (Fp8Block && !WeightColumnwise && Cluster == 1 &&
                        ClusterM == 1 && Stages >= 3),
                "MXFP8: FP8 data, both operands read rowwise, one CTA a "
                "cluster, three stages or more (a scale warp's wait on a "
                "stage tells phases apart by parity only)");
  static_assert(!Fp4 || (!Fp8Block && !Mx && !WeightColumnwise &&
                         Cluster == 1 && ClusterM == 1 && kK % 64 == 0 &&
                         Stages >= 3 && RawStages >= 2),
                "NVFP4: f16 tiles, both operands read rowwise, one CTA a "
                "cluster, K a multiple of 64, three f16 stages (the math "
                "warpgroups hold two) and two packed-code stages or more");
  static_assert(BandUnits >= 1, "a band holds at least one row unit");
  static_assert(OutBoxes == 1 || OutBoxes == 2,
                "a warpgroup stores through one or two output boxes");
  static_assert(!WeightColumnwise || kK % kBlockK == 0,
                "a columnwise weight holds whole K blocks per expert (FP8: "
                "128x128 tiles; BF16: 64-row slabs)");
  static_assert(kSharedBytes <= 232448, "more shared memory than an SM has");
};

} // namespace gemm
} // namespace te

#endif // TE_DEVICE_GEMM_GROUPEDGEMMCONFIG_CUH
