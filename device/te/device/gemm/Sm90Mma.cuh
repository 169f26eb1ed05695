//===- te/device/gemm/Sm90Mma.cuh - Hopper MMA building blocks -*- CUDA -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// What every generated Hopper GEMM of the GEMM engine shares, on CuTe's SM90
// atoms: the CUTLASS/CuTe includes, the shared-memory descriptors of
// 128-byte-swizzled K-major and MN-major tiles (the layouts the TMA writes
// with CU_TENSOR_MAP_SWIZZLE_128B), the warpgroup MMA of a 64 x N tile, and
// named barriers.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_GEMM_SM90MMA_CUH
#define TE_DEVICE_GEMM_SM90MMA_CUH

#include "te/device/gemm/CutlassShim.cuh"

#include "te/device/Bf16.cuh"

#include <cute/arch/cluster_sm90.hpp>
#include <cute/arch/copy_sm90_desc.hpp>
#include <cute/arch/copy_sm90_tma.hpp>
#include <cute/arch/mma_sm90_desc.hpp>
#include <cute/arch/mma_sm90_gmma.hpp>
#include <cute/numeric/integer_sequence.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>

namespace te {
namespace gemm {

namespace GMMA = cute::SM90::GMMA;

/// The tile geometry of the engine's Hopper kernels: 128-row A tiles,
/// BlockN-row B tiles, one 128-byte swizzle row of K per stage (128 FP8 or
/// 64 BF16), two math warpgroups of 64 rows each and a producer warpgroup.
/// FP8: `AE5M2` / `BE5M2` say which operand's codes are E5M2 (else E4M3).
template <bool Fp8, int Stages, int BlockN, bool AE5M2 = false,
          bool BE5M2 = false>
struct Sm90TileShape {
  static_assert(Fp8 || (!AE5M2 && !BE5M2), "E5M2 operands are FP8");
  static constexpr bool kFp8Block = Fp8;
  static constexpr bool kAE5M2 = AE5M2, kBE5M2 = BE5M2;
  static constexpr int kBlockM = 128;
  static constexpr int kBlockN = BlockN;
  static constexpr int kElementBytes = Fp8 ? 1 : 2;
  static constexpr int kBlockK = 128 / kElementBytes;
  static constexpr int kStages = Stages;
  static constexpr int kMathWarpgroups = 2;
  static constexpr int kThreads = 128 * (kMathWarpgroups + 1);
  /// Accumulator floats per thread: a 64 x kBlockN tile per warpgroup.
  static constexpr int kAccum = kBlockN / 2;
  static constexpr int kStageA = kBlockM * 128; // bytes
  static constexpr int kStageB = kBlockN * 128; // bytes
};

namespace detail {

using namespace cute;

/// The kernel's shared memory from the dynamic array `raw`, its start
/// rounded up to 1024 bytes (the 128-byte swizzle's alignment). Offsetting
/// the array itself (no integer round trip) keeps the compiler aware that
/// every pointer derived from it is shared memory: 32-bit shared loads and
/// addresses instead of generic ones.
__device__ __forceinline__ unsigned char *alignedShared(unsigned char *raw) {
  const uint32_t addr = cast_smem_ptr_to_uint(raw);
  return raw + ((1024u - (addr & 1023u)) & 1023u);
}

/// A warpgroup-MMA shared-memory descriptor from its two 32-bit words.
__device__ __forceinline__ uint64_t gmmaDesc(uint32_t lo, uint32_t hi) {
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

/// The descriptor of a tile at shared address `smem` (1024-aligned swizzle
/// atoms): the start address (16-byte units, 14 bits) and the leading byte
/// offset `lbo` in the low word; 1024 bytes between 8-row groups and the
/// 128-byte swizzle in the high word (GmmaDescriptor's fields). The start
/// address is the CTA's own: a shared address of a CTA in a cluster carries
/// its rank above bit 18, which must not reach the offset field.
__device__ __forceinline__ uint64_t sw128Desc(uint32_t smem, uint32_t lbo) {
  GmmaDescriptor d;
  d.bitfield.start_address_ = 0;
  d.bitfield.leading_byte_offset_ = 0;
  d.bitfield.stride_byte_offset_ = 1024 >> 4;
  d.bitfield.base_offset_ = 0;
  d.bitfield.layout_type_ = static_cast<uint8_t>(GMMA::LayoutType::B128);
  return gmmaDesc(((smem >> 4) & 0x3FFFu) | ((lbo >> 4) << 16),
                  static_cast<uint32_t>(d.desc_ >> 32));
}

/// A K-major operand tile whose rows are 128 bytes, 128-byte swizzled,
/// 8-row groups 1024 bytes apart (the leading byte offset is unused: 1).
__device__ __forceinline__ uint64_t kMajorSw128Desc(uint32_t smem) {
  return sw128Desc(smem, 16);
}

/// An MN-major operand tile (BF16 B read along N: its rows are K) in
/// 128-byte swizzle atoms of 64 MN elements x 8 K rows (1024 bytes, one TMA
/// box row each): 8-row K groups 1024 bytes apart, the next 64 MN elements
/// `mnAtomBytes` further (CuTe's canonical ((8,n),(8,k)):((1,LBO),(8,SBO))
/// in 16-byte units).
__device__ __forceinline__ uint64_t mnMajorSw128Desc(uint32_t smem,
                                                     uint32_t mnAtomBytes) {
  return sw128Desc(smem, mnAtomBytes);
}

/// `d` for the tile `bytes` further on (a multiple of 16). The start
/// address field is the low 14 bits, which an SM's shared memory (< 256
/// KB) never overflows, so a 32-bit add of the low word suffices: the loop
/// computes no descriptor field by field (measured: that bit work was a
/// third of the FP8 kernel's instructions).
__device__ __forceinline__ uint64_t descPlus(uint64_t d, uint32_t bytes) {
  return gmmaDesc(static_cast<uint32_t>(d) + (bytes >> 4),
                  static_cast<uint32_t>(d >> 32));
}

template <class Mma, int N, size_t... I>
__device__ __forceinline__ void gmma(uint64_t a, uint64_t b, float (&d)[N],
                                     GMMA::ScaleOut scaleD,
                                     index_sequence<I...>) {
  Mma::fma(a, b, d[I]..., scaleD);
}

/// A CuTe MMA atom and the major-ness of its B tile in shared memory.
template <class Op, bool BMnMajor> struct Gmma : Op {
  static constexpr bool kBMnMajor = BMnMajor;
};

/// The FP8 warpgroup MMA of a 64 x 128 tile for the operands' formats (E5M2
/// where the flag is set, else E4M3): an E5M2 gradient meets E4M3 weights
/// or activations in the backward of TE's hybrid format.
template <bool AE5M2, bool BE5M2> struct Fp8Mma64x128;
template <> struct Fp8Mma64x128<false, false> {
  using type = SM90::GMMA::MMA_64x128x32_F32E4M3E4M3_SS_TN<>;
};
template <> struct Fp8Mma64x128<true, false> {
  using type = SM90::GMMA::MMA_64x128x32_F32E5M2E4M3_SS_TN<>;
};
template <> struct Fp8Mma64x128<false, true> {
  using type = SM90::GMMA::MMA_64x128x32_F32E4M3E5M2_SS_TN<>;
};

/// The warpgroup MMA of a 64 x BlockN tile: A K-major; B K-major, or (BF16,
/// `BMnMajor`) MN-major - a [K, N] tile whose rows are N, 64-element atoms
/// BlockN / 64 times 8 KB apart (a 64-row K slab each). FP8: `AE5M2` /
/// `BE5M2` pick each operand's format. `F16`: f16 operands instead of bf16
/// (the NVFP4 kernel's exact products of codes and block scales), K-major.
template <bool Fp8, int BlockN, bool BMnMajor = false, bool AE5M2 = false,
          bool BE5M2 = false, bool F16 = false>
struct MmaFor;
template <bool AE5M2, bool BE5M2>
struct MmaFor<true, 128, false, AE5M2, BE5M2> {
  using type = Gmma<typename Fp8Mma64x128<AE5M2, BE5M2>::type, false>;
};
template <bool BMnMajor> struct MmaFor<false, 128, BMnMajor> {
  using type =
      Gmma<SM90::GMMA::MMA_64x128x16_F32BF16BF16_SS<
               GMMA::Major::K, BMnMajor ? GMMA::Major::MN : GMMA::Major::K>,
           BMnMajor>;
};
template <bool BMnMajor> struct MmaFor<false, 256, BMnMajor> {
  using type =
      Gmma<SM90::GMMA::MMA_64x256x16_F32BF16BF16_SS<
               GMMA::Major::K, BMnMajor ? GMMA::Major::MN : GMMA::Major::K>,
           BMnMajor>;
};
template <> struct MmaFor<false, 128, false, false, false, true> {
  using type = Gmma<
      SM90::GMMA::MMA_64x128x16_F32F16F16_SS<GMMA::Major::K, GMMA::Major::K>,
      false>;
};
template <> struct MmaFor<false, 256, false, false, false, true> {
  using type = Gmma<
      SM90::GMMA::MMA_64x256x16_F32F16F16_SS<GMMA::Major::K, GMMA::Major::K>,
      false>;
};

/// Bytes between the 64-element MN atoms of an MN-major B stage (one TMA
/// box of 64 K rows x 128 bytes each).
constexpr int kMnAtomBytes = 64 * 128;

/// The warpgroup MMAs of one 128-byte K slab (four 32-byte steps) of the
/// tiles described by `a` (the warpgroup's 64 rows) and `b` into `d`,
/// zeroing it first when `zeroFirst`, committed as one batch. A K step is
/// 32 bytes along a K-major row, or 16 rows (2 KB) of an MN-major B.
template <class Mma, int N>
__device__ __forceinline__ void mmaSlab(uint64_t a, uint64_t b, float (&d)[N],
                                        bool zeroFirst) {
#pragma unroll
  for (int i = 0; i < N; ++i)
    warpgroup_fence_operand(d[i]);
  warpgroup_arrive();
#pragma unroll
  for (int k = 0; k < 4; ++k)
    gmma<Mma>(descPlus(a, 32 * k),
              descPlus(b, Mma::kBMnMajor ? 16 * 128 * k : 32 * k), d,
              zeroFirst && k == 0 ? GMMA::ScaleOut::Zero : GMMA::ScaleOut::One,
              make_index_sequence<N>{});
  warpgroup_commit_batch();
}

/// One warpgroup MMA of a single K step (32 bytes of a K-major row) into a
/// fresh `d` (zeroed by the MMA), committed as its own batch: the MXFP8
/// kernels promote every 32-element step (docs/Numerics.md §5.4).
template <class Mma, int N>
__device__ __forceinline__ void mmaStep(uint64_t a, uint64_t b, float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
    warpgroup_fence_operand(d[i]);
  warpgroup_arrive();
  gmma<Mma>(a, b, d, GMMA::ScaleOut::Zero, make_index_sequence<N>{});
  warpgroup_commit_batch();
}

/// One step of a promotion pipeline over two partial-sum accumulators (the
/// FP8 kernels' pipelinedFp8Blocks and pipelinedWgradBlocks): block kb's
/// MMAs, into `cur`, are in flight. With `Next` (cute::true_type),
/// `issueNext(nxt)` first issues block kb + 1's into `nxt`; then the step
/// waits for kb and `promote(cur)` folds it into the running total (and
/// hands its stage back), while kb + 1 runs; with `Next` it waits for
/// kb + 1 before returning, so that no step writes an accumulator an MMA
/// in flight still writes - ptxas then keeps the MMAs asynchronous (else
/// C7514), as long as the callers name the accumulators statically.
template <class Next, int N, class IssueNext, class Promote>
__device__ __forceinline__ void
pipelineStep(Next, float (&cur)[N], float (&nxt)[N], IssueNext issueNext,
             Promote promote) {
  if constexpr (Next::value) {
    issueNext(nxt);
    warpgroup_wait<1>();
  } else {
    warpgroup_wait<0>();
  }
#pragma unroll
  for (int i = 0; i < N; ++i)
    warpgroup_fence_operand(cur[i]);
  promote(cur);
#pragma unroll
  for (int i = 0; i < N; ++i)
    warpgroup_fence_operand(cur[i]);
  if constexpr (Next::value)
    warpgroup_wait<0>();
}

/// Nothing to do while a slab's MMAs run.
struct NoWork {
  __device__ __forceinline__ void operator()() const {}
};

/// The BF16 reduction of a tile over `slabs` K slabs of the stage ring
/// (the kernels' config C: kStages, kStageA, kStageB), accumulated in place
/// into `total` (zeroed by the first slab). Once a slab's MMAs are issued,
/// `whileMmas()` runs (NVFP4: the warp converts its part of the next
/// stage; before the wait, so that it overlaps the previous slab's MMAs as
/// well: +3-5 % on the H100), then the previous slab's stage goes back once
/// its MMAs are done, this slab's staying in flight; the last stage goes
/// back once every MMA is done.
template <class C, class Mma, int N, class Release, class Work = NoWork>
__device__ __forceinline__ void
bf16Slabs(uint64_t descA0, uint64_t descB0,
          cutlass::arch::ClusterTransactionBarrier *full, int slabs,
          float (&total)[N], int &stage, uint32_t &phase, Release release,
          Work whileMmas = {}) {
  auto previous = [](int s) { return s == 0 ? C::kStages - 1 : s - 1; };
  for (int kb = 0; kb < slabs; ++kb) {
    full[stage].wait(phase);
    const bool first = kb == 0;
    mmaSlab<Mma>(descPlus(descA0, stage * C::kStageA),
                 descPlus(descB0, stage * C::kStageB), total, first);
    whileMmas();
    warpgroup_wait<1>();
    if (!first)
      release(previous(stage));
    if (++stage == C::kStages) {
      stage = 0;
      phase ^= 1;
    }
  }
  warpgroup_wait<0>();
#pragma unroll
  for (int i = 0; i < N; ++i)
    warpgroup_fence_operand(total[i]);
  if (slabs > 0)
    release(previous(stage));
}

} // namespace detail
} // namespace gemm
} // namespace te

#endif // TE_DEVICE_GEMM_SM90MMA_CUH
