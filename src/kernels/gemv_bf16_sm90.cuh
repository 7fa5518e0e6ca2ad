// The few-column bf16 GEMV's column on the device (gemv_bf16.h: one CTA of 8 warps per output column, the warps
// splitting K; gemv_bf16_sm90.cu's column kernel, the decode router): thread t takes the weight row's 16-byte vectors
// t + 256·i, sums its products with x in that order, the warps reduce by shuffles, and the warps' sums are added in
// warp order.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace gossamer::kernels::gemv_bf16_column {

inline constexpr int kWarps = 8;
inline constexpr int kThreads = 32 * kWarps;

__device__ __forceinline__ float lo(uint32_t v) {
  return __uint_as_float(v << 16);
}
__device__ __forceinline__ float hi(uint32_t v) {
  return __uint_as_float(v & 0xFFFF0000u);
}

// This thread's vectors of the weight row (`vecs` = K / 8 of them; at most 256 · kVecs): w[i] = row[t + 256·i].
// Weights only: read before a PDL wait.
template <int kVecs>
__device__ __forceinline__ void load_row(const uint16_t* w_row, int vecs, uint4 (&w)[kVecs]) {
#pragma unroll
  for (int i = 0; i < kVecs; ++i) {
    const int c = static_cast<int>(threadIdx.x) + i * kThreads;
    if (c < vecs) w[i] = __ldg(reinterpret_cast<const uint4*>(w_row) + c);
  }
}

// The row's dot with x's rows 0 … rows − 1 (rows ≤ kRows, row stride ldx elements), per warp: partial[warp][r]
// (rows past `rows` read nothing and hold 0). Every thread of the CTA calls it; the caller synchronises before
// reading `partial` (shared memory). A row's sum does not depend on kRows.
template <int kRows, int kVecs>
__device__ __forceinline__ void warp_partials(const uint4 (&w)[kVecs], int vecs, const uint16_t* x, int64_t ldx,
                                              int rows, float (&partial)[kWarps][kRows]) {
  float acc[kRows] = {};
#pragma unroll
  for (int i = 0; i < kVecs; ++i) {
    const int c = static_cast<int>(threadIdx.x) + i * kThreads;
    if (c >= vecs) break;
    const uint32_t wp[4] = {w[i].x, w[i].y, w[i].z, w[i].w};
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if (r >= rows) break;
      const uint4 xv = __ldg(reinterpret_cast<const uint4*>(x + r * ldx) + c);
      const uint32_t xp[4] = {xv.x, xv.y, xv.z, xv.w};
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[r] += lo(wp[j]) * lo(xp[j]) + hi(wp[j]) * hi(xp[j]);
    }
  }
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    float v = acc[r];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) partial[warp][r] = v;
  }
}

// Output r: bf(Σ_warps partial[w][r] (in warp order) + bias), as bf16 bits; bias: the column's bf16 or null.
template <int kRows>
__device__ __forceinline__ uint16_t output(const float (&partial)[kWarps][kRows], int r, const uint16_t* bias) {
  float v = 0.f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) v += partial[w][r];
  const float b = bias ? __uint_as_float(static_cast<uint32_t>(*bias) << 16) : 0.f;
  const __nv_bfloat16 h = __float2bfloat16_rn(v + b);
  return *reinterpret_cast<const uint16_t*>(&h);
}

}  // namespace gossamer::kernels::gemv_bf16_column
