// The TMA GEMM's epilogue (gemm_fp8_tma_sm90.cu) through shared memory. Each consumer warpgroup writes its 64
// rows of the finished tile, the epilogue applied, into its own staging buffer; then 64 of its threads copy
// one row each to global memory with an asynchronous bulk copy (cp.async.bulk): whole rows of 128–512
// contiguous bytes instead of the D fragments' 4-byte pieces spread over 8 rows, and the warpgroup goes on to
// the next tile's K loop while the copies drain. (Measured 2026-12-06: with the direct stores, a K = 2,880 GEMM
// spent ~30% of its time in the epilogue with the tensor pipe idle.) Rows past row_end and columns past N
// are never copied, so a grouped tile stops at its group's last row.
//
// Output rules (tma_output_ok, checked by the launcher): the output 16-byte aligned and its rows a multiple
// of 16 bytes apart, each tile's row piece a multiple of 16 bytes (kBias: N % 8 = 0; kSwiGlu: N % 16 = 0;
// kSwiGluFp8: N / 2 % 16 = 0).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include "kernels/cuda_utils.h"
#include "kernels/gemm_fp8.h"
#include "kernels/mbarrier_sm90.cuh"
#include "kernels/swiglu.h"
#include "kernels/tma_sm90.cuh"

namespace gossamer::kernels::gemm_fp8_detail {

// One consumer warpgroup's staging buffer: [64 rows][kPitch bytes]. The pitch is the output row (bf16, kBN
// columns; kFp8Out: kSwiGluFp8's 128 bytes) plus 16 bytes, so the 8 rows of one D fragment store land 4 banks
// apart: conflict-free.
template <int kBN, bool kFp8Out>
struct TmaOut {
  static constexpr int kPitch = (kFp8Out ? 128 : 2 * kBN) + 16;
  static constexpr int kBytes = 64 * kPitch;
};

// Whether the TMA kernel's row copies can write p's output (the rules above).
inline bool tma_output_ok(const GemmFp8Params& p) {
  if (p.epilogue == GemmEpilogue::kSwiGluFp8) {
    return reinterpret_cast<uintptr_t>(p.out_q) % 16 == 0 && p.ldq % 16 == 0 && p.N / 2 % 16 == 0;
  }
  return reinterpret_cast<uintptr_t>(p.out) % 16 == 0 && p.ldc % 8 == 0 &&
         (p.epilogue == GemmEpilogue::kBias ? p.N % 8 == 0 : p.N % 16 == 0);
}

// The 4 × 4 bytes of a quad, transposed: lane t (lane % 4) passes w with byte i = element (i, t) and gets
// back the word whose byte i is element (t, i). Two shuffles: pairs t, t ^ 2 swap half-columns, then t, t ^ 1.
__device__ __forceinline__ uint32_t quad_transpose_bytes(uint32_t w, int t) {
  const uint32_t p = __shfl_xor_sync(0xffffffffu, w, 2);
  const uint32_t x = __byte_perm(w, p, (t & 2) ? 0x3276 : 0x5410);  // rows 2·(t/2), +1 of columns t % 2, +2
  const uint32_t q = __shfl_xor_sync(0xffffffffu, x, 1);
  return __byte_perm(x, q, (t & 1) ? 0x3715 : 0x6240);
}

// kSwiGluFp8 (256-wide tiles) into the staging buffer: each row's 128 SwiGLU outputs (one 1×128 group; the
// 4 lanes of a quad hold 32 each, output column 4j + t of the group in acc[4j + 2h] / acc[4j + 2h + 1])
// rounded to bf16, then quantize_fp8.h's rule: amax over the group (two shuffles across the quad), scale =
// amax / 448, q = e4m3(h · (448 / amax)). Bit-identical to kSwiGlu followed by launch_quantize_fp8. The quad
// transposes each 16 output bytes (quad_transpose_bytes) so that every lane stores whole 4-byte words:
// columns 16g + 4t … + 3 of the group for g = 0 … 7. The scales go straight to out_scales (one word a row).
template <int kBN>
__device__ __forceinline__ void stage_swiglu_fp8(const GemmFp8Params& p, const float (&acc)[kBN / 2], int n0,
                                                 int row_end, int row0, uint32_t buf, int wrow, int t) {
  static_assert(kBN == 256, "a 256-wide tile holds whole 1×128 groups of the SwiGLU output");
  const int group = n0 / 256;  // the tile's group of output columns [128 · group, 128 · group + 128)
  const int out_cols = p.N / 2;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = row0 + wrow + 8 * h;
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
    const uint32_t staged_row = buf + (wrow + 8 * h) * TmaOut<kBN, true>::kPitch;
#pragma unroll
    for (int g = 0; g < kBN / 32; ++g) {
      uint32_t w = 0;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const uint32_t q = __nv_cvt_float_to_fp8(__fmul_rn(v[4 * g + i], inv), __NV_SATFINITE, __NV_E4M3);
        w |= q << (8 * i);
      }
      w = quad_transpose_bytes(w, t);  // every lane of the warp takes part (the shuffles)
      mbar::st_shared_u32(staged_row + 16 * g + 4 * t, w);
    }
  }
}

// kBias / kSwiGlu into the staging buffer: bf16 column pairs (8j + 2t, +1) of rows wrow, wrow + 8 at bytes
// 16j + 4t, or their SwiGLU output (column 4j + t) at bytes 8j + 2t.
template <int kBN>
__device__ __forceinline__ void stage_bf16(const GemmFp8Params& p, const float (&acc)[kBN / 2], uint32_t buf, int wrow,
                                           int t) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const uint32_t staged_row = buf + (wrow + 8 * h) * TmaOut<kBN, false>::kPitch;
#pragma unroll
    for (int j = 0; j < kBN / 8; ++j) {
      const float v0 = acc[4 * j + 2 * h], v1 = acc[4 * j + 2 * h + 1];
      if (p.epilogue == GemmEpilogue::kSwiGlu) {
        const __nv_bfloat16 r = __float2bfloat16_rn(swiglu_clamped(v0, v1));
        mbar::st_shared_u16(staged_row + 8 * j + 2 * t, *reinterpret_cast<const uint16_t*>(&r));
      } else {
        const __nv_bfloat162 r = __floats2bfloat162_rn(v0, v1);
        mbar::st_shared_u32(staged_row + 16 * j + 4 * t, *reinterpret_cast<const uint32_t*>(&r));
      }
    }
  }
}

// Consumer warpgroup cw's rows [m0 + 64·cw, +64) of the 128×kBN tile at (m0, n0) with the epilogue (kFp8Out:
// kSwiGluFp8, else kBias / kSwiGlu): staged in buf (TmaOut<kBN, kFp8Out>::kBytes of shared memory, its own), then
// copied row by row. Every thread of the warpgroup calls it (named barrier 1 + cw). The copies stay in flight;
// wait_tma_out before the CTA exits.
template <int kBN, bool kFp8Out>
__device__ __forceinline__ void write_out_staged(const GemmFp8Params& p, const float (&acc)[kBN / 2], int m0, int n0,
                                                 int row_end, int cw, uint8_t* buf) {
  const int wt = static_cast<int>(threadIdx.x) % 128;  // thread of the warpgroup
  const int lane = wt % 32;
  const int wrow = (wt / 32) * 16 + lane / 4;  // this thread's rows of the warpgroup's 64: wrow, wrow + 8
  const int t = lane % 4;
  const int row0 = m0 + 64 * cw;
  const uint32_t staging = tma::smem_u32(buf);
  // The previous tile's copies have read the buffer (issued a whole K loop ago: in practice no wait).
  if (wt < 64) tma::wait_bulk_groups_read();
  mbar::named_sync(1 + cw, 128);
  if constexpr (kFp8Out) {
    stage_swiglu_fp8<kBN>(p, acc, n0, row_end, row0, staging, wrow, t);
  } else {
    stage_bf16<kBN>(p, acc, staging, wrow, t);
  }
  fence_proxy_async();  // the staging writes (generic proxy) → the bulk copies' reads (async proxy)
  mbar::named_sync(1 + cw, 128);
  if (wt < 64) {
    const int row = row0 + wt;
    if (row < row_end) {
      // The row's output piece: FP8 group n0 / 256 of h, or bf16 columns from n0 (SwiGLU: from n0 / 2).
      const bool swiglu = p.epilogue == GemmEpilogue::kSwiGlu;
      uint8_t* dst =
          kFp8Out ? p.out_q + static_cast<int64_t>(row) * p.ldq + 128 * (n0 / 256)
                  : reinterpret_cast<uint8_t*>(p.out + static_cast<int64_t>(row) * p.ldc + (swiglu ? n0 / 2 : n0));
      const int bytes = kFp8Out  ? min(128, p.N / 2 - 128 * (n0 / 256))
                        : swiglu ? min(kBN, p.N - n0)
                                 : 2 * min(kBN, p.N - n0);
      tma::store_bulk(dst, buf + wt * TmaOut<kBN, kFp8Out>::kPitch, bytes);
    }
    tma::commit_bulk_group();
  }
}

// Before the CTA exits: this warpgroup's row copies have completed.
__device__ __forceinline__ void wait_tma_out() {
  if (threadIdx.x % 128 < 64) tma::wait_bulk_groups();
}

}  // namespace gossamer::kernels::gemm_fp8_detail
