// MXFP4 → FP8 e4m3 with 128×128 fp32 block scales (the load-time weight conversion,
// docs/model-checkpoints-and-backends.md).
//
// Per 128×128 block (rows of one expert × input columns) with largest MX exponent byte e_max, the
// scale is the power of two 2^(e_max − 127 − 6), so the largest fp4 magnitude (6·2^(e_max−127)) maps
// to 384 ≤ 448. Each weight becomes fp8(fp4 · 2^(e − e_max + 6)) (round to nearest even, saturating).
// This is exact whenever e_max − e ≤ 13 within a block (fp8 subnormals cover the rest approximately).
#pragma once

#include <cstdint>

#include "core/cuda/cuda_types.h"  // cudaStream_t, GOSSAMER_HOST_DEVICE

namespace gossamer::kernels {

struct Mxfp4ToFp8Params {
  const uint8_t* blocks = nullptr;  // [num_experts, rows, cols/32, 16] u8, low nibble first
  const uint8_t* scales = nullptr;  // [num_experts, rows, cols/32] u8 (e8m0)
  uint8_t* out = nullptr;           // [num_experts, rows, cols] fp8 e4m3
  float* out_scales = nullptr;      // [num_experts, ceil(rows/128), ceil(cols/128)] fp32
  int num_experts = 1;
  int rows = 0;
  int cols = 0;  // multiple of 32
};

void launch_mxfp4_to_fp8(const Mxfp4ToFp8Params& p, cudaStream_t stream);
void mxfp4_to_fp8_cpu(const Mxfp4ToFp8Params& p);

}  // namespace gossamer::kernels
