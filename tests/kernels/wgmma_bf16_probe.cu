// The probe of wgmma_bf16_probe.h: tiles staged into 128B-swizzled shared memory exactly as the prefill
// attention's producer lays them out (attn::swz), then the attention's two wgmma shapes.
#include "kernels/attention_common_sm90.cuh"  // attn::swz
#include "kernels/cuda_utils.h"
#include "kernels/wgmma_bf16_sm90.cuh"
#include "wgmma_bf16_probe.h"

namespace gossamer::kernels::test {
namespace {

// Copies `rows` rows of 64 bf16 into a swizzled [rows][128 B] tile (128 threads).
__device__ void stage(uint8_t* tile, const uint16_t* src, int rows) {
  for (int i = threadIdx.x; i < rows * 8; i += 128) {
    const int r = i / 8, c = i % 8;
    *reinterpret_cast<uint4*>(tile + attn::swz(r, c)) = *reinterpret_cast<const uint4*>(src + r * 64 + c * 8);
  }
}

__global__ void __launch_bounds__(128)
    probe_kernel(const uint16_t* a, const uint16_t* b, const float* p, const uint16_t* v, float* s_out, float* o_out) {
  __shared__ uint8_t raw[1024 + 64 * 128 + 2 * 128 * 128];
  uint8_t* sa = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t(1023));
  uint8_t* sb = sa + 64 * 128;
  uint8_t* sv = sb + 128 * 128;
  stage(sa, a, 64);
  stage(sb, b, 128);
  stage(sv, v, 128);
  fence_proxy_async();
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  auto row_of = [&](int e) { return 16 * warp + lane / 4 + 8 * (e / 2); };
  auto col_of = [&](int j, int e) { return 8 * j + 2 * (lane % 4) + e % 2; };

  // ---- s = a · bᵀ: both K-major ----
  float s[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) s[i] = 0.f;
  wgmma::fence_operand(s);
  wgmma::fence();
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    wgmma::wgmma_m64n128k16_bf16_ss(s, wgmma::desc_k128_sw128(sa) + 2 * kk, wgmma::desc_k128_sw128(sb) + 2 * kk,
                                    kk > 0);
  }
  wgmma::commit();
  wgmma::wait<0>();
  wgmma::fence_operand(s);
#pragma unroll
  for (int j = 0; j < 16; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) s_out[row_of(e) * 128 + col_of(j, e)] = s[4 * j + e];
  }

  // ---- o = p · v: p from the D layout through d_to_a_bf16, v N-major ----
  float pd[64];
#pragma unroll
  for (int j = 0; j < 16; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) pd[4 * j + e] = p[row_of(e) * 128 + col_of(j, e)];
  }
  uint32_t pa[8][4];
  wgmma::d_to_a_bf16(pa, pd);
  float o[32];
#pragma unroll
  for (int i = 0; i < 32; ++i) o[i] = 0.f;
#pragma unroll
  for (int kk = 0; kk < 8; ++kk) wgmma::fence_operand(pa[kk]);
  wgmma::fence_operand(o);
  wgmma::fence();
  const uint64_t dv = wgmma::desc_mn_sw128(sv, 128 * 128);
#pragma unroll
  for (int kk = 0; kk < 8; ++kk) wgmma::wgmma_m64n64k16_bf16_rs_tb(o, pa[kk], dv + kk * (2048 >> 4), kk > 0);
  wgmma::commit();
  wgmma::wait<0>();
  wgmma::fence_operand(o);
#pragma unroll
  for (int j = 0; j < 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) o_out[row_of(e) * 64 + col_of(j, e)] = o[4 * j + e];
  }
}

}  // namespace

void wgmma_bf16_probe(const uint16_t* a, const uint16_t* b, const float* p, const uint16_t* v, float* s, float* o) {
  probe_kernel<<<1, 128>>>(a, b, p, v, s, o);
  GOSSAMER_CUDA_CHECK_LAUNCH();
  GOSSAMER_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace gossamer::kernels::test
