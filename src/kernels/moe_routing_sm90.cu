#include <cfloat>

#include "kernels/cuda_utils.h"
#include "kernels/gemm_fp8.h"
#include "kernels/moe.h"
#include "kernels/quantize_fp8.h"

namespace gossamer::kernels {
namespace {

__device__ __forceinline__ bool better(float v1, int i1, float v2, int i2) { return v1 > v2 || (v1 == v2 && i1 < i2); }

// One warp per token; lane l holds experts l, l + 32, ….
__global__ void moe_route_kernel(MoeRouteParams p) {
  pdl_wait();  // PDL: nothing global is touched before the previous kernel is done
  pdl_trigger();
  const int t = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (t >= p.num_tokens) return;
  constexpr int kPer = kMoeMaxExperts / 32;
  float v[kPer];
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int e = lane + 32 * i;
    v[i] = e < p.num_experts ? __uint_as_float(uint32_t(p.logits[static_cast<int64_t>(t) * p.num_experts + e]) << 16)
                             : -FLT_MAX;
  }
  float top_v[kMoeTopK];
  int top_i[kMoeTopK];
#pragma unroll
  for (int k = 0; k < kMoeTopK; ++k) {
    float best_v = -FLT_MAX;
    int best_i = INT_MAX;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int e = lane + 32 * i;
      if (e < p.num_experts && better(v[i], e, best_v, best_i)) {
        best_v = v[i];
        best_i = e;
      }
    }
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, best_v, o);
      const int oi = __shfl_xor_sync(0xffffffffu, best_i, o);
      if (better(ov, oi, best_v, best_i)) {
        best_v = ov;
        best_i = oi;
      }
    }
    top_v[k] = best_v;
    top_i[k] = best_i;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
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
      p.topk_ids[t * kMoeTopK + k] = top_i[k];
      p.topk_weights[t * kMoeTopK + k] = w[k] / sum;
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

size_t align_up(size_t v) { return (v + 255) & ~size_t(255); }
int64_t ld16(int cols) { return (cols + 15) / 16 * 16; }

struct MoeWorkspace {
  int32_t *topk_ids, *group_offsets, *row_token, *pair_row, *tile_group, *tile_m0, *num_tiles;
  float *topk_weights, *x_scales, *h_scales;
  uint8_t *x_q, *h_q;
  uint16_t *h, *y;
  size_t bytes;
};

MoeWorkspace carve(uint8_t* base, int T, int E, int hidden, int inter, int tile_rows) {
  MoeWorkspace w{};
  size_t off = 0;
  auto take = [&](size_t bytes) {
    uint8_t* ptr = base ? base + off : nullptr;
    off += align_up(bytes);
    return ptr;
  };
  const size_t pairs = static_cast<size_t>(T) * kMoeTopK;
  const int max_tiles = moe_max_tiles(T, E, tile_rows);
  w.topk_ids = reinterpret_cast<int32_t*>(take(pairs * 4));
  w.topk_weights = reinterpret_cast<float*>(take(pairs * 4));
  w.group_offsets = reinterpret_cast<int32_t*>(take((E + 1) * 4));
  w.row_token = reinterpret_cast<int32_t*>(take(pairs * 4));
  w.pair_row = reinterpret_cast<int32_t*>(take(pairs * 4));
  w.tile_group = reinterpret_cast<int32_t*>(take(max_tiles * 4));
  w.tile_m0 = reinterpret_cast<int32_t*>(take(max_tiles * 4));
  w.num_tiles = reinterpret_cast<int32_t*>(take(4));
  w.x_q = take(T * ld16(hidden));
  w.x_scales = reinterpret_cast<float*>(take(T * ceil_div(hidden, 128) * 4));
  w.h = reinterpret_cast<uint16_t*>(take(pairs * inter * 2));
  w.h_q = take(pairs * ld16(inter));
  w.h_scales = reinterpret_cast<float*>(take(pairs * ceil_div(inter, 128) * 4));
  w.y = reinterpret_cast<uint16_t*>(take(pairs * hidden * 2));
  w.bytes = off;
  return w;
}

int moe_tile_rows(int T, int E) { return gemm_fp8_tile_rows(ceil_div(T * kMoeTopK, std::max(E, 1))); }

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

size_t moe_workspace_bytes(int num_tokens, int num_local_experts, int hidden, int inter) {
  return carve(nullptr, num_tokens, num_local_experts, hidden, inter, moe_tile_rows(num_tokens, num_local_experts))
      .bytes;
}

void launch_moe(const MoeParams& p, void* workspace, cudaStream_t stream) {
  GOSSAMER_CHECK(p.hidden % 16 == 0 && p.inter % 16 == 0, "moe: hidden and inter must be multiples of 16");
  if (p.num_tokens == 0) return;
  const int T = p.num_tokens, E = p.num_local_experts;
  const int tile_rows = moe_tile_rows(T, E);
  const MoeWorkspace w = carve(static_cast<uint8_t*>(workspace), T, E, p.hidden, p.inter, tile_rows);
  // ---- route and plan ----
  launch_moe_route({p.logits, w.topk_ids, w.topk_weights, T, p.num_experts}, stream);
  MoePlanParams plan{w.topk_ids, T, p.expert_begin, E, tile_rows, w.group_offsets, w.row_token, w.pair_row,
                     w.tile_group, w.tile_m0, w.num_tiles};
  launch_moe_plan(plan, stream);
  // ---- gate_up (gathered tokens) + bias + SwiGLU ----
  launch_quantize_fp8({p.x, p.hidden, w.x_q, ld16(p.hidden), w.x_scales, T, p.hidden}, stream);
  const int max_tiles = moe_max_tiles(T, E, tile_rows);
  const int rows_hint = ceil_div(T * kMoeTopK, E);
  GemmFp8Params g1;
  g1.a = w.x_q;
  g1.lda = ld16(p.hidden);
  g1.a_scales = w.x_scales;
  g1.a_row_index = w.row_token;
  g1.b = p.w1;
  g1.b_tiled = p.weights_tiled;
  g1.b_scales = p.w1_scales;
  g1.bias = p.b1;
  g1.out = w.h;
  g1.ldc = p.inter;
  g1.M = T * kMoeTopK;
  g1.N = 2 * p.inter;
  g1.K = p.hidden;
  g1.epilogue = GemmEpilogue::kSwiGlu;
  g1.group_offsets = w.group_offsets;
  g1.tile_group = w.tile_group;
  g1.tile_m0 = w.tile_m0;
  g1.num_tiles = w.num_tiles;
  g1.max_tiles = max_tiles;
  launch_gemm_fp8(g1, rows_hint, stream);
  // ---- down + bias ----
  // NOTE: rows past group_offsets[E] (pairs routed to other ranks) are quantized but never read.
  launch_quantize_fp8({w.h, p.inter, w.h_q, ld16(p.inter), w.h_scales, T * kMoeTopK, p.inter}, stream);
  GemmFp8Params g2 = g1;
  g2.a = w.h_q;
  g2.lda = ld16(p.inter);
  g2.a_scales = w.h_scales;
  g2.a_row_index = nullptr;
  g2.b = p.w2;
  g2.b_scales = p.w2_scales;
  g2.bias = p.b2;
  g2.out = w.y;
  g2.ldc = p.hidden;
  g2.N = p.hidden;
  g2.K = p.inter;
  g2.epilogue = GemmEpilogue::kBias;
  launch_gemm_fp8(g2, rows_hint, stream);
  // ---- weighted combine ----
  launch_moe_combine({w.y, w.pair_row, w.topk_weights, p.residual, p.out, T, p.hidden}, stream);
}

}  // namespace gossamer::kernels
