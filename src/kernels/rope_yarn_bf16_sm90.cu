#include <cuda_fp8.h>

#include "kernels/cuda_utils.h"
#include "kernels/rope.h"
#include "kernels/rope_math.h"

namespace gossamer::kernels {
namespace {

// 8 bf16 → 8 e4m3 (byte i = element i): RNE(x / scale), saturated to ±448 (kv_cache_fp8.h's rule).
__device__ __forceinline__ uint2 quantize_e4m3x8(const uint4& v, float scale) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v);
  uint32_t w[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const float2 a = __bfloat1622float2(h[2 * i]), b = __bfloat1622float2(h[2 * i + 1]);
    w[i] = static_cast<uint32_t>(rope_kv_quantize_e4m3x2(a.x, a.y, scale)) |
           (static_cast<uint32_t>(rope_kv_quantize_e4m3x2(b.x, b.y, scale)) << 16);
  }
  return make_uint2(w[0], w[1]);
}

// One block per token; 4 threads per head, each rotating 8 pairs (two 16-byte vectors).
__global__ void rope_kernel(RopeParams p) {
  pdl_wait();
  pdl_trigger();
  const int64_t t = blockIdx.x;
  const int num_heads = p.num_q_heads + 2 * p.num_kv_heads;
  const int head = threadIdx.x / 4;
  const int part = threadIdx.x % 4;  // pairs [8·part, 8·part + 8)
  if (head >= num_heads) return;
  const uint16_t* src = p.qkv + t * p.qkv_stride + head * kHeadDim;
  uint4 lo = *reinterpret_cast<const uint4*>(src + 8 * part);
  uint4 hi = *reinterpret_cast<const uint4*>(src + 32 + 8 * part);
  const bool is_v = head >= p.num_q_heads + p.num_kv_heads;
  if (!is_v) {
    // ---- rotate ----
    const float pos = static_cast<float>(p.positions[t]);
    __nv_bfloat16* a = reinterpret_cast<__nv_bfloat16*>(&lo);
    __nv_bfloat16* b = reinterpret_cast<__nv_bfloat16*>(&hi);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      float c, s, a_out, b_out;
      rope_cos_sin(pos, p.inv_freq[8 * part + j], p.concentration, c, s);
      rope_rotate(__bfloat162float(a[j]), __bfloat162float(b[j]), c, s, a_out, b_out);
      a[j] = __float2bfloat16_rn(a_out);
      b[j] = __float2bfloat16_rn(b_out);
    }
  }
  // ---- write ----
  uint16_t* dst = nullptr;
  void* cache = nullptr;
  int cache_head = 0;
  if (head < p.num_q_heads) {
    dst = p.q_out + (t * p.num_q_heads + head) * kHeadDim;
  } else {
    cache_head = is_v ? head - p.num_q_heads - p.num_kv_heads : head - p.num_q_heads;
    uint16_t* plain = is_v ? p.v_out : p.k_out;
    if (plain) dst = plain + (t * p.num_kv_heads + cache_head) * kHeadDim;
    cache = is_v ? p.v_cache : p.k_cache;
  }
  if (dst) {
    *reinterpret_cast<uint4*>(dst + 8 * part) = lo;
    *reinterpret_cast<uint4*>(dst + 32 + 8 * part) = hi;
  }
  if (cache && p.slots) {
    const int64_t slot = p.slots[t];
    const int64_t at = (slot * p.num_kv_heads + cache_head) * kHeadDim;
    if (slot >= 0 && p.kv_fp8) {
      const float* scales = is_v ? p.v_scale : p.k_scale;
      const float scale = scales ? scales[cache_head] : 1.f;
      uint8_t* c = static_cast<uint8_t*>(cache) + at;
      *reinterpret_cast<uint2*>(c + 8 * part) = quantize_e4m3x8(lo, scale);
      *reinterpret_cast<uint2*>(c + 32 + 8 * part) = quantize_e4m3x8(hi, scale);
    } else if (slot >= 0) {
      uint16_t* c = static_cast<uint16_t*>(cache) + at;
      *reinterpret_cast<uint4*>(c + 8 * part) = lo;
      *reinterpret_cast<uint4*>(c + 32 + 8 * part) = hi;
    }
  }
}

}  // namespace

void launch_rope(const RopeParams& p, cudaStream_t stream) {
  GOSSAMER_CHECK(p.qkv_stride % 8 == 0, "rope: qkv row stride must be a multiple of 8 elements");
  if (p.num_tokens == 0) return;
  const int threads = 4 * (p.num_q_heads + 2 * p.num_kv_heads);
  GOSSAMER_CHECK(threads <= 1024, "rope: too many heads");
  launch_pdl(rope_kernel, dim3(p.num_tokens), dim3(threads), 0, stream, p);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

}  // namespace gossamer::kernels
