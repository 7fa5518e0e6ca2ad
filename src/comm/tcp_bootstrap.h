// TcpBootstrap: the out-of-band channel a parallel group uses to start (rank 0 listens, every other rank
// connects over TCP, so it works across hosts): it carries NCCL's unique id and the CUDA IPC handles.
//
// Contract: every rank constructs one with the same host:port and world size; the constructor returns
// once all ranks are connected (or throws CommError at the deadline). Collectives are called by every
// rank in the same order. Messages are length-framed; a peer that closes its socket (a dead process) or
// stays silent past the timeout makes the call throw CommError naming the rank; this rank then closes
// its sockets, so every other rank fails at once too, and later calls throw. Not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gossamer::comm {

struct BootstrapConfig {
  std::string host = "127.0.0.1";  // rank 0's address (rank 0 binds it; others connect to it)
  int port = 29500;                // 0 on rank 0: any free port, reported through on_listening
  int rank = 0;
  int world_size = 1;
  std::chrono::milliseconds timeout{60000};    // for connecting, and for every collective unless idle_timeout
  std::chrono::milliseconds idle_timeout{0};   // > 0: how long a collective may wait instead (a control
                                               // channel idles between requests; a closed socket still fails at once)
  std::function<void(int port)> on_listening;  // rank 0, once bound (before accepting)
};

class TcpBootstrap {
 public:
  explicit TcpBootstrap(const BootstrapConfig& config);
  ~TcpBootstrap();
  TcpBootstrap(const TcpBootstrap&) = delete;
  TcpBootstrap& operator=(const TcpBootstrap&) = delete;

  int rank() const { return config_.rank; }
  int world_size() const { return config_.world_size; }
  // Every rank's blob, in rank order (blobs may differ in size).
  std::vector<std::string> all_gather(const std::string& blob);
  // Rank `root`'s blob on every rank.
  std::string broadcast(const std::string& blob, int root = 0);
  void barrier() { all_gather({}); }

 private:
  void send_frame(int fd, int peer, const std::string& data);
  std::string recv_frame(int fd, int peer);

  BootstrapConfig config_;
  int listen_fd_ = -1;
  std::vector<int> peer_fds_;  // rank 0: one socket per rank (index = rank, [0] unused); others: [0] = rank 0
  bool connected_ = false;     // past the hello: collectives use idle_timeout when set
  std::string broken_;         // non-empty: a collective failed (every socket closed); later calls throw
};

}  // namespace gossamer::comm
