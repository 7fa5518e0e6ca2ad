// The arithmetic of the bf16 GEMV (gemv_bf16.h), shared by gemv_bf16_sm90.cu and the fused MLP norm +
// router (rmsnorm_router_bf16_sm90.cu) so that both round alike: every 16-byte step of a dot product
// (gemv_bf16_dot8) and the one rounding at the end (gemv_bf16_round). The order of the steps and of the
// partial sums is each kernel's (the router's: gemv_bf16_column_kernel, matched by the fused kernel).
#pragma once

#include <cstdint>

#include "kernels/cuda_utils.h"

namespace gossamer::kernels {

// acc + the dot of 8 bf16 weights with 8 bf16 activations: pair j (elements 2j, 2j + 1) adds
// fma(w_2j, x_2j, w_2j+1 · x_2j+1) to acc, j = 0..3 in order.   w, x: [8] bf16
__device__ __forceinline__ float gemv_bf16_dot8(float acc, uint4 w, uint4 x) {
  const uint32_t wp[4] = {w.x, w.y, w.z, w.w};
  const uint32_t xp[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float w_lo = __uint_as_float(wp[j] << 16), w_hi = __uint_as_float(wp[j] & 0xFFFF0000u);
    const float x_lo = __uint_as_float(xp[j] << 16), x_hi = __uint_as_float(xp[j] & 0xFFFF0000u);
    acc = __fadd_rn(acc, __fmaf_rn(w_lo, x_lo, __fmul_rn(w_hi, x_hi)));
  }
  return acc;
}

// bf(sum + bias[n]) as bf16 bits (bias null: bf(sum + 0)).
__device__ __forceinline__ uint16_t gemv_bf16_round(float sum, const uint16_t* bias, int n) {
  const float b = bias ? __uint_as_float(static_cast<uint32_t>(bias[n]) << 16) : 0.f;
  const __nv_bfloat16 h = __float2bfloat16_rn(sum + b);
  return *reinterpret_cast<const uint16_t*>(&h);
}

}  // namespace gossamer::kernels
