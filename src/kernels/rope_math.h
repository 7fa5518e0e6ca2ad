// The RoPE arithmetic of one rotation pair, shared by rope_kernel (rope_yarn_bf16_sm90.cu) and rope_cpu:
// one truth, so the CPU reference differs from the kernel only in cos/sin (libm vs CUDA's sincosf).
//
// Pair i of a head at position pos (a and b are elements i and i + 32, already bf16 values):
//   c = bf(C · cos(pos · ω_i)), s = bf(C · sin(pos · ω_i))    (fp32 angle and product, rounded to bf16)
//   a' = bf(a·c − b·s),  b' = bf(b·c + a·s)                    (two fp32 products, one fp32 sum each)
// NOTE: on the device every product and sum is an explicit round-to-nearest intrinsic (__fmul_rn,
// __fadd_rn), which nvcc never contracts into an FMA (that would round once fewer and change results). The
// host reference relies on the build not contracting either (x86-64 without -march=…fma, as this project
// builds).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/cuda/cuda_types.h"  // GOSSAMER_HOST_DEVICE
#include "core/dtype.h"            // round_to_bf16 (host)

#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#endif

namespace gossamer::kernels {

GOSSAMER_HOST_DEVICE inline float rope_mul(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
GOSSAMER_HOST_DEVICE inline float rope_add(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
GOSSAMER_HOST_DEVICE inline float rope_round_bf16(float x) {
#ifdef __CUDA_ARCH__
  return __bfloat162float(__float2bfloat16_rn(x));
#else
  return round_to_bf16(x);
#endif
}

// c and s of pair frequency `inv_freq` at position `pos` (CUDA's sincosf on the device, libm on the host).
GOSSAMER_HOST_DEVICE inline void rope_cos_sin(float pos, float inv_freq, float concentration, float& c, float& s) {
  const float angle = rope_mul(pos, inv_freq);
  float sn, cs;
#ifdef __CUDA_ARCH__
  sincosf(angle, &sn, &cs);
#else
  sn = std::sin(angle);
  cs = std::cos(angle);
#endif
  c = rope_round_bf16(rope_mul(cs, concentration));
  s = rope_round_bf16(rope_mul(sn, concentration));
}

// The rotated pair (a', b') in fp32; the caller rounds each to bf16.
GOSSAMER_HOST_DEVICE inline void rope_rotate(float a, float b, float c, float s, float& a_out, float& b_out) {
  a_out = rope_add(rope_mul(a, c), -rope_mul(b, s));
  b_out = rope_add(rope_mul(b, c), rope_mul(a, s));
}

#ifdef __CUDACC__
// Two bf16-valued floats → two e4m3 codes (low byte = a): RNE(x / scale), saturated to ±448
// (kv_cache_fp8.h's rule for the FP8 KV cache write), on the device.
__device__ __forceinline__ uint16_t rope_kv_quantize_e4m3x2(float a, float b, float scale) {
  return static_cast<uint16_t>(
      __nv_cvt_float2_to_fp8x2(make_float2(__fdiv_rn(a, scale), __fdiv_rn(b, scale)), __NV_SATFINITE, __NV_E4M3));
}
#endif

}  // namespace gossamer::kernels
