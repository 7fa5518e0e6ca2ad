// Helpers shared by the GPU test binaries (tests/model_gpu, tests/comm_gpu): whether a CUDA GPU is visible
// (tests skip visibly without one), and for tests that start rank processes a free loopback TCP port and
// the start and deadline-bounded wait of one rank.
#pragma once

#include <arpa/inet.h>
#include <cuda_runtime.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace gossamer::test {

inline bool have_gpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

// A port the kernel just handed out on 127.0.0.1 (free again once this returns; a small race is accepted).
inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

// Starts args[0] with `args`, its stdout and stderr written to the file `log`; returns its pid.
inline pid_t start_logged(std::vector<std::string> args, const std::string& log) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::freopen(log.c_str(), "w", stdout);
    ::dup2(::fileno(stdout), 2);
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

// Waits for `pid`, polling every 20 ms; kills it (SIGKILL) once `deadline` has passed. Returns its wait
// status, or −1 when it was killed at the deadline (a hang).
inline int wait_until(pid_t pid, std::chrono::steady_clock::time_point deadline) {
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return status;
}

}  // namespace gossamer::test
