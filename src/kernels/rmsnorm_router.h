// The MLP block's entry for a decode step (≤ kGemvMaxRows tokens) in one launch: the RMSNorm fused with
// the residual add (rmsnorm.h), the router GEMV (gemv_bf16.h) and the route (moe.h launch_moe_route):
//
//   s = bf(x + residual);  residual ← s;  normed = bf(s · rsqrt(mean(s²) + eps) · norm_weight)
//   logits = bf(router_w · normed + router_bias)                  (fp32 dot products, one rounding)
//   topk_ids, topk_weights = the 4 largest logits (ties to the lower expert), softmax over the 4
//
// Bit for bit what launch_rmsnorm → launch_gemv_bf16 → launch_moe_route write for the same inputs (every
// output: residual, normed, logits, topk_ids, topk_weights), so the routing decision does not change.
//
// How (rmsnorm_router_bf16_sm90.cu): one CTA per expert, the grid of the router GEMV's column kernel, each
// computing the norm of every token itself (the rows are ≤ 8 · hidden · 4 bytes of L2 reads per CTA)
// and its expert's logit for every token with that kernel's thread layout and summation order; its router
// row (hidden · 2 bytes), the norm weight and the bias are loaded before the PDL wait. The last CTA to
// arrive (an arrival counter, reset by that CTA) routes every token and writes the residual rows.
// Graph capturable (fixed grid, no host synchronisation).
#pragma once

#include <cstdint>

#include "core/cuda/cuda_types.h"  // cudaStream_t

namespace gossamer::kernels {

inline constexpr int kRmsNormRouterMaxHidden = 4096;  // two 16-byte vectors per thread of 256

struct RmsNormRouterParams {
  const uint16_t* x = nullptr;            // [num_tokens, hidden] bf16 (the attention block's output)
  uint16_t* residual = nullptr;           // [num_tokens, hidden] bf16 in/out
  const uint16_t* norm_weight = nullptr;  // [hidden] bf16
  uint16_t* normed = nullptr;             // [num_tokens, hidden] bf16 out (the experts' input)
  const uint16_t* router_w = nullptr;     // [num_experts, hidden] bf16, hidden contiguous
  const uint16_t* router_bias = nullptr;  // [num_experts] bf16 or null
  uint16_t* logits = nullptr;             // [num_tokens, num_experts] bf16 out
  int32_t* topk_ids = nullptr;            // [num_tokens, 4] out, descending logit
  float* topk_weights = nullptr;          // [num_tokens, 4] fp32 out
  // [1] int32: zero before the first launch on it (cudaMemset once); every launch leaves it zero. Launches
  // sharing a counter must run one after another (one stream).
  int32_t* arrivals = nullptr;
  int num_tokens = 0;   // 0..kGemvMaxRows (0: no launch)
  int hidden = 0;       // multiple of 8, ≤ kRmsNormRouterMaxHidden
  int num_experts = 0;  // 4..kMoeMaxExperts
  float eps = 1e-5f;
};
// x, residual, normed and logits must not overlap; all rows 16-byte aligned.
void launch_rmsnorm_router(const RmsNormRouterParams& p, cudaStream_t stream);

// Reference (host memory; arrivals unused): rmsnorm_cpu → gemv_bf16_cpu → moe_route_cpu.
void rmsnorm_router_cpu(const RmsNormRouterParams& p);

}  // namespace gossamer::kernels
