#include "rank_launch.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/error.h"

namespace gossamer::app {

namespace {

int free_port() {
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
  cli.add_option("--dist-host", options.dist_host, "")->group("");
  cli.add_option("--dist-port", options.dist_port, "")->group("");
}

RankLauncher::RankLauncher(const std::string& device, int argc, char** argv, model::ModelOptions& options,
                           const std::vector<std::string>& prefix) {
  if (device != "cuda" || !options.layout.sharded() || options.dist_port != 0) return;
  options.dist_port = free_port();
  for (int32_t rank = 1; rank < options.layout.tensor_parallel; ++rank) {
    std::vector<std::string> args = {"/proc/self/exe"};
    args.insert(args.end(), prefix.begin(), prefix.end());
    args.insert(args.end(), argv, argv + argc);  // the sub-command's name, then its flags
    args.insert(args.end(), {"--rank", std::to_string(rank), "--dist-host", options.dist_host, "--dist-port",
                             std::to_string(options.dist_port)});
    children_.push_back(start_self(std::move(args), "rank " + std::to_string(rank)));
  }
}

void RankLauncher::wait() {
  std::string failed;
  for (size_t i = 0; i < children_.size(); ++i) {
    int status = 0;
    ::waitpid(children_[i], &status, 0);
    if (failed.empty() && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
      failed = "rank " + std::to_string(i + 1) +
               (WIFEXITED(status) ? " exited with " + std::to_string(WEXITSTATUS(status))
                                  : " was killed by signal " + std::to_string(WTERMSIG(status)));
    }
  }
  children_.clear();
  GOSSAMER_CHECK(failed.empty(), failed, " (its messages are above)");
}

RankLauncher::~RankLauncher() {
  for (pid_t pid : children_) {
    ::kill(pid, SIGTERM);
    ::waitpid(pid, nullptr, 0);
  }
}

}  // namespace gossamer::app
