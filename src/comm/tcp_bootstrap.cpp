#include "comm/tcp_bootstrap.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "comm/communicator.h"
#include "core/error.h"

namespace gossamer::comm {

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void fail(const std::string& message) {
  throw CommError("bootstrap: " + message);
}

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::max<int64_t>(0, left));
}

// Waits until fd is readable (POLLIN) or writable (POLLOUT); false at the deadline.
bool wait_fd(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int ready = ::poll(&p, 1, remaining_ms(deadline));
    if (ready > 0) return true;
    if (ready == 0) return false;
    if (errno != EINTR) fail(std::string("poll: ") + std::strerror(errno));
  }
}

sockaddr_in resolve(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr)
    fail("cannot resolve host '" + host + "'");
  sockaddr_in address = *reinterpret_cast<sockaddr_in*>(found->ai_addr);
  ::freeaddrinfo(found);
  address.sin_port = htons(static_cast<uint16_t>(port));
  return address;
}

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace

TcpBootstrap::TcpBootstrap(const BootstrapConfig& config) : config_(config) {
  GOSSAMER_CHECK(config.world_size >= 1 && config.rank >= 0 && config.rank < config.world_size, "bootstrap: rank ",
                 config.rank, " outside a world of ", config.world_size);
  const Clock::time_point deadline = Clock::now() + config.timeout;
  peer_fds_.assign(static_cast<size_t>(config.world_size), -1);
  if (config.world_size == 1) return;
  if (config.rank == 0) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in address = resolve(config.host, config.port);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        ::listen(listen_fd_, 128) != 0) {
      const std::string error = std::strerror(errno);
      ::close(listen_fd_);
      fail("rank 0 cannot listen on " + config.host + ":" + std::to_string(config.port) + ": " + error);
    }
    socklen_t length = sizeof(address);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length);
    if (config.on_listening) config.on_listening(ntohs(address.sin_port));
    for (int connected = 1; connected < config.world_size;) {
      if (!wait_fd(listen_fd_, POLLIN, deadline)) {
        fail("rank 0 timed out after " + std::to_string(config.timeout.count()) + " ms with " +
             std::to_string(connected) + " of " + std::to_string(config.world_size) + " ranks connected");
      }
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      set_nodelay(fd);
      const std::string hello = recv_frame(fd, -1);
      int32_t peer = -1;
      if (hello.size() == 4) std::memcpy(&peer, hello.data(), 4);
      if (peer <= 0 || peer >= config.world_size || peer_fds_[static_cast<size_t>(peer)] >= 0) {
        ::close(fd);
        fail("rank 0 got a bad or duplicate hello (rank " + std::to_string(peer) + ")");
      }
      peer_fds_[static_cast<size_t>(peer)] = fd;
      ++connected;
    }
    connected_ = true;
    return;
  }
  // Other ranks: connect to rank 0, retrying while it is not up yet.
  const sockaddr_in address = resolve(config.host, config.port);
  for (;;) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0) {
      set_nodelay(fd);
      peer_fds_[0] = fd;
      break;
    }
    ::close(fd);
    if (Clock::now() >= deadline) {
      fail("rank " + std::to_string(config.rank) + " could not reach rank 0 at " + config.host + ":" +
           std::to_string(config.port) + " within " + std::to_string(config.timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  int32_t me = config.rank;
  send_frame(peer_fds_[0], 0, std::string(reinterpret_cast<const char*>(&me), 4));
  connected_ = true;
}

TcpBootstrap::~TcpBootstrap() {
  for (int fd : peer_fds_) {
    if (fd >= 0) ::close(fd);
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

void TcpBootstrap::send_frame(int fd, int peer, const std::string& data) {
  const Clock::time_point deadline = Clock::now() + config_.timeout;
  const uint64_t length = data.size();
  std::string frame(reinterpret_cast<const char*>(&length), 8);
  frame += data;
  size_t sent = 0;
  while (sent < frame.size()) {
    if (!wait_fd(fd, POLLOUT, deadline)) fail("timed out sending to rank " + std::to_string(peer));
    const ssize_t n = ::send(fd, frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("rank " + std::to_string(peer) + " is gone (send: " + std::strerror(errno) + ")");
    sent += static_cast<size_t>(n);
  }
}

std::string TcpBootstrap::recv_frame(int fd, int peer) {
  const std::chrono::milliseconds wait =
      connected_ && config_.idle_timeout.count() > 0 ? config_.idle_timeout : config_.timeout;
  const Clock::time_point deadline = Clock::now() + wait;
  auto read_exact = [&](char* out, size_t count) {
    size_t got = 0;
    while (got < count) {
      if (!wait_fd(fd, POLLIN, deadline)) {
        fail("rank " + std::to_string(config_.rank) + " timed out after " + std::to_string(wait.count()) +
             " ms waiting for rank " + std::to_string(peer));
      }
      const ssize_t n = ::recv(fd, out + got, count - got, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail("rank " + std::to_string(peer) + " closed its connection (the process died or left the group)");
      got += static_cast<size_t>(n);
    }
  };
  uint64_t length = 0;
  read_exact(reinterpret_cast<char*>(&length), 8);
  if (length > (uint64_t{1} << 32))
    fail("frame of " + std::to_string(length) + " bytes from rank " + std::to_string(peer));
  std::string data(static_cast<size_t>(length), '\0');
  read_exact(data.data(), data.size());
  return data;
}

std::vector<std::string> TcpBootstrap::all_gather(const std::string& blob) {
  if (!broken_.empty()) throw CommError("bootstrap: the group failed earlier: " + broken_);
  const int world = config_.world_size;
  std::vector<std::string> blobs(static_cast<size_t>(world));
  blobs[static_cast<size_t>(config_.rank)] = blob;
  if (world == 1) return blobs;
  try {
    if (config_.rank == 0) {
      for (int r = 1; r < world; ++r) blobs[static_cast<size_t>(r)] = recv_frame(peer_fds_[static_cast<size_t>(r)], r);
      for (int r = 1; r < world; ++r) {
        for (const std::string& each : blobs) send_frame(peer_fds_[static_cast<size_t>(r)], r, each);
      }
      return blobs;
    }
    send_frame(peer_fds_[0], 0, blob);
    for (int r = 0; r < world; ++r) blobs[static_cast<size_t>(r)] = recv_frame(peer_fds_[0], 0);
    return blobs;
  } catch (const CommError& error) {
    // NOTE: a half-done collective leaves the peers out of step: close every socket so that each of
    // them fails at once (a closed connection) instead of waiting for frames that never come.
    broken_ = error.what();
    for (int& fd : peer_fds_) {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
    throw;
  }
}

std::string TcpBootstrap::broadcast(const std::string& blob, int root) {
  GOSSAMER_CHECK(root >= 0 && root < config_.world_size, "bootstrap: broadcast root ", root, " outside the world");
  return all_gather(config_.rank == root ? blob : std::string())[static_cast<size_t>(root)];
}

}  // namespace gossamer::comm
