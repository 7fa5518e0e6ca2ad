// FP8 activations × MXFP4 weights on Hopper (W4A8): the W4A16 GEMM's transposed problem (weights as wgmma's M,
// tokens as its N; gemm_w4a16.h) on the FP8 tensor rate. Each consumer warp decodes its 16 weight rows of a K block
// from the tiled MXFP4 bytes (mxfp4_tiled.h) into e5m2 A fragment registers with the MX scale folded in relative to
// the row's largest MX exponent, so one e5m2 × e4m3 wgmma accumulates across all of K in fp32 — no per-block
// promotion (what bound the retired register-operand FP8 kernel, docs/PERF.md twenty-fourth session):
//
//   out[m, n] = epilogue(bias[n] + a_scale[m] · 2^(r_n − 128) · Σ_k A[m, k] · Ŵ[n, k])
//
// A[m, k] the e4m3 activation, a_scale[m] its row's scale (launch_w4a8_activations: one scale per row over all of
// K), r_n the largest MX exponent of weight row n (launch_mxfp4_tiled_row_exponents) and Ŵ[n, k] the e5m2 value
// w4a8_weight_e5m2 gives the weight fp4 · 2^(e − 127): fp4 · 2^(e − r_n + 1), exact for every MX block within 16
// binades of its row's largest (e ≥ r_n − 16); smaller blocks keep their top bits (truncated), and blocks below
// r_n − 29 read as zero. fp32 sums; one rounding of the epilogue's result (gemm_w4a8_cpu is this formula).
//
// Epilogues: kBias → out bf16 [M, N]; kSwiGluFp8 → out e4m3 [M, N / 2] = fp8(kW4A8HiddenScale · swiglu(gate, up))
// (even rows gate, odd rows up; the clamped SwiGLU is below 56 in magnitude, so a fixed scale of 8 keeps it inside
// e4m3's 448 without a scale pass), stored in W4A8 register order: the next W4A8 GEMM's A, its a_scale
// 1 / kW4A8HiddenScale.
//
// Register order: wgmma's 8-bit A fragment gives lane (g, t) columns 4t … 4t + 3 and 16 + 4t … 16 + 4t + 3 of a k32
// step, the tiled layout columns 8t … 8t + 7 of each MX block, so within every 32 columns stored 4-byte word q holds
// source word w4a8_source_word(q) (columns 8t … 8t + 3 → word t, 8t + 4 … 8t + 7 → word 4 + t).
//
// Parameters: A [M, K] e4m3 rows (lda bytes, a multiple of 16; the grouped problem's rows contiguous), K a multiple
// of 32; a_scales [M] fp32 or null (then a_scale for every row); B [num_groups, mxfp4_tiled_group_bytes(N, K)];
// b_row_exponents [num_groups, N]; kBias N and ldc (elements) multiples of 8, kSwiGluFp8 N of 64 and ldc of 16; out
// 16-byte aligned. Grouped mode as in gemm_fp8.h, the tile lists built with gemm_w4a8_tile_rows() rows per tile.
// Launchers: device pointers, asynchronous on `stream`, graph capturable (fixed grid for given shapes).
#pragma once

#include <cstdint>

#include "core/cuda/cuda_types.h"  // cudaStream_t, GOSSAMER_HOST_DEVICE
#include "kernels/gemm_fp8.h"      // GemmEpilogue
#include "kernels/grouped_tiles.h"

namespace gossamer::kernels {

// kSwiGluFp8's fixed scale: |swiglu| < 8 · 7 (the clamps), so 8 · swiglu lies within e4m3's ±448.
inline constexpr float kW4A8HiddenScale = 8.0f;

struct GemmW4A8Params {
  const uint8_t* a = nullptr;  // [M, K] e4m3 in register order, row stride lda bytes
  int64_t lda = 0;
  const float* a_scales = nullptr;  // [M] fp32 (8-byte aligned), or null: a_scale
  float a_scale = 1.0f;
  const uint8_t* b = nullptr;                // [num_groups, mxfp4_tiled_group_bytes(N, K)] u8
  const uint8_t* b_row_exponents = nullptr;  // [num_groups, N] u8: each weight row's largest MX exponent
  const uint16_t* bias = nullptr;            // [num_groups, N] bf16 or null
  void* out = nullptr;  // kBias: [M, N] bf16; kSwiGluFp8: [M, N / 2] e4m3 (register order); row stride ldc elements
  int64_t ldc = 0;
  int M = 0, N = 0, K = 0;
  GemmEpilogue epilogue = GemmEpilogue::kBias;
  GroupedTiles grouped;  // grouped mode (grouped_tiles.h; unset for a plain GEMM): tile_rows = gemm_w4a8_tile_rows()
};

// The token rows of a grouped launch's tiles (the plan's tile_rows): 256.
int gemm_w4a8_tile_rows();

void launch_gemm_w4a8(const GemmW4A8Params& p, cudaStream_t stream);

// The reference: the formula above on host memory (A as stored, in register order; the same e5m2 weights).
void gemm_w4a8_cpu(const GemmW4A8Params& p);

// The source 4-byte word of stored word q (0–7) of every 32 columns (see above).
GOSSAMER_HOST_DEVICE constexpr int w4a8_source_word(int q) {
  return q < 4 ? 2 * q : 2 * (q - 4) + 1;
}

// The activations quantized per row and scattered into expert order in register order: input row r of x ([rows, K]
// bf16, row stride ldx) gets amax = max(|x|, 1e-4) over its K columns, scale amax / 448 and q = fp8(x · (448 /
// amax)) (quantize_fp8.h's rule with one group per row), written to each row scatter_rows[r · 4 + k] ≥ 0 (k < 4;
// −1 skips) of out ([*, K] e4m3, row stride ldo bytes) with its scale in out_scales[row]. K a multiple of 32, x
// 16-byte aligned, ldx a multiple of 8, out 16-byte aligned, ldo a multiple of 16. Rows no input names are untouched.
void launch_w4a8_activations(const uint16_t* x, int64_t ldx, int rows, int K, const int32_t* scatter_rows, uint8_t* out,
                             int64_t ldo, float* out_scales, cudaStream_t stream);
void w4a8_activations_cpu(const uint16_t* x, int64_t ldx, int rows, int K, const int32_t* scatter_rows, uint8_t* out,
                          int64_t ldo, float* out_scales);

// Each weight row's largest MX exponent: out [G, N] u8 from tiled MXFP4 [G] (mxfp4_tiled.h, [N, K] each; the
// padding's scales are not read). Once per weight tensor (at load). Device pointers, asynchronous on `stream`.
void launch_mxfp4_tiled_row_exponents(const uint8_t* src, int groups, int n, int k, uint8_t* out, cudaStream_t stream);
void mxfp4_tiled_row_exponents_cpu(const uint8_t* src, int groups, int n, int k, uint8_t* out);

}  // namespace gossamer::kernels
