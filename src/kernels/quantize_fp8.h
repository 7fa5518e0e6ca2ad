// Per-token activation quantization to fp8 e4m3 in 1×128 groups (the FP8 GEMM's A operand).
//
// For row r and group g (columns [128g, 128g + 128) ∩ [0, K)): amax = max(|x|, 1e-4),
// scale = amax / 448, q = fp8(x · (448 / amax)) (round to nearest even, saturating).
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
};

void launch_quantize_fp8(const QuantizeFp8Params& p, cudaStream_t stream);
void quantize_fp8_cpu(const QuantizeFp8Params& p);

}  // namespace gossamer::kernels
