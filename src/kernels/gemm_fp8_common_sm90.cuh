// Pieces of the FP8 GEMM kernel (gemm_fp8_blockscale_sm90.cu): the K block, the wgmma call for a 64×kBN
// warpgroup tile, bias-initialised accumulators, the block-scale promotion and the bf16 write-out with the
// epilogue, all in the wgmma D fragment layout.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include "kernels/cuda_utils.h"
#include "kernels/fp8_tiled.h"
#include "kernels/gemm_fp8.h"
#include "kernels/swiglu.h"
#include "kernels/wgmma_fp8_sm90.cuh"

namespace gossamer::kernels::gemm_fp8_detail {

constexpr int kBK = 128;  // bytes = fp8 elements per K block (= the scale block)

template <int kBN>
__device__ __forceinline__ void wgmma_k32(float (&d)[kBN / 2], uint64_t da, uint64_t db, int scale_d) {
  if constexpr (kBN == 128) {
    wgmma::wgmma_m64n128k32_e4m3(d, da, db, scale_d);
  } else {
    wgmma::wgmma_m64n64k32_e4m3(d, da, db, scale_d);
  }
}

// Accumulators initialised with the bias, in the wgmma D layout of one warpgroup.
template <int kBN>
__device__ __forceinline__ void init_with_bias(const GemmFp8Params& p, float (&acc)[kBN / 2], int group, int n0,
                                               int lane) {
#pragma unroll
  for (int j = 0; j < kBN / 8; ++j) {
    const int col = n0 + 8 * j + 2 * (lane % 4);
    float b0 = 0.f, b1 = 0.f;
    if (p.bias && col < p.N) {
      const uint32_t bb = *reinterpret_cast<const uint32_t*>(p.bias + static_cast<int64_t>(group) * p.N + col);
      b0 = __uint_as_float(bb << 16);
      b1 = __uint_as_float(bb & 0xFFFF0000u);
    }
    acc[4 * j + 0] = b0;
    acc[4 * j + 1] = b1;
    acc[4 * j + 2] = b0;
    acc[4 * j + 3] = b1;
  }
}

// acc += tmp · a_scale[row] · b_scale (sc: the stage's a scales, then its b scale at [kBM]).
template <int kBM, int kBN>
__device__ __forceinline__ void promote(float (&acc)[kBN / 2], const float (&tmp)[kBN / 2], const float* sc,
                                        int local_row) {
  const float s_b = sc[kBM];
  const float s0 = sc[local_row] * s_b;
  const float s1 = sc[local_row + 8] * s_b;
#pragma unroll
  for (int j = 0; j < kBN / 8; ++j) {
    acc[4 * j + 0] += tmp[4 * j + 0] * s0;
    acc[4 * j + 1] += tmp[4 * j + 1] * s0;
    acc[4 * j + 2] += tmp[4 * j + 2] * s1;
    acc[4 * j + 3] += tmp[4 * j + 3] * s1;
  }
}

// The 4 × 4 bytes of a quad, transposed: lane t (lane % 4) passes w with byte i = element (i, t) and gets
// back the word whose byte i is element (t, i). Two shuffles: pairs t, t ^ 2 swap half-columns, then t, t ^ 1.
__device__ __forceinline__ uint32_t quad_transpose_bytes(uint32_t w, int t) {
  const uint32_t p = __shfl_xor_sync(0xffffffffu, w, 2);
  const uint32_t x = __byte_perm(w, p, (t & 2) ? 0x3276 : 0x5410);  // rows 2·(t/2), +1 of columns t % 2, +2
  const uint32_t q = __shfl_xor_sync(0xffffffffu, x, 1);
  return __byte_perm(x, q, (t & 1) ? 0x3715 : 0x6240);
}

// kSwiGluFp8 (256-wide tiles): each row's 128 SwiGLU outputs (one 1×128 group; the 4 lanes of a quad hold
// 32 each, output column 4j + t of the group in acc[4j + 2h] / acc[4j + 2h + 1]) rounded to bf16, then
// quantize_fp8.h's rule: amax over the group (two shuffles across the quad), scale = amax / 448,
// q = e4m3(h · (448 / amax)). Bit-identical to kSwiGlu followed by launch_quantize_fp8. The quad transposes
// each 16 output bytes (quad_transpose_bytes) so that every lane stores whole 4-byte words: columns
// 16g + 4t … + 3 of the group for g = 0 … 7.
template <int kBN>
__device__ __forceinline__ void write_out_swiglu_fp8(const GemmFp8Params& p, const float (&acc)[kBN / 2], int m0,
                                                     int n0, int row_end, int local_row, int lane) {
  static_assert(kBN == 256, "a 256-wide tile holds whole 1×128 groups of the SwiGLU output");
  const int t = lane % 4;
  const int group = n0 / 256;  // the tile's group of output columns [128 · group, 128 · group + 128)
  const int out_cols = p.N / 2;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = m0 + local_row + 8 * h;
    float v[kBN / 8];
    float amax = 0.f;
#pragma unroll
    for (int j = 0; j < kBN / 8; ++j) {
      // Computed for every column, then masked (a select, not a branch per column): past N the accumulators
      // hold finite values (another group's weights or TMA's zeros) that must not reach amax.
      const float s = __bfloat162float(__float2bfloat16_rn(swiglu_clamped(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1])));
      v[j] = n0 + 8 * j + 2 * t < p.N ? s : 0.f;
      amax = fmaxf(amax, fabsf(v[j]));
    }
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
    amax = fmaxf(amax, 1e-4f);
    const float inv = 448.0f / amax;
    if (t == 0 && row < row_end) {
      p.out_scales[static_cast<int64_t>(row) * ceil_div(out_cols, 128) + group] = amax / 448.0f;
    }
    uint8_t* q_row = p.out_q + static_cast<int64_t>(row) * p.ldq + 128 * group;
#pragma unroll
    for (int g = 0; g < kBN / 32; ++g) {
      uint32_t w = 0;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const uint32_t q = __nv_cvt_float_to_fp8(__fmul_rn(v[4 * g + i], inv), __NV_SATFINITE, __NV_E4M3);
        w |= q << (8 * i);
      }
      w = quad_transpose_bytes(w, t);  // every lane of the warp takes part (the shuffles), rows past row_end too
      const int col = 16 * g + 4 * t;  // of the group; out_cols is a multiple of 4 (N of 8)
      if (row < row_end && 128 * group + col < out_cols) *reinterpret_cast<uint32_t*>(q_row + col) = w;
    }
  }
}

// Rows local_row and local_row + 8 of the warpgroup's accumulators: bf16 with the epilogue.
template <int kBN>
__device__ __forceinline__ void write_out(const GemmFp8Params& p, const float (&acc)[kBN / 2], int m0, int n0,
                                          int row_end, int local_row, int lane) {
  if constexpr (kBN == 256) {
    if (p.epilogue == GemmEpilogue::kSwiGluFp8)
      return write_out_swiglu_fp8<kBN>(p, acc, m0, n0, row_end, local_row, lane);
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = m0 + local_row + 8 * h;
    if (row >= row_end) continue;
    uint16_t* out_row = p.out + static_cast<int64_t>(row) * p.ldc;
#pragma unroll
    for (int j = 0; j < kBN / 8; ++j) {
      const int col = n0 + 8 * j + 2 * (lane % 4);
      if (col >= p.N) continue;
      const float v0 = acc[4 * j + 2 * h], v1 = acc[4 * j + 2 * h + 1];
      if (p.epilogue == GemmEpilogue::kSwiGlu) {
        const __nv_bfloat16 r = __float2bfloat16_rn(swiglu_clamped(v0, v1));
        out_row[col / 2] = *reinterpret_cast<const uint16_t*>(&r);
      } else {
        const __nv_bfloat162 r = __floats2bfloat162_rn(v0, v1);
        *reinterpret_cast<__nv_bfloat162*>(out_row + col) = r;
      }
    }
  }
}

// The B block scales of the CTA's 128-row band (index by K block).
__device__ __forceinline__ const float* b_scale_row(const GemmFp8Params& p, int group, int n0, int num_kb) {
  return p.b_scales + (static_cast<int64_t>(group) * ceil_div(p.N, 128) + n0 / 128) * num_kb;
}

// The persistent TMA warp-specialised kernel (gemm_fp8_tma_sm90.cu), 128 × tile_n tiles (tile_n 192 or 256)
// in clusters of 2 CTAs sharing A, or B (share_b, tile_n 256): tile-major B, contiguous A.
void launch_tma(const GemmFp8Params& p, int tile_n, bool share_b, cudaStream_t stream);

// The MXFP4-weight kernel (gemm_fp8_mxfp4_sm90.cu), 128×128 tiles: B tiled MXFP4 (b_mxfp4), A gathered or not.
void launch_mxfp4(const GemmFp8Params& p, cudaStream_t stream);

}  // namespace gossamer::kernels::gemm_fp8_detail
