// Per-token activation quantization to fp8 e4m3 in 1×128 groups (the FP8 GEMM's A operand).
//
// For row r and group g (columns [128g, 128g + 128) ∩ [0, K)): amax = max(|x|, 1e-4),
// scale = amax / 448, q = fp8(x · (448 / amax)) (round to nearest even, saturating).
// With row_index, output row r quantizes input row row_index[r] (a gather: the grouped MoE GEMM reads
// tokens permuted into expert order), and rows r ≥ *num_valid_rows are left untouched.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace gossamer::kernels {

struct QuantizeFp8Params {
  const uint16_t* x = nullptr;  // [M, K] bf16, row stride ldx elements
  int64_t ldx = 0;
  uint8_t* q = nullptr;         // [M, K] fp8 e4m3, row stride ldq bytes (multiple of 16)
  int64_t ldq = 0;
  float* scales = nullptr;      // [M, ceil(K/128)] fp32
  int M = 0;
  int K = 0;  // multiple of 8
  const int32_t* row_index = nullptr;       // [M] device (host for the reference) source rows, or null
  const int32_t* num_valid_rows = nullptr;  // [1] with row_index: rows past it are skipped; null = all M
};

void launch_quantize_fp8(const QuantizeFp8Params& p, cudaStream_t stream);
void quantize_fp8_cpu(const QuantizeFp8Params& p);

}  // namespace gossamer::kernels
