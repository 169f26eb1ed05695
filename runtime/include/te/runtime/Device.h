//===- te/runtime/Device.h - GPU, stream, buffers, kernels ------*- C++ -*-===//
//
// Part of tejit. Plain C++17 interface: no CUDA header needed to use it.
//
//===----------------------------------------------------------------------===//
//
// RAII handles over the CUDA driver API (loaded lazily). Device::open on a
// machine without a driver returns StatusCode::NoDriver with a message that
// says so; nothing aborts. Copies and launches are stream-ordered and never
// synchronise implicitly.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_DEVICE_H
#define TE_RUNTIME_DEVICE_H

#include "te/formats/Scheme.h"
#include "te/runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace te::rt {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int major = 0, minor = 0; ///< compute capability
  int smCount = 0;
  int l2Bytes = 0;
  int driverVersion = 0;
  /// The NVRTC architecture for this device: "sm_90a" on Hopper (to get
  /// wgmma/setmaxnreg), "sm_XY" elsewhere.
  std::string arch() const;
};

/// The primary context of one GPU, current on the thread that opened it.
class Device {
public:
  static Expected<Device> open(int ordinal = 0);
  /// Number of GPUs, or the error (no driver).
  static Expected<int> count();

  const DeviceInfo &info() const;
  /// Makes this device's context current on the calling thread.
  Status makeCurrent() const;
  Status synchronize() const;
  void *contextHandle() const; ///< CUcontext

private:
  struct State;
  std::shared_ptr<State> state_;
};

class Stream {
public:
  static Expected<Stream> create(const Device &device);
  /// A stream someone else created and destroys (a framework's current
  /// stream, e.g. torch.cuda.current_stream().cuda_stream; 0 is the legacy
  /// default stream): work is enqueued on it, the handle is not destroyed.
  static Stream borrow(void *handle);
  Stream(Stream &&) noexcept;
  Stream &operator=(Stream &&) noexcept;
  Stream(const Stream &) = delete;
  ~Stream();
  Status synchronize() const;
  void *handle() const { return stream_; } ///< CUstream

private:
  Stream() = default;
  void *stream_ = nullptr;
  bool owned_ = true;
};

/// A device allocation freed when the handle dies.
class DeviceBuffer {
public:
  static Expected<DeviceBuffer> allocate(size_t bytes);
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer &&) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  ~DeviceBuffer();

  uint64_t devicePtr() const { return ptr_; } ///< CUdeviceptr
  size_t size() const { return size_; }

  Status copyFromHost(const void *src, size_t bytes, const Stream &s);
  Status copyToHost(void *dst, size_t bytes, const Stream &s) const;
  Status copyFrom(const DeviceBuffer &src, size_t bytes, const Stream &s);
  /// Copies `bytes` from device address `src` (memory this buffer does not
  /// own: a framework's tensor).
  Status copyFromDevice(uint64_t src, size_t bytes, const Stream &s);
  Status fill(uint8_t byte, const Stream &s);

private:
  uint64_t ptr_ = 0;
  size_t size_ = 0;
};

/// A typed, shaped view of device memory (row-major, contiguous). It owns
/// nothing: the DeviceBuffer (or caller allocation) must outlive it.
struct TensorView {
  uint64_t ptr = 0;
  std::vector<int64_t> shape;
  DType dtype = DType::F32;

  int64_t numElements() const;
  /// Bytes covered; E2M1x2 counts two elements per byte.
  int64_t bytes() const;
  /// A view of `buffer` as `shape` x `dtype`, or an error if it does not
  /// fit (or a dimension is negative).
  static Expected<TensorView> of(const DeviceBuffer &buffer,
                                 std::vector<int64_t> shape, DType dtype);
};

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

/// A kernel loaded from a CUBIN (the module stays loaded while any copy of
/// the handle lives).
class Kernel {
public:
  static Expected<Kernel> load(const std::vector<char> &cubin,
                               const std::string &entry);
  /// Launches with `args` pointing at each argument's value, as
  /// cuLaunchKernel expects. Raises the dynamic shared-memory limit first
  /// when `sharedBytes` exceeds 48 KiB. A `cluster` of more than one CTA
  /// launches thread-block clusters (cuLaunchKernelEx; Hopper).
  /// `overlapsPredecessor`: a programmatic dependent launch, which may start
  /// while the stream's previous kernel runs; the kernel must wait for it
  /// (te/device/LaunchOrder.cuh) before touching its results. A kernel
  /// compiled for an older architecture ignores the flag (launched in
  /// order, as its griddepcontrol calls compile to nothing).
  Status launch(Dim3 grid, Dim3 block, unsigned sharedBytes, const Stream &s,
                void **args, Dim3 cluster = {},
                bool overlapsPredecessor = false) const;
  /// How many clusters of `cluster` CTAs can be resident at once with this
  /// block and shared memory (cuOccupancyMaxActiveClusters).
  Expected<int> maxActiveClusters(Dim3 block, unsigned sharedBytes,
                                  Dim3 cluster, unsigned gridX) const;
  /// The grid of a persistent launch on `device`: one CTA per SM, or, with
  /// clusters, as many whole clusters as can be resident at once (a
  /// cluster's CTAs share a GPC, so fewer may fit than there are SMs).
  Expected<Dim3> persistentGrid(const Device &device, Dim3 block,
                                unsigned sharedBytes, Dim3 cluster) const;
  void *functionHandle() const { return function_; } ///< CUfunction

private:
  Status allowSharedBytes(unsigned sharedBytes) const;
  std::shared_ptr<void> module_;
  void *function_ = nullptr;
  /// Compiled for sm_90 or newer: launches may overlap their predecessor.
  bool canOverlap_ = false;
  /// Dynamic shared memory the function is opted in to; any use sets the
  /// attribute, since static + dynamic may pass 48 KB below 48 KB dynamic.
  mutable unsigned sharedLimit_ = 0;
};

/// A CUDA graph of the work one function enqueues on a stream, captured
/// once (no work runs then) and launched as often as wanted. Only device
/// addresses are baked in: kernels that read scalars from device memory
/// (an optimizer's lr and step) see new values on every launch.
class Graph {
public:
  /// Captures what `enqueue` puts on `s` (thread-local capture mode).
  static Expected<Graph> capture(const Stream &s,
                                 const std::function<Status()> &enqueue);
  Graph(Graph &&) noexcept;
  Graph &operator=(Graph &&) noexcept;
  Graph(const Graph &) = delete;
  ~Graph();
  Status launch(const Stream &s) const;

private:
  Graph() = default;
  void *exec_ = nullptr; ///< CUgraphExec
};

/// Times stream work with CUDA events.
class EventTimer {
public:
  static Expected<EventTimer> create();
  EventTimer(EventTimer &&) noexcept;
  EventTimer(const EventTimer &) = delete;
  ~EventTimer();
  Status start(const Stream &s);
  Status stop(const Stream &s);
  /// Milliseconds between start and stop (synchronises on stop).
  Expected<float> elapsedMillis() const;

private:
  EventTimer() = default;
  void *start_ = nullptr, *stop_ = nullptr;
};

} // namespace te::rt

#endif // TE_RUNTIME_DEVICE_H
