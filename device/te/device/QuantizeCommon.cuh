//===- te/device/QuantizeCommon.cuh - Quantize kernel helpers ---*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Memory-access helpers of the generated quantize kernels
// (QuantizeKernel.cuh). Quantize kernels are memory-bound, so every byte
// should move in wide, coalesced accesses: the helpers here are the 16-byte
// read-only loads (ld.global.nc, no L1 allocation: each input byte is read
// exactly once) and the 8- and 16-byte stores.
//
// Device-only: unlike the numerics headers this file does not compile as
// host C++, so it is deliberately not part of the Device.cuh umbrella.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_QUANTIZECOMMON_CUH
#define TE_DEVICE_QUANTIZECOMMON_CUH

#include "te/device/Bf16.cuh"
#include "te/device/Fp8.cuh"
#include "te/device/Scales.cuh"

namespace te {
namespace dev {

/// Sixteen bytes as four words; our own type so NVRTC needs no vector
/// headers.
struct alignas(16) U32x4 {
  u32 x, y, z, w;
};

/// Two 32-bit words, for 8-byte shared-memory stores.
struct alignas(8) U32x2 {
  u32 x, y;
};

/// 16-byte load through the non-coherent path without L1 allocation: the
/// input is read-only for the kernel's lifetime and touched once.
__device__ __forceinline__ U32x4 loadGlobal16(const void *p) {
  U32x4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

__device__ __forceinline__ u16 loadGlobalU16(const u16 *p) {
  u16 v;
  asm("ld.global.nc.u16 %0, [%1];" : "=h"(v) : "l"(p));
  return v;
}

__device__ __forceinline__ void storeGlobal8(void *p, u32 lo, u32 hi) {
  asm volatile("st.global.v2.u32 [%0], {%1, %2};" ::"l"(p), "r"(lo), "r"(hi)
               : "memory");
}

__device__ __forceinline__ void storeGlobal16(void *p, U32x4 v) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x),
               "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

/// The 32-bit shared-memory address of `p`. NVRTC, unlike nvcc, keeps
/// shared-memory pointers 64 bits wide, so the address arithmetic of hot
/// shared accesses is 64-bit integer math unless it is done on this.
__device__ __forceinline__ u32 sharedAddress(const void *p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}

/// 16 bytes from shared memory at a 32-bit address (16-byte aligned).
__device__ __forceinline__ U32x4 loadShared16(u32 address) {
  U32x4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(address)
               : "memory");
  return v;
}

/// Asynchronous 16-byte global -> shared copy (cp.async, sm_80+): the tile
/// load needs no staging registers, which keeps the kernel's register count
/// low enough for four to five CTAs per SM. Complete with cpAsyncWaitAll().
__device__ __forceinline__ void cpAsync16(u32 sharedAddr, const void *gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(sharedAddr),
               "l"(gmem)
               : "memory");
}
__device__ __forceinline__ void cpAsync16(void *smem, const void *gmem) {
  cpAsync16(sharedAddress(smem), gmem);
}

__device__ __forceinline__ void cpAsyncWaitAll() {
  asm volatile("cp.async.wait_all;" ::: "memory");
}

/// Closes the group of this thread's cp.async copies issued since the last
/// commit (cpAsyncWaitPending waits for groups).
__device__ __forceinline__ void cpAsyncCommit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}

/// Waits until at most `n` (0..15) of this thread's committed cp.async
/// groups are still in flight. The PTX takes an immediate, so `n` must be a
/// constant after unrolling (the switch then folds to one instruction).
__device__ __forceinline__ void cpAsyncWaitPending(int n) {
  // clang-format off
#define TE_CP_ASYNC_WAIT(N)                                                    \
  case N: asm volatile("cp.async.wait_group " #N ";" ::: "memory"); break;
  switch (n) {
    TE_CP_ASYNC_WAIT(0) TE_CP_ASYNC_WAIT(1) TE_CP_ASYNC_WAIT(2)
    TE_CP_ASYNC_WAIT(3) TE_CP_ASYNC_WAIT(4) TE_CP_ASYNC_WAIT(5)
    TE_CP_ASYNC_WAIT(6) TE_CP_ASYNC_WAIT(7) TE_CP_ASYNC_WAIT(8)
    TE_CP_ASYNC_WAIT(9) TE_CP_ASYNC_WAIT(10) TE_CP_ASYNC_WAIT(11)
    TE_CP_ASYNC_WAIT(12) TE_CP_ASYNC_WAIT(13) TE_CP_ASYNC_WAIT(14)
  default: asm volatile("cp.async.wait_group 15;" ::: "memory");
  }
#undef TE_CP_ASYNC_WAIT
  // clang-format on
}

/// Element-wise max(acc, |w|) of two packed bf16 (or f16) values. Inputs
/// must be non-negative in `acc`; max.{bf16,f16}x2 returns the non-NaN
/// operand, so a NaN never enters `acc` (acc starts at +0) - the same rule
/// as amaxAccumulate, at one instruction per two elements.
template <bool F16> __device__ __forceinline__ u32 absMax2(u32 acc, u32 w) {
  u32 r, a = w & 0x7FFF7FFFu;
  if (F16)
    asm("max.f16x2 %0, %1, %2;" : "=r"(r) : "r"(acc), "r"(a));
  else
    asm("max.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(acc), "r"(a));
  return r;
}

/// absMax2 of bf16 pairs in one instruction: max.xorsign.abs takes each
/// half's larger magnitude (a NaN never wins, as in absMax2) but leaves its
/// sign bit the XOR of the operands' - clear the signs (& 0x7FFF7FFF) of the
/// accumulated result before reading it. For loops whose every instruction
/// counts (a GEMM epilogue's amax).
__device__ __forceinline__ u32 magnitudeMax2(u32 acc, u32 w) {
  u32 r;
  asm("max.xorsign.abs.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(acc), "r"(w));
  return r;
}

/// The low (even-address) and high bf16 of a packed pair, widened exactly.
__device__ __forceinline__ float bf16Lo(u32 pair) {
  return bitsToFloat(pair << 16);
}
__device__ __forceinline__ float bf16Hi(u32 pair) {
  return bitsToFloat(pair & 0xFFFF0000u);
}

/// Two codes of format `F`, `first` in the low byte.
template <Fp8Format F>
__device__ __forceinline__ u32 encodeFp8x2(float first, float second) {
  return F == Fp8Format::E4M3 ? u32(encodeE4M3x2(first, second))
                              : u32(encodeE5M2x2(first, second));
}

/// Four codes packed little-endian into a word: the quantized values
/// fl(v_i * mult_i).
template <Fp8Format F>
__device__ __forceinline__ u32 encodeFp8x4(float v0, float v1, float v2,
                                           float v3, float m0, float m1,
                                           float m2, float m3) {
  return encodeFp8x2<F>(mulRn(v0, m0), mulRn(v1, m1)) |
         (encodeFp8x2<F>(mulRn(v2, m2), mulRn(v3, m3)) << 16);
}

} // namespace dev
} // namespace te

#endif // TE_DEVICE_QUANTIZECOMMON_CUH
