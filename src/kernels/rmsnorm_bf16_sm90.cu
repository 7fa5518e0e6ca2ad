#include "kernels/cuda_utils.h"
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

// One block per token; 16-byte vectors (8 bf16). The row (≤ 8 vectors per thread) stays in registers.
template <int kMaxVecPerThread>
__global__ void __launch_bounds__(kThreads) rmsnorm_kernel(RmsNormParams p) {
  pdl_wait();
  pdl_trigger();
  const int64_t row = blockIdx.x;
  const int num_vec = p.hidden / 8;
  const uint4* x = reinterpret_cast<const uint4*>(p.x + row * p.hidden);
  uint4* res = p.residual ? reinterpret_cast<uint4*>(p.residual + row * p.hidden) : nullptr;
  // ---- load (and add the residual) ----
  float v[kMaxVecPerThread][8];
  float sum_sq = 0.f;
#pragma unroll
  for (int i = 0; i < kMaxVecPerThread; ++i) {
    const int vi = threadIdx.x + i * kThreads;
    if (vi < num_vec) {
      uint4 a = x[vi];
      const uint32_t* aw = reinterpret_cast<const uint32_t*>(&a);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        v[i][2 * j] = bf_lo(aw[j]);
        v[i][2 * j + 1] = bf_hi(aw[j]);
      }
      if (res) {
        uint4 r = res[vi];
        const uint32_t* rw = reinterpret_cast<const uint32_t*>(&r);
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
  const uint4* w = reinterpret_cast<const uint4*>(p.weight);
  uint4* out = reinterpret_cast<uint4*>(p.out + row * p.hidden);
#pragma unroll
  for (int i = 0; i < kMaxVecPerThread; ++i) {
    const int vi = threadIdx.x + i * kThreads;
    if (vi < num_vec) {
      uint4 wv = w[vi];
      const uint32_t* ww = reinterpret_cast<const uint32_t*>(&wv);
      uint4 o;
      uint32_t* ow = reinterpret_cast<uint32_t*>(&o);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        ow[j] = pack_bf16(v[i][2 * j] * inv_rms * bf_lo(ww[j]), v[i][2 * j + 1] * inv_rms * bf_hi(ww[j]));
      }
      out[vi] = o;
    }
  }
}

}  // namespace

void launch_rmsnorm(const RmsNormParams& p, cudaStream_t stream) {
  GOSSAMER_CHECK(p.hidden % 8 == 0 && p.hidden <= 8 * kThreads * 4, "rmsnorm: hidden ", p.hidden,
                 " must be a multiple of 8 and at most 8192");
  if (p.num_tokens == 0) return;
  launch_pdl(rmsnorm_kernel<4>, dim3(p.num_tokens), dim3(kThreads), 0, stream, p);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

}  // namespace gossamer::kernels
