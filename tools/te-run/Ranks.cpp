//===- Ranks.cpp - te-run --ranks: one process per GPU --------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#include "Ranks.h"

#include "Inputs.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace te::run {

static constexpr const char *kRankVar = "TE_RUN_RANK";
static constexpr const char *kRanksVar = "TE_RUN_RANKS";
static constexpr const char *kDirVar = "TE_RUN_RENDEZVOUS";

std::optional<RankEnv> rankFromEnv() {
  const char *rank = std::getenv(kRankVar), *ranks = std::getenv(kRanksVar),
             *dir = std::getenv(kDirVar);
  if (!rank || !ranks || !dir)
    return std::nullopt;
  RankEnv env{std::atoi(rank), std::atoi(ranks), dir};
  if (env.ranks < 1 || env.rank < 0 || env.rank >= env.ranks)
    die(std::string("bad ") + kRankVar + "/" + kRanksVar +
        " in the "
        "environment");
  return env;
}

static std::string logOf(const std::string &dir, int rank) {
  return dir + "/rank" + std::to_string(rank) + ".out";
}

int launchRanks(int ranks, char **argv) {
  const char *tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp && *tmp ? tmp : "/tmp") + "/te-run-ranks-XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  if (!mkdtemp(name.data()))
    die("cannot make a rendezvous directory from '" + pattern + "'");
  std::string dir = name.data();
  llvm::outs().flush();

  std::vector<pid_t> children;
  for (int r = 0; r < ranks; ++r) {
    pid_t pid = fork();
    if (pid < 0)
      die("fork failed starting rank " + std::to_string(r));
    if (pid == 0) {
      setenv(kRankVar, std::to_string(r).c_str(), 1);
      setenv(kRanksVar, std::to_string(ranks).c_str(), 1);
      setenv(kDirVar, dir.c_str(), 1);
      int fd = open(logOf(dir, r).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        close(fd);
      }
      // A fresh image: no state (CUDA above all) carries over the fork.
      execv("/proc/self/exe", argv);
      _exit(127);
    }
    children.push_back(pid);
  }
  // A rank that fails leaves the others waiting for it in a collective:
  // stop them rather than let them time out.
  std::vector<int> codes(size_t(ranks), -1), signals(size_t(ranks), 0);
  std::vector<bool> stopped(size_t(ranks), false);
  for (int left = ranks; left > 0; --left) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0)
      break;
    auto it = std::find(children.begin(), children.end(), pid);
    if (it == children.end()) {
      ++left;
      continue;
    }
    size_t r = size_t(it - children.begin());
    codes[r] = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    signals[r] = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    if (codes[r] != 0)
      for (size_t o = 0; o < children.size(); ++o)
        if (codes[o] < 0 && !stopped[o]) {
          kill(children[o], SIGTERM);
          stopped[o] = true;
        }
  }
  int worst = 0;
  for (int r = 0; r < ranks; ++r) {
    int code = codes[size_t(r)];
    worst = std::max(worst, code < 0 ? 128 : code);
    std::ifstream log(logOf(dir, r));
    std::stringstream text;
    text << log.rdbuf();
    std::string how = "exit " + std::to_string(code);
    if (signals[size_t(r)])
      how = stopped[size_t(r)] ? "stopped: another rank failed"
                               : "signal " + std::to_string(signals[size_t(r)]);
    llvm::outs() << "== rank " << r << " of " << ranks << " (" << how
                 << ") ==\n"
                 << text.str();
  }
  llvm::outs().flush();
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return worst;
}

} // namespace te::run
