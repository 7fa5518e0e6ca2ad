// CudaCommunicator: the Communicator of one rank of a multi-GPU group (one process per GPU,
// docs/scaling.md): a TCP bootstrap, NCCL for large messages and all-gathers, and the one-shot IPC
// all-reduce for small sums (the decode path). Buffers are device memory; `stream` is a cudaStream_t.
//
// Contract: constructed collectively by every rank (same options but rank). all_reduce takes the IPC path
// when the message is a sum of ≤ ipc_max_bytes (f32/bf16, 16-byte aligned) and every rank can reach
// every other's memory (same GPU, or peer access); otherwise NCCL. Both paths are graph-capturable, and
// both give the same result on every rank. World size 1 runs the same code (NCCL with one rank, the IPC
// kernel reducing one buffer). synchronize() is the timed wait: any collective that cannot finish
// (a dead peer) surfaces there as CommError on every surviving rank within `timeout`.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <memory>

#include "comm/communicator.h"
#include "comm/tcp_bootstrap.h"

namespace gossamer::comm {

class IpcAllReduce;
class NcclCommunicator;

struct CudaCommOptions {
  BootstrapConfig bootstrap;                 // rank, world size, rank 0's host:port, bootstrap timeout
  int device = 0;                            // this rank's CUDA device ordinal (all GPUs visible: IPC needs them)
  bool use_nccl = true;                      // false: IPC only (ranks sharing one GPU, which NCCL refuses)
  int64_t ipc_max_bytes = int64_t{1} << 20;  // sums up to this take the one-shot IPC path (0 = never)
  std::chrono::milliseconds timeout{60000};  // for every collective and synchronize()
};

class CudaCommunicator final : public Communicator {
 public:
  explicit CudaCommunicator(const CudaCommOptions& options);
  ~CudaCommunicator() override;

  int rank() const override { return bootstrap_->rank(); }
  int world_size() const override { return bootstrap_->world_size(); }
  void all_reduce(void* data, int64_t count, DType dtype, ReduceOp op = ReduceOp::kSum,
                  void* stream = nullptr) override;
  void all_gather(const void* send, void* recv, int64_t bytes_per_rank, void* stream = nullptr) override;
  bool supports_all_gather() const override { return nccl_ != nullptr; }
  void barrier() override { bootstrap_->barrier(); }
  void abort(const std::string& reason) override;
  // Waits for `stream` (a cudaStream_t) with the timeout; throws CommError naming the cause (IPC peer
  // missing, NCCL error).
  void synchronize(void* stream) override;
  bool ipc_enabled() const { return ipc_ != nullptr; }
  // Which path a sum of `count` `dtype` at `data` takes ("ipc" or "nccl").
  const char* path_for(const void* data, int64_t count, DType dtype) const;

 private:
  CudaCommOptions options_;
  std::unique_ptr<TcpBootstrap> bootstrap_;
  std::unique_ptr<NcclCommunicator> nccl_;
  std::unique_ptr<IpcAllReduce> ipc_;
  std::string abort_reason_;
};

}  // namespace gossamer::comm
