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

// Rows local_row and local_row + 8 of the warpgroup's accumulators: bf16 with the epilogue (kBias, kSwiGlu),
// stored straight from the D fragments (the cp.async kernel; the TMA kernel stages its tile in
// shared memory and copies whole rows: gemm_fp8_tma_out_sm90.cuh).
template <int kBN>
__device__ __forceinline__ void write_out(const GemmFp8Params& p, const float (&acc)[kBN / 2], int m0, int n0,
                                          int row_end, int local_row, int lane) {
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

// Row tile mt: from a grouped launch's tile list (its group, first row and the group's end), or the mt-th of
// `tile_rows` rows of a plain GEMM (group 0, ending at M).
struct RowTile {
  int group, m0, row_end;
};
// (Params: GemmFp8Params or gemm_w4a16.h's GemmW4A16Params, the same grouped fields.)
template <typename Params>
__device__ __forceinline__ RowTile row_tile(const Params& p, int mt, int tile_rows) {
  if (p.grouped.on()) {
    const int group = p.grouped.tile_group[mt];
    return {group, p.grouped.tile_m0[mt], p.grouped.group_offsets[group + 1]};
  }
  return {0, mt * tile_rows, p.M};
}

// The B block scales of the CTA's 128-row band (index by K block).
__device__ __forceinline__ const float* b_scale_row(const GemmFp8Params& p, int group, int n0, int num_kb) {
  return p.b_scales + (static_cast<int64_t>(group) * ceil_div(p.N, 128) + n0 / 128) * num_kb;
}

// The persistent TMA warp-specialised kernel (gemm_fp8_tma_sm90.cu), 128 × tile_n tiles (tile_n 192 or 256)
// in clusters of 2 CTAs sharing A, or B (share_b, tile_n 256): tile-major B, contiguous A.
void launch_tma(const GemmFp8Params& p, int tile_n, bool share_b, cudaStream_t stream);

}  // namespace gossamer::kernels::gemm_fp8_detail
