#include "comm/cuda/nccl_communicator.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "core/error.h"

namespace gossamer::comm {

namespace {

using Clock = std::chrono::steady_clock;

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::kF32: return ncclFloat32;
    case DType::kBF16: return ncclBfloat16;
    default: throw CommError("NCCL: unsupported dtype " + std::string(name_of(dtype)));
  }
}

}  // namespace

void disable_nvlink_multicast() {
  ::setenv("NCCL_NVLS_ENABLE", "0", 1);
}

NcclCommunicator::NcclCommunicator(TcpBootstrap& bootstrap, int device, std::chrono::milliseconds timeout)
    : timeout_(timeout), rank_(bootstrap.rank()) {
  disable_nvlink_multicast();
  const cudaError_t set = cudaSetDevice(device);
  if (set != cudaSuccess)
    throw CommError("NCCL: cudaSetDevice(" + std::to_string(device) + "): " + cudaGetErrorString(set));
  ncclUniqueId id{};
  if (bootstrap.rank() == 0) {
    const ncclResult_t made = ncclGetUniqueId(&id);
    if (made != ncclSuccess) throw CommError(std::string("NCCL: ncclGetUniqueId: ") + ncclGetErrorString(made));
  }
  const std::string shared = bootstrap.broadcast(std::string(reinterpret_cast<const char*>(&id), sizeof(id)), 0);
  if (shared.size() != sizeof(id)) throw CommError("NCCL: bad unique id from rank 0");
  std::memcpy(&id, shared.data(), sizeof(id));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // polled: a peer that never joins ends in a timeout, not a hang
  const ncclResult_t started = ncclCommInitRankConfig(&comm_, bootstrap.world_size(), id, bootstrap.rank(), &config);
  if (started != ncclSuccess && started != ncclInProgress) {
    throw CommError(std::string("NCCL: ncclCommInitRankConfig: ") + ncclGetErrorString(started));
  }
  wait_ready("communicator initialisation");
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_ == nullptr) return;
  if (aborted_) return;
  ncclCommAbort(comm_);  // NOTE: abort, not destroy: destroy would wait on peers that may be gone
}

void NcclCommunicator::abort() {
  if (comm_ != nullptr && !aborted_) ncclCommAbort(comm_);
  aborted_ = true;
}

void NcclCommunicator::wait_ready(const char* what) {
  const Clock::time_point deadline = Clock::now() + timeout_;
  for (;;) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t queried = ncclCommGetAsyncError(comm_, &state);
    if (queried != ncclSuccess) state = queried;
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) {
      const char* last = ncclGetLastError(comm_);
      const std::string detail = last != nullptr ? last : "";
      abort();
      throw CommError("NCCL rank " + std::to_string(rank_) + ": " + what + " failed: " + ncclGetErrorString(state) +
                      (detail.empty() ? "" : " (" + detail + ")"));
    }
    if (Clock::now() >= deadline) {
      abort();
      throw CommError("NCCL rank " + std::to_string(rank_) + ": " + what + " did not complete within " +
                      std::to_string(timeout_.count()) + " ms (a peer died or never joined)");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

void NcclCommunicator::all_reduce(void* data, int64_t count, DType dtype, ReduceOp op, cudaStream_t stream) {
  if (aborted_) throw CommError("NCCL rank " + std::to_string(rank_) + ": the communicator was aborted");
  const ncclResult_t result = ncclAllReduce(data, data, static_cast<size_t>(count), nccl_type(dtype),
                                            op == ReduceOp::kSum ? ncclSum : ncclMax, comm_, stream);
  if (result != ncclSuccess && result != ncclInProgress) {
    abort();
    throw CommError(std::string("NCCL: ncclAllReduce: ") + ncclGetErrorString(result));
  }
  wait_ready("all_reduce enqueue");
}

void NcclCommunicator::all_gather(const void* send, void* recv, int64_t bytes, cudaStream_t stream) {
  if (aborted_) throw CommError("NCCL rank " + std::to_string(rank_) + ": the communicator was aborted");
  const ncclResult_t result = ncclAllGather(send, recv, static_cast<size_t>(bytes), ncclUint8, comm_, stream);
  if (result != ncclSuccess && result != ncclInProgress) {
    abort();
    throw CommError(std::string("NCCL: ncclAllGather: ") + ncclGetErrorString(result));
  }
  wait_ready("all_gather enqueue");
}

void NcclCommunicator::synchronize(cudaStream_t stream) {
  const Clock::time_point deadline = Clock::now() + timeout_;
  for (;;) {
    const cudaError_t state = cudaStreamQuery(stream);
    if (state == cudaSuccess) return;
    if (state != cudaErrorNotReady) {
      abort();
      throw CommError(std::string("NCCL rank ") + std::to_string(rank_) +
                      ": stream failed: " + cudaGetErrorString(state));
    }
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(comm_, &async);
    if (async != ncclSuccess && async != ncclInProgress) {
      abort();
      throw CommError(std::string("NCCL rank ") + std::to_string(rank_) + ": " + ncclGetErrorString(async));
    }
    if (Clock::now() >= deadline) {
      abort();
      throw CommError("NCCL rank " + std::to_string(rank_) + ": collective did not complete within " +
                      std::to_string(timeout_.count()) + " ms (a peer died or stopped calling); communicator aborted");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace gossamer::comm
