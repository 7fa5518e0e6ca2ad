// Per-token activation quantization to fp8 e4m3 in 1×128 groups (the FP8 GEMM's A operand).
//
// For row r and group g (columns [128g, 128g + 128) ∩ [0, K)): amax = max(|x|, 1e-4),
// scale = amax / 448, q = fp8(x · (448 / amax)) (round to nearest even, saturating).
// With row_index, output row r quantizes input row row_index[r] (a gather: the grouped MoE GEMM reads
// tokens permuted into expert order), and rows r ≥ *num_valid_rows are left untouched. With scatter_rows
// instead, input row r is quantized once and written to each output row scatter_rows[r · scatter_width + k]
// (k < scatter_width ≤ 4; −1 skips), the other output rows left untouched: the same tokens into expert
// order with a quarter of the reads and the arithmetic (MoeParams::quantize_tokens_once).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/cuda/cuda_types.h"  // cudaStream_t, GOSSAMER_HOST_DEVICE
#include "core/dtype.h"

namespace gossamer::kernels {

struct QuantizeFp8Params {
  const uint16_t* x = nullptr;  // [M, K] bf16, row stride ldx elements
  int64_t ldx = 0;
  uint8_t* q = nullptr;  // [M, K] fp8 e4m3, row stride ldq bytes (multiple of 16)
  int64_t ldq = 0;
  float* scales = nullptr;  // [M, ceil(K/128)] fp32
  int M = 0;
  int K = 0;                                // multiple of 8
  const int32_t* row_index = nullptr;       // [M] device (host for the reference) source rows, or null
  const int32_t* num_valid_rows = nullptr;  // [1] with row_index: rows past it are skipped; null = all M
  const int32_t* scatter_rows = nullptr;    // [M, scatter_width] device (host for the reference), or null
  int scatter_width = 0;                    // 1–4 with scatter_rows (row_index null)
};

void launch_quantize_fp8(const QuantizeFp8Params& p, cudaStream_t stream);
void quantize_fp8_cpu(const QuantizeFp8Params& p);

// One activation group of the rule above on float input (the reference's and the CPU backend's fp8
// emulation): q[i] = fp8(x[i] · (448 / amax)); returns the scale amax / 448.   x: [n] f32 → q: [n] fp8
float quantize_fp8_group_cpu(const float* x, int64_t n, uint8_t* q);

// One weight block (the load-time conversion of dense linears, 128×128): s = amax / 448, or 1 for an
// all-zero block; store(r, c, fp8(w[r·ldw + c] / s)) for every element. Returns s.   w: [rows, cols] f32
template <typename Store>
float quantize_fp8_weight_block_cpu(const float* w, int64_t ldw, int64_t rows, int64_t cols, Store&& store) {
  float amax = 0.0f;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) amax = std::max(amax, std::fabs(w[r * ldw + c]));
  }
  const float scale = amax > 0.0f ? amax / kFp8E4M3Max : 1.0f;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) store(r, c, float_to_fp8e4m3(w[r * ldw + c] / scale));
  }
  return scale;
}

}  // namespace gossamer::kernels
