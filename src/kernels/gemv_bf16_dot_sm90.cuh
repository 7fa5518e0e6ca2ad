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

}  // namespace gossamer::kernels
