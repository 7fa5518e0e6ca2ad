#include "comm/cuda/cuda_communicator.h"

#include <unistd.h>

#include <thread>

#include "comm/cuda/ipc_all_reduce.h"
#include "comm/cuda/nccl_communicator.h"
#include "core/error.h"

namespace gossamer::comm {

namespace {

using Clock = std::chrono::steady_clock;

// True on every rank when every rank can map every other rank's memory: all on this host (IPC does
// not cross hosts, and bus ids repeat across identical nodes) and each pair on one GPU or peer-capable.
bool all_ranks_reach_each_other(TcpBootstrap& bootstrap, int device) {
  char host[256] = {}, bus_id[64] = {};
  ::gethostname(host, sizeof(host) - 1);
  bool ok = cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), device) == cudaSuccess;
  const std::vector<std::string> ids = bootstrap.all_gather(std::string(host) + "\n" + bus_id);
  for (const std::string& id : ids) {
    const size_t split = id.find('\n');
    int peer = -1;
    if (!ok || split == std::string::npos || id.substr(0, split) != host ||
        cudaDeviceGetByPCIBusId(&peer, id.substr(split + 1).c_str()) != cudaSuccess) {
      ok = false;
      break;
    }
    int can = 0;
    if (peer != device && (cudaDeviceCanAccessPeer(&can, device, peer) != cudaSuccess || !can)) ok = false;
  }
  cudaGetLastError();  // clear a failed lookup
  const std::vector<std::string> votes = bootstrap.all_gather(ok ? "1" : "0");
  for (const std::string& vote : votes) ok = ok && vote == "1";
  return ok;
}

}  // namespace

CudaCommunicator::CudaCommunicator(const CudaCommOptions& options)
    : options_(options), bootstrap_(std::make_unique<TcpBootstrap>(options.bootstrap)) {
  disable_nvlink_multicast();
  if (options.use_nccl) nccl_ = std::make_unique<NcclCommunicator>(*bootstrap_, options.device, options.timeout);
  if (options.ipc_max_bytes > 0 && bootstrap_->world_size() <= kIpcMaxRanks &&
      all_ranks_reach_each_other(*bootstrap_, options.device)) {
    ipc_ = std::make_unique<IpcAllReduce>(*bootstrap_, options.device, options.ipc_max_bytes, options.timeout);
  }
  GOSSAMER_CHECK(nccl_ || ipc_, "CudaCommunicator: neither NCCL nor the IPC all-reduce is available to rank ", rank());
}

CudaCommunicator::~CudaCommunicator() = default;

const char* CudaCommunicator::path_for(const void* data, int64_t count, DType dtype) const {
  return ipc_ && ipc_->supports(data, count, dtype) ? "ipc" : "nccl";
}

void CudaCommunicator::all_reduce(void* data, int64_t count, DType dtype, ReduceOp op, void* stream) {
  if (!abort_reason_.empty()) throw CommError("rank " + std::to_string(rank()) + ": group aborted: " + abort_reason_);
  const auto cuda_stream = static_cast<cudaStream_t>(stream);
  if (op == ReduceOp::kSum && ipc_ && ipc_->supports(data, count, dtype))
    return ipc_->all_reduce(data, count, dtype, cuda_stream);
  if (!nccl_) {
    throw CommError("rank " + std::to_string(rank()) + ": all_reduce of " + std::to_string(count) +
                    " elements needs NCCL (IPC-only group: sums up to " + std::to_string(options_.ipc_max_bytes) +
                    " bytes)");
  }
  nccl_->all_reduce(data, count, dtype, op, cuda_stream);
}

void CudaCommunicator::all_gather(const void* send, void* recv, int64_t bytes_per_rank, void* stream) {
  if (!abort_reason_.empty()) throw CommError("rank " + std::to_string(rank()) + ": group aborted: " + abort_reason_);
  if (!nccl_) throw CommError("rank " + std::to_string(rank()) + ": all_gather needs NCCL (this group is IPC-only)");
  nccl_->all_gather(send, recv, bytes_per_rank, static_cast<cudaStream_t>(stream));
}

void CudaCommunicator::abort(const std::string& reason) {
  if (abort_reason_.empty()) abort_reason_ = reason.empty() ? "aborted" : reason;
  if (nccl_) nccl_->abort();
}

void CudaCommunicator::synchronize(void* opaque_stream) {
  const auto stream = static_cast<cudaStream_t>(opaque_stream);
  const Clock::time_point deadline = Clock::now() + options_.timeout;
  for (;;) {
    // The IPC kernel gives up by itself after the timeout, so the stream drains; its error names the rank.
    const std::string ipc_error = ipc_ ? ipc_->error() : std::string();
    if (!ipc_error.empty()) {
      abort(ipc_error);
      throw CommError(ipc_error);
    }
    const cudaError_t state = cudaStreamQuery(stream);
    if (state == cudaSuccess) {
      const std::string late = ipc_ ? ipc_->error() : std::string();
      if (!late.empty()) {
        abort(late);
        throw CommError(late);
      }
      return;
    }
    if (state != cudaErrorNotReady)
      throw CommError(std::string("rank ") + std::to_string(rank()) + ": stream failed: " + cudaGetErrorString(state));
    if (nccl_) {
      // NCCL's own timed wait (polls its asynchronous error, aborts on the deadline).
      nccl_->synchronize(stream);
      continue;
    }
    if (Clock::now() >= deadline) {
      abort("timeout");
      throw CommError("rank " + std::to_string(rank()) + ": stream did not finish within " +
                      std::to_string(options_.timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace gossamer::comm
