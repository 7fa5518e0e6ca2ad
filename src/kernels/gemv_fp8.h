// Weight-bandwidth-bound FP8 GEMV for decode (M ≤ kGemvMaxRows rows), weight-only quantization:
//
//   out[m, n] = epilogue(bias[n] + Σ_k x[m, k] · W[n, k] · w_scale[n/128, k/128])
//
// x stays bf16 (no activation quantization); W is fp8 e4m3 [N, K] (K contiguous) with one fp32 scale per
// 128×128 block, the layout of gemm_fp8.h (partial N/K blocks allowed). fp32 accumulation, one rounding
// to bf16. Epilogues as in gemm_fp8.h: kBias writes out[m, n]; kSwiGlu treats even columns as gate and
// odd as up (gate = min(gate, 7), up = clamp(up, ±7), out = gate·σ(1.702·gate)·(up + 1)) and writes
// out[m, n/2].
//
// How (gemv_fp8_sm90.cu): a cluster of 1–8 CTAs owns 64 output rows and splits K between its CTAs, each
// CTA's 8 warps split their K range again in 64-column steps. Weights stream through a per-warp ring of
// 16-byte cp.async copies in shared memory (each byte read once, L1 bypassed) and feed mma.sync m16n8k16
// (f16 in, fp32 accumulate) with the roles swapped: 16 weight rows are the MMA's M, the ≤ 8 activation
// rows its N. fp8 → f16 is exact; each bf16 activation chunk (one x row × 64 columns) is scaled by a power
// of two into f16 range, exact except for elements below 2^-28 of the chunk's largest (their error is at
// most 2^-39 of it), so any finite bf16 input works. Partials are summed in a fixed order (warps, then
// the cluster's CTAs via distributed shared memory): results are deterministic for a given GPU model
// (the K split depends on the SM count).
//
// Grouped mode (MoE decode): the num_pairs (token, k) pairs of a routed batch are grouped by expert on
// the device (no host reads); each group of ≤ kGemvMaxRows pairs sharing an expert reads that expert's
// weights once. Pair p uses expert topk_ids[p] (pairs of experts outside [expert_begin, expert_begin +
// num_local_experts) are skipped: their output rows are not written), reads x row p / x_pair_divisor
// and writes out row p. Weights, scales and bias are then stacked per local expert.
//
// RoPE epilogue (rope_epilogue, dense kBias only; the decode QKV projection): the output rows are a fused QKV
// row per token (N = (rope.num_q_heads + 2·rope.num_kv_heads)·64, x row m = token m), and instead of writing out
// the epilogue rounds each value to bf16 (what out would hold) and does what launch_rope does with that row:
// rotates q and k, writes q to rope.q_out, k and v to rope.k_out / v_out when set and into the paged cache
// at rope.slots[m] (bf16, or e4m3 under rope.kv_fp8) — bit for bit launch_gemv_fp8 then launch_rope. One 64-row
// tile is one head, so a pair (i, i + 32) never leaves its CTA. rope.qkv, qkv_stride and num_tokens are unused
// (x's rows are the tokens) and out may be null.
//
// Launches are CUDA-graph capturable (fixed grid for given shapes, no host synchronisation). With
// programmatic_launch the kernel is launched with programmatic dependent launch (PDL): a dense GEMV
// issues its first weight loads before waiting for the previous kernel in the stream (weights must not
// be written by it); x, bias/topk_ids and out are touched only after the wait (a grouped GEMV with
// topk_from_earlier_kernel reads topk_ids and streams weights before it). Harmless when the
// neighbouring kernels are ordinary launches.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/cuda/cuda_types.h"  // cudaStream_t, GOSSAMER_HOST_DEVICE
#include "kernels/gemm_fp8.h"
#include "kernels/rope.h"

namespace gossamer::kernels {

inline constexpr int kGemvMaxRows = 8;                  // activation rows per GEMV (the MMA's N)
inline constexpr int kGemvMaxPairs = kGemvMaxRows * 4;  // grouped mode: (token, k) pairs (× kMoeTopK, moe.h)

struct GemvFp8Params {
  const uint16_t* x = nullptr;  // [rows_x, K] bf16, row stride ldx elements (multiple of 8), 16-byte aligned
  int64_t ldx = 0;
  const uint8_t* w = nullptr;       // [num_groups, N, K] fp8 e4m3, K contiguous, 16-byte aligned (or w_tiled)
  bool w_tiled = false;             // w in the tile-major layout of fp8_tiled.h (the model's layout)
  const float* w_scales = nullptr;  // [num_groups, ceil(N/128), ceil(K/128)] fp32
  const uint16_t* bias = nullptr;   // [num_groups, N] bf16 or null
  uint16_t* out = nullptr;          // [rows_out, N] (kBias, ldc even) or [rows_out, N/2] (kSwiGlu) bf16,
  int64_t ldc = 0;                  //   row stride ldc elements
  int M = 0;                        // dense: rows of x and out, 0..kGemvMaxRows (ignored in grouped mode)
  int N = 0;                        // multiple of 8
  int K = 0;                        // multiple of 16
  GemmEpilogue epilogue = GemmEpilogue::kBias;
  bool programmatic_launch = true;  // PDL (see above)
  // Launch shape, 0 = the launch's rule (the product leaves both 0; `gossamer_kernels_bench gemv-tune` sweeps
  // them): the cp.async ring depth per warp, 3 or 4 K steps (2 or 1 CTAs per SM), and the cluster size that
  // splits K (1, 2, 4 or 8; kernels/gemv_launch.h).
  int stages = 0;
  int cluster = 0;
  // w_tiled only: each warp's ring stage is filled by one 4 KiB bulk copy of its weight tile (lane 0, completing on
  // an mbarrier) instead of eight 16-byte cp.async per lane: the same shared-memory bytes (a tile's [chunk][lane]
  // order is the ring's; its padding is zeros), so the same results. false: the cp.async fill (A/B).
  bool bulk_copies = true;
  // ---- grouped (MoE decode) mode: topk_ids non-null; num_groups = num_local_experts ----
  const int32_t* topk_ids = nullptr;  // [num_pairs] global expert id of pair p (moe_route output)
  int num_pairs = 0;                  // 1..kGemvMaxPairs
  int expert_begin = 0;
  int num_local_experts = 0;    // ≥ 1
  int x_pair_divisor = 1;       // pair p reads x row p / x_pair_divisor (kMoeTopK: its token)
  int32_t* pair_row = nullptr;  // [num_pairs] or null: written p (local pair) or −1 (for moe_combine)
  // True when topk_ids were written by a kernel at least two launches earlier in the stream (the MoE
  // down projection after gate_up): with PDL the routed experts' weights then stream before the wait.
  // Needs pair_row null.
  bool topk_from_earlier_kernel = false;
  // ---- RoPE epilogue (see above) ----
  bool rope_epilogue = false;
  RopeParams rope;  // positions, q_out, k_out / v_out, the cache, slots, heads, inv_freq, concentration
};

// Validates the contract above and launches (M = 0 is a no-op).
void launch_gemv_fp8(const GemvFp8Params& p, cudaStream_t stream);

// Reference with the same math (host memory; topk_ids and pair_row in host memory in grouped mode).
void gemv_fp8_cpu(const GemvFp8Params& p);

// The MoE decode block over this GEMV (launch_moe_decode) lives in moe.h.

}  // namespace gossamer::kernels
