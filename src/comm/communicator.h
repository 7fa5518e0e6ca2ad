// Communicator: the collectives a tensor/expert-parallel group needs, one object per rank.
//
// Implementations: ThreadCommunicator (ranks are threads of one process, buffers in host memory: the
// cpu backend's simulated ranks) and, with CUDA, CudaCommunicator (one process per GPU: NCCL, plus the
// one-shot IPC all-reduce for small messages; comm/cuda_communicator.h).
//
// Contract:
//  - Every rank of the group calls the same collectives in the same order with the same counts.
//  - Buffers live where the implementation says (host for ThreadCommunicator, device for CUDA); `stream`
//    is the cudaStream_t to enqueue on (ignored on the host). In-place all_reduce: `data` holds this
//    rank's input and receives the result.
//  - Results are bitwise identical on every rank (sums are taken in rank order), so replicated state
//    (the residual stream, the router's top-k) never drifts apart between ranks.
//  - A rank that fails or never arrives makes every other rank's pending call throw CommError within the
//    group's timeout, never hang.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/dtype.h"

namespace gossamer::comm {

// A collective that cannot complete (a peer died, timed out, or the group was aborted).
class CommError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class ReduceOp : uint8_t { kSum, kMax };

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // In place: data [count] of `dtype` (f32 everywhere; bf16 on CUDA) ← op over all ranks' data.
  virtual void all_reduce(void* data, int64_t count, DType dtype, ReduceOp op = ReduceOp::kSum,
                          void* stream = nullptr) = 0;
  // recv [world_size × bytes_per_rank] ← every rank's send [bytes_per_rank], in rank order.
  virtual void all_gather(const void* send, void* recv, int64_t bytes_per_rank, void* stream = nullptr) = 0;
  // Whether all_gather works in this group (a CUDA group of ranks sharing one GPU has no NCCL, hence none).
  virtual bool supports_all_gather() const { return true; }
  // Returns once every rank has called it (host-side).
  virtual void barrier() = 0;
  // Waits until the collectives enqueued on `stream` finished; throws CommError when one cannot (a dead
  // peer, the timeout). Host implementations complete every call before returning: a no-op there.
  virtual void synchronize(void* stream) { (void)stream; }
  // Fails the group: every rank's pending and future collective throws CommError carrying `reason`.
  virtual void abort(const std::string& reason) = 0;
};

}  // namespace gossamer::comm
