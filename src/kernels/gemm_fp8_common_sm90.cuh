// Shared by the FP8 GEMM kernels (gemm_fp8_blockscale_sm90.cu, gemm_fp8_ws_sm90.cu): the K block, the
// wgmma call for a 64×kBN warpgroup tile, bias-initialised accumulators, the block-scale promotion and the
// write-out (bf16 with the epilogue, or fp32 split-K partials), all in the wgmma D fragment layout.
#pragma once

#include <cuda_bf16.h>

#include "kernels/cuda_utils.h"
#include "kernels/fp8_tiled.h"
#include "kernels/gemm_fp8.h"
#include "kernels/swiglu.h"
#include "kernels/wgmma_fp8_sm90.cuh"

namespace gossamer::kernels::gemm_fp8_detail {

constexpr int kBK = 128;  // bytes = fp8 elements per K block (= the scale block)

// Tile origin and operand sources. The warp-specialised kernel uses these; the plain kernel keeps its
// own copy of the same lines: written through these helpers it compiled to 214 instead of 198 registers
// in one tile and measured ~5% slower at 8192×5120×2880, so its code was left as measured.

// Where one CTA works: expert `group`, rows [m0, row_end), columns from n0, K blocks [kb_begin, kb_end)
// (split-K: blockIdx.z's share of num_kb).
struct TileOrigin {
  int group = 0, m0 = 0, row_end = 0, n0 = 0, num_kb = 0, kb_begin = 0, kb_end = 0;
};

// False when the CTA has no tile (grouped mode: past the end of the device tile list).
template <int kBM, int kBN>
__device__ __forceinline__ bool tile_origin(const GemmFp8Params& p, TileOrigin& t) {
  t.row_end = p.M;
  if (p.tile_group) {
    if (static_cast<int>(blockIdx.x) >= *p.num_tiles) return false;
    t.group = p.tile_group[blockIdx.x];
    t.m0 = p.tile_m0[blockIdx.x];
    t.row_end = p.group_offsets[t.group + 1];
  } else {
    t.m0 = blockIdx.x * kBM;
  }
  t.n0 = blockIdx.y * kBN;
  t.num_kb = ceil_div(p.K, kBK);
  const int kb_per_split = ceil_div(t.num_kb, p.k_splits);
  t.kb_begin = blockIdx.z * kb_per_split;
  t.kb_end = min(t.num_kb, t.kb_begin + kb_per_split);
  return true;
}

// The 16-byte chunk of K block 0 at columns 16·chunk_col of A row `row` (gathered through a_row_index);
// `ok` false past row_end. Add kb · kBK per K block.
__device__ __forceinline__ const uint8_t* a_chunk_source(const GemmFp8Params& p, int row, int row_end, int chunk_col,
                                                         bool& ok) {
  ok = row < row_end;
  const int src_row = ok ? (p.a_row_index ? p.a_row_index[row] : row) : 0;
  return p.a + static_cast<int64_t>(src_row) * p.lda + chunk_col * 16;
}

// The same for B row `row` of `group`, in either layout; `ok` false past N. Add kb · kBK · b_k_step(p) per
// K block (tile-major: K block kb starts 2·kb tiles, kb · 128 · 64 bytes, into each 64-row band).
__device__ __forceinline__ const uint8_t* b_chunk_source(const GemmFp8Params& p, int group, int row, int chunk_col,
                                                         bool& ok) {
  ok = row < p.N;
  const int64_t r = ok ? row : 0;
  const uint8_t* b_group =
      p.b + static_cast<int64_t>(group) * (p.b_tiled ? fp8_tiled_group_bytes(p.N, p.K) : int64_t(p.N) * p.K);
  return b_group + (p.b_tiled ? fp8_tiled_offset(r, chunk_col * 16, fp8_tiled_pad(p.K)) : r * p.K + chunk_col * 16);
}
__device__ __forceinline__ int64_t b_k_step(const GemmFp8Params& p) { return p.b_tiled ? kFp8TileDim : 1; }

// A row's per-K-block scales (through a_row_index); p.a_scales and ok = false past row_end.
__device__ __forceinline__ const float* a_scale_source(const GemmFp8Params& p, int row, int row_end, int num_kb, bool& ok) {
  ok = row < row_end;
  return ok ? p.a_scales + static_cast<int64_t>(p.a_row_index ? p.a_row_index[row] : row) * num_kb : p.a_scales;
}

// The B block scales of the CTA's 128-row band (index by K block).
__device__ __forceinline__ const float* b_scale_row(const GemmFp8Params& p, int group, int n0, int num_kb) {
  return p.b_scales + (static_cast<int64_t>(group) * ceil_div(p.N, 128) + n0 / 128) * num_kb;
}

template <int kBN>
__device__ __forceinline__ void wgmma_k32(float (&d)[kBN / 2], uint64_t da, uint64_t db, int scale_d) {
  if constexpr (kBN == 128) {
    wgmma::wgmma_m64n128k32_e4m3(d, da, db, scale_d);
  } else {
    wgmma::wgmma_m64n64k32_e4m3(d, da, db, scale_d);
  }
}


// Accumulators initialised with the bias (split 0 only), in the wgmma D layout of one warpgroup.
template <int kBN>
__device__ __forceinline__ void init_with_bias(const GemmFp8Params& p, float (&acc)[kBN / 2], int group, int n0, int lane) {
#pragma unroll
  for (int j = 0; j < kBN / 8; ++j) {
    const int col = n0 + 8 * j + 2 * (lane % 4);
    float b0 = 0.f, b1 = 0.f;
    if (p.bias && col < p.N && blockIdx.z == 0) {
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
__device__ __forceinline__ void promote(float (&acc)[kBN / 2], const float (&tmp)[kBN / 2], const float* sc, int local_row) {
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

// Rows local_row and local_row + 8 of the warpgroup's accumulators: bf16 with the epilogue, or fp32
// partials for split-K.
template <int kBN>
__device__ __forceinline__ void write_out(const GemmFp8Params& p, const float (&acc)[kBN / 2], int m0, int n0, int row_end,
                                          int local_row, int lane) {
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
      if (p.k_splits > 1) {
        float* part = p.split_workspace + (static_cast<int64_t>(blockIdx.z) * p.M + row) * p.N + col;
        *reinterpret_cast<float2*>(part) = make_float2(v0, v1);
      } else if (p.epilogue == GemmEpilogue::kSwiGlu) {
        const __nv_bfloat16 r = __float2bfloat16_rn(swiglu_clamped(v0, v1));
        out_row[col / 2] = *reinterpret_cast<const uint16_t*>(&r);
      } else {
        const __nv_bfloat162 r = __floats2bfloat162_rn(v0, v1);
        *reinterpret_cast<__nv_bfloat162*>(out_row + col) = r;
      }
    }
  }
}

// Sums the split-K partials of p.split_workspace in split order and applies the epilogue (after a GEMM
// launched with p.k_splits > 1).
void launch_split_finalize(const GemmFp8Params& p, cudaStream_t stream);
// The warp-specialised 128×128 kernel (gemm_fp8_ws_sm90.cu) with its grid; then the finalize if split.
void launch_ws(const GemmFp8Params& p, cudaStream_t stream);
// The persistent TMA warp-specialised kernel (gemm_fp8_tma_sm90.cu), 128 × tile_n tiles (tile_n 128 or
// 192): tile-major B, contiguous A only.
void launch_tma(const GemmFp8Params& p, int tile_n, cudaStream_t stream);

}  // namespace gossamer::kernels::gemm_fp8_detail
