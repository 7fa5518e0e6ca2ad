// The fused MLP norm + router + route of rmsnorm_router.h.
//
// Grid: one CTA of 256 threads per expert (the router GEMV's column kernel, gemv_bf16_column_kernel);
// thread i takes vectors i and i + 256 (8 bf16 each) of every row, which is at once the RMSNorm kernel's
// layout (rmsnorm_row_sm90.cuh) and the column kernel's, so each CTA reproduces both kernels' sums in
// their order: the norm's and, for its expert, the router's. Why this grid: the router read (E rows of
// hidden · 2 bytes: 184 KB for 20b, 737 KB for 120b) is then spread over E SMs (32 or 128), one 5.6 KB row
// each, two 16-byte loads per thread all in flight at once and issued before the PDL wait, so it costs one
// DRAM latency hidden behind the previous kernel's tail instead of a pass over a few SMs; the price is
// that every CTA normalises every token (≤ 8 rows of x and residual, ≤ 92 KB of L2 reads per CTA), which at
// batch 1 is 11.5 KB. No CTA waits on another before its logit: the only cross-CTA step is the arrival
// counter at the end, whose last CTA routes all tokens.
#include <cfloat>

#include "kernels/cuda_utils.h"
#include "kernels/gemv_bf16_dot_sm90.cuh"
#include "kernels/gemv_fp8.h"  // kGemvMaxRows
#include "kernels/moe.h"
#include "kernels/moe_route_warp_sm90.cuh"
#include "kernels/rmsnorm_router.h"
#include "kernels/rmsnorm_row_sm90.cuh"

namespace gossamer::kernels {
namespace {

using namespace rmsnorm_row;  // kThreads, kWarps, the norm's per-vector steps

constexpr int kRows = kGemvMaxRows;
constexpr int kVecs = kRmsNormRouterMaxHidden / 8 / kThreads;
static_assert(kVecs * 8 * kThreads == kRmsNormRouterMaxHidden, "whole vectors per thread");
static_assert(kRows <= kWarps, "the last CTA routes one token per warp");

__global__ void __launch_bounds__(kThreads) rmsnorm_router_kernel(const RmsNormRouterParams p) {
  __shared__ float partial[kWarps][kRows];
  __shared__ int s_last;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, e = blockIdx.x;
  const int T = p.num_tokens, E = p.num_experts, num_vec = p.hidden / 8;

  // ---- before the PDL wait: this expert's router row and the norm weight (no kernel writes them) ----
  uint4 w_router[kVecs], w_norm[kVecs];  // [kVecs] × [8] bf16
  const uint4* router_row = reinterpret_cast<const uint4*>(p.router_w + static_cast<int64_t>(e) * p.hidden);
#pragma unroll
  for (int i = 0; i < kVecs; ++i) {
    const int vi = tid + i * kThreads;
    w_router[i] = w_norm[i] = make_uint4(0, 0, 0, 0);
    if (vi < num_vec) {
      w_router[i] = __ldg(router_row + vi);
      w_norm[i] = __ldg(reinterpret_cast<const uint4*>(p.norm_weight) + vi);
    }
  }
  pdl_wait();  // x and residual come from earlier kernels
  pdl_trigger();

  // ---- load every token's x and residual vectors (all loads in flight before the first use) ----
  uint4 s[kRows][kVecs], r[kRows][kVecs];  // x, then s = bf(x + residual); residual   [kRows, kVecs] × [8] bf16
#pragma unroll
  for (int t = 0; t < kRows; ++t) {
    if (t >= T) continue;
    const uint4* xt = reinterpret_cast<const uint4*>(p.x + static_cast<int64_t>(t) * p.hidden);
    const uint4* rt = reinterpret_cast<const uint4*>(p.residual + static_cast<int64_t>(t) * p.hidden);
#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      const int vi = tid + i * kThreads;
      if (vi < num_vec) {
        s[t][i] = xt[vi];
        r[t][i] = rt[vi];
      }
    }
  }

  // ---- residual add, sums of squares (rmsnorm_kernel's order) → inv_rms per token ----
  float v[8];
#pragma unroll
  for (int t = 0; t < kRows; ++t) {
    if (t >= T) continue;
    float sum_sq = 0.f;
#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      if (tid + i * kThreads < num_vec) {
        unpack(s[t][i], v);
        s[t][i] = add_residual(v, r[t][i]);
        sum_sq = sum_squares(sum_sq, v);
      }
    }
    sum_sq = warp_sum(sum_sq);
    if (lane == 0) partial[warp][t] = sum_sq;
  }
  __syncthreads();
  float inv[kRows];
#pragma unroll
  for (int t = 0; t < kRows; ++t) inv[t] = t < T ? inv_rms(sum_partials(&partial[0][t], kRows), p.hidden, p.eps) : 0.f;
  __syncthreads();  // partial is reused below

  // ---- normed rows (CTA e writes the rows t ≡ e mod E) and this expert's dot products (column kernel order) ----
#pragma unroll
  for (int t = 0; t < kRows; ++t) {
    if (t >= T) continue;
    uint4* normed = reinterpret_cast<uint4*>(p.normed + static_cast<int64_t>(t) * p.hidden);
    const bool writes_row = t % E == e;
    float acc = 0.f;
#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      const int vi = tid + i * kThreads;
      if (vi < num_vec) {
        unpack(s[t][i], v);
        const uint4 o = scale(v, inv[t], w_norm[i]);
        if (writes_row) normed[vi] = o;
        acc = gemv_bf16_dot8(acc, w_router[i], o);
      }
    }
    acc = warp_sum(acc);
    if (lane == 0) partial[warp][t] = acc;
  }
  __syncthreads();
  if (tid < T) p.logits[tid * E + e] = gemv_bf16_round(sum_partials(&partial[0][tid], kRows), p.router_bias, e);

  // ---- arrive: the last CTA routes every token ----
  __threadfence();  // this CTA's logits visible to the whole GPU before its arrival counts
  __syncthreads();
  if (tid == 0) {
    const int prior = atomicAdd(p.arrivals, 1);
    s_last = prior == static_cast<int>(gridDim.x) - 1;
    // NOTE: every CTA has arrived, so nothing else touches the counter in this launch: reset it for the next.
    if (s_last) atomicExch(p.arrivals, 0);
  }
  __syncthreads();
  if (!s_last) return;
  __threadfence();

  // ---- last CTA: the residual rows (every CTA has read them by now), then warp t routes token t ----
#pragma unroll
  for (int t = 0; t < kRows; ++t) {
    if (t >= T) continue;
    uint4* rt = reinterpret_cast<uint4*>(p.residual + static_cast<int64_t>(t) * p.hidden);
#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      const int vi = tid + i * kThreads;
      if (vi < num_vec) rt[vi] = s[t][i];
    }
  }
  if (warp < T) {
    float lv[kMoeRouteExpertsPerLane];
#pragma unroll
    for (int i = 0; i < kMoeRouteExpertsPerLane; ++i) {
      const int ex = lane + 32 * i;
      // NOTE: __ldcg: other CTAs' logits, read from L2 (never from this SM's L1).
      lv[i] = ex < E ? __uint_as_float(static_cast<uint32_t>(__ldcg(p.logits + warp * E + ex)) << 16) : -FLT_MAX;
    }
    moe_route_warp(lv, E, lane, p.topk_ids + warp * kMoeTopK, p.topk_weights + warp * kMoeTopK);
  }
}

bool overlap(const void* a, const void* b, int64_t bytes_a, int64_t bytes_b) {
  const auto* pa = static_cast<const uint8_t*>(a);
  const auto* pb = static_cast<const uint8_t*>(b);
  return pa < pb + bytes_b && pb < pa + bytes_a;
}

}  // namespace

void launch_rmsnorm_router(const RmsNormRouterParams& p, cudaStream_t stream) {
  GOSSAMER_CHECK(p.num_tokens >= 0 && p.num_tokens <= kGemvMaxRows, "rmsnorm_router: ", p.num_tokens,
                 " tokens (at most ", kGemvMaxRows, ")");
  GOSSAMER_CHECK(p.hidden > 0 && p.hidden % 8 == 0 && p.hidden <= kRmsNormRouterMaxHidden, "rmsnorm_router: hidden ",
                 p.hidden, " must be a multiple of 8 up to ", kRmsNormRouterMaxHidden);
  GOSSAMER_CHECK(p.num_experts >= kMoeTopK && p.num_experts <= kMoeMaxExperts, "rmsnorm_router: ", p.num_experts,
                 " experts not in [4, 256]");
  GOSSAMER_CHECK(p.x && p.residual && p.norm_weight && p.normed && p.router_w && p.logits && p.topk_ids &&
                     p.topk_weights && p.arrivals,
                 "rmsnorm_router: a buffer is missing (only router_bias may be null)");
  if (p.num_tokens == 0) return;
  const int64_t rows = int64_t{p.num_tokens} * p.hidden * 2, logits = int64_t{p.num_tokens} * p.num_experts * 2;
  GOSSAMER_CHECK(!overlap(p.x, p.residual, rows, rows) && !overlap(p.x, p.normed, rows, rows) &&
                     !overlap(p.residual, p.normed, rows, rows) && !overlap(p.logits, p.x, logits, rows) &&
                     !overlap(p.logits, p.residual, logits, rows) && !overlap(p.logits, p.normed, logits, rows),
                 "rmsnorm_router: x, residual, normed and logits must not overlap");
  launch_pdl(rmsnorm_router_kernel, dim3(p.num_experts), dim3(kThreads), 0, stream, p);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

}  // namespace gossamer::kernels
