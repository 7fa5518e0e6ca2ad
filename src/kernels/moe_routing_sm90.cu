// The MoE pieces of moe.h on the GPU: route (one warp per token), plan (one CTA) and combine. The
// compositions of the expert block over them are in moe_sm90.cu.
#include <cfloat>

#include "kernels/cuda_utils.h"
#include "kernels/moe.h"
#include "kernels/moe_route_sm90.cuh"

namespace gossamer::kernels {
namespace {

// One warp per token (moe_route_token).
__global__ void moe_route_kernel(MoeRouteParams p) {
  pdl_wait();  // PDL: nothing global is touched before the previous kernel is done
  pdl_trigger();
  const int t = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (t >= p.num_tokens) return;
  int ids[kMoeTopK];
  float weights[kMoeTopK];
  moe_route_token(p.logits + static_cast<int64_t>(t) * p.num_experts, p.num_experts, ids, weights);
  if (lane == 0) {
#pragma unroll
    for (int k = 0; k < kMoeTopK; ++k) {
      p.topk_ids[t * kMoeTopK + k] = ids[k];
      p.topk_weights[t * kMoeTopK + k] = weights[k];
    }
  }
}

__global__ void __launch_bounds__(1024) moe_plan_kernel(MoePlanParams p) {
  pdl_wait();  // PDL: nothing global is touched before the previous kernel is done
  pdl_trigger();
  __shared__ int count[kMoeMaxExperts];
  __shared__ int offset[kMoeMaxExperts];
  __shared__ int tile_offset[kMoeMaxExperts];
  const int num_pairs = p.num_tokens * kMoeTopK;
  for (int e = threadIdx.x; e < p.num_local_experts; e += blockDim.x) count[e] = 0;
  __syncthreads();
  // ---- histogram ----
  for (int i = threadIdx.x; i < num_pairs; i += blockDim.x) {
    const int e = p.topk_ids[i] - p.expert_begin;
    if (e >= 0 && e < p.num_local_experts) atomicAdd(&count[e], 1);
  }
  __syncthreads();
  // ---- scan (≤ 256 experts: serial is cheap) ----
  if (threadIdx.x == 0) {
    int rows = 0, tiles = 0;
    for (int e = 0; e < p.num_local_experts; ++e) {
      offset[e] = rows;
      tile_offset[e] = tiles;
      p.group_offsets[e] = rows;
      rows += count[e];
      tiles += (count[e] + p.tile_rows - 1) / p.tile_rows;
    }
    p.group_offsets[p.num_local_experts] = rows;
    *p.num_tiles = tiles;
  }
  __syncthreads();
  // ---- tile list ----
  for (int e = threadIdx.x; e < p.num_local_experts; e += blockDim.x) {
    const int n = (count[e] + p.tile_rows - 1) / p.tile_rows;
    for (int t = 0; t < n; ++t) {
      p.tile_group[tile_offset[e] + t] = e;
      p.tile_m0[tile_offset[e] + t] = offset[e] + t * p.tile_rows;
    }
  }
  __syncthreads();
  for (int e = threadIdx.x; e < p.num_local_experts; e += blockDim.x) count[e] = 0;
  __syncthreads();
  // ---- scatter ----
  for (int i = threadIdx.x; i < num_pairs; i += blockDim.x) {
    const int e = p.topk_ids[i] - p.expert_begin;
    int row = -1;
    if (e >= 0 && e < p.num_local_experts) {
      row = offset[e] + atomicAdd(&count[e], 1);
      p.row_token[row] = i / kMoeTopK;
    }
    p.pair_row[i] = row;
  }
}

__global__ void moe_combine_kernel(MoeCombineParams p) {
  pdl_wait();  // PDL: nothing global is touched before the previous kernel is done
  pdl_trigger();
  const int64_t t = blockIdx.x;
  const int vi = blockIdx.y * blockDim.x + threadIdx.x;
  if (vi >= p.hidden / 8) return;
  float acc[8] = {};
  if (p.residual) {
    const uint4 r = reinterpret_cast<const uint4*>(p.residual + t * p.hidden)[vi];
    const uint32_t* rw = reinterpret_cast<const uint32_t*>(&r);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      acc[2 * j] = __uint_as_float(rw[j] << 16);
      acc[2 * j + 1] = __uint_as_float(rw[j] & 0xFFFF0000u);
    }
  }
  float sum[8] = {};
#pragma unroll
  for (int k = 0; k < kMoeTopK; ++k) {
    const int row = p.pair_row[t * kMoeTopK + k];
    if (row < 0) continue;
    const float w = p.topk_weights[t * kMoeTopK + k];
    const uint4 y = reinterpret_cast<const uint4*>(p.y + static_cast<int64_t>(row) * p.hidden)[vi];
    const uint32_t* yw = reinterpret_cast<const uint32_t*>(&y);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      sum[2 * j] += w * __uint_as_float(yw[j] << 16);
      sum[2 * j + 1] += w * __uint_as_float(yw[j] & 0xFFFF0000u);
    }
  }
  uint4 o;
  uint32_t* ow = reinterpret_cast<uint32_t*>(&o);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(acc[2 * j] + sum[2 * j], acc[2 * j + 1] + sum[2 * j + 1]);
    ow[j] = *reinterpret_cast<const uint32_t*>(&h);
  }
  reinterpret_cast<uint4*>(p.out + t * p.hidden)[vi] = o;
}

}  // namespace

void launch_moe_route(const MoeRouteParams& p, cudaStream_t stream) {
  GOSSAMER_CHECK(p.num_experts >= kMoeTopK && p.num_experts <= kMoeMaxExperts, "moe_route: ", p.num_experts,
                 " experts not in [4, 256]");
  if (p.num_tokens == 0) return;
  launch_pdl(moe_route_kernel, dim3(ceil_div(p.num_tokens * 32, 256)), dim3(256), 0, stream, p);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

void launch_moe_plan(const MoePlanParams& p, cudaStream_t stream) {
  GOSSAMER_CHECK(p.num_local_experts > 0 && p.num_local_experts <= kMoeMaxExperts, "moe_plan: bad expert count");
  launch_pdl(moe_plan_kernel, dim3(1), dim3(1024), 0, stream, p);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

void launch_moe_combine(const MoeCombineParams& p, cudaStream_t stream) {
  GOSSAMER_CHECK(p.hidden % 8 == 0, "moe_combine: hidden must be a multiple of 8");
  if (p.num_tokens == 0) return;
  const dim3 grid(p.num_tokens, ceil_div(p.hidden / 8, 128));  // tokens on x: y is limited to 65,535
  launch_pdl(moe_combine_kernel, grid, dim3(128), 0, stream, p);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

}  // namespace gossamer::kernels
