// One RMSNorm row's device math (rmsnorm.h), shared by the RMSNorm kernel and the kernels that recompute a
// norm themselves (launch_moe_router_decode): the same expressions in the same order, so every such kernel
// gets the norm's bits exactly. A block of kRmsThreads threads owns a row; thread i holds its 16-byte
// vectors i, i + kRmsThreads, … (8 bf16 each).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace gossamer::kernels::rms {

inline constexpr int kRmsThreads = 256;

__device__ __forceinline__ float bf_lo(uint32_t v) {
  return __uint_as_float(v << 16);
}
__device__ __forceinline__ float bf_hi(uint32_t v) {
  return __uint_as_float(v & 0xFFFF0000u);
}
__device__ __forceinline__ uint32_t pack_bf16(float a, float b) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<const uint32_t*>(&h);
}

// The sum of `v` over the block's kRmsThreads threads (all must call it): warp sums by xor shuffles, then the
// warps' in warp order. `partial` is [kRmsThreads / 32] shared floats, free again after a __syncthreads().
__device__ __forceinline__ float block_sum(float v, float* partial) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = v;
  __syncthreads();
  float total = 0.f;
#pragma unroll
  for (int i = 0; i < kRmsThreads / 32; ++i) total += partial[i];
  return total;
}

// One vector of the row: v = x (as floats), or with a residual s = bf(x + residual) in v and its bits in
// `sum` (the residual's new value). Adds v's squares to sum_sq in element order.
__device__ __forceinline__ void add_vec(const uint4& x, const uint4* residual, float (&v)[8], uint4& sum,
                                        float& sum_sq) {
  const uint32_t* aw = reinterpret_cast<const uint32_t*>(&x);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    v[2 * j] = bf_lo(aw[j]);
    v[2 * j + 1] = bf_hi(aw[j]);
  }
  if (residual) {
    const uint32_t* rw = reinterpret_cast<const uint32_t*>(residual);
    uint32_t* sw = reinterpret_cast<uint32_t*>(&sum);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      sw[j] = pack_bf16(v[2 * j] + bf_lo(rw[j]), v[2 * j + 1] + bf_hi(rw[j]));
      v[2 * j] = bf_lo(sw[j]);
      v[2 * j + 1] = bf_hi(sw[j]);
    }
  }
#pragma unroll
  for (int j = 0; j < 8; ++j) sum_sq += v[j] * v[j];
}

// 1 / sqrt(mean of squares + eps) from the row's total sum of squares.
__device__ __forceinline__ float inv_rms(float total_sum_sq, int hidden, float eps) {
  return rsqrtf(total_sum_sq / static_cast<float>(hidden) + eps);
}

// bf(v · inv_rms · w) of one vector, packed.
__device__ __forceinline__ uint4 scale_vec(const float (&v)[8], float inv, const uint4& weight) {
  const uint32_t* ww = reinterpret_cast<const uint32_t*>(&weight);
  uint4 o;
  uint32_t* ow = reinterpret_cast<uint32_t*>(&o);
#pragma unroll
  for (int j = 0; j < 4; ++j) ow[j] = pack_bf16(v[2 * j] * inv * bf_lo(ww[j]), v[2 * j + 1] * inv * bf_hi(ww[j]));
  return o;
}

}  // namespace gossamer::kernels::rms
