// bf16 GEMV for a few rows (decode; the router in both weight formats):
//   out[m, n] = bf16(bias[n] + Σ_k x[m, k] · W[n, k]),  fp32 accumulation, one rounding.
// One warp per output column n: the warp streams W's row n with 16-byte loads and dots it with the
// ≤ kGemvBf16MaxRows rows of x (held in shared memory), then reduces across lanes in a fixed order
// (deterministic). Weight-bandwidth bound. For N ≤ 1024 (the router's 32–128 experts) and M ≤ 8 every
// column gets a whole block whose 8 warps split K (partials added in warp order), so a small read still
// spreads. Above 8 rows the grid's second dimension walks chunks of 8 rows (each block stages its chunk
// in shared memory): the router at decode batches, where a 128-row GEMM tile would leave all but a few
// SMs idle.
//
// Contracts: K a multiple of 8 and ≤ kGemvBf16MaxK, x/W rows 16-byte aligned (ldx a multiple of 8),
// 1 ≤ M ≤ kGemvBf16MaxRows. The launcher never synchronises or allocates (CUDA-graph capturable). With PDL the
// few-column form (M ≤ 8, N ≤ 1024) reads W before it waits for the previous kernel: W must not be its output.
#pragma once

#include <cstdint>

#include "core/cuda/cuda_types.h"  // cudaStream_t, GOSSAMER_HOST_DEVICE

namespace gossamer::kernels {

inline constexpr int kGemvBf16MaxRows = 1024;
inline constexpr int kGemvBf16MaxK = 8192;

// Whether the GEMV beats the bf16 GEMM (gemm_bf16.h) on an [m, k] × [n, k]ᵀ product: a few rows, or a
// narrow product (the router) of up to 1,024 rows.
inline bool gemv_bf16_preferred(int m, int n, int k) {
  return k <= kGemvBf16MaxK && (m <= 8 || (n <= 1024 && m <= kGemvBf16MaxRows));
}

struct GemvBf16Params {
  const uint16_t* x = nullptr;  // [M, K] bf16, row stride ldx elements
  int64_t ldx = 0;
  const uint16_t* w = nullptr;     // [N, K] bf16, K contiguous
  const uint16_t* bias = nullptr;  // [N] bf16 or null
  uint16_t* out = nullptr;         // [M, N] bf16, row stride ldc elements
  int64_t ldc = 0;
  int M = 0;
  int N = 0;
  int K = 0;
};

void launch_gemv_bf16(const GemvBf16Params& p, cudaStream_t stream);
// Host reference (host pointers), same math.
void gemv_bf16_cpu(const GemvBf16Params& p);

}  // namespace gossamer::kernels
