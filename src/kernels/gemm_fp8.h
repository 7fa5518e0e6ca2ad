// FP8 e4m3 GEMM with DeepSeek-style block scales, bf16 out:  out[m, n] = epilogue(bias[n] +
//   Σ_kb a_scale[m, kb] · b_scale[n/128, kb] · Σ_{k ∈ kb} A[m, k] · B[n, k]).
// A: activations quantized per token in 1×128 groups (quantize_fp8.h); B: weights [N, K] with one fp32
// scale per 128×128 block. K and N need not be multiples of 128 (partial blocks are zero-filled).
//
// Grouped mode (MoE): rows are partitioned into groups (experts) by `group_offsets`; each group g uses
// B[g], b_scales[g] and bias[g]. A row r of the grouped problem reads A row a_row_index[r] (a gather, so
// tokens need not be copied into expert order). The M tiles come from a device tile list (grouped_tiles.h)
// built by launch_moe_plan (moe.h); its tile_rows must equal the BM the launcher picks for max_rows_per_tile
// (gemm_fp8_tile_rows).
//
// Epilogues: kBias writes out[m, n]; kSwiGlu treats even columns as gate and odd columns as up
// (kernels/swiglu.h: gate = min(gate, 7), up = clamp(up, ±7), out = gate·σ(1.702·gate)·(up + 1)) and writes
// out[m, n/2]. Accumulation and epilogue math in fp32, one rounding to bf16.
#pragma once

#include <cstdint>

#include "core/cuda/cuda_types.h"  // cudaStream_t, GOSSAMER_HOST_DEVICE
#include "kernels/grouped_tiles.h"

namespace gossamer::kernels {

// kSwiGluFp8: kSwiGlu's bf16 output quantized in the epilogue exactly as quantize_fp8.h would quantize it
// (1×128 groups of the N/2 outputs, e4m3 into out_q, scales into out_scales): the MoE's gate_up writes the
// down GEMM's A directly. The 128×256 TMA tiles only (a 256-wide tile's 128 outputs per row are one group).
enum class GemmEpilogue : int { kBias = 0, kSwiGlu = 1, kSwiGluFp8 = 2 };
// CTA tile (BM×BN). kAuto picks 64×64 for ≤ 64 rows per tile, 64×128 for plain GEMMs of 65–256 rows,
// else 128-row tiles: the persistent TMA warp-specialised kernel in clusters of 2 CTAs multicasting their
// shared A tile (k128x192tma2 / k128x256tma2; gemm_fp8_tma_sm90.cu) when B is tile-major, A is not gathered
// and the output rows are 16-byte aligned (it copies whole rows: ldc % 8, N % 8; kSwiGlu N % 16; kSwiGluFp8
// N % 32), the cp.async kernel (k128x128) otherwise; k128x256tma2b: the TMA kernel's pairs share B instead
// (neighbouring row tiles of one column tile), kAuto's pick for plain GEMMs from M = 4096. Grouped (MoE) launches must
// use a tile whose BM equals the tile list's tile_rows. The numeric values carry no meaning.
enum class GemmTile : int {
  kAuto = 0,
  k64x64 = 1,
  k64x128 = 2,
  k128x128 = 3,
  k128x192tma2 = 4,
  k128x256tma2 = 5,
  k128x256tma2b = 6,
};

struct GemmFp8Params {
  const uint8_t* a = nullptr;  // [rows_a, K] fp8, row stride lda bytes (multiple of 16)
  int64_t lda = 0;
  const float* a_scales = nullptr;       // [rows_a, ceil(K/128)] fp32
  const int32_t* a_row_index = nullptr;  // [M] or null (identity)
  const uint8_t* b = nullptr;            // [num_groups, N, K] fp8, K contiguous (or tile-major: b_tiled)
  bool b_tiled = false;                  // b in the tile-major layout of fp8_tiled.h
  const float* b_scales = nullptr;       // [num_groups, ceil(N/128), ceil(K/128)] fp32
  const uint16_t* bias = nullptr;        // [num_groups, N] bf16 or null
  uint16_t* out = nullptr;               // [M, N] (kBias) or [M, N/2] (kSwiGlu) bf16, row stride ldc elements
  int64_t ldc = 0;
  uint8_t* out_q = nullptr;  // kSwiGluFp8: [M, N/2] e4m3, 16-byte aligned, row stride ldq bytes (multiple of 16)
  int64_t ldq = 0;
  float* out_scales = nullptr;  // kSwiGluFp8: [M, ceil(N/2/128)] fp32 (quantize_fp8.h's scales)
  int M = 0;                    // rows of the (grouped) problem
  int N = 0;                    // multiple of 8 (even pairs for kSwiGlu)
  int K = 0;                    // multiple of 16
  GemmEpilogue epilogue = GemmEpilogue::kBias;
  GroupedTiles grouped;  // grouped mode (grouped_tiles.h; unset for a plain GEMM): tile_rows = gemm_fp8_tile_rows
  GemmTile tile = GemmTile::kAuto;
};

// The BM the launcher uses: 64 when every tile has at most 64 rows worth computing, else 128.
int gemm_fp8_tile_rows(int max_rows_per_tile);

// `rows_hint` picks the tile shape: the plain M, or in grouped mode the expected rows per group.
void launch_gemm_fp8(const GemmFp8Params& p, int rows_hint, cudaStream_t stream);

void gemm_fp8_cpu(const GemmFp8Params& p);

}  // namespace gossamer::kernels
