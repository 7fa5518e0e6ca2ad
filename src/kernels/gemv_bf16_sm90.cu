#include <cuda_bf16.h>

#include "kernels/cuda_utils.h"
#include "kernels/gemv_bf16.h"

namespace gossamer::kernels {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;

__device__ __forceinline__ float lo(uint32_t v) {
  return __uint_as_float(v << 16);
}
__device__ __forceinline__ float hi(uint32_t v) {
  return __uint_as_float(v & 0xFFFF0000u);
}

// This thread's vectors of the weight row (`vecs` = K / 8 of them; at most 256 · kVecs): w[i] = row[t + 256·i].
// Weights only: read before a PDL wait.
template <int kVecs>
__device__ __forceinline__ void load_row(const uint16_t* w_row, int vecs, uint4 (&w)[kVecs]) {
#pragma unroll
  for (int i = 0; i < kVecs; ++i) {
    const int c = static_cast<int>(threadIdx.x) + i * kThreads;
    if (c < vecs) w[i] = __ldg(reinterpret_cast<const uint4*>(w_row) + c);
  }
}

// The few-column kernel's row dot with x's rows 0 … kRows − 1 (row stride ldx elements), per warp: partial[warp][r].
// Thread t takes the weight row's vectors t + 256·i and sums its products with x in that order; the warp reduces by
// shuffles. Every thread of the CTA calls it; the caller synchronises before reading `partial` (shared memory).
template <int kRows, int kVecs>
__device__ __forceinline__ void warp_partials(const uint4 (&w)[kVecs], int vecs, const uint16_t* x, int64_t ldx,
                                              float (&partial)[kWarps][kRows]) {
  float acc[kRows] = {};
#pragma unroll
  for (int i = 0; i < kVecs; ++i) {
    const int c = static_cast<int>(threadIdx.x) + i * kThreads;
    if (c >= vecs) break;
    const uint32_t wp[4] = {w[i].x, w[i].y, w[i].z, w[i].w};
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const uint4 xv = __ldg(reinterpret_cast<const uint4*>(x + r * ldx) + c);
      const uint32_t xp[4] = {xv.x, xv.y, xv.z, xv.w};
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[r] += lo(wp[j]) * lo(xp[j]) + hi(wp[j]) * hi(xp[j]);
    }
  }
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    float v = acc[r];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) partial[warp][r] = v;
  }
}

// Output r: bf(Σ_warps partial[w][r] (in warp order) + bias), as bf16 bits; bias: the column's bf16 or null.
template <int kRows>
__device__ __forceinline__ uint16_t output(const float (&partial)[kWarps][kRows], int r, const uint16_t* bias) {
  float v = 0.f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) v += partial[w][r];
  const float b = bias ? __uint_as_float(static_cast<uint32_t>(*bias) << 16) : 0.f;
  const __nv_bfloat16 h = __float2bfloat16_rn(v + b);
  return *reinterpret_cast<const uint16_t*>(&h);
}

// Block: kWarps output columns of the kRows-row chunk blockIdx.y; the chunk's x rows staged in shared
// memory as bf16 (kRows·K·2 ≤ 128 KiB dynamic); rows past M (a partial last chunk) read as zero.
template <int kRows>
__global__ void __launch_bounds__(kThreads) gemv_bf16_kernel(const GemvBf16Params p) {
  extern __shared__ __align__(16) uint4 sx[];  // [kRows, K/8] 16-byte vectors
  pdl_wait();
  pdl_trigger();
  const int row0 = blockIdx.y * kRows;
  const int rows = min(kRows, p.M - row0);
  const int vecs = p.K / 8;
  for (int i = threadIdx.x; i < kRows * vecs; i += kThreads) {
    const int r = i / vecs, c = i % vecs;
    sx[i] = r < rows ? *reinterpret_cast<const uint4*>(p.x + (row0 + r) * p.ldx + c * 8) : make_uint4(0, 0, 0, 0);
  }
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int n = blockIdx.x * kWarps + warp;
  if (n >= p.N) return;
  const uint4* wrow = reinterpret_cast<const uint4*>(p.w + static_cast<int64_t>(n) * p.K);
  float acc[kRows] = {};
  for (int c = lane; c < vecs; c += 32) {
    const uint4 wv = __ldg(wrow + c);
    const uint32_t wp[4] = {wv.x, wv.y, wv.z, wv.w};
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const uint4 xv = sx[r * vecs + c];
      const uint32_t xp[4] = {xv.x, xv.y, xv.z, xv.w};
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[r] += lo(wp[j]) * lo(xp[j]) + hi(wp[j]) * hi(xp[j]);
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    float v = acc[r];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0 && r < rows) {
      const float b = p.bias ? __uint_as_float(static_cast<uint32_t>(p.bias[n]) << 16) : 0.f;
      const __nv_bfloat16 h = __float2bfloat16_rn(v + b);
      p.out[(row0 + r) * p.ldc + n] = *reinterpret_cast<const uint16_t*>(&h);
    }
  }
}

// Few columns (the router: N = 32–128): one block per column, its 8 warps split K and their partial sums
// are added in warp order (deterministic). Spreads a 184 KB read over N SMs instead of N/8. The
// block's weight row is loaded into registers before the PDL wait (weights: never the previous kernel's output), so
// only x's load follows the kernel before.
template <int kRows>
__global__ void __launch_bounds__(kThreads) gemv_bf16_column_kernel(const GemvBf16Params p) {
  __shared__ float partial[kWarps][kRows];
  const int n = blockIdx.x, vecs = p.K / 8;
  uint4 w[kGemvBf16MaxK / 8 / kThreads];
  load_row(p.w + static_cast<int64_t>(n) * p.K, vecs, w);
  pdl_wait();
  pdl_trigger();
  warp_partials<kRows>(w, vecs, p.x, p.ldx, partial);
  __syncthreads();
  if (threadIdx.x < kRows) {
    const int r = threadIdx.x;
    p.out[r * p.ldc + n] = output<kRows>(partial, r, p.bias ? p.bias + n : nullptr);
  }
}

constexpr int kColumnKernelMaxN = 1024;

// The staged-rows kernel over ceil(M / kRows) chunks of kRows rows.
template <int kRows>
void launch_staged(const GemvBf16Params& p, cudaStream_t stream) {
  const size_t smem = static_cast<size_t>(kRows) * p.K * 2;
  if (smem > 48 * 1024) {
    GOSSAMER_CUDA_CHECK(cudaFuncSetAttribute(gemv_bf16_kernel<kRows>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             static_cast<int>(smem)));
  }
  launch_pdl(gemv_bf16_kernel<kRows>, dim3(ceil_div(p.N, kWarps), ceil_div(p.M, kRows)), dim3(kThreads), smem, stream,
             p);
}

template <int kRows>
void launch_rows(const GemvBf16Params& p, cudaStream_t stream) {
  if (p.N <= kColumnKernelMaxN) {
    launch_pdl(gemv_bf16_column_kernel<kRows>, dim3(p.N), dim3(kThreads), 0, stream, p);
    return;
  }
  launch_staged<kRows>(p, stream);
}

constexpr int kChunkRows = 8;  // rows per block above 8 rows

}  // namespace

void launch_gemv_bf16(const GemvBf16Params& p, cudaStream_t stream) {
  GOSSAMER_CHECK(p.M >= 1 && p.M <= kGemvBf16MaxRows, "gemv_bf16: M must be in [1, ", kGemvBf16MaxRows, "], got ", p.M);
  GOSSAMER_CHECK(p.K % 8 == 0 && p.K > 0 && p.K <= kGemvBf16MaxK, "gemv_bf16: K must be a multiple of 8 up to ",
                 kGemvBf16MaxK, ", got ", p.K);
  GOSSAMER_CHECK(p.ldx % 8 == 0 && p.N > 0, "gemv_bf16: ldx must be a multiple of 8 and N positive");
  if (p.M > 8) {
    launch_staged<kChunkRows>(p, stream);
    GOSSAMER_CUDA_CHECK_LAUNCH();
    return;
  }
  switch (p.M) {
    case 1: launch_rows<1>(p, stream); break;
    case 2: launch_rows<2>(p, stream); break;
    case 3:
    case 4: {
      GemvBf16Params q = p;
      q.M = 2;
      launch_rows<2>(q, stream);
      q.x += 2 * p.ldx;
      q.out += 2 * p.ldc;
      q.M = p.M - 2;
      if (q.M == 1)
        launch_rows<1>(q, stream);
      else
        launch_rows<2>(q, stream);
      break;
    }
    default: {
      GemvBf16Params q = p;
      q.M = 4;
      launch_rows<4>(q, stream);
      q.x += 4 * p.ldx;
      q.out += 4 * p.ldc;
      q.M = p.M - 4;
      launch_gemv_bf16(q, stream);
      break;
    }
  }
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

}  // namespace gossamer::kernels
