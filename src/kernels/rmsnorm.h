// RMSNorm over the hidden dimension, optionally fused with the residual add (spec §2.2).
//
//   with residual:    s = bf(x + residual); residual ← s;  out = bf(s · rsqrt(mean(s²) + eps) · w)
//   without residual: out = bf(x · rsqrt(mean(x²) + eps) · w)
// Math in fp32, one rounding to bf16 at the end. `out` may alias `x` (row-wise in place).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace gossamer::kernels {

struct RmsNormParams {
  const uint16_t* x = nullptr;   // [num_tokens, hidden] bf16, row stride = hidden
  uint16_t* residual = nullptr;  // [num_tokens, hidden] bf16 in/out, or null (no fused add)
  const uint16_t* weight = nullptr;  // [hidden] bf16
  uint16_t* out = nullptr;       // [num_tokens, hidden] bf16
  int num_tokens = 0;
  int hidden = 0;                // multiple of 8
  float eps = 1e-5f;
};

void launch_rmsnorm(const RmsNormParams& p, cudaStream_t stream);

// float32 reference with the same rounding points (bf16 in/out as uint16_t bits).
void rmsnorm_cpu(const RmsNormParams& p);

}  // namespace gossamer::kernels
