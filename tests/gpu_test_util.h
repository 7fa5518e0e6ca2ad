// Helpers shared by the GPU test binaries (tests/model_gpu, tests/comm_gpu): whether a CUDA GPU is visible
// (tests skip visibly without one), and a free loopback TCP port for tests that start rank processes.
#pragma once

#include <arpa/inet.h>
#include <cuda_runtime.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

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

}  // namespace gossamer::test
