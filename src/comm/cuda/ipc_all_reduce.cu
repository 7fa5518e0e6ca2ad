#include <cuda_bf16.h>

#include <cstring>

#include "comm/communicator.h"
#include "comm/cuda/ipc_all_reduce.h"
#include "core/error.h"

namespace gossamer::comm {

namespace {

constexpr int kBlocks = 32;
constexpr int kThreads = 512;
constexpr int64_t kFlagBytes = 256;  // [kBlocks] uint64 flags, then the data halves

#define GOSSAMER_IPC_CHECK(call)                                                                     \
  do {                                                                                               \
    const cudaError_t status_ = (call);                                                              \
    if (status_ != cudaSuccess)                                                                      \
      throw CommError(std::string("IPC all-reduce: ") + #call + ": " + cudaGetErrorString(status_)); \
  } while (0)

struct KernelArgs {
  uint8_t* data;        // this rank's input / output
  int64_t num_vectors;  // 16-byte vectors in data
  int bf16;             // element type: 1 = bf16, 0 = f32
  int rank, world;
  uint8_t* buffers[kIpcMaxRanks];  // every rank's IPC buffer (flags at 0, data halves at kFlagBytes)
  int64_t half_bytes;              // bytes of one data half (max_bytes)
  uint64_t* epochs;                // [kBlocks], this rank's
  int* error;                      // mapped host word
  uint64_t timeout_ns;
};

__device__ __forceinline__ uint64_t global_timer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ void add_vector(float (&acc)[8], uint4 v, bool bf16) {
  if (bf16) {
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v);
    for (int j = 0; j < 4; ++j) {
      const float2 f = __bfloat1622float2(h[j]);
      acc[2 * j] += f.x;
      acc[2 * j + 1] += f.y;
    }
  } else {
    const float* f = reinterpret_cast<const float*>(&v);
    for (int j = 0; j < 4; ++j) acc[j] += f[j];
  }
}

__device__ __forceinline__ uint4 pack_vector(const float (&acc)[8], bool bf16) {
  uint4 out;
  if (bf16) {
    __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&out);
    for (int j = 0; j < 4; ++j) h[j] = __floats2bfloat162_rn(acc[2 * j], acc[2 * j + 1]);
  } else {
    float* f = reinterpret_cast<float*>(&out);
    for (int j = 0; j < 4; ++j) f[j] = acc[j];
  }
  return out;
}

__global__ void __launch_bounds__(kThreads) one_shot_all_reduce(KernelArgs args) {
  __shared__ uint64_t epoch;
  __shared__ int give_up;
  const int b = blockIdx.x;
  if (threadIdx.x == 0) {
    epoch = args.epochs[b] + 1;
    give_up = 0;
  }
  __syncthreads();
  const int64_t per_block = (args.num_vectors + kBlocks - 1) / kBlocks;
  const int64_t begin = b * per_block, end = min(args.num_vectors, begin + per_block);
  const int64_t half = static_cast<int64_t>(epoch & 1) * args.half_bytes;

  // ---- publish: this block's slice into our IPC buffer, then flag[b] = epoch ----
  uint4* mine = reinterpret_cast<uint4*>(args.buffers[args.rank] + kFlagBytes + half);
  const uint4* input = reinterpret_cast<const uint4*>(args.data);
  for (int64_t i = begin + threadIdx.x; i < end; i += kThreads) mine[i] = input[i];
  __threadfence_system();
  __syncthreads();
  if (threadIdx.x == 0) {
    volatile uint64_t* flag = reinterpret_cast<volatile uint64_t*>(args.buffers[args.rank]) + b;
    *flag = epoch;
    __threadfence_system();
  }

  // ---- wait for every peer's flag[b] (bounded: a dead peer is recorded, not waited for forever) ----
  if (threadIdx.x < args.world) {
    const int peer = threadIdx.x;
    volatile uint64_t* flag = reinterpret_cast<volatile uint64_t*>(args.buffers[peer]) + b;
    const uint64_t start = global_timer_ns();
    while (*flag < epoch) {
      if (*reinterpret_cast<volatile int*>(args.error) != 0 || global_timer_ns() - start > args.timeout_ns) {
        atomicCAS(args.error, 0, 1 + peer);
        give_up = 1;
        break;
      }
    }
  }
  __threadfence_system();
  __syncthreads();
  if (give_up) return;

  // ---- reduce in rank order (fp32), write back ----
  uint4* output = reinterpret_cast<uint4*>(args.data);
  for (int64_t i = begin + threadIdx.x; i < end; i += kThreads) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int q = 0; q < args.world; ++q) {
      const uint4* theirs = reinterpret_cast<const uint4*>(args.buffers[q] + kFlagBytes + half);
      add_vector(acc, __ldcv(theirs + i), args.bf16 != 0);
    }
    output[i] = pack_vector(acc, args.bf16 != 0);
  }
  if (threadIdx.x == 0) args.epochs[b] = epoch;
}

}  // namespace

IpcAllReduce::IpcAllReduce(TcpBootstrap& bootstrap, int device, int64_t max_bytes, std::chrono::milliseconds timeout)
    : bootstrap_(bootstrap),
      rank_(bootstrap.rank()),
      world_(bootstrap.world_size()),
      max_bytes_(max_bytes),
      timeout_(timeout) {
  GOSSAMER_CHECK(world_ <= kIpcMaxRanks, "IPC all-reduce supports up to ", kIpcMaxRanks, " ranks, got ", world_);
  GOSSAMER_CHECK(max_bytes > 0 && max_bytes % 16 == 0, "IPC all-reduce: max_bytes must be a positive multiple of 16");
  GOSSAMER_IPC_CHECK(cudaSetDevice(device));
  static_assert(kBlocks * 8 <= kFlagBytes, "flags must fit their area");
  GOSSAMER_IPC_CHECK(cudaMalloc(&local_, static_cast<size_t>(kFlagBytes + 2 * max_bytes)));
  GOSSAMER_IPC_CHECK(cudaMemset(local_, 0, static_cast<size_t>(kFlagBytes + 2 * max_bytes)));
  GOSSAMER_IPC_CHECK(cudaMalloc(&epochs_, kBlocks * sizeof(uint64_t)));
  GOSSAMER_IPC_CHECK(cudaMemset(epochs_, 0, kBlocks * sizeof(uint64_t)));
  GOSSAMER_IPC_CHECK(cudaHostAlloc(&error_host_, sizeof(int), cudaHostAllocMapped));
  *error_host_ = 0;
  GOSSAMER_IPC_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&error_device_), error_host_, 0));
  GOSSAMER_IPC_CHECK(cudaDeviceSynchronize());
  // Exchange handles and open every peer's buffer (peer access between devices is enabled by the mapping).
  cudaIpcMemHandle_t handle;
  GOSSAMER_IPC_CHECK(cudaIpcGetMemHandle(&handle, local_));
  const std::vector<std::string> handles =
      bootstrap.all_gather(std::string(reinterpret_cast<const char*>(&handle), sizeof(handle)));
  peers_.assign(static_cast<size_t>(world_), nullptr);
  for (int q = 0; q < world_; ++q) {
    if (q == rank_) {
      peers_[static_cast<size_t>(q)] = local_;
      continue;
    }
    cudaIpcMemHandle_t theirs;
    std::memcpy(&theirs, handles[static_cast<size_t>(q)].data(), sizeof(theirs));
    void* mapped = nullptr;
    GOSSAMER_IPC_CHECK(cudaIpcOpenMemHandle(&mapped, theirs, cudaIpcMemLazyEnablePeerAccess));
    peers_[static_cast<size_t>(q)] = static_cast<uint8_t*>(mapped);
  }
  bootstrap.barrier();  // every buffer is zeroed and mapped before anyone's first flag
}

IpcAllReduce::~IpcAllReduce() {
  try {
    cudaDeviceSynchronize();
    bootstrap_.barrier();            // nobody still reads our buffer
  } catch (const std::exception&) {  // a peer is gone: nothing can read our buffer any more
  }
  for (int q = 0; q < world_; ++q) {
    if (q != rank_ && peers_.size() > static_cast<size_t>(q) && peers_[static_cast<size_t>(q)])
      cudaIpcCloseMemHandle(peers_[static_cast<size_t>(q)]);
  }
  cudaFree(local_);
  cudaFree(epochs_);
  cudaFreeHost(error_host_);
}

bool IpcAllReduce::supports(const void* data, int64_t count, DType dtype) const {
  if (dtype != DType::kF32 && dtype != DType::kBF16) return false;
  const int64_t bytes = count * size_of(dtype);
  return bytes > 0 && bytes % 16 == 0 && bytes <= max_bytes_ && reinterpret_cast<uintptr_t>(data) % 16 == 0;
}

void IpcAllReduce::all_reduce(void* data, int64_t count, DType dtype, cudaStream_t stream) {
  GOSSAMER_CHECK(supports(data, count, dtype), "IPC all-reduce: unsupported call (", count, " × ", name_of(dtype),
                 ", max ", max_bytes_, " bytes, 16-byte aligned)");
  const std::string failed = error();
  if (!failed.empty()) throw CommError(failed);
  KernelArgs args{};
  args.data = static_cast<uint8_t*>(data);
  args.num_vectors = count * size_of(dtype) / 16;
  args.bf16 = dtype == DType::kBF16;
  args.rank = rank_;
  args.world = world_;
  for (int q = 0; q < world_; ++q) args.buffers[q] = peers_[static_cast<size_t>(q)];
  args.half_bytes = max_bytes_;
  args.epochs = epochs_;
  args.error = error_device_;
  args.timeout_ns = static_cast<uint64_t>(timeout_.count()) * 1000000ull;
  one_shot_all_reduce<<<kBlocks, kThreads, 0, stream>>>(args);
  GOSSAMER_IPC_CHECK(cudaGetLastError());
}

std::string IpcAllReduce::error() const {
  const int code = *reinterpret_cast<volatile int*>(error_host_);
  if (code == 0) return {};
  return "rank " + std::to_string(rank_) + ": rank " + std::to_string(code - 1) +
         " did not arrive at the IPC all-reduce within " + std::to_string(timeout_.count()) +
         " ms (the process died or left the group)";
}

}  // namespace gossamer::comm
