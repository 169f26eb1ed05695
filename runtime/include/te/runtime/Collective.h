//===- te/runtime/Collective.h - ranks of one job talking -------*- C++ -*-===//
//
// Part of tejit. No CUDA or NCCL header: NCCL is opened on first use.
//
//===----------------------------------------------------------------------===//
//
// Two ways the ranks of one job (one process or thread per GPU) exchange
// data: HostCollective moves host bytes (the rendezvous that hands out the
// NCCL id, and the CPU backend's gathers), Communicator moves device bytes
// through NCCL on a stream (what a plan's collective steps call, so they
// can be captured into a CUDA graph). Every rank must issue the same
// collectives in the same order.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_COLLECTIVE_H
#define TE_RUNTIME_COLLECTIVE_H

#include "te/runtime/Device.h"
#include "te/runtime/Status.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace te::rt {

/// Host-side collectives between `ranks()` ranks.
class HostCollective {
public:
  virtual ~HostCollective();
  virtual int rank() const = 0;
  virtual int ranks() const = 0;
  /// Every rank passes `bytes` bytes; `out` receives ranks() * bytes, in
  /// rank order.
  virtual Status allGather(const void *in, size_t bytes,
                           std::vector<uint8_t> &out) = 0;
  /// Element-wise maximum of `count` floats over the ranks, in place. Meant
  /// for amaxes: never negative and never NaN (docs/Numerics.md §3), so
  /// every order of the maxima gives the same bits.
  Status allReduceMax(float *values, size_t count);
};

/// A HostCollective over files in one directory every rank can reach (one
/// machine, or a shared file system): call n of rank r writes `c<n>.<r>`
/// (atomically: a temporary file renamed into place), then reads every
/// rank's file of call n. A rank removes its file of call n - 1 once call
/// n completes, when every rank has read it. Gives up after `timeoutSeconds`
/// without the others, naming the ranks it waited for. The directory must
/// be empty when a job starts: files a former job left would be read as
/// this job's.
class FileCollective : public HostCollective {
public:
  static Expected<std::unique_ptr<FileCollective>>
  create(const std::string &dir, int rank, int ranks,
         double timeoutSeconds = 300);
  ~FileCollective() override;
  int rank() const override { return rank_; }
  int ranks() const override { return ranks_; }
  Status allGather(const void *in, size_t bytes,
                   std::vector<uint8_t> &out) override;

private:
  FileCollective() = default;
  std::string dir_;
  int rank_ = 0, ranks_ = 1;
  double timeout_ = 300;
  uint64_t calls_ = 0;
};

/// An NCCL communicator of one rank on one device. NCCL (libnccl.so.2) is
/// opened on first use from $TE_NCCL_LIBRARY, the default search path,
/// $CUDA_HOME/lib64 or /usr/local/cuda/lib64; without it create() returns
/// LibraryMissing saying where it looked and how to install it.
class Communicator {
public:
  /// Forms the communicator of `host`'s ranks on `device`: rank 0 makes the
  /// NCCL id and shares it through `host`. Every rank must call it.
  static Expected<std::unique_ptr<Communicator>> create(const Device &device,
                                                        HostCollective &host);
  ~Communicator();
  int rank() const { return rank_; }
  int ranks() const { return ranks_; }
  /// The loaded NCCL's version, e.g. "2.28.9", or the reason it is missing.
  static Expected<std::string> ncclVersion();

  /// Each rank's `bytesPerRank` bytes at `send` land, in rank order, at
  /// `recv` (ranks() * bytesPerRank bytes) on every rank. Enqueued on `s`.
  Status allGather(uint64_t send, uint64_t recv, uint64_t bytesPerRank,
                   const Stream &s);
  /// In-place element-wise maximum of `count` floats over the ranks.
  Status allReduceMax(uint64_t buffer, uint64_t count, const Stream &s);
  /// In-place element-wise sum (`max` false) or maximum of `bytes` unsigned
  /// bytes over the ranks.
  Status allReduceBytes(uint64_t buffer, uint64_t bytes, bool max,
                        const Stream &s);
  /// Collectives between groupStart() and groupEnd() are issued as one
  /// NCCL group: they progress together (several small gathers overlap).
  Status groupStart();
  Status groupEnd();

private:
  Communicator() = default;
  void *comm_ = nullptr; ///< ncclComm_t
  int rank_ = 0, ranks_ = 1;
};

} // namespace te::rt

#endif // TE_RUNTIME_COLLECTIVE_H
