// launch_moe_router_decode (moe.h): the decode step's MLP norm recomputed, the router GEMV and the route in
// one launch. CTA n (256 threads, 8 warps) owns expert n: per token it rebuilds the normalised row exactly as
// the RMSNorm kernel does (rmsnorm_row_sm90.cuh: thread i holds the row's vectors i, i + 256, …) and dots
// it with router row n in the bf16 column GEMV's order (gemv_bf16_dot_sm90.cuh: the same vectors per thread,
// warp sums, warps added in order), so its logits are the GEMV's bits. The last CTA to arrive routes each
// token with one warp (moe_route_token, as launch_moe_route) and resets the counter.
#include "kernels/cuda_utils.h"
#include "kernels/gemv_bf16_dot_sm90.cuh"
#include "kernels/moe.h"
#include "kernels/moe_route_sm90.cuh"
#include "kernels/rmsnorm_row_sm90.cuh"

namespace gossamer::kernels {
namespace {

constexpr int kThreads = rms::kRmsThreads;  // the norm's and the column GEMV's block
constexpr int kWarps = kThreads / 32;
constexpr int kMaxVec = 4;  // 16-byte vectors per thread: hidden ≤ 8192
static_assert(kWarps >= kGemvMaxRows, "the last CTA routes each token with its own warp");

__global__ void __launch_bounds__(kThreads) moe_router_decode_kernel(const MoeRouterDecodeParams p) {
  __shared__ float norm_partial[kWarps];
  __shared__ float partial[kWarps][kGemvMaxRows];
  __shared__ bool last;
  const int n = blockIdx.x, tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int vecs = p.hidden / 8;
  // ---- before the PDL wait: the norm weight and router row n (constants) ----
  const uint4* wrow = reinterpret_cast<const uint4*>(p.w + static_cast<int64_t>(n) * p.hidden);
  uint4 norm_w[kMaxVec], router_w[kMaxVec];
#pragma unroll
  for (int i = 0; i < kMaxVec; ++i) {
    const int vi = tid + i * kThreads;
    if (vi < vecs) {
      norm_w[i] = reinterpret_cast<const uint4*>(p.norm_weight)[vi];
      router_w[i] = __ldg(wrow + vi);
    }
  }
  const float bias = p.bias ? __uint_as_float(static_cast<uint32_t>(p.bias[n]) << 16) : 0.f;
  pdl_wait();
  pdl_trigger();
  // ---- per token: the normalised row (the RMSNorm kernel's expressions), dotted with router row n ----
  float acc[kGemvMaxRows] = {};
#pragma unroll
  for (int r = 0; r < kGemvMaxRows; ++r) {
    if (r >= p.num_tokens) break;  // uniform
    const uint4* x = reinterpret_cast<const uint4*>(p.x + static_cast<int64_t>(r) * p.hidden);
    const uint4* res =
        p.residual ? reinterpret_cast<const uint4*>(p.residual + static_cast<int64_t>(r) * p.hidden) : nullptr;
    float v[kMaxVec][8];
    float sum_sq = 0.f;
#pragma unroll
    for (int i = 0; i < kMaxVec; ++i) {
      const int vi = tid + i * kThreads;
      if (vi < vecs) {
        uint4 residual, s;
        if (res) residual = res[vi];
        rms::add_vec(x[vi], res ? &residual : nullptr, v[i], s, sum_sq);
      }
    }
    const float inv = rms::inv_rms(rms::block_sum(sum_sq, norm_partial), p.hidden, p.eps);
    __syncthreads();  // norm_partial is the next token's
#pragma unroll
    for (int i = 0; i < kMaxVec; ++i) {
      const int vi = tid + i * kThreads;
      if (vi < vecs) acc[r] = gemv_bf16_dot8(acc[r], router_w[i], rms::scale_vec(v[i], inv, norm_w[i]));
    }
  }
  // ---- logit n of every token: warp sums, then the warps in order (the column GEMV's) ----
  gemv_bf16_warp_sums(acc, partial);
  __syncthreads();
  if (tid < p.num_tokens) {
    const float v = gemv_bf16_column_sum<kWarps>(partial, tid);
    const __nv_bfloat16 h = __float2bfloat16_rn(v + bias);
    p.logits[tid * p.num_experts + n] = *reinterpret_cast<const uint16_t*>(&h);
  }
  // ---- the last CTA to arrive routes every token ----
  __threadfence();  // this CTA's logits before its arrival
  __syncthreads();
  if (tid == 0) last = atomicAdd(p.arrivals, 1) == static_cast<int>(gridDim.x) - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();  // every CTA's logits after their arrivals
  if (warp < p.num_tokens) {
    int ids[kMoeTopK];
    float weights[kMoeTopK];
    moe_route_token(p.logits + warp * p.num_experts, p.num_experts, ids, weights);
    if (lane < kMoeTopK) {
      const int q = warp * kMoeTopK + lane;
      const int e = ids[lane] - p.expert_begin;  // (ids and weights are the same on every lane)
      p.routing.topk_ids[q] = ids[lane];
      p.routing.topk_weights[q] = weights[lane];
      if (p.routing.pair_row) p.routing.pair_row[q] = e >= 0 && e < p.num_local_experts ? q : -1;
    }
  }
  if (tid == 0) *p.arrivals = 0;  // for the next launch (stream order)
}

}  // namespace

void launch_moe_router_decode(const MoeRouterDecodeParams& p, cudaStream_t stream) {
  GOSSAMER_CHECK(p.num_tokens >= 1 && p.num_tokens <= kGemvMaxRows, "moe_router_decode: ", p.num_tokens,
                 " tokens (1 to ", kGemvMaxRows, ")");
  GOSSAMER_CHECK(p.num_experts >= kMoeTopK && p.num_experts <= kMoeMaxExperts, "moe_router_decode: ", p.num_experts,
                 " experts (", kMoeTopK, " to ", kMoeMaxExperts, ")");
  GOSSAMER_CHECK(p.hidden > 0 && p.hidden % 8 == 0 && p.hidden <= 8 * kThreads * kMaxVec, "moe_router_decode: hidden ",
                 p.hidden, " must be a multiple of 8 up to ", 8 * kThreads * kMaxVec);
  GOSSAMER_CHECK(p.x && p.norm_weight && p.w && p.logits && p.routing.topk_ids && p.routing.topk_weights && p.arrivals,
                 "moe_router_decode: null operand");
  GOSSAMER_CHECK(reinterpret_cast<uintptr_t>(p.x) % 16 == 0 && reinterpret_cast<uintptr_t>(p.w) % 16 == 0 &&
                     reinterpret_cast<uintptr_t>(p.norm_weight) % 16 == 0 &&
                     reinterpret_cast<uintptr_t>(p.residual) % 16 == 0,
                 "moe_router_decode: x, residual, norm_weight and w must be 16-byte aligned");
  launch_pdl(moe_router_decode_kernel, dim3(p.num_experts), dim3(kThreads), 0, stream, p);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

}  // namespace gossamer::kernels
