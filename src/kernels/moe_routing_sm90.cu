// The MoE pieces of moe.h on the GPU: route (one warp per token),
// plan (one CTA, in pair order) and combine. The compositions of the expert block over them are in moe_sm90.cu.
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
  if (t >= p.num_tokens) return;
  moe_route_token_store(p.logits + static_cast<int64_t>(t) * p.num_experts, p.num_experts, p.topk_ids + t * kMoeTopK,
                        p.topk_weights + t * kMoeTopK);
}

// The plan in one CTA of kPlanWarps warps, in pair order (moe_plan_cpu's rows exactly). Warp w owns a contiguous
// chunk of pairs and walks it 32 at a time: the lanes of one expert find each other (__match_any_sync), their leader
// counts them into the warp's own row of counters (no atomics, no contention between warps), and in the scatter
// each lane's row is its warp's next row of that expert plus its rank among those lanes. Between the two walks the
// counts become rows: per expert over the warps, and over the experts by warp 0's scan.
constexpr int kPlanWarps = 32;
__global__ void __launch_bounds__(kPlanWarps * 32) moe_plan_kernel(MoePlanParams p) {
  pdl_wait();  // PDL: nothing global is touched before the previous kernel is done
  pdl_trigger();
  __shared__ int warp_rows[kPlanWarps][kMoeMaxExperts];  // pairs of warp w's chunk per expert, then its next row
  __shared__ int expert_row[kMoeMaxExperts + 1];         // pairs per expert, then its first row (and the total)
  __shared__ int expert_tile[kMoeMaxExperts];            // its first tile
  const int num_experts = p.num_local_experts;
  const int num_pairs = p.num_tokens * kMoeTopK;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int chunk = ceil_div(num_pairs, kPlanWarps * 32) * 32;  // pairs per warp: whole walks of 32
  const int begin = min(num_pairs, warp * chunk), end = min(num_pairs, begin + chunk);
  auto local_expert = [&](int i) {  // −1: past the chunk, or another rank's expert
    if (i >= end) return -1;
    const int e = p.topk_ids[i] - p.expert_begin;
    return e >= 0 && e < num_experts ? e : -1;
  };
  for (int e = lane; e < num_experts; e += 32) warp_rows[warp][e] = 0;
  __syncwarp();
  // ---- count: each warp its chunk ----
  for (int i0 = begin; i0 < end; i0 += 32) {
    const int e = local_expert(i0 + lane);
    const unsigned same = __match_any_sync(0xffffffffu, e);
    if (e >= 0 && lane == __ffs(same) - 1) warp_rows[warp][e] += __popc(same);
    __syncwarp();
  }
  __syncthreads();
  if (threadIdx.x < num_experts) {
    int n = 0;
    for (int w = 0; w < kPlanWarps; ++w) n += warp_rows[w][threadIdx.x];
    expert_row[threadIdx.x] = n;
  }
  __syncthreads();
  // ---- experts' first rows and tiles: warp 0 scans 32 experts at a time ----
  if (warp == 0) {
    int rows = 0, tiles = 0;
    for (int e0 = 0; e0 < num_experts; e0 += 32) {
      const int e = e0 + lane;
      const int n = e < num_experts ? expert_row[e] : 0;
      const int nt = ceil_div(n, p.tile_rows);
      int sn = n, st = nt;  // inclusive scans over the lanes
      for (int o = 1; o < 32; o <<= 1) {
        const int a = __shfl_up_sync(0xffffffffu, sn, o), b = __shfl_up_sync(0xffffffffu, st, o);
        if (lane >= o) sn += a, st += b;
      }
      if (e < num_experts) {
        expert_row[e] = rows + sn - n;
        expert_tile[e] = tiles + st - nt;
      }
      rows += __shfl_sync(0xffffffffu, sn, 31);
      tiles += __shfl_sync(0xffffffffu, st, 31);
    }
    if (lane == 0) {
      expert_row[num_experts] = rows;
      p.group_offsets[num_experts] = rows;
      *p.num_tiles = tiles;
    }
  }
  __syncthreads();
  // ---- per expert: its offset, its tiles, and each warp's first row ----
  if (threadIdx.x < num_experts) {
    const int e = threadIdx.x;
    p.group_offsets[e] = expert_row[e];
    const int n = expert_row[e + 1] - expert_row[e];
    for (int t = 0; t * p.tile_rows < n; ++t) {
      p.tile_group[expert_tile[e] + t] = e;
      p.tile_m0[expert_tile[e] + t] = expert_row[e] + t * p.tile_rows;
    }
    int row = expert_row[e];
    for (int w = 0; w < kPlanWarps; ++w) {
      const int count = warp_rows[w][e];
      warp_rows[w][e] = row;
      row += count;
    }
  }
  __syncthreads();
  // ---- scatter: each warp its chunk again, in pair order ----
  for (int i0 = begin; i0 < end; i0 += 32) {
    const int i = i0 + lane;
    const int e = local_expert(i);
    const unsigned same = __match_any_sync(0xffffffffu, e);
    int row = -1;
    if (e >= 0) {
      row = warp_rows[warp][e] + __popc(same & ((1u << lane) - 1));
      p.row_token[row] = i / kMoeTopK;
    }
    if (i < end) p.pair_row[i] = row;
    __syncwarp();
    if (e >= 0 && lane == __ffs(same) - 1) warp_rows[warp][e] += __popc(same);
    __syncwarp();
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
  launch_pdl(moe_plan_kernel, dim3(1), dim3(kPlanWarps * 32), 0, stream, p);
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
