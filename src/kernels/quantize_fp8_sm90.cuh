// quantize_fp8.h's rule on the device for one 1×128 group held by a half-warp (lanes 16h … 16h + 15, eight columns
// each), shared by the kernels that quantize activations (quantize_fp8_act_sm90.cu, the RMSNorm's FP8 output):
// the same arithmetic as quantize_fp8_cpu, bit for bit.
#pragma once

#include <cuda_fp8.h>

#include <cstdint>

namespace gossamer::kernels {

// The group's amax over its 16 lanes (four shuffles: every lane of the warp must call it; lanes without columns
// pass zeros), then this lane's eight e4m3 bytes q = fp8(v · (448 / amax)) in `q`. Returns the scale amax / 448.
//   v: [8] fp32 (bf16 values) → q: 8 e4m3 bytes, column order
__device__ __forceinline__ float quantize_fp8_half_warp_group(const float (&v)[8], uint2& q) {
  float amax = 0.f;
#pragma unroll
  for (int j = 0; j < 8; ++j) amax = fmaxf(amax, fabsf(v[j]));
#pragma unroll
  for (int o = 8; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  amax = fmaxf(amax, 1e-4f);
  const float inv = 448.0f / amax;
  uint32_t out[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    uint32_t packed = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint32_t byte = __nv_cvt_float_to_fp8(__fmul_rn(v[4 * h + j], inv), __NV_SATFINITE, __NV_E4M3);
      packed |= byte << (8 * j);
    }
    out[h] = packed;
  }
  q = make_uint2(out[0], out[1]);
  return amax / 448.0f;
}

}  // namespace gossamer::kernels
