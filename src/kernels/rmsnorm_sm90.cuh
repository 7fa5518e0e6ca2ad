// The RMSNorm's device arithmetic (rmsnorm.h), shared by the norm kernel (rmsnorm_bf16_sm90.cu) and the decode FP8
// GEMV's norm prologue (gemv_fp8_sm90.cu, GemvFp8Params::norm_prologue), so both write the same bits: per row, the
// input (x, or the MoE pieces summed as launch_moe_combine would), plus the residual rounded to bf16, its sum of
// squares accumulated per thread over the thread's 8-element vectors vi = thread, thread + kThreads, … in order, then
// summed over the block (a warp xor tree, then the warps' partials in order), and each element times rsqrt(mean + eps)
// times the weight, rounded to bf16.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/cuda_utils.h"
#include "kernels/moe.h"  // kMoeTopK
#include "kernels/rmsnorm.h"

namespace gossamer::kernels::rmsnorm_device {

__device__ __forceinline__ float bf_lo(uint32_t v) {
  return __uint_as_float(v << 16);
}
__device__ __forceinline__ float bf_hi(uint32_t v) {
  return __uint_as_float(v & 0xFFFF0000u);
}
__device__ __forceinline__ uint32_t pack_bf16(float a, float b) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<const uint32_t*>(&h);
}

// 8 bf16 (one 16-byte vector) unpacked to fp32.
__device__ __forceinline__ void unpack_vec(const uint4& a, float (&v)[8]) {
  const uint32_t* aw = reinterpret_cast<const uint32_t*>(&a);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    v[2 * j] = bf_lo(aw[j]);
    v[2 * j + 1] = bf_hi(aw[j]);
  }
}

// Each of v[0..kN) summed over the block's kThreads threads: a warp xor tree, then the warps' partials in warp
// order. Every thread gets the sums. Once per kernel (its shared partials are not reused).
template <int kThreads, int kN>
__device__ __forceinline__ void block_sums(float (&v)[kN]) {
  __shared__ float partial[kN][kThreads / 32];
#pragma unroll
  for (int n = 0; n < kN; ++n) {
    for (int o = 16; o > 0; o >>= 1) v[n] += __shfl_xor_sync(0xffffffffu, v[n], o);
    if ((threadIdx.x & 31) == 0) partial[n][threadIdx.x >> 5] = v[n];
  }
  __syncthreads();
#pragma unroll
  for (int n = 0; n < kN; ++n) {
    float total = 0.f;
#pragma unroll
    for (int i = 0; i < kThreads / 32; ++i) total += partial[n][i];
    v[n] = total;
  }
}

// Vector vi of a row's input from the MoE pieces: bf(0 + Σ_k w_k · y[pair_row_k]), launch_moe_combine's sum and
// rounding (k = 0..3 in order, fp32, rows −1 skipped), unpacked to fp32.
__device__ __forceinline__ void moe_combined_vec(const RmsNormParams& p, const int (&rows)[kMoeTopK],
                                                 const float (&w)[kMoeTopK], int vi, float (&v)[8]) {
  float sum[8] = {};
#pragma unroll
  for (int k = 0; k < kMoeTopK; ++k) {
    if (rows[k] < 0) continue;
    const uint4 y = reinterpret_cast<const uint4*>(p.moe_y + static_cast<int64_t>(rows[k]) * p.hidden)[vi];
    const uint32_t* yw = reinterpret_cast<const uint32_t*>(&y);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      sum[2 * j] += w[k] * bf_lo(yw[j]);
      sum[2 * j + 1] += w[k] * bf_hi(yw[j]);
    }
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const uint32_t packed = pack_bf16(0.f + sum[2 * j], 0.f + sum[2 * j + 1]);  // 0 + : −0 sums become +0
    v[2 * j] = bf_lo(packed);
    v[2 * j + 1] = bf_hi(packed);
  }
}

// v += the residual vector, rounded to bf16 (v then holds the rounded sums); returns the sums packed (what the
// residual becomes).
__device__ __forceinline__ uint4 add_residual_vec(float (&v)[8], const uint4& residual) {
  const uint32_t* rw = reinterpret_cast<const uint32_t*>(&residual);
  uint4 s;
  uint32_t* sw = reinterpret_cast<uint32_t*>(&s);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    sw[j] = pack_bf16(v[2 * j] + bf_lo(rw[j]), v[2 * j + 1] + bf_hi(rw[j]));
    v[2 * j] = bf_lo(sw[j]);
    v[2 * j + 1] = bf_hi(sw[j]);
  }
  return s;
}

__device__ __forceinline__ float sum_of_squares(const float (&v)[8], float acc) {
#pragma unroll
  for (int j = 0; j < 8; ++j) acc += v[j] * v[j];
  return acc;
}

__device__ __forceinline__ float inv_rms(float block_sum_sq, const RmsNormParams& p) {
  return rsqrtf(block_sum_sq / static_cast<float>(p.hidden) + p.eps);
}

// The output vector: bf(v · inv_rms · weight).
__device__ __forceinline__ uint4 norm_vec(const float (&v)[8], float inv, const uint4& weight) {
  const uint32_t* ww = reinterpret_cast<const uint32_t*>(&weight);
  uint4 o;
  uint32_t* ow = reinterpret_cast<uint32_t*>(&o);
#pragma unroll
  for (int j = 0; j < 4; ++j) ow[j] = pack_bf16(v[2 * j] * inv * bf_lo(ww[j]), v[2 * j + 1] * inv * bf_hi(ww[j]));
  return o;
}

// Rows 0..p.num_tokens − 1 (≤ kMaxRows) normalised into `xs` (shared, row r at xs + r·ldxs bf16, 16-byte aligned
// rows): every CTA of a launch its own copy, bit for bit the rows rmsnorm_kernel writes to p.out. The CTA with
// `writer` also writes p.residual_out (the rounded sums; the other CTAs still read p.residual, so it must be another
// buffer) and p.out when set. moe_rows / moe_w: [kMaxRows][kMoeTopK] (shared), the MoE pieces' routing of each row
// (unused without them). All kThreads threads call it, after the wait for x / the MoE rows; it ends with a CTA
// barrier.
template <int kThreads, int kMaxRows>
__device__ __forceinline__ void rows_to_shared(const RmsNormParams& p, const int (*moe_rows)[kMoeTopK],
                                               const float (*moe_w)[kMoeTopK], uint16_t* xs, int ldxs, bool writer) {
  const int num_vec = p.hidden / 8;
  const bool moe = p.moe_y != nullptr;
  float sum_sq[kMaxRows] = {};
#pragma unroll
  for (int r = 0; r < kMaxRows; ++r) {
    if (r >= p.num_tokens) break;
    int rows[kMoeTopK];
    float w[kMoeTopK];
#pragma unroll
    for (int k = 0; k < kMoeTopK; ++k) {
      rows[k] = moe ? moe_rows[r][k] : -1;
      w[k] = moe ? moe_w[r][k] : 0.f;
    }
    for (int vi = threadIdx.x; vi < num_vec; vi += kThreads) {
      float v[8];
      if (moe) {
        moe_combined_vec(p, rows, w, vi, v);
      } else {
        unpack_vec(reinterpret_cast<const uint4*>(p.x + static_cast<int64_t>(r) * p.hidden)[vi], v);
      }
      uint4 s;
      if (p.residual) {
        s = add_residual_vec(v, reinterpret_cast<const uint4*>(p.residual + static_cast<int64_t>(r) * p.hidden)[vi]);
        if (writer) reinterpret_cast<uint4*>(p.residual_out + static_cast<int64_t>(r) * p.hidden)[vi] = s;
      } else {
        s = make_uint4(pack_bf16(v[0], v[1]), pack_bf16(v[2], v[3]), pack_bf16(v[4], v[5]), pack_bf16(v[6], v[7]));
      }
      sum_sq[r] = sum_of_squares(v, sum_sq[r]);
      *reinterpret_cast<uint4*>(xs + r * ldxs + 8 * vi) = s;  // v's exact bf16 values, normalised below
    }
  }
  block_sums<kThreads, kMaxRows>(sum_sq);
#pragma unroll
  for (int r = 0; r < kMaxRows; ++r) {
    if (r >= p.num_tokens) break;
    const float inv = inv_rms(sum_sq[r], p);
    for (int vi = threadIdx.x; vi < num_vec; vi += kThreads) {
      uint4* slot = reinterpret_cast<uint4*>(xs + r * ldxs + 8 * vi);
      float v[8];
      unpack_vec(*slot, v);
      const uint4 o = norm_vec(v, inv, reinterpret_cast<const uint4*>(p.weight)[vi]);
      *slot = o;
      if (writer && p.out) reinterpret_cast<uint4*>(p.out + static_cast<int64_t>(r) * p.hidden)[vi] = o;
    }
  }
  __syncthreads();
}

}  // namespace gossamer::kernels::rmsnorm_device
