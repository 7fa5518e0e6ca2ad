// RMSNorm over the hidden dimension, optionally fused with the residual add (the reference forward pass:
// src/model/cpu_model.cpp).
//
//   with residual:    s = bf(x + residual); residual ← s;  out = bf(s · rsqrt(mean(s²) + eps) · w)
//   without residual: out = bf(x · rsqrt(mean(x²) + eps) · w)
// Math in fp32, one rounding to bf16 at the end. `out` may alias `x` (row-wise in place).
//
// x may instead be the MoE block's output still in pieces (the combine launch_moe_decode leaves undone with
// MoeParams::combine_deferred, moe.h): x[t] = bf(Σ_k w[t,k] · y[pair_row[t,k]]) over k = 0..3 (pairs with
// row −1 skipped), an fp32 sum rounded once, the very bits launch_moe_combine (no residual) would have
// written; so residual and out match that combine followed by this norm bit for bit.
//
// With out_q the normalised rows are also (or, out null, only) written quantized for the FP8 GEMM: e4m3 in 1×128
// groups of out's bf16 values, exactly as launch_quantize_fp8 would quantize out (quantize_fp8.h), so a prefill's
// QKV projection needs no quantization pass of its own.
#pragma once

#include <cstdint>

#include "core/cuda/cuda_types.h"  // cudaStream_t, GOSSAMER_HOST_DEVICE

namespace gossamer::kernels {

struct RmsNormParams {
  const uint16_t* x = nullptr;       // [num_tokens, hidden] bf16, row stride = hidden
  uint16_t* residual = nullptr;      // [num_tokens, hidden] bf16 in/out, or null (no fused add)
  const uint16_t* weight = nullptr;  // [hidden] bf16
  uint16_t* out = nullptr;           // [num_tokens, hidden] bf16, or null with out_q
  int num_tokens = 0;
  int hidden = 0;  // multiple of 8
  float eps = 1e-5f;
  // The MoE pieces in place of x (x null then), or all null.
  const uint16_t* moe_y = nullptr;          // [rows of pair_row, hidden] bf16: expert outputs (bias included)
  const int32_t* moe_pair_row = nullptr;    // [num_tokens, 4]: (token, k) → row of moe_y, or −1
  const float* moe_topk_weights = nullptr;  // [num_tokens, 4] fp32 routing weights
  // The quantized output (see above), or null.
  uint8_t* out_q = nullptr;  // [num_tokens, hidden] e4m3, row stride ldq bytes (multiple of 16), 16-byte aligned
  int64_t ldq = 0;
  float* out_scales = nullptr;  // [num_tokens, ceil(hidden / 128)] fp32
};

// With PDL the kernel reads weight, residual and the MoE routing pieces (moe_pair_row, moe_topk_weights)
// before it waits for the previous kernel: they must have been written at least two launches back (every
// PDL kernel of this library lets its dependents start only after its own wait, so by then the kernel
// before the previous one has finished; non-PDL work before the launch is complete anyway). x and moe_y may
// come from the previous kernel.
void launch_rmsnorm(const RmsNormParams& p, cudaStream_t stream);

// float32 reference with the same rounding points (bf16 in/out as uint16_t bits).
void rmsnorm_cpu(const RmsNormParams& p);

// The float32 form (the CPU backend): y = x · 1/sqrt(mean(x²) + eps) · weight per row, the sum of squares
// in double, no rounding.   x, y: [num_rows, hidden] f32 (may alias); weight: [hidden] f32
void rmsnorm_f32_cpu(const float* x, int64_t num_rows, int64_t hidden, const float* weight, float eps, float* y);

}  // namespace gossamer::kernels
