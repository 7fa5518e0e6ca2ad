// moe_route's rule (moe.h) for one token, computed by one warp: the device side of launch_moe_route, kept in a
// header so that a kernel fusing the routing into another launch gives the same ids and weights bit for bit.
#pragma once

#include <cfloat>
#include <climits>
#include <cstdint>

#include "kernels/moe.h"

namespace gossamer::kernels {

__device__ __forceinline__ bool moe_route_better(float v1, int i1, float v2, int i2) {
  return v1 > v2 || (v1 == v2 && i1 < i2);
}

// The top kMoeTopK of `num_experts` (≤ kMoeMaxExperts) bf16 logits, descending, ties to the lower index, and
// the softmax over them (fp32). All 32 lanes must call it; every lane returns the same ids and weights.
//   logits: [num_experts] bf16 → ids [kMoeTopK] int32, weights [kMoeTopK] fp32
__device__ __forceinline__ void moe_route_token(const uint16_t* logits, int num_experts, int (&ids)[kMoeTopK],
                                                float (&weights)[kMoeTopK]) {
  const int lane = threadIdx.x % 32;
  constexpr int kPer = kMoeMaxExperts / 32;  // lane l holds experts l, l + 32, …
  float v[kPer];
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int e = lane + 32 * i;
    v[i] = e < num_experts ? __uint_as_float(uint32_t(logits[e]) << 16) : -FLT_MAX;
  }
  float top_v[kMoeTopK];
#pragma unroll
  for (int k = 0; k < kMoeTopK; ++k) {
    float best_v = -FLT_MAX;
    int best_i = INT_MAX;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int e = lane + 32 * i;
      if (e < num_experts && moe_route_better(v[i], e, best_v, best_i)) {
        best_v = v[i];
        best_i = e;
      }
    }
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, best_v, o);
      const int oi = __shfl_xor_sync(0xffffffffu, best_i, o);
      if (moe_route_better(ov, oi, best_v, best_i)) {
        best_v = ov;
        best_i = oi;
      }
    }
    top_v[k] = best_v;
    ids[k] = best_i;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      if (lane + 32 * i == best_i) v[i] = -FLT_MAX;
    }
    // NOTE: a taken expert is set to −FLT_MAX and its index stays larger than any untaken −FLT_MAX
    // competitor only if logits are finite, which router outputs are.
  }
  float sum = 0.f;
#pragma unroll
  for (int k = 0; k < kMoeTopK; ++k) sum += (weights[k] = __expf(top_v[k] - top_v[0]));
#pragma unroll
  for (int k = 0; k < kMoeTopK; ++k) weights[k] /= sum;
}

// moe_route_token, then lane 0 stores the ids and weights: ids_out [kMoeTopK] int32, weights_out [kMoeTopK] fp32.
__device__ __forceinline__ void moe_route_token_store(const uint16_t* logits, int num_experts, int32_t* ids_out,
                                                      float* weights_out) {
  int ids[kMoeTopK];
  float weights[kMoeTopK];
  moe_route_token(logits, num_experts, ids, weights);
  if (threadIdx.x % 32 == 0) {
#pragma unroll
    for (int k = 0; k < kMoeTopK; ++k) {
      ids_out[k] = ids[k];
      weights_out[k] = weights[k];
    }
  }
}

}  // namespace gossamer::kernels
