//===- Collective.cpp - host rendezvous and lazily loaded NCCL ------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#include "te/runtime/Collective.h"

#include "NcclApi.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace te::rt {

HostCollective::~HostCollective() = default;

Status HostCollective::allReduceMax(float *values, size_t count) {
  std::vector<uint8_t> all;
  TE_RETURN_IF_ERROR(allGather(values, count * sizeof(float), all));
  for (int r = 0; r < ranks(); ++r)
    for (size_t i = 0; i < count; ++i) {
      float v;
      std::memcpy(&v, all.data() + (size_t(r) * count + i) * sizeof(float),
                  sizeof(float));
      values[i] = v > values[i] ? v : values[i];
    }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// FileCollective
//===----------------------------------------------------------------------===//

Expected<std::unique_ptr<FileCollective>>
FileCollective::create(const std::string &dir, int rank, int ranks,
                       double timeoutSeconds) {
  if (ranks < 1 || rank < 0 || rank >= ranks)
    return Status(StatusCode::InvalidArgument,
                  "rank " + std::to_string(rank) + " of " +
                      std::to_string(ranks) + " ranks does not exist");
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Status(StatusCode::IoError,
                  "rendezvous directory '" + dir + "' does not exist");
  std::unique_ptr<FileCollective> c(new FileCollective());
  c->dir_ = dir;
  c->rank_ = rank;
  c->ranks_ = ranks;
  c->timeout_ = timeoutSeconds;
  return c;
}

FileCollective::~FileCollective() = default;

Status FileCollective::allGather(const void *in, size_t bytes,
                                 std::vector<uint8_t> &out) {
  uint64_t call = calls_++;
  auto path = [&](uint64_t n, int r) {
    return dir_ + "/c" + std::to_string(n) + "." + std::to_string(r);
  };
  std::string mine = path(call, rank_);
  std::string tmp = mine + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(static_cast<const char *>(in), std::streamsize(bytes));
    if (!f)
      return Status(StatusCode::IoError, "cannot write '" + tmp + "'");
  }
  if (std::rename(tmp.c_str(), mine.c_str()) != 0)
    return Status(StatusCode::IoError, "cannot rename '" + tmp + "'");

  out.assign(bytes * size_t(ranks_), 0);
  auto start = std::chrono::steady_clock::now();
  std::vector<bool> got(size_t(ranks_), false);
  int missing = ranks_;
  while (missing > 0) {
    for (int r = 0; r < ranks_; ++r) {
      if (got[size_t(r)])
        continue;
      std::ifstream f(path(call, r), std::ios::binary | std::ios::ate);
      if (!f)
        continue;
      if (uint64_t(f.tellg()) != bytes)
        return Status(StatusCode::InvalidArgument,
                      "collective " + std::to_string(call) + ": rank " +
                          std::to_string(r) + " sent " +
                          std::to_string(uint64_t(f.tellg())) +
                          " bytes, rank " + std::to_string(rank_) + " " +
                          std::to_string(bytes) +
                          " (the ranks run different programs?)");
      f.seekg(0);
      f.read(reinterpret_cast<char *>(out.data() + size_t(r) * bytes),
             std::streamsize(bytes));
      got[size_t(r)] = true;
      --missing;
    }
    if (missing == 0)
      break;
    std::chrono::duration<double> waited =
        std::chrono::steady_clock::now() - start;
    if (waited.count() > timeout_) {
      std::string who;
      for (int r = 0; r < ranks_; ++r)
        if (!got[size_t(r)])
          who += (who.empty() ? "" : ", ") + std::to_string(r);
      return Status(StatusCode::IoError,
                    "rank " + std::to_string(rank_) + " waited " +
                        std::to_string(int(timeout_)) + " s in '" + dir_ +
                        "' for rank(s) " + who + " (collective " +
                        std::to_string(call) + ")");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  // Every rank has written call n, so all have finished reading call n - 1.
  if (call > 0)
    std::remove(path(call - 1, rank_).c_str());
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// NCCL
//===----------------------------------------------------------------------===//

namespace detail {

Expected<NcclApi> loadNcclApi(const std::vector<std::string> &candidates) {
  Expected<DynamicLibrary> lib = DynamicLibrary::open(
      candidates, StatusCode::LibraryMissing,
      "NCCL 2 (libnccl.so.2) not found, so collectives cannot run (set "
      "TE_NCCL_LIBRARY, or pip install nvidia-nccl-cu13); tried");
  if (!lib)
    return lib.status();
  NcclApi a;
  a.path = lib->path();
#define TE_NCCL_FN(name)                                                       \
  a.name = reinterpret_cast<decltype(a.name)>(lib->symbol(#name));             \
  if (!a.name)                                                                 \
    return Status(StatusCode::LibraryMissing, lib->path() + " lacks " #name);
  TE_NCCL_FN(ncclGetVersion)
  TE_NCCL_FN(ncclGetUniqueId)
  TE_NCCL_FN(ncclCommInitRank)
  TE_NCCL_FN(ncclCommDestroy)
  TE_NCCL_FN(ncclAllGather)
  TE_NCCL_FN(ncclAllReduce)
  TE_NCCL_FN(ncclGetErrorString)
  TE_NCCL_FN(ncclGroupStart)
  TE_NCCL_FN(ncclGroupEnd)
#undef TE_NCCL_FN
  return a;
}

} // namespace detail

namespace {

using detail::NcclApi;

Expected<const NcclApi *> ncclApi() {
  static const Expected<NcclApi> api = [] {
    std::vector<std::string> names;
    if (const char *lib = std::getenv("TE_NCCL_LIBRARY"))
      names.push_back(lib);
    names.push_back("libnccl.so.2");
    if (const char *home = std::getenv("CUDA_HOME"))
      names.push_back(std::string(home) + "/lib64/libnccl.so.2");
    names.push_back("/usr/local/cuda/lib64/libnccl.so.2");
    return detail::loadNcclApi(names);
  }();
  if (!api)
    return api.status();
  return &*api;
}

Status ncclCheck(const NcclApi &api, ncclResult_t r, const char *what) {
  if (r == ncclSuccess)
    return Status::ok();
  return Status(StatusCode::CudaError,
                std::string(what) + " failed: " + api.ncclGetErrorString(r));
}

} // namespace

Expected<std::string> Communicator::ncclVersion() {
  Expected<const NcclApi *> api = ncclApi();
  if (!api)
    return api.status();
  int v = 0;
  TE_RETURN_IF_ERROR(
      ncclCheck(**api, (*api)->ncclGetVersion(&v), "ncclGetVersion"));
  // NCCL >= 2.9 encodes major * 10000 + minor * 100 + patch.
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

Expected<std::unique_ptr<Communicator>>
Communicator::create(const Device &device, HostCollective &host) {
  Expected<const NcclApi *> api = ncclApi();
  if (!api)
    return api.status();
  const NcclApi &a = **api;
  ncclUniqueId id{};
  if (host.rank() == 0)
    TE_RETURN_IF_ERROR(ncclCheck(a, a.ncclGetUniqueId(&id), "ncclGetUniqueId"));
  std::vector<uint8_t> ids;
  TE_RETURN_IF_ERROR(host.allGather(&id, sizeof(id), ids));
  std::memcpy(&id, ids.data(), sizeof(id)); // rank 0's
  TE_RETURN_IF_ERROR(device.makeCurrent());
  std::unique_ptr<Communicator> c(new Communicator());
  c->rank_ = host.rank();
  c->ranks_ = host.ranks();
  ncclComm_t comm = nullptr;
  TE_RETURN_IF_ERROR(
      ncclCheck(a, a.ncclCommInitRank(&comm, host.ranks(), id, host.rank()),
                "ncclCommInitRank"));
  c->comm_ = comm;
  return c;
}

Communicator::~Communicator() {
  if (!comm_)
    return;
  if (Expected<const NcclApi *> api = ncclApi())
    (void)(*api)->ncclCommDestroy(static_cast<ncclComm_t>(comm_));
}

Status Communicator::allGather(uint64_t send, uint64_t recv,
                               uint64_t bytesPerRank, const Stream &s) {
  Expected<const NcclApi *> api = ncclApi();
  if (!api)
    return api.status();
  return ncclCheck(**api,
                   (*api)->ncclAllGather(reinterpret_cast<const void *>(send),
                                         reinterpret_cast<void *>(recv),
                                         size_t(bytesPerRank), ncclUint8,
                                         static_cast<ncclComm_t>(comm_),
                                         static_cast<cudaStream_t>(s.handle())),
                   "ncclAllGather");
}

/// In-place ncclAllReduce of `count` elements of `type` at `buffer`.
static Status allReduceInPlace(void *comm, uint64_t buffer, uint64_t count,
                               ncclDataType_t type, ncclRedOp_t op,
                               const Stream &s) {
  Expected<const NcclApi *> api = ncclApi();
  if (!api)
    return api.status();
  void *p = reinterpret_cast<void *>(buffer);
  return ncclCheck(**api,
                   (*api)->ncclAllReduce(p, p, size_t(count), type, op,
                                         static_cast<ncclComm_t>(comm),
                                         static_cast<cudaStream_t>(s.handle())),
                   "ncclAllReduce");
}

Status Communicator::allReduceMax(uint64_t buffer, uint64_t count,
                                  const Stream &s) {
  return allReduceInPlace(comm_, buffer, count, ncclFloat32, ncclMax, s);
}

Status Communicator::allReduceBytes(uint64_t buffer, uint64_t bytes, bool max,
                                    const Stream &s) {
  return allReduceInPlace(comm_, buffer, bytes, ncclUint8,
                          max ? ncclMax : ncclSum, s);
}

Status Communicator::groupStart() {
  Expected<const NcclApi *> api = ncclApi();
  if (!api)
    return api.status();
  return ncclCheck(**api, (*api)->ncclGroupStart(), "ncclGroupStart");
}

Status Communicator::groupEnd() {
  Expected<const NcclApi *> api = ncclApi();
  if (!api)
    return api.status();
  return ncclCheck(**api, (*api)->ncclGroupEnd(), "ncclGroupEnd");
}

} // namespace te::rt
