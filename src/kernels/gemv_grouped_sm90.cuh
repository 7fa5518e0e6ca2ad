// The grouped (MoE decode) prologue both decode GEMVs share (gemv_fp8.h's grouped mode; gemv_fp8_sm90.cu,
// gemv_mxfp4_sm90.cu): which expert slot a CTA computes and which pairs are its rows, routing the pairs
// first where the GEMV takes the router's logits (router_logits).
#pragma once

#include <cstdint>

#include "kernels/gemv_fp8.h"
#include "kernels/moe.h"
#include "kernels/moe_route_sm90.cuh"

namespace gossamer::kernels {

// The prologue's shared memory.
struct GemvGroupedSmem {
  int pair[kGemvMaxRows];     // the CTA's pairs (its x / out rows)
  int expert, rows, slots;    // its local expert and pair count; the slots in use
  int routed[kGemvMaxPairs];  // routing in the kernel: each pair's global expert
};

// Every thread of the CTA (kWarps warps) calls it, after the PDL wait unless topk_from_earlier_kernel:
//   routing in the kernel (router_logits): warp w routes tokens w, w + kWarps, … (moe_route_token) into
//     s.routed; CTA (0, 0) writes topk_ids_out / topk_weights_out;
//   grouping (warp 0): the pairs of one local expert form ceil(count / 8) slots of ≤ 8 pairs, in pair order,
//     numbered by the expert's first pair; CTA (0, 0) writes pair_row (p or −1).
// The CTA computes slot blockIdx.y: returns false when that slot is past the used ones (the CTA leaves; uniform
// over a cluster, whose CTAs share blockIdx.y), else sets rows (the pairs in s.pair) and group (local expert).
template <int kWarps, class Params>
__device__ __forceinline__ bool gemv_grouped_prologue(const Params& p, GemvGroupedSmem& s, int& rows, int& group) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const bool first_cta = blockIdx.x == 0 && blockIdx.y == 0;
  if (p.router_logits) {
    for (int tok = warp; tok < p.num_pairs / kMoeTopK; tok += kWarps) {
      int ids[kMoeTopK];
      float weights[kMoeTopK];
      moe_route_token(p.router_logits + static_cast<int64_t>(tok) * p.num_experts, p.num_experts, ids, weights);
      int id = ids[0];
      float weight = weights[0];
#pragma unroll
      for (int k = 1; k < kMoeTopK; ++k) {
        if (lane == k) id = ids[k], weight = weights[k];
      }
      if (lane < kMoeTopK) {
        s.routed[kMoeTopK * tok + lane] = id;
        if (first_cta && p.topk_ids_out) p.topk_ids_out[kMoeTopK * tok + lane] = id;
        if (first_cta && p.topk_weights_out) p.topk_weights_out[kMoeTopK * tok + lane] = weight;
      }
    }
    __syncthreads();
  }
  if (warp == 0) {
    int e = -1;
    if (lane < p.num_pairs) {
      e = (p.router_logits ? s.routed[lane] : p.topk_ids[lane]) - p.expert_begin;
      if (e < 0 || e >= p.num_local_experts) e = -1;
    }
    if (p.pair_row && first_cta && lane < p.num_pairs) p.pair_row[lane] = e >= 0 ? lane : -1;
    const unsigned same = __match_any_sync(0xffffffffu, e >= 0 ? e : -1 - lane);
    const bool leader = e >= 0 && (same & ((1u << lane) - 1u)) == 0;
    const int chunks = leader ? (__popc(same) + kGemvMaxRows - 1) / kGemvMaxRows : 0;
    int incl = chunks;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int v = __shfl_up_sync(0xffffffffu, incl, o);
      if (lane >= o) incl += v;
    }
    const int slot = static_cast<int>(blockIdx.y);
    if (slot >= incl - chunks && slot < incl) {  // exactly one lane (a leader)
      unsigned members = same;
      for (int i = 0; i < (slot - incl + chunks) * kGemvMaxRows; ++i) members &= members - 1u;
      int r = 0;
      for (; members != 0u && r < kGemvMaxRows; ++r) {
        s.pair[r] = __ffs(static_cast<int>(members)) - 1;
        members &= members - 1u;
      }
      s.rows = r;
      s.expert = e;
    }
    if (lane == 31) s.slots = incl;
  }
  __syncthreads();
  if (static_cast<int>(blockIdx.y) >= s.slots) return false;
  rows = s.rows;
  group = s.expert;
  return true;
}

}  // namespace gossamer::kernels
