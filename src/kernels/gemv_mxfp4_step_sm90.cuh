// The warp K step shared by the MXFP4 decode GEMVs (gemv_mxfp4_sm90.cu: a CTA or cluster per 64-row tile;
// gemv_mxfp4_stream_k_sm90.cu: stream-K): x → f16 B fragments, and one 64×128 tile of mxfp4_tiled.h (one
// ring stage) times them into fp32 accumulators in the mma.sync D layout. The math and its exactness are
// described at the top of gemv_mxfp4_sm90.cu.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/cuda_utils.h"
#include "kernels/mxfp4_tiled.h"

namespace gossamer::kernels::gemv_mxfp4_detail {

constexpr int kTileRows = kMxfp4TileRows;  // 64 output rows per tile: 4 MMA tiles of 16
constexpr int kNTiles = kTileRows / 16;
constexpr int kKStep = kMxfp4TileCols;        // 128 K columns per warp step
constexpr int kChunks = 8;                    // 16-byte code units per lane per step (rows g + 8c)
constexpr int kStageBytes = kMxfp4TileBytes;  // 4352

// 2^(e − 127 + 14) for the E8M0 byte `byte` of word w: the block scale times the 2^14 that
// mxfp4_tiled_decode_word divided out. One byte permute and one multiply-add; valid for e ≤ 232 (the
// accumulation bound below; the checkpoints' experts use ≈ 110..127, and E8M0's 255 is NaN by the OCP format).
__device__ __forceinline__ float block_scale(uint32_t w, int byte) {
  return __uint_as_float(__byte_perm(w, 0u, 0x4440u + static_cast<uint32_t>(byte)) * (1u << 23) + (14u << 23));
}

// max(|a|, |b|) per bf16 half (the sign bits are the xor of the inputs'; a NaN half yields the other input's).
__device__ __forceinline__ uint32_t bf16x2_max_abs(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("max.xorsign.abs.bf16x2 %0, %1, %2;\n" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

// a · b per bf16 half, round to nearest even (exact for a power-of-two b while the product stays normal).
__device__ __forceinline__ uint32_t bf16x2_mul(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("mul.rn.bf16x2 %0, %1, %2;\n" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

// D (16×8 fp32) += A (16×16 f16, row) · B (16×8 f16, col).
__device__ __forceinline__ void mma_f16_16x8x16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The B fragments of one K step: `x` holds this lane's 32 bf16 of x row g (16 words), `h` receives them as
// 16 f16x2. The 128 columns of x row g (lanes 4g..4g+3) are scaled by 2^(14 − E), E = ⌊log2 max|x|⌋, as in
// gemv_fp8_sm90.cu. Returns the inverse factors of x rows 2t and 2t+1. All 32 lanes must call it.
// NOTE: the scaling is a bf16x2 multiply before the f32 → f16 rounding: exact, and so bit-identical to
// scaling in f32, for every element that stays a normal bf16; the others are < 2^-140 of the largest
// and round to f16 zero either way. (Subnormal bf16 inputs are kept: mul.bf16x2 has no flush-to-zero form.)
__device__ __forceinline__ void x_fragment(const uint32_t (&x)[16], uint32_t (&h)[16], float& inv_even, float& inv_odd,
                                           int t) {
  uint32_t m[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) m[i] = bf16x2_max_abs(x[2 * i], x[2 * i + 1]);
#pragma unroll
  for (int i = 0; i < 4; ++i) m[i] = bf16x2_max_abs(m[i], m[i + 4]);
  m[0] = bf16x2_max_abs(bf16x2_max_abs(m[0], m[2]), bf16x2_max_abs(m[1], m[3]));
  uint32_t amax_bits = max(m[0] & 0x7FFF0000u, (m[0] << 16) & 0x7FFF0000u);
  amax_bits = min(amax_bits, 0x7F800000u);
  amax_bits = max(amax_bits, __shfl_xor_sync(0xffffffffu, amax_bits, 1));
  amax_bits = max(amax_bits, __shfl_xor_sync(0xffffffffu, amax_bits, 2));
  const int fe = min(max(268 - static_cast<int>(amax_bits >> 23), 1), 253);
  const uint32_t f2 = static_cast<uint32_t>(fe) * 0x00800080u;  // 2^(fe − 127) in both bf16 halves
  const float inv = __uint_as_float(static_cast<uint32_t>(254 - fe) << 23);
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const uint32_t y = bf16x2_mul(x[i], f2);
    const __half2 hy = __floats2half2_rn(__uint_as_float(y << 16), __uint_as_float(y & 0xFFFF0000u));
    h[i] = *reinterpret_cast<const uint32_t*>(&hy);
  }
  inv_even = __shfl_sync(0xffffffffu, inv, 8 * t);
  inv_odd = __shfl_sync(0xffffffffu, inv, 8 * t + 4);
}

// The 32 scale bytes of lane group g in a ring stage: word c holds rows 8c + g, byte j MX block j.
__device__ __forceinline__ void load_step_scales(const uint8_t* stage, int g, uint32_t (&sw)[kChunks]) {
  const uint4 sa = *reinterpret_cast<const uint4*>(stage + 4096 + 32 * g);
  const uint4 sb = *reinterpret_cast<const uint4*>(stage + 4096 + 32 * g + 16);
  sw[0] = sa.x, sw[1] = sa.y, sw[2] = sa.z, sw[3] = sa.w, sw[4] = sb.x, sw[5] = sb.y, sw[6] = sb.z, sw[7] = sb.w;
}

// acc += the tile in ring stage `stage` (4352 bytes) times x's B fragments `xh` (x_fragment), in the D layout:
// acc[nt][0..3] = (weight row 16nt + g, x row 2t), (16nt + g, 2t + 1), (16nt + g + 8, 2t), (16nt + g + 8, 2t + 1).
__device__ __forceinline__ void mxfp4_tile_step(const uint8_t* stage, int lane, const uint32_t (&sw)[kChunks],
                                                const uint32_t (&xh)[16], float inv_even, float inv_odd,
                                                float (&acc)[kNTiles][4]) {
#pragma unroll
  for (int nt = 0; nt < kNTiles; ++nt) {
    const uint4 u0 = *reinterpret_cast<const uint4*>(stage + (32 * (2 * nt) + lane) * 16);      // row 16nt + g
    const uint4 u1 = *reinterpret_cast<const uint4*>(stage + (32 * (2 * nt + 1) + lane) * 16);  // row 16nt + g + 8
    const uint32_t r0[4] = {u0.x, u0.y, u0.z, u0.w}, r1[4] = {u1.x, u1.y, u1.z, u1.w};
    // The step's sum Σ_j d_j · 2^(e_j − 113), then one multiply by x's inverse factors: the same products
    // as scaling each block by (block scale · inverse factor), both powers of two (exact while the step
    // sum stays finite: |d| ≤ 2^15 · 6 · 2^-14 · 32 < 2^9, so e ≤ 232).
    float step_sum[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      uint32_t h0[4], h1[4];
      mxfp4_tiled_decode_word(r0[j], h0);
      mxfp4_tiled_decode_word(r1[j], h1);
      float d[4] = {0.f, 0.f, 0.f, 0.f};
      const uint32_t a0[4] = {h0[0], h1[0], h0[1], h1[1]}, a1[4] = {h0[2], h1[2], h0[3], h1[3]};
      mma_f16_16x8x16(d, a0, xh[4 * j], xh[4 * j + 1]);
      mma_f16_16x8x16(d, a1, xh[4 * j + 2], xh[4 * j + 3]);
      const float s0 = block_scale(sw[2 * nt], j), s1 = block_scale(sw[2 * nt + 1], j);
      step_sum[0] = fmaf(d[0], s0, step_sum[0]);
      step_sum[1] = fmaf(d[1], s0, step_sum[1]);
      step_sum[2] = fmaf(d[2], s1, step_sum[2]);
      step_sum[3] = fmaf(d[3], s1, step_sum[3]);
    }
    acc[nt][0] = fmaf(step_sum[0], inv_even, acc[nt][0]);
    acc[nt][1] = fmaf(step_sum[1], inv_odd, acc[nt][1]);
    acc[nt][2] = fmaf(step_sum[2], inv_even, acc[nt][2]);
    acc[nt][3] = fmaf(step_sum[3], inv_odd, acc[nt][3]);
  }
}

}  // namespace gossamer::kernels::gemv_mxfp4_detail
