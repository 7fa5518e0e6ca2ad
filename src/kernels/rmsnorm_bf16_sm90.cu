#include "kernels/cuda_utils.h"
#include "kernels/moe.h"  // kMoeTopK
#include "kernels/quantize_fp8_sm90.cuh"
#include "kernels/rmsnorm.h"

namespace gossamer::kernels {
namespace {

constexpr int kThreads = 256;

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

__device__ float block_sum(float v) {
  __shared__ float partial[kThreads / 32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = v;
  __syncthreads();
  float total = 0.f;
#pragma unroll
  for (int i = 0; i < kThreads / 32; ++i) total += partial[i];
  return total;
}

// x[row] vector vi from the MoE pieces: bf(0 + Σ_k w_k · y[pair_row_k]), launch_moe_combine's sum and rounding
// (k = 0..3 in order, fp32, skipped rows −1), unpacked to fp32.
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

// One block per token; 16-byte vectors (8 bf16). The row (≤ 8 vectors per thread) stays in registers.
// kMoe: x comes from the MoE pieces (moe_y, moe_pair_row, moe_topk_weights). The weight, the residual and
// the MoE routing pieces are read before the PDL wait (rmsnorm.h: written at least two launches back), so
// only x (or moe_y) waits for the previous kernel. kFp8Out: out_q and out_scales too (out may be null); a 1×128
// group is 16 consecutive vectors, i.e. one half-warp's (quantize_fp8_half_warp_group).
template <int kMaxVecPerThread, bool kMoe, bool kFp8Out>
__global__ void __launch_bounds__(kThreads) rmsnorm_kernel(RmsNormParams p) {
  const int64_t row = blockIdx.x;
  const int num_vec = p.hidden / 8;
  const uint4* x = kMoe ? nullptr : reinterpret_cast<const uint4*>(p.x + row * p.hidden);
  uint4* res = p.residual ? reinterpret_cast<uint4*>(p.residual + row * p.hidden) : nullptr;
  const uint4* w = reinterpret_cast<const uint4*>(p.weight);
  uint4 weight[kMaxVecPerThread], residual[kMaxVecPerThread];
#pragma unroll
  for (int i = 0; i < kMaxVecPerThread; ++i) {
    const int vi = threadIdx.x + i * kThreads;
    if (vi < num_vec) {
      weight[i] = w[vi];
      if (res) residual[i] = res[vi];
    }
  }
  int moe_rows[kMoeTopK] = {};
  float moe_w[kMoeTopK] = {};
  if constexpr (kMoe) {
#pragma unroll
    for (int k = 0; k < kMoeTopK; ++k) {
      moe_rows[k] = p.moe_pair_row[row * kMoeTopK + k];
      moe_w[k] = p.moe_topk_weights[row * kMoeTopK + k];
    }
  }
  pdl_wait();
  pdl_trigger();
  // ---- load (or sum the MoE rows), add the residual ----
  float v[kMaxVecPerThread][8];
  float sum_sq = 0.f;
#pragma unroll
  for (int i = 0; i < kMaxVecPerThread; ++i) {
    const int vi = threadIdx.x + i * kThreads;
    if (vi < num_vec) {
      if constexpr (kMoe) {
        moe_combined_vec(p, moe_rows, moe_w, vi, v[i]);
      } else {
        uint4 a = x[vi];
        const uint32_t* aw = reinterpret_cast<const uint32_t*>(&a);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          v[i][2 * j] = bf_lo(aw[j]);
          v[i][2 * j + 1] = bf_hi(aw[j]);
        }
      }
      if (res) {
        const uint32_t* rw = reinterpret_cast<const uint32_t*>(&residual[i]);
        uint4 s;
        uint32_t* sw = reinterpret_cast<uint32_t*>(&s);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          sw[j] = pack_bf16(v[i][2 * j] + bf_lo(rw[j]), v[i][2 * j + 1] + bf_hi(rw[j]));
          v[i][2 * j] = bf_lo(sw[j]);
          v[i][2 * j + 1] = bf_hi(sw[j]);
        }
        res[vi] = s;
      }
#pragma unroll
      for (int j = 0; j < 8; ++j) sum_sq += v[i][j] * v[i][j];
    }
  }
  // ---- normalise and scale ----
  const float inv_rms = rsqrtf(block_sum(sum_sq) / static_cast<float>(p.hidden) + p.eps);
  uint4* out = p.out ? reinterpret_cast<uint4*>(p.out + row * p.hidden) : nullptr;
#pragma unroll
  for (int i = 0; i < kMaxVecPerThread; ++i) {
    const int vi = threadIdx.x + i * kThreads;
    // kFp8Out: every lane of a warp with any vector takes part in its groups' shuffles (zeros past the row).
    if (kFp8Out ? (threadIdx.x & ~31) + i * kThreads >= num_vec : vi >= num_vec) continue;
    uint4 o = make_uint4(0u, 0u, 0u, 0u);
    uint32_t* ow = reinterpret_cast<uint32_t*>(&o);
    if (vi < num_vec) {
      const uint32_t* ww = reinterpret_cast<const uint32_t*>(&weight[i]);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        ow[j] = pack_bf16(v[i][2 * j] * inv_rms * bf_lo(ww[j]), v[i][2 * j + 1] * inv_rms * bf_hi(ww[j]));
      }
      if (out) out[vi] = o;
    }
    if constexpr (kFp8Out) {
      float normed[8];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        normed[2 * j] = bf_lo(ow[j]);
        normed[2 * j + 1] = bf_hi(ow[j]);
      }
      uint2 q;
      const float scale = quantize_fp8_half_warp_group(normed, q);
      if (vi < num_vec) {
        *reinterpret_cast<uint2*>(p.out_q + row * p.ldq + 8 * vi) = q;
        if (threadIdx.x % 16 == 0) p.out_scales[row * ceil_div(p.hidden, 128) + vi / 16] = scale;
      }
    }
  }
}

}  // namespace

void launch_rmsnorm(const RmsNormParams& p, cudaStream_t stream) {
  GOSSAMER_CHECK(p.hidden % 8 == 0 && p.hidden <= 8 * kThreads * 4, "rmsnorm: hidden ", p.hidden,
                 " must be a multiple of 8 and at most 8192");
  const bool moe = p.moe_y != nullptr;
  GOSSAMER_CHECK(
      moe == (p.x == nullptr) && moe == (p.moe_pair_row != nullptr) && moe == (p.moe_topk_weights != nullptr),
      "rmsnorm: give x or all three MoE pieces");
  const bool fp8 = p.out_q != nullptr;
  GOSSAMER_CHECK(p.out != nullptr || fp8, "rmsnorm: no output");
  GOSSAMER_CHECK(
      !fp8 || (p.out_scales && p.ldq >= p.hidden && p.ldq % 16 == 0 && reinterpret_cast<uintptr_t>(p.out_q) % 16 == 0),
      "rmsnorm: out_q needs out_scales and ldq ≥ hidden, a multiple of 16 (out_q 16-byte aligned)");
  if (p.num_tokens == 0) return;
  auto* kernel = moe ? (fp8 ? rmsnorm_kernel<4, true, true> : rmsnorm_kernel<4, true, false>)
                     : (fp8 ? rmsnorm_kernel<4, false, true> : rmsnorm_kernel<4, false, false>);
  launch_pdl(kernel, dim3(p.num_tokens), dim3(kThreads), 0, stream, p);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

}  // namespace gossamer::kernels
