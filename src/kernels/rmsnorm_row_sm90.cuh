// The steps of the bf16 RMSNorm (rmsnorm.h) on one row, shared by rmsnorm_bf16_sm90.cu and the fused MLP
// norm + router (rmsnorm_router_bf16_sm90.cu) so that both write the same bits. A row is read in 16-byte
// vectors (8 bf16); thread i of a kThreads-thread block takes vectors i, i + kThreads, … in that order, sums
// their squares in its own fp32 register, and the block adds the threads' sums warp by warp (warp_sum, then
// sum_partials over the warps in order).
#pragma once

#include <cstdint>

#include "kernels/cuda_utils.h"

namespace gossamer::kernels::rmsnorm_row {

inline constexpr int kThreads = 256;
inline constexpr int kWarps = kThreads / 32;

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

// [8] bf16 → [8] fp32 (exact).
__device__ __forceinline__ void unpack(uint4 a, float (&v)[8]) {
  const uint32_t* aw = reinterpret_cast<const uint32_t*>(&a);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    v[2 * j] = bf_lo(aw[j]);
    v[2 * j + 1] = bf_hi(aw[j]);
  }
}

// The fused residual add: s = bf(v + r), returned as [8] bf16; v ← s.
__device__ __forceinline__ uint4 add_residual(float (&v)[8], uint4 r) {
  const uint32_t* rw = reinterpret_cast<const uint32_t*>(&r);
  uint4 s;
  uint32_t* sw = reinterpret_cast<uint32_t*>(&s);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    sw[j] = pack_bf16(v[2 * j] + bf_lo(rw[j]), v[2 * j + 1] + bf_hi(rw[j]));
    v[2 * j] = bf_lo(sw[j]);
    v[2 * j + 1] = bf_hi(sw[j]);
  }
  return s;
}

// sum + v[0]² + … + v[7]², left to right.
__device__ __forceinline__ float sum_squares(float sum, const float (&v)[8]) {
#pragma unroll
  for (int j = 0; j < 8; ++j) sum += v[j] * v[j];
  return sum;
}

// The sum over a warp (xor butterfly, every lane gets it).
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// The block's sum from the warps' sums, in warp order. partial: [kWarps] fp32, `stride` floats apart.
__device__ __forceinline__ float sum_partials(const float* partial, int stride = 1) {
  float total = 0.f;
#pragma unroll
  for (int i = 0; i < kWarps; ++i) total += partial[i * stride];
  return total;
}

__device__ __forceinline__ float inv_rms(float sum_sq, int hidden, float eps) {
  return rsqrtf(sum_sq / static_cast<float>(hidden) + eps);
}

// out = bf(v · inv_rms · w) as [8] bf16. w: [8] bf16 (the norm weight).
__device__ __forceinline__ uint4 scale(const float (&v)[8], float inv_rms, uint4 w) {
  const uint32_t* ww = reinterpret_cast<const uint32_t*>(&w);
  uint4 o;
  uint32_t* ow = reinterpret_cast<uint32_t*>(&o);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    ow[j] = pack_bf16(v[2 * j] * inv_rms * bf_lo(ww[j]), v[2 * j + 1] * inv_rms * bf_hi(ww[j]));
  }
  return o;
}

}  // namespace gossamer::kernels::rmsnorm_row
