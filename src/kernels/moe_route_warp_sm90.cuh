// One token's route (moe.h launch_moe_route: the top 4 of its router logits, ties to the lower expert
// index, and the softmax over the 4) by one warp, shared by the route kernel (moe_routing_sm90.cu) and the
// fused MLP norm + router (rmsnorm_router_bf16_sm90.cu) so that both write the same bits.
#pragma once

#include <cfloat>
#include <climits>
#include <cstdint>

#include "kernels/cuda_utils.h"
#include "kernels/moe.h"  // kMoeTopK, kMoeMaxExperts

namespace gossamer::kernels {

// Experts per lane: lane l holds experts l, l + 32, ….
inline constexpr int kMoeRouteExpertsPerLane = kMoeMaxExperts / 32;

__device__ __forceinline__ bool moe_route_better(float v1, int i1, float v2, int i2) {
  return v1 > v2 || (v1 == v2 && i1 < i2);
}

// v[i]: the logit of expert lane + 32·i as fp32 (−FLT_MAX past num_experts). Every lane of the warp calls
// it; lane 0 writes ids [4] (descending logit) and weights [4] fp32. v is clobbered.
__device__ __forceinline__ void moe_route_warp(float (&v)[kMoeRouteExpertsPerLane], int num_experts, int lane,
                                               int32_t* ids, float* weights) {
  float top_v[kMoeTopK];
  int top_i[kMoeTopK];
#pragma unroll
  for (int k = 0; k < kMoeTopK; ++k) {
    float best_v = -FLT_MAX;
    int best_i = INT_MAX;
#pragma unroll
    for (int i = 0; i < kMoeRouteExpertsPerLane; ++i) {
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
    top_i[k] = best_i;
#pragma unroll
    for (int i = 0; i < kMoeRouteExpertsPerLane; ++i) {
      if (lane + 32 * i == best_i) v[i] = -FLT_MAX;
    }
    // NOTE: a taken expert is set to −FLT_MAX and its index stays larger than any untaken −FLT_MAX
    // competitor only if logits are finite, which router outputs are.
  }
  if (lane == 0) {
    float sum = 0.f, w[kMoeTopK];
#pragma unroll
    for (int k = 0; k < kMoeTopK; ++k) sum += (w[k] = __expf(top_v[k] - top_v[0]));
#pragma unroll
    for (int k = 0; k < kMoeTopK; ++k) {
      ids[k] = top_i[k];
      weights[k] = w[k] / sum;
    }
  }
}

}  // namespace gossamer::kernels
