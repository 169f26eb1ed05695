//===- Device.cpp - GPU, stream, buffers, kernels -------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#include "te/runtime/Device.h"

#include "CudaApi.h"

#include <algorithm>

namespace te::rt {

using detail::cuCheck;
using detail::DriverApi;

/// The loaded driver, or the Status explaining why there is none.
#define TE_DRIVER(api)                                                         \
  Expected<const DriverApi *> api##Loaded = detail::driverApi();               \
  if (!api##Loaded)                                                            \
    return api##Loaded.status();                                               \
  const DriverApi &api = **api##Loaded;

std::string DeviceInfo::arch() const {
  std::string a = "sm_" + std::to_string(major) + std::to_string(minor);
  return major == 9 && minor == 0 ? a + "a" : a;
}

struct Device::State {
  DeviceInfo info;
  CUdevice device = 0;
  CUcontext context = nullptr;
  ~State() {
    if (Expected<const DriverApi *> api = detail::driverApi(); api && context)
      (*api)->cuDevicePrimaryCtxRelease(device);
  }
};

Expected<int> Device::count() {
  TE_DRIVER(api);
  int n = 0;
  TE_RETURN_IF_ERROR(
      cuCheck(api, api.cuDeviceGetCount(&n), "cuDeviceGetCount"));
  return n;
}

Expected<Device> Device::open(int ordinal) {
  TE_DRIVER(api);
  int n = 0;
  TE_RETURN_IF_ERROR(
      cuCheck(api, api.cuDeviceGetCount(&n), "cuDeviceGetCount"));
  if (ordinal < 0 || ordinal >= n)
    return Status(StatusCode::NoDevice, "GPU " + std::to_string(ordinal) +
                                            " requested, " + std::to_string(n) +
                                            " present");
  auto st = std::make_shared<State>();
  TE_RETURN_IF_ERROR(
      cuCheck(api, api.cuDeviceGet(&st->device, ordinal), "cuDeviceGet"));
  TE_RETURN_IF_ERROR(
      cuCheck(api, api.cuDevicePrimaryCtxRetain(&st->context, st->device),
              "cuDevicePrimaryCtxRetain"));
  TE_RETURN_IF_ERROR(
      cuCheck(api, api.cuCtxSetCurrent(st->context), "cuCtxSetCurrent"));
  DeviceInfo &info = st->info;
  info.ordinal = ordinal;
  info.driverVersion = api.driverVersion;
  char name[256] = {0};
  api.cuDeviceGetName(name, sizeof(name) - 1, st->device);
  info.name = name;
  api.cuDeviceGetAttribute(
      &info.major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, st->device);
  api.cuDeviceGetAttribute(
      &info.minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, st->device);
  api.cuDeviceGetAttribute(
      &info.smCount, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, st->device);
  api.cuDeviceGetAttribute(&info.l2Bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
                           st->device);
  Device d;
  d.state_ = std::move(st);
  return d;
}

const DeviceInfo &Device::info() const { return state_->info; }
void *Device::contextHandle() const { return state_->context; }

Status Device::makeCurrent() const {
  TE_DRIVER(api);
  return cuCheck(api, api.cuCtxSetCurrent(state_->context), "cuCtxSetCurrent");
}

Status Device::synchronize() const {
  TE_DRIVER(api);
  return cuCheck(api, api.cuCtxSynchronize(), "cuCtxSynchronize");
}

//===----------------------------------------------------------------------===//
// Stream
//===----------------------------------------------------------------------===//

Expected<Stream> Stream::create(const Device &device) {
  TE_DRIVER(api);
  TE_RETURN_IF_ERROR(device.makeCurrent());
  Stream s;
  CUstream h = nullptr;
  TE_RETURN_IF_ERROR(cuCheck(
      api, api.cuStreamCreate(&h, CU_STREAM_NON_BLOCKING), "cuStreamCreate"));
  s.stream_ = h;
  return s;
}

Stream Stream::borrow(void *handle) {
  Stream s;
  s.stream_ = handle;
  s.owned_ = false;
  return s;
}

Stream::Stream(Stream &&o) noexcept : stream_(o.stream_), owned_(o.owned_) {
  o.stream_ = nullptr;
}
Stream &Stream::operator=(Stream &&o) noexcept {
  std::swap(stream_, o.stream_);
  std::swap(owned_, o.owned_);
  return *this;
}
Stream::~Stream() {
  if (stream_ && owned_)
    if (Expected<const DriverApi *> api = detail::driverApi())
      (*api)->cuStreamDestroy(static_cast<CUstream>(stream_));
}

Status Stream::synchronize() const {
  TE_DRIVER(api);
  return cuCheck(api, api.cuStreamSynchronize(static_cast<CUstream>(stream_)),
                 "cuStreamSynchronize");
}

//===----------------------------------------------------------------------===//
// DeviceBuffer
//===----------------------------------------------------------------------===//

Expected<DeviceBuffer> DeviceBuffer::allocate(size_t bytes) {
  TE_DRIVER(api);
  DeviceBuffer b;
  if (bytes == 0)
    return b;
  CUdeviceptr p = 0;
  TE_RETURN_IF_ERROR(cuCheck(api, api.cuMemAlloc(&p, bytes), "cuMemAlloc"));
  b.ptr_ = p;
  b.size_ = bytes;
  return b;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer &&o) noexcept
    : ptr_(o.ptr_), size_(o.size_) {
  o.ptr_ = 0;
  o.size_ = 0;
}
DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&o) noexcept {
  std::swap(ptr_, o.ptr_);
  std::swap(size_, o.size_);
  return *this;
}
DeviceBuffer::~DeviceBuffer() {
  if (ptr_)
    if (Expected<const DriverApi *> api = detail::driverApi())
      (*api)->cuMemFree(ptr_);
}

static Status checkRange(size_t bytes, size_t size, const char *what) {
  if (bytes <= size)
    return Status::ok();
  return Status(StatusCode::InvalidArgument,
                std::string(what) + " of " + std::to_string(bytes) +
                    " bytes exceeds the buffer's " + std::to_string(size));
}

Status DeviceBuffer::copyFromHost(const void *src, size_t bytes,
                                  const Stream &s) {
  TE_DRIVER(api);
  TE_RETURN_IF_ERROR(checkRange(bytes, size_, "copy"));
  return cuCheck(api,
                 api.cuMemcpyHtoDAsync(ptr_, src, bytes,
                                       static_cast<CUstream>(s.handle())),
                 "cuMemcpyHtoDAsync");
}

Status DeviceBuffer::copyToHost(void *dst, size_t bytes,
                                const Stream &s) const {
  TE_DRIVER(api);
  TE_RETURN_IF_ERROR(checkRange(bytes, size_, "copy"));
  return cuCheck(api,
                 api.cuMemcpyDtoHAsync(dst, ptr_, bytes,
                                       static_cast<CUstream>(s.handle())),
                 "cuMemcpyDtoHAsync");
}

Status DeviceBuffer::copyFrom(const DeviceBuffer &src, size_t bytes,
                              const Stream &s) {
  TE_DRIVER(api);
  TE_RETURN_IF_ERROR(checkRange(bytes, size_, "copy"));
  TE_RETURN_IF_ERROR(checkRange(bytes, src.size_, "copy"));
  return cuCheck(api,
                 api.cuMemcpyDtoDAsync(ptr_, src.ptr_, bytes,
                                       static_cast<CUstream>(s.handle())),
                 "cuMemcpyDtoDAsync");
}

Status DeviceBuffer::copyFromDevice(uint64_t src, size_t bytes,
                                    const Stream &s) {
  TE_DRIVER(api);
  TE_RETURN_IF_ERROR(checkRange(bytes, size_, "copy"));
  return cuCheck(api,
                 api.cuMemcpyDtoDAsync(ptr_, static_cast<CUdeviceptr>(src),
                                       bytes,
                                       static_cast<CUstream>(s.handle())),
                 "cuMemcpyDtoDAsync");
}

Status DeviceBuffer::fill(uint8_t byte, const Stream &s) {
  TE_DRIVER(api);
  return cuCheck(
      api,
      api.cuMemsetD8Async(ptr_, byte, size_, static_cast<CUstream>(s.handle())),
      "cuMemsetD8Async");
}

//===----------------------------------------------------------------------===//
// TensorView
//===----------------------------------------------------------------------===//

int64_t TensorView::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

int64_t TensorView::bytes() const {
  int64_t n = numElements();
  return dtype == DType::E2M1x2 ? (n + 1) / 2 : n * dtypeSize(dtype);
}

Expected<TensorView> TensorView::of(const DeviceBuffer &buffer,
                                    std::vector<int64_t> shape, DType dtype) {
  TensorView v{buffer.devicePtr(), std::move(shape), dtype};
  for (int64_t d : v.shape)
    if (d < 0)
      return Status(StatusCode::InvalidArgument,
                    "a tensor view cannot have a negative dimension");
  if (uint64_t(v.bytes()) > buffer.size())
    return Status(StatusCode::InvalidArgument,
                  "a view of " + std::to_string(v.bytes()) +
                      " bytes does not fit a buffer of " +
                      std::to_string(buffer.size()));
  return v;
}

//===----------------------------------------------------------------------===//
// Kernel
//===----------------------------------------------------------------------===//

Expected<Kernel> Kernel::load(const std::vector<char> &cubin,
                              const std::string &entry) {
  TE_DRIVER(api);
  CUmodule mod = nullptr;
  TE_RETURN_IF_ERROR(cuCheck(api, api.cuModuleLoadData(&mod, cubin.data()),
                             "cuModuleLoadData"));
  Kernel k;
  k.module_ = std::shared_ptr<void>(mod, [](void *m) {
    if (Expected<const DriverApi *> a = detail::driverApi())
      (*a)->cuModuleUnload(static_cast<CUmodule>(m));
  });
  CUfunction fn = nullptr;
  CUresult r = api.cuModuleGetFunction(&fn, mod, entry.c_str());
  if (r == CUDA_ERROR_NOT_FOUND)
    return Status(StatusCode::InvalidArgument,
                  "kernel entry '" + entry +
                      "' not found in the module (missing extern \"C\"?)");
  TE_RETURN_IF_ERROR(cuCheck(api, r, "cuModuleGetFunction"));
  k.function_ = fn;
  int binary = 0; // major * 10 + minor of the code loaded
  TE_RETURN_IF_ERROR(cuCheck(
      api,
      api.cuFuncGetAttribute(&binary, CU_FUNC_ATTRIBUTE_BINARY_VERSION, fn),
      "cuFuncGetAttribute(binary version)"));
  k.canOverlap_ = binary >= 90;
  return k;
}

Status Kernel::allowSharedBytes(unsigned sharedBytes) const {
  if (sharedBytes <= sharedLimit_)
    return Status::ok();
  TE_DRIVER(api);
  TE_RETURN_IF_ERROR(cuCheck(
      api,
      api.cuFuncSetAttribute(static_cast<CUfunction>(function_),
                             CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                             sharedBytes),
      "cuFuncSetAttribute(max dynamic shared memory)"));
  sharedLimit_ = sharedBytes;
  return Status::ok();
}

namespace {
/// The launch attribute of thread-block clusters of `cluster` CTAs.
CUlaunchAttribute clusterAttribute(Dim3 cluster) {
  CUlaunchAttribute a = {};
  a.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  a.value.clusterDim.x = cluster.x;
  a.value.clusterDim.y = cluster.y;
  a.value.clusterDim.z = cluster.z;
  return a;
}

/// A cuLaunchKernelEx configuration with `numAttrs` of `attrs`, which must
/// outlive it.
CUlaunchConfig launchConfig(Dim3 grid, Dim3 block, unsigned sharedBytes,
                            CUstream stream, CUlaunchAttribute *attrs,
                            unsigned numAttrs) {
  CUlaunchConfig config = {};
  config.gridDimX = grid.x;
  config.gridDimY = grid.y;
  config.gridDimZ = grid.z;
  config.blockDimX = block.x;
  config.blockDimY = block.y;
  config.blockDimZ = block.z;
  config.sharedMemBytes = sharedBytes;
  config.hStream = stream;
  config.attrs = attrs;
  config.numAttrs = numAttrs;
  return config;
}
} // namespace

Status Kernel::launch(Dim3 grid, Dim3 block, unsigned sharedBytes,
                      const Stream &s, void **args, Dim3 cluster,
                      bool overlapsPredecessor) const {
  TE_DRIVER(api);
  CUfunction fn = static_cast<CUfunction>(function_);
  TE_RETURN_IF_ERROR(allowSharedBytes(sharedBytes));
  CUstream stream = static_cast<CUstream>(s.handle());
  CUlaunchAttribute attrs[2] = {};
  unsigned numAttrs = 0;
  if (cluster.x * cluster.y * cluster.z > 1)
    attrs[numAttrs++] = clusterAttribute(cluster);
  if (overlapsPredecessor && canOverlap_) {
    CUlaunchAttribute &a = attrs[numAttrs++];
    a.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    a.value.programmaticStreamSerializationAllowed = 1;
  }
  if (numAttrs > 0) {
    CUlaunchConfig config =
        launchConfig(grid, block, sharedBytes, stream, attrs, numAttrs);
    return cuCheck(api, api.cuLaunchKernelEx(&config, fn, args, nullptr),
                   "cuLaunchKernelEx");
  }
  return cuCheck(api,
                 api.cuLaunchKernel(fn, grid.x, grid.y, grid.z, block.x,
                                    block.y, block.z, sharedBytes, stream, args,
                                    nullptr),
                 "cuLaunchKernel");
}

Expected<int> Kernel::maxActiveClusters(Dim3 block, unsigned sharedBytes,
                                        Dim3 cluster, unsigned gridX) const {
  TE_DRIVER(api);
  TE_RETURN_IF_ERROR(allowSharedBytes(sharedBytes));
  CUlaunchAttribute attr = clusterAttribute(cluster);
  CUlaunchConfig config =
      launchConfig({gridX, 1, 1}, block, sharedBytes, nullptr, &attr, 1);
  int n = 0;
  TE_RETURN_IF_ERROR(
      cuCheck(api,
              api.cuOccupancyMaxActiveClusters(
                  &n, static_cast<CUfunction>(function_), &config),
              "cuOccupancyMaxActiveClusters"));
  return n;
}

Expected<Dim3> Kernel::persistentGrid(const Device &device, Dim3 block,
                                      unsigned sharedBytes,
                                      Dim3 cluster) const {
  unsigned sms = static_cast<unsigned>(device.info().smCount);
  unsigned size = cluster.x * cluster.y * cluster.z;
  unsigned ctas = sms;
  if (size > 1) {
    Expected<int> clusters =
        maxActiveClusters(block, sharedBytes, cluster, sms);
    if (!clusters)
      return clusters.status();
    ctas = std::min(ctas, static_cast<unsigned>(*clusters) * size);
  }
  size = std::max(size, 1u);
  return Dim3{std::max(ctas / size, 1u) * size, 1, 1};
}

//===----------------------------------------------------------------------===//
// EventTimer
//===----------------------------------------------------------------------===//

Expected<EventTimer> EventTimer::create() {
  TE_DRIVER(api);
  EventTimer t;
  CUevent a = nullptr, b = nullptr;
  TE_RETURN_IF_ERROR(
      cuCheck(api, api.cuEventCreate(&a, CU_EVENT_DEFAULT), "cuEventCreate"));
  t.start_ = a;
  TE_RETURN_IF_ERROR(
      cuCheck(api, api.cuEventCreate(&b, CU_EVENT_DEFAULT), "cuEventCreate"));
  t.stop_ = b;
  return t;
}

EventTimer::EventTimer(EventTimer &&o) noexcept
    : start_(o.start_), stop_(o.stop_) {
  o.start_ = o.stop_ = nullptr;
}

EventTimer::~EventTimer() {
  if (Expected<const DriverApi *> api = detail::driverApi()) {
    if (start_)
      (*api)->cuEventDestroy(static_cast<CUevent>(start_));
    if (stop_)
      (*api)->cuEventDestroy(static_cast<CUevent>(stop_));
  }
}

Status EventTimer::start(const Stream &s) {
  TE_DRIVER(api);
  return cuCheck(api,
                 api.cuEventRecord(static_cast<CUevent>(start_),
                                   static_cast<CUstream>(s.handle())),
                 "cuEventRecord");
}

Status EventTimer::stop(const Stream &s) {
  TE_DRIVER(api);
  return cuCheck(api,
                 api.cuEventRecord(static_cast<CUevent>(stop_),
                                   static_cast<CUstream>(s.handle())),
                 "cuEventRecord");
}

Expected<float> EventTimer::elapsedMillis() const {
  TE_DRIVER(api);
  TE_RETURN_IF_ERROR(
      cuCheck(api, api.cuEventSynchronize(static_cast<CUevent>(stop_)),
              "cuEventSynchronize"));
  float ms = 0;
  TE_RETURN_IF_ERROR(
      cuCheck(api,
              api.cuEventElapsedTime(&ms, static_cast<CUevent>(start_),
                                     static_cast<CUevent>(stop_)),
              "cuEventElapsedTime"));
  return ms;
}

//===----------------------------------------------------------------------===//
// Graph
//===----------------------------------------------------------------------===//

Expected<Graph> Graph::capture(const Stream &s,
                               const std::function<Status()> &enqueue) {
  TE_DRIVER(api);
  CUstream stream = static_cast<CUstream>(s.handle());
  TE_RETURN_IF_ERROR(cuCheck(
      api,
      api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
      "cuStreamBeginCapture"));
  Status ran = enqueue();
  CUgraph graph = nullptr;
  Status ended = cuCheck(api, api.cuStreamEndCapture(stream, &graph),
                         "cuStreamEndCapture");
  if (!ran.isOk() || !ended.isOk()) {
    if (graph)
      api.cuGraphDestroy(graph);
    return ran.isOk() ? ended : ran;
  }
  CUgraphExec exec = nullptr;
  Status inst = cuCheck(api, api.cuGraphInstantiateWithFlags(&exec, graph, 0),
                        "cuGraphInstantiateWithFlags");
  api.cuGraphDestroy(graph);
  if (!inst.isOk())
    return inst;
  Graph g;
  g.exec_ = exec;
  return g;
}

Graph::Graph(Graph &&o) noexcept : exec_(o.exec_) { o.exec_ = nullptr; }

Graph &Graph::operator=(Graph &&o) noexcept {
  std::swap(exec_, o.exec_);
  return *this;
}

Graph::~Graph() {
  if (!exec_)
    return;
  if (Expected<const detail::DriverApi *> api = detail::driverApi())
    (*api)->cuGraphExecDestroy(static_cast<CUgraphExec>(exec_));
}

Status Graph::launch(const Stream &s) const {
  TE_DRIVER(api);
  return cuCheck(api,
                 api.cuGraphLaunch(static_cast<CUgraphExec>(exec_),
                                   static_cast<CUstream>(s.handle())),
                 "cuGraphLaunch");
}

} // namespace te::rt
