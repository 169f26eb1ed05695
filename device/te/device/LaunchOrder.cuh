//===- te/device/LaunchOrder.cuh - Overlapping launches ---------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Programmatic dependent launch (sm_90): a kernel the plan launches with
// KernelSpec::overlapsPredecessor may be scheduled while the kernel before
// it in the stream still runs, so its launch and its CTAs' start-up hide
// behind that kernel's last wave. It must call waitForPredecessor() before
// it reads anything the predecessor writes (or writes anything it reads);
// the wait returns once the predecessor has finished and its memory is
// visible. The predecessor calls releaseDependents() to let that schedule
// begin before it ends (without it, the dependent starts at its end, as
// an ordinary launch does). Both are no-ops before sm_90 and on the host.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DEVICE_LAUNCHORDER_CUH
#define TE_DEVICE_LAUNCHORDER_CUH

#include "te/device/Common.cuh"

namespace te {
namespace dev {

/// Lets the next kernel of the stream, if launched to overlap this one, be
/// scheduled now (its CTAs then wait in waitForPredecessor).
TE_HD void releaseDependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/// Waits until the previous kernel of the stream has finished and its
/// writes are visible (immediately for an ordinary launch).
TE_HD void waitForPredecessor() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

} // namespace dev
} // namespace te

#endif // TE_DEVICE_LAUNCHORDER_CUH
