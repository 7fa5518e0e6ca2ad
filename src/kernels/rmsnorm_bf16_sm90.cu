#include "kernels/cuda_utils.h"
#include "kernels/moe.h"  // kMoeTopK
#include "kernels/quantize_fp8_sm90.cuh"
#include "kernels/rmsnorm.h"
#include "kernels/rmsnorm_sm90.cuh"

namespace gossamer::kernels {
namespace {

constexpr int kThreads = 256;

using namespace rmsnorm_device;

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
  // ---- load (or sum the MoE rows), add the residual (rmsnorm_sm90.cuh's arithmetic) ----
  uint4* res_out = p.residual_out ? reinterpret_cast<uint4*>(p.residual_out + row * p.hidden) : res;
  float v[kMaxVecPerThread][8];
  float sum_sq = 0.f;
#pragma unroll
  for (int i = 0; i < kMaxVecPerThread; ++i) {
    const int vi = threadIdx.x + i * kThreads;
    if (vi < num_vec) {
      if constexpr (kMoe) {
        moe_combined_vec(p, moe_rows, moe_w, vi, v[i]);
      } else {
        unpack_vec(x[vi], v[i]);
      }
      if (res) res_out[vi] = add_residual_vec(v[i], residual[i]);
      sum_sq = sum_of_squares(v[i], sum_sq);
    }
  }
  // ---- normalise and scale ----
  float total[1] = {sum_sq};
  block_sums<kThreads, 1>(total);
  const float inv = inv_rms(total[0], p);
  uint4* out = p.out ? reinterpret_cast<uint4*>(p.out + row * p.hidden) : nullptr;
#pragma unroll
  for (int i = 0; i < kMaxVecPerThread; ++i) {
    const int vi = threadIdx.x + i * kThreads;
    // kFp8Out: every lane of a warp with any vector takes part in its groups' shuffles (zeros past the row).
    if (kFp8Out ? (threadIdx.x & ~31) + i * kThreads >= num_vec : vi >= num_vec) continue;
    uint4 o = make_uint4(0u, 0u, 0u, 0u);
    if (vi < num_vec) {
      o = norm_vec(v[i], inv, weight[i]);
      if (out) out[vi] = o;
    }
    const uint32_t* ow = reinterpret_cast<const uint32_t*>(&o);
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
  check_rmsnorm_inputs(p, "rmsnorm");
  GOSSAMER_CHECK(p.hidden <= 8 * kThreads * 4, "rmsnorm: hidden ", p.hidden, " must be at most 8192");
  const bool moe = p.moe_y != nullptr;
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
