// NcclCommunicator: an NCCL communicator for one rank (one process per GPU), bootstrapped over TCP so
// the same code spans hosts (rank 0 makes the unique id; TcpBootstrap carries it).
//
// Contract: constructed collectively by every rank of `bootstrap`. NVLink multicast (NVLS) is turned off
// for this process and its children (NCCL_NVLS_ENABLE=0; see the device machine's notes). The communicator
// is non-blocking inside: initialisation and every enqueue are polled against `timeout`, and
// synchronize() waits for a stream while watching NCCL's asynchronous error, so a dead peer ends in
// CommError (after ncclCommAbort) on every surviving rank instead of a hang. Collectives enqueue on the
// given stream and are graph-capturable. Not thread-safe.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdint>

#include "comm/communicator.h"
#include "comm/tcp_bootstrap.h"

namespace gossamer::comm {

class NcclCommunicator {
 public:
  NcclCommunicator(TcpBootstrap& bootstrap, int device, std::chrono::milliseconds timeout);
  ~NcclCommunicator();
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  // In place: data [count] f32 / bf16 on this rank's device.
  void all_reduce(void* data, int64_t count, DType dtype, ReduceOp op, cudaStream_t stream);
  // recv [world × bytes] ← every rank's send [bytes].
  void all_gather(const void* send, void* recv, int64_t bytes, cudaStream_t stream);
  // Waits for `stream`; throws CommError (and aborts the communicator) on an NCCL error or the timeout.
  void synchronize(cudaStream_t stream);
  void abort();
  bool aborted() const { return aborted_; }

 private:
  // Polls an in-progress NCCL call to completion (or throws at the deadline).
  void wait_ready(const char* what);

  ncclComm_t comm_ = nullptr;
  std::chrono::milliseconds timeout_;
  int rank_ = 0;
  bool aborted_ = false;
};

// Sets NCCL_NVLS_ENABLE=0 in this process's environment (inherited by children), unconditionally.
void disable_nvlink_multicast();

}  // namespace gossamer::comm
