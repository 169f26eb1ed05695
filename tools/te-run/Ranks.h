//===- Ranks.h - te-run --ranks: one process per GPU ------------*- C++ -*-===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// `te-run --ranks N ...` starts N copies of itself, rank r on GPU r, that
// meet in a fresh rendezvous directory (rt::FileCollective; rank 0 hands
// out the NCCL id there). Each rank runs the same program on its own
// arguments; the launcher prints every rank's output in rank order and
// exits with the worst exit code. A rank that fails gets the others
// stopped (they would wait for it in their next collective).
//
//===----------------------------------------------------------------------===//

#ifndef TE_TOOLS_TE_RUN_RANKS_H
#define TE_TOOLS_TE_RUN_RANKS_H

#include <optional>
#include <string>

namespace te::run {

/// This process's place in a --ranks job (set by the launcher).
struct RankEnv {
  int rank = 0, ranks = 1;
  std::string dir; ///< the rendezvous directory
};
/// The rank of this process, if the launcher started it.
std::optional<RankEnv> rankFromEnv();

/// Starts `ranks` copies of this program with `argv`, waits for all, prints
/// their output and returns the worst exit code.
int launchRanks(int ranks, char **argv);

} // namespace te::run

#endif // TE_TOOLS_TE_RUN_RANKS_H
