// Multi-GPU runs of the offline model commands (logits, generate) on the cuda backend: SPMD, one
// process per GPU (docs/scaling.md). Every rank runs the same command on the same inputs; this process
// is rank 0 and starts ranks 1..TP−1 as copies of itself (`--rank r --dist-port P`, hidden flags), each
// on its GPU; only rank 0 writes the command's output.
#pragma once

#include <sys/types.h>

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "model/loader.h"

namespace gossamer::app {

// Starts a copy of this binary (/proc/self/exe) with `args` (args[0] is its argv[0]); returns its pid,
// never waits. Throws gossamer::Error naming `what` when no process can be started.
pid_t start_self(std::vector<std::string> args, const std::string& what);

// The hidden per-rank flags: --rank, --dist-host, --dist-port.
void add_rank_flags(CLI::App& cli, model::ModelOptions& options);

class RankLauncher {
 public:
  // For a cuda layout with TP > 1 in a process that is not a launched rank yet (dist_port 0): picks a
  // free port, starts the other ranks with `prefix` (e.g. {"bench"}), then argv (the sub-command's,
  // its name first) and the rank flags, and sets options.dist_port. Otherwise does nothing.
  RankLauncher(const std::string& device, int argc, char** argv, model::ModelOptions& options,
               const std::vector<std::string>& prefix = {});
  // Waits for the launched ranks; throws gossamer::Error naming the first that failed.
  void wait();
  // Kills launched ranks still running (when rank 0 failed before wait()).
  ~RankLauncher();
  RankLauncher(const RankLauncher&) = delete;
  RankLauncher& operator=(const RankLauncher&) = delete;

 private:
  std::vector<pid_t> children_;
};

}  // namespace gossamer::app
