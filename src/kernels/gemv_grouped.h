// The grouped (MoE decode) mode both decode GEMVs share (gemv_fp8.h; GemvFp8Params and GemvMxfp4Params carry
// the same grouped fields): the launchers' contract check and grid height, and the references' pair loop.
// Host code; the device prologue is gemv_grouped_sm90.cuh.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/cuda/cuda_types.h"  // GOSSAMER_HOST_DEVICE
#include "core/error.h"
#include "kernels/gemv_fp8.h"
#include "kernels/moe.h"  // kGemvMaxPairs via gemv_fp8.h; kMoeTopK

namespace gossamer::kernels {

template <class Params>
GOSSAMER_HOST_DEVICE bool gemv_grouped(const Params& p) {
  return p.topk_ids != nullptr;
}

// Checks the grouped contract of `p` (grouped) and returns the grid's expert slots: Σ over used experts of
// ceil(pairs / slot_rows), at most min(pairs, experts · ceil(pairs / slot_rows)); slot_rows is the
// prologue's kSlotRows (8, or 1 for a kernel that computes one x row per slot).
template <class Params>
int gemv_grouped_slots(const Params& p, const char* kernel, int slot_rows = kGemvMaxRows) {
  GOSSAMER_CHECK(p.num_pairs >= 1 && p.num_pairs <= kGemvMaxPairs, kernel, ": num_pairs ", p.num_pairs, " not in [1, ",
                 kGemvMaxPairs, "]");
  GOSSAMER_CHECK(p.num_local_experts >= 1 && p.x_pair_divisor >= 1, kernel, ": bad grouped parameters");
  // Outputs are written only after the PDL wait.
  GOSSAMER_CHECK(!(p.pair_row && p.topk_from_earlier_kernel), kernel, ": pair_row needs topk_from_earlier_kernel off");
  const int chunks = (p.num_pairs + slot_rows - 1) / slot_rows;
  return std::min(p.num_pairs, p.num_local_experts * chunks);
}

// The references' grouped mode (host memory): each pair's global expert from topk_ids; pair_row written; then
// row(x, local expert, out) for every pair of a local expert, in pair order.
template <class Params, class Row>
void gemv_grouped_cpu(const Params& p, Row&& row) {
  for (int q = 0; q < p.num_pairs; ++q) {
    const int e = p.topk_ids[q] - p.expert_begin;
    const bool local = e >= 0 && e < p.num_local_experts;
    if (p.pair_row) p.pair_row[q] = local ? q : -1;
    if (local) row(p.x + (q / p.x_pair_divisor) * p.ldx, e, p.out + q * p.ldc);
  }
}

}  // namespace gossamer::kernels
