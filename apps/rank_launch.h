// Multi-GPU runs of the model commands on the cuda backend: SPMD, one process per GPU (docs/scaling.md).
// Every rank runs the same command on the same inputs; this process is rank 0 of every replica and starts
// the other ranks as copies of itself (`--rank k --replica r --dist-port P`, hidden flags), each on its
// GPU (model/loader.h gpu_of); only rank 0 writes the command's output (logits, generate) or serves
// (serve, whose data-parallel replicas are each a group of their own with its own port).
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

// The hidden per-rank flags: --rank, --replica, --dist-host, --dist-port, and --test-colocate-gpus
// (ModelOptions::colocate_on_gpu0: tests of these paths on one GPU).
void add_rank_flags(CLI::App& cli, model::ModelOptions& options);

class RankLauncher {
 public:
  // For a cuda layout with TP > 1 in a process that is not a launched rank yet (dist_port 0): picks a free
  // port per replica (its bootstrap; the serve control channel takes the one above), starts ranks
  // 1..TP−1 of every replica with `prefix` (e.g. {"bench"}) and argv, and sets options.dist_port to
  // replica 0's. Otherwise does nothing.
  RankLauncher(const std::string& device, int argc, char** argv, model::ModelOptions& options,
               const std::vector<std::string>& prefix = {});
  // Replica r's bootstrap port (0 when nothing was launched).
  int port_of(int32_t replica) const { return ports_.empty() ? 0 : ports_.at(static_cast<size_t>(replica)); }
  // Waits for the launched ranks; throws gossamer::Error naming the first that failed.
  void wait();
  // Kills launched ranks still running (when rank 0 failed before wait()).
  ~RankLauncher();
  RankLauncher(const RankLauncher&) = delete;
  RankLauncher& operator=(const RankLauncher&) = delete;

 private:
  struct Child {
    pid_t pid = -1;
    int32_t replica = 0, rank = 0;
  };
  std::vector<Child> children_;
  std::vector<int> ports_;
};

}  // namespace gossamer::app
