// Small CUDA helpers shared by the kernels in this folder (host and device).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cfloat>
#include <cstdint>

#include "core/cuda/check.h"  // GOSSAMER_CUDA_CHECK
#include "core/error.h"

namespace gossamer::kernels {

// The SM count of CUDA device `device` (launch rules size grids by it), queried once per device.
inline int sm_count(int device) {
  static std::atomic<int> counts[64] = {};
  GOSSAMER_CHECK(device >= 0 && device < 64, "sm_count: device ", device, " out of range");
  int n = counts[device].load(std::memory_order_relaxed);
  if (n == 0) {
    GOSSAMER_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
    counts[device].store(n, std::memory_order_relaxed);
  }
  return n;
}
// The current device's (cudaGetDevice) SM count.
inline int current_sm_count() {
  int device = 0;
  GOSSAMER_CUDA_CHECK(cudaGetDevice(&device));
  return sm_count(device);
}

template <typename T>
__host__ __device__ constexpr T ceil_div(T a, T b) {
  return (a + b - 1) / b;
}

#ifdef __CUDACC__
// Two e4m3 (low byte → low half) to f16x2; exact (the FP8 GEMVs, the stream GEMM, the FP8 KV cache).
__device__ __forceinline__ uint32_t e4m3x2_to_f16x2(uint32_t pair16) {
  uint32_t r;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;\n" : "=r"(r) : "h"(static_cast<uint16_t>(pair16)));
  return r;
}
// v reduced with op (associative, commutative) over a block of kThreads threads (a multiple of 32); every
// thread gets the result. scratch: kThreads / 32 elements of shared memory. Two block barriers.
template <int kThreads, typename T, typename Op>
__device__ T block_reduce(T v, Op op, T* scratch) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "block_reduce: whole warps, at most 1,024 threads");
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  T r = scratch[0];
  for (int i = 1; i < kThreads / 32; ++i) r = op(r, scratch[i]);
  return r;
}
// A row's softmax normaliser over the `n` values value(0..n−1): the max and Σ exp(value − max) (__expf),
// each thread's strided partials then block_reduce, so every thread of the block returns the same pair.
// Shared by the single-device sampler's logprobs and the vocab-slice records (one truth for their values).
template <int kThreads, typename Value>
__device__ void row_normaliser(int n, Value value, float* scratch, float& max_out, float& sum_out) {
  float mx = -FLT_MAX;
  for (int i = threadIdx.x; i < n; i += kThreads) mx = fmaxf(mx, value(i));
  mx = block_reduce<kThreads>(
      mx, [](float a, float b) { return fmaxf(a, b); }, scratch);
  float sum = 0.f;
  for (int i = threadIdx.x; i < n; i += kThreads) sum += __expf(value(i) - mx);
  sum = block_reduce<kThreads>(
      sum, [](float a, float b) { return a + b; }, scratch);
  max_out = mx;
  sum_out = sum;
}
// 16-byte async copy global → shared; when !valid the destination is zero-filled and nothing is read.
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem, bool valid) {
  const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_4(void* smem, const void* gmem, bool valid) {
  const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(gmem), "r"(valid ? 4 : 0));
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
// Makes this thread's generic-proxy shared-memory writes (cp.async included) visible to the async proxy
// (wgmma operand reads); follow with a barrier.
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Programmatic dependent launch (PDL). pdl_wait() blocks until the previous kernel in the stream has
// completed and its writes are visible (a no-op when this grid was launched without PDL); a kernel
// launched with launch_pdl must call it before touching any global memory an earlier kernel reads or
// writes. pdl_trigger() lets the next PDL-launched kernel be scheduled now (it still waits in pdl_wait).
__device__ __forceinline__ void pdl_wait() {
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
}
__device__ __forceinline__ void pdl_trigger() {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

// The launch attributes of a cluster of `cluster` CTAs along x (none when 1) and of PDL (when `pdl`), for a
// cudaLaunchConfig_t (launch_pdl: PDL alone); apply() points the config at them, so keep this alive
// until the launch.
struct ClusterPdlAttributes {
  ClusterPdlAttributes(int cluster, bool pdl) {
    if (cluster > 1) {
      attrs[count].id = cudaLaunchAttributeClusterDimension;
      attrs[count].val.clusterDim.x = static_cast<unsigned>(cluster);
      attrs[count].val.clusterDim.y = 1;
      attrs[count].val.clusterDim.z = 1;
      ++count;
    }
    if (pdl) {
      attrs[count].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attrs[count].val.programmaticStreamSerializationAllowed = 1;
      ++count;
    }
  }
  void apply(cudaLaunchConfig_t& config) {
    config.attrs = attrs;
    config.numAttrs = count;
  }
  cudaLaunchAttribute attrs[2] = {};
  unsigned count = 0;
};

// A persistent kernel in clusters of `cluster` CTAs along x (threads and dynamic shared memory per CTA): config(n)
// is the launch configuration of n clusters on `stream` (no PDL); resident_clusters() raises the kernel's shared
// memory limit and asks how many of its clusters the GPU holds at once (once per kernel: keep it in a static).
// Keep the object alive until the launch (config points at its attributes).
template <typename Kernel>
struct PersistentClusterLaunch {
  PersistentClusterLaunch(Kernel kernel, int cluster, int threads, int smem_bytes, cudaStream_t stream)
      : kernel(kernel),
        cluster(cluster),
        threads(threads),
        smem_bytes(smem_bytes),
        stream(stream),
        attributes(cluster, false) {}
  cudaLaunchConfig_t config(int clusters) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(static_cast<unsigned>(clusters * cluster), 1, 1);
    cfg.blockDim = dim3(static_cast<unsigned>(threads), 1, 1);
    cfg.dynamicSmemBytes = static_cast<size_t>(smem_bytes);
    cfg.stream = stream;
    attributes.apply(cfg);
    return cfg;
  }
  int resident_clusters(const char* what) {
    GOSSAMER_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
    const cudaLaunchConfig_t cfg = config(current_sm_count() / cluster);
    int clusters = 0;
    GOSSAMER_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg));
    GOSSAMER_CHECK(clusters > 0, what, ": no cluster of ", cluster, " CTAs fits the GPU");
    return clusters;
  }
  Kernel kernel;
  int cluster, threads, smem_bytes;
  cudaStream_t stream;
  ClusterPdlAttributes attributes;
};

// Launches `kernel` with programmatic stream serialization: its launch and CTA scheduling overlap the
// previous kernel's tail (the kernel must start with pdl_wait()). Graph capturable.
template <typename... KernelArgs, typename... Args>
void launch_pdl(void (*kernel)(KernelArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream, Args... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  ClusterPdlAttributes attributes(1, true);
  attributes.apply(config);
  GOSSAMER_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, static_cast<KernelArgs>(args)...));
}
#endif

}  // namespace gossamer::kernels
