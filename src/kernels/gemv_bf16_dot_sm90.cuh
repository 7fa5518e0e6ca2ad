// The bf16 GEMV's dot product step (gemv_bf16.h), shared by the GEMV kernels and the fused decode router
// (launch_moe_router_decode), which must give the router GEMV's logits bit for bit.
#pragma once

#include <cstdint>

namespace gossamer::kernels {

// acc + Σ_j w_j · x_j over one 16-byte vector of each (8 bf16), fp32, pairs of elements in order: the
// expression every caller shares (its contraction into FMAs is part of the result).
__device__ __forceinline__ float gemv_bf16_dot8(float acc, const uint4& w, const uint4& x) {
  const uint32_t wp[4] = {w.x, w.y, w.z, w.w};
  const uint32_t xp[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    acc += __uint_as_float(wp[j] << 16) * __uint_as_float(xp[j] << 16) +
           __uint_as_float(wp[j] & 0xFFFF0000u) * __uint_as_float(xp[j] & 0xFFFF0000u);
  }
  return acc;
}

// The column GEMV's reduction (one block per output column, its warps splitting K): every thread of the block
// calls gemv_bf16_warp_sums with its partial dots of kRows rows, which writes each warp's sums (xor shuffles)
// to partial[warp][r]; after a __syncthreads(), gemv_bf16_column_sum adds row r's warps in warp order.
template <int kRows>
__device__ __forceinline__ void gemv_bf16_warp_sums(const float (&acc)[kRows], float (*partial)[kRows]) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    float v = acc[r];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) partial[warp][r] = v;
  }
}
template <int kWarps, int kRows>
__device__ __forceinline__ float gemv_bf16_column_sum(const float (*partial)[kRows], int r) {
  float v = 0.f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) v += partial[w][r];
  return v;
}

}  // namespace gossamer::kernels
