#include "rank_launch.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "core/error.h"

namespace gossamer::app {

namespace {

int free_port_once() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  GOSSAMER_CHECK(fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0,
                 "cannot reserve a port for the ranks' bootstrap");
  socklen_t length = sizeof(address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

// A free port whose pair (port, port + 1: a group's bootstrap and serve control channel) overlaps no pair
// of `taken`.
int free_port(const std::vector<int>& taken) {
  for (int attempt = 0; attempt < 64; ++attempt) {
    const int port = free_port_once();
    const bool clashes =
        std::any_of(taken.begin(), taken.end(), [&](int other) { return std::abs(other - port) <= 1; });
    if (!clashes && port < 65535) return port;
  }
  GOSSAMER_THROW("cannot find a free pair of ports for the ranks' bootstrap");
}

// The command line of rank `rank` of replica `replica`: /proc/self/exe, `prefix`, `argv` (the sub-command's
// name, then its flags), then the rank flags.
std::vector<std::string> rank_command(const std::vector<std::string>& prefix, const std::vector<std::string>& argv,
                                      int32_t replica, int32_t rank, const std::string& host, int port) {
  std::vector<std::string> args = {"/proc/self/exe"};
  args.insert(args.end(), prefix.begin(), prefix.end());
  args.insert(args.end(), argv.begin(), argv.end());
  args.insert(args.end(), {"--rank", std::to_string(rank), "--replica", std::to_string(replica), "--dist-host", host,
                           "--dist-port", std::to_string(port)});
  return args;
}

}  // namespace

pid_t start_self(std::vector<std::string> args, const std::string& what) {
  const pid_t pid = ::fork();
  GOSSAMER_CHECK(pid >= 0, "cannot start ", what);
  if (pid == 0) {
    std::vector<char*> pointers;
    for (std::string& arg : args) pointers.push_back(arg.data());
    pointers.push_back(nullptr);
    ::execv("/proc/self/exe", pointers.data());
    ::_exit(127);
  }
  return pid;
}

void add_rank_flags(CLI::App& cli, model::ModelOptions& options) {
  cli.add_option("--rank", options.rank, "")->group("");
  cli.add_option("--replica", options.replica, "")->group("");
  cli.add_option("--dist-host", options.dist_host, "")->group("");
  cli.add_option("--dist-port", options.dist_port, "")->group("");
  cli.add_flag("--test-colocate-gpus", options.colocate_on_gpu0, "")->group("");
}

RankLauncher::RankLauncher(const std::string& device, int argc, char** argv, model::ModelOptions& options,
                           const std::vector<std::string>& prefix) {
  if (device != "cuda" || !options.layout.sharded() || options.dist_port != 0) return;
  const std::vector<std::string> command(argv, argv + argc);
  for (int32_t replica = 0; replica < options.layout.data_parallel; ++replica) {
    ports_.push_back(free_port(ports_));
    for (int32_t rank = 1; rank < options.layout.tensor_parallel; ++rank) {
      const std::string name =
          "rank " + std::to_string(rank) +
          (options.layout.data_parallel > 1 ? " of replica " + std::to_string(replica) : std::string());
      children_.push_back(
          {start_self(rank_command(prefix, command, replica, rank, options.dist_host, ports_.back()), name), replica,
           rank});
    }
  }
  options.dist_port = ports_.front();
}

void RankLauncher::wait() {
  std::string failed;
  for (const Child& child : children_) {
    int status = 0;
    ::waitpid(child.pid, &status, 0);
    if (failed.empty() && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
      failed = "rank " + std::to_string(child.rank) +
               (ports_.size() > 1 ? " of replica " + std::to_string(child.replica) : std::string()) +
               (WIFEXITED(status) ? " exited with " + std::to_string(WEXITSTATUS(status))
                                  : " was killed by signal " + std::to_string(WTERMSIG(status)));
    }
  }
  children_.clear();
  GOSSAMER_CHECK(failed.empty(), failed, " (its messages are above)");
}

RankLauncher::~RankLauncher() {
  for (const Child& child : children_) {
    ::kill(child.pid, SIGTERM);
    ::waitpid(child.pid, nullptr, 0);
  }
}

}  // namespace gossamer::app
