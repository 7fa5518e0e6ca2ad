// Weight-bandwidth-bound MXFP4 GEMV for decode (≤ kGemvMaxRows rows), weight-only (W4A16):
//
//   out[m, n] = epilogue(bias[n] + Σ_b 2^(e[n, b] − 127) · Σ_{k in MX block b} x[m, k] · fp4(W[n, k]))
//
// W: e2m1 codes with one E8M0 exponent e per 32 columns (the checkpoint's values, no re-quantization), in
// the tile-major layout of mxfp4_tiled.h; x stays bf16. Epilogues, grouped (MoE decode) mode, PDL and
// graph capture exactly as gemv_fp8.h (same fields, same meaning); the differences: no w_scales (the
// scales live in the tiles), K a multiple of 32, N a multiple of 8.
//
// Exactness (gemv_mxfp4_sm90.cu): fp4 → f16 is exact (a bit placement: f16 = fp4 · 2^-14); x is scaled
// into f16 per (x row, 128 columns) as in gemv_fp8.h (exact for elements ≥ 2^-28 of the chunk's largest);
// each MX block's 32-column partial is its own pair of MMAs (fp32 accumulate), multiplied in fp32 by its
// 2^(e − 127 + 14) and summed over the 128-column step, and the step's sum by x's inverse factor — powers
// of two, exact while the sums stay finite (E8M0 codes e ≤ 232) — then added to the fp32 sum. So the only
// roundings are fp32 accumulation and the final bf16, the same as the reference gemv_mxfp4_cpu (which sums
// each block in fp32, scales it, and adds).
#pragma once

#include <cstdint>
#include <iterator>  // std::size

#include "core/cuda/cuda_types.h"  // cudaStream_t
#include "kernels/gemm_fp8.h"      // GemmEpilogue
#include "kernels/gemv_fp8.h"      // kGemvMaxRows, kGemvMaxPairs

namespace gossamer::kernels {

// Launch shapes of the MXFP4 decode GEMV (GemvMxfp4Params::shape). kRule is the product's: 8 warps per CTA,
// a ring of 3 K steps per warp (2 CTAs per SM), the cluster from gemv_cluster_size (or `cluster`); or, where
// that grid needs a second wave and kWarps4Stages4's fits in one (more than 2 and at most 3 CTAs per SM, no
// `cluster` given), kWarps4Stages4 (H200, 2026-12-05: one token's 4× gate_up, 360 CTAs, 17.4 against 18.9 µs,
// single-row 16.1 against 17.5; the 4× down's 180 CTAs fit one wave and stay: 10.7 against 12.6). The
// others are candidates for the next rule, swept by `gossamer_kernels_bench gemv-tune` (docs/PERF.md) and
// checked by the kernel tests; each fixes its cluster (`cluster` must stay 0):
//   kWarps4         4 warps, 3 stages (4 CTAs per SM), cluster 1
//   kWarps4Stages4  4 warps, 4 stages (3 CTAs per SM), cluster 1
// Results: every shape sums each warp's K steps, then the warps, then the cluster's CTAs in a fixed order, so
// shapes with the same warps and cluster (the ring depth aside) are bit-identical; others differ from each
// other only in fp32 summation order (within the reference bound below).
enum class GemvMxfp4Shape : uint8_t { kRule, kWarps4, kWarps4Stages4 };
inline constexpr GemvMxfp4Shape kGemvMxfp4Shapes[] = {GemvMxfp4Shape::kRule, GemvMxfp4Shape::kWarps4,
                                                      GemvMxfp4Shape::kWarps4Stages4};
static_assert(
    [] {
      for (int i = 0; i < static_cast<int>(std::size(kGemvMxfp4Shapes)); ++i)
        if (static_cast<int>(kGemvMxfp4Shapes[i]) != i) return false;
      return true;
    }(),
    "kGemvMxfp4Shapes lists every shape in enum order (tests index it by shape)");
// "rule", "warps=4", "warps=4 stages=4".
const char* gemv_mxfp4_shape_name(GemvMxfp4Shape shape);

struct GemvMxfp4Params {
  const uint16_t* x = nullptr;  // [rows_x, K] bf16, row stride ldx elements (multiple of 8), 16-byte aligned
  int64_t ldx = 0;
  const uint8_t* w = nullptr;      // [num_groups, mxfp4_tiled_group_bytes(N, K)] tiled MXFP4, 16-byte aligned
  const uint16_t* bias = nullptr;  // [num_groups, N] bf16 or null
  uint16_t* out = nullptr;         // [rows_out, N] (kBias, ldc even) or [rows_out, N/2] (kSwiGlu) bf16
  int64_t ldc = 0;
  int M = 0;  // dense: rows of x and out, 0..kGemvMaxRows (ignored in grouped mode)
  int N = 0;  // multiple of 8
  int K = 0;  // multiple of 32
  GemmEpilogue epilogue = GemmEpilogue::kBias;
  bool programmatic_launch = true;
  int cluster = 0;  // the cluster that splits K, as GemvFp8Params::cluster (0 = the rule; kRule only)
  GemvMxfp4Shape shape = GemvMxfp4Shape::kRule;  // launch shape (above); the product leaves kRule
  // The single-row kernel where every CTA computes one x row: dense M = 1, or grouped with ≤ kMoeTopK pairs
  // (one token's experts; each pair then gets its own slot, so a repeated expert is read once per pair).
  // It puts the 4 MX blocks of a K step in 4 columns of the MMA's N (x of block j only in column j), so
  // no MMA column is spent on absent x rows: x staged 4× less, one scale multiply per block and row
  // instead of per MMA column. Same products, other fp32 summation order (within the bound above).
  // Measured 1.06–1.08× (H200, 2026-12-05: one token's MoE decode 40.5 → 38.2 µs); false: the general
  // kernel everywhere (A/B).
  bool single_row = true;
  // The single-row kernel stages its x row (the CTA's K range) in shared memory with one bulk copy instead of
  // loading each K step's x from L2 (the ncu source profile: 18% of gate_up's stall samples wait on that
  // load). On for the MoE gate_up (MoeParams::gemv_x_shared). The copy is issued before the PDL wait where
  // x_from_earlier_kernel (x written two or more launches back, the kernel between waiting before it triggers: the MoE
  // gate_up's normed input, route between) and its row is known then (dense, or every pair reads x row 0), else right
  // after the wait. Skipped where the bytes would cost the launch shape a CTA per SM (then as false).
  bool x_shared = false;
  bool x_from_earlier_kernel = false;
  // ---- grouped (MoE decode) mode, as GemvFp8Params ----
  const int32_t* topk_ids = nullptr;
  int num_pairs = 0;
  int expert_begin = 0;
  int num_local_experts = 0;
  int x_pair_divisor = 1;
  int32_t* pair_row = nullptr;
  bool topk_from_earlier_kernel = false;
};

// The same GEMV description over MXFP4 weights (w_tiled, w_scales and stages dropped, shape kRule; w must
// then point at tiled MXFP4 bytes): lets the MoE decode block share one parameter set for both formats.
inline GemvMxfp4Params gemv_mxfp4_params_of(const GemvFp8Params& f) {
  GemvMxfp4Params p;
  p.x = f.x;
  p.ldx = f.ldx;
  p.w = f.w;
  p.bias = f.bias;
  p.out = f.out;
  p.ldc = f.ldc;
  p.M = f.M;
  p.N = f.N;
  p.K = f.K;
  p.epilogue = f.epilogue;
  p.programmatic_launch = f.programmatic_launch;
  p.cluster = f.cluster;
  p.topk_ids = f.topk_ids;
  p.num_pairs = f.num_pairs;
  p.expert_begin = f.expert_begin;
  p.num_local_experts = f.num_local_experts;
  p.x_pair_divisor = f.x_pair_divisor;
  p.pair_row = f.pair_row;
  p.topk_from_earlier_kernel = f.topk_from_earlier_kernel;
  return p;
}

// Validates the contract above and launches (M = 0 is a no-op).
void launch_gemv_mxfp4(const GemvMxfp4Params& p, cudaStream_t stream);

// Reference with the same math (host memory, the same tiled bytes; topk_ids and pair_row host memory).
void gemv_mxfp4_cpu(const GemvMxfp4Params& p);

}  // namespace gossamer::kernels
