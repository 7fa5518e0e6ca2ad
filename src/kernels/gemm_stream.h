// Weight-streaming grouped GEMM for decode MoE (W8A16 and W4A16), "swap AB": expert weights are the MMA's
// M operand (output features), an expert's routed rows its N, so a tile reads each weight byte once for
// all of that expert's rows (≤ 32 per tile):
//
//   out[r, n] = epilogue(bias[g, n] + Σ_kb wscale(g, n, kb) · Σ_{k in kb} x[xrow(r), k] · W[g][n, k])
//
// for every permuted row r of every tile of a MoE plan (moe.h MoePlanParams: the rows of group g are
// [group_offsets[g], group_offsets[g + 1]), cut into tiles of tile_rows). Weights, one format per launch:
//   - FP8 e4m3 in the tile-major layout of fp8_tiled.h with 128×128 fp32 block scales (wscale = the block's);
//   - MXFP4 (e2m1 codes + E8M0 scale per 32 columns, the checkpoint's values) in the layout of
//     mxfp4_tiled.h (wscale = 2^(e − 127) per row and 32-column block).
// x stays bf16 in memory (no quantization kernel). fp32 accumulation, one rounding to bf16. Epilogues as
// gemm_fp8.h: kBias writes out[r, n]; kSwiGlu takes even n as gate and odd as up (gpt-oss's clamped
// SwiGLU, swiglu.h) and writes out[r, n/2]. Rows past a group's end are neither read nor written.
//
// Exactness (gemm_stream_sm90.cu): e4m3 → f16 and e2m1 → f16 (fp4 · 2^-14) are exact; each x row is
// staged in shared memory as f16 scaled by a power of two per 64 columns (exact for elements ≥ 2^-28 of
// the chunk's largest, as gemv_fp8.h); the block scales and the inverse x factors are applied in fp32 per
// 64 columns (FP8) or per 32-column MX block (MXFP4). So the result equals gemv_fp8_cpu / gemv_mxfp4_cpu
// on each row up to fp32 summation order; gemm_stream_cpu is that reference.
//
// How: one CTA per (128-feature tile, plan tile) streams the tile's weights with 16-byte cp.async through
// a multi-stage shared-memory ring (128 K columns per stage) with the tile's x rows, and runs mma.sync
// m16n8k16 (f16 in, fp32 accumulate). Grid (ceil(N/128), max_tiles); CTAs past *num_tiles exit at once.
// Launched with programmatic dependent launch (PDL): the plan is read after the PDL wait, unless
// plan_from_earlier_kernel says it was written at least two launches back (then the weights of the first
// stages stream before the wait; x, bias and out are always touched after it). Graph capturable.
#pragma once

#include <cstdint>

#include "core/cuda/cuda_types.h"  // cudaStream_t
#include "kernels/gemm_fp8.h"      // GemmEpilogue
#include "kernels/grouped_tiles.h"

namespace gossamer::kernels {

inline constexpr int kStreamFeatureTile = 128;  // output features per CTA
inline constexpr int kStreamMaxTileRows = 32;   // plan rows per tile, at most
inline constexpr int kStreamMaxK = 8192;        // K (the FP8 block scales of a tile sit in shared memory)

// The plan's tile rows for a step of `num_tokens` tokens: 8, 16 or 32. An expert holds at most one pair
// per token, so up to 32 tokens every used expert is one tile; beyond, experts with more than 32 pairs
// take several tiles (their weights are then read once from HBM and again from L2).
int gemm_stream_tile_rows(int num_tokens);

struct GemmStreamParams {
  const uint16_t* x = nullptr;  // [rows_x, K] bf16, row stride ldx (multiple of 8, ≥ K), 16-byte aligned
  int64_t ldx = 0;
  // [group_offsets[num_groups]] int32 or null: permuted row r reads x row x_row_index[r] (gate_up: the plan's
  // row_token), else x row r (down: h in plan order).
  const int32_t* x_row_index = nullptr;
  // FP8: [num_groups, fp8_tiled_group_bytes(N, K)] e4m3 tile-major; MXFP4: [num_groups,
  // mxfp4_tiled_group_bytes(N, K)] tiled MXFP4. 16-byte aligned.
  const uint8_t* w = nullptr;
  bool w_mxfp4 = false;
  const float* w_scales = nullptr;  // FP8: [num_groups, ceil(N/128), ceil(K/128)] fp32; MXFP4: unused
  const uint16_t* bias = nullptr;   // [num_groups, N] bf16 or null, 16-byte aligned
  // [group_offsets[num_groups], N] (kBias) or [.., N/2] (kSwiGlu) bf16, row stride ldc (multiple of 8),
  // 16-byte aligned; rows in plan order.
  uint16_t* out = nullptr;
  int64_t ldc = 0;
  int N = 0;  // multiple of 16
  int K = 0;  // multiple of 16 (FP8) or 32 (MXFP4), ≤ kStreamMaxK
  GemmEpilogue epilogue = GemmEpilogue::kBias;
  // The plan (grouped_tiles.h; launch_moe_plan with this tile_rows), always set; grouped.max_tiles is grid.y
  // (≤ 65,535; 0: nothing to do).
  GroupedTiles grouped;
  int tile_rows = 8;  // 8, 16, 24 or 32
  bool plan_from_earlier_kernel = false;
};

// Validates the contract above and launches.
void launch_gemm_stream(const GemmStreamParams& p, cudaStream_t stream);

// Reference with the same math (host memory throughout, plan included): each row through gemv_fp8_cpu or
// gemv_mxfp4_cpu with its group's weights.
void gemm_stream_cpu(const GemmStreamParams& p);

}  // namespace gossamer::kernels
