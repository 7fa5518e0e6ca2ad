// The grouped (MoE decode) prologue both decode GEMVs share (gemv_fp8.h's grouped mode; gemv_fp8_sm90.cu,
// gemv_mxfp4_sm90.cu): which expert slot a CTA computes and which pairs are its rows.
#pragma once

#include <cstdint>

#include "kernels/gemv_fp8.h"
#include "kernels/moe.h"

namespace gossamer::kernels {

// The prologue's shared memory.
struct GemvGroupedSmem {
  int pair[kGemvMaxRows];   // the CTA's pairs (its x / out rows)
  int expert, rows, slots;  // its local expert and pair count; the slots in use
};

// Every thread of the CTA calls it, after the PDL wait unless topk_from_earlier_kernel. Grouping (warp 0):
// the pairs of one local expert form ceil(count / kSlotRows) slots of ≤ kSlotRows pairs, in pair order,
//     numbered by the expert's first pair; CTA (0, 0) writes pair_row (p or −1).
// The CTA computes slot blockIdx.y: returns false when that slot is past the used ones (the CTA leaves; uniform
// over a cluster, whose CTAs share blockIdx.y), else sets rows (the pairs in s.pair) and group (local expert).
template <int kSlotRows = kGemvMaxRows, class Params>
__device__ __forceinline__ bool gemv_grouped_prologue(const Params& p, GemvGroupedSmem& s, int& rows, int& group) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const bool first_cta = blockIdx.x == 0 && blockIdx.y == 0;
  if (warp == 0) {
    int e = -1;
    if (lane < p.num_pairs) {
      e = p.topk_ids[lane] - p.expert_begin;
      if (e < 0 || e >= p.num_local_experts) e = -1;
    }
    if (p.pair_row && first_cta && lane < p.num_pairs) p.pair_row[lane] = e >= 0 ? lane : -1;
    const unsigned same = __match_any_sync(0xffffffffu, e >= 0 ? e : -1 - lane);
    const bool leader = e >= 0 && (same & ((1u << lane) - 1u)) == 0;
    const int chunks = leader ? (__popc(same) + kSlotRows - 1) / kSlotRows : 0;
    int incl = chunks;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int v = __shfl_up_sync(0xffffffffu, incl, o);
      if (lane >= o) incl += v;
    }
    const int slot = static_cast<int>(blockIdx.y);
    if (slot >= incl - chunks && slot < incl) {  // exactly one lane (a leader)
      unsigned members = same;
      for (int i = 0; i < (slot - incl + chunks) * kSlotRows; ++i) members &= members - 1u;
      int r = 0;
      for (; members != 0u && r < kSlotRows; ++r) {
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
