// One-shot all-reduce over CUDA IPC buffers, for the small messages of decode (2 per layer per step;
// hidden × batch bf16, 5.6 KB – 737 KB on gpt-oss), where NCCL's per-call cost (~50 µs measured on 2
// H200s) dominates. Works between processes on different GPUs with peer access (NVLink) and between
// processes sharing one GPU (CUDA IPC within a device; how it is tested on a single GPU).
//
// Protocol (one kernel, kBlocks blocks): block b copies its slice of the input into this rank's IPC
// buffer (double-buffered by epoch parity), fences, publishes flag[b] = epoch, waits until every peer's
// flag[b] reaches the epoch, then sums the slice from every rank's buffer in rank order (fp32
// accumulation), so every rank gets bitwise the same result. Epochs live in device memory and advance
// inside the kernel: the call is graph-capturable (a captured launch replays correctly).
//
// Contract: constructed collectively (every rank of `bootstrap`, same max_bytes); all_reduce is called by
// every rank in the same order on the same stream discipline. Buffers: `data` is device memory of this
// process, 16-byte aligned, bytes a multiple of 16 and ≤ max_bytes (supports() says). A peer that does
// not arrive within `timeout` makes the kernel give up and record it; error() then names the rank (read
// it after the stream synchronized, or any time: it lives in mapped host memory). After an error the
// object is unusable (throw, rebuild the group).
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/tcp_bootstrap.h"
#include "core/dtype.h"

namespace gossamer::comm {

inline constexpr int kIpcMaxRanks = 8;

class IpcAllReduce {
 public:
  IpcAllReduce(TcpBootstrap& bootstrap, int device, int64_t max_bytes, std::chrono::milliseconds timeout);
  ~IpcAllReduce();
  IpcAllReduce(const IpcAllReduce&) = delete;
  IpcAllReduce& operator=(const IpcAllReduce&) = delete;

  int64_t max_bytes() const { return max_bytes_; }
  // True when this call can take the IPC path (dtype f32/bf16, alignment, size).
  bool supports(const void* data, int64_t count, DType dtype) const;
  // In place: data [count] f32 or bf16 ← Σ over ranks (rank order). Enqueued on `stream`.
  void all_reduce(void* data, int64_t count, DType dtype, cudaStream_t stream);
  // "" or the failure (e.g. "rank 2 did not arrive at the IPC all-reduce within 2000 ms").
  std::string error() const;

 private:
  TcpBootstrap& bootstrap_;
  int rank_, world_;
  int64_t max_bytes_;
  std::chrono::milliseconds timeout_;
  uint8_t* local_ = nullptr;     // this rank's IPC buffer: [flags][2 × max_bytes]
  std::vector<uint8_t*> peers_;  // every rank's buffer as mapped here (own = local_)
  uint64_t* epochs_ = nullptr;   // device [kBlocks]: epoch per block (local, not shared)
  int* error_host_ = nullptr;    // mapped pinned: 0 or 1 + the rank that never arrived
  int* error_device_ = nullptr;
};

}  // namespace gossamer::comm
