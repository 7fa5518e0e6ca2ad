#include "kernels/cuda_utils.h"
#include "kernels/rope.h"

namespace gossamer::kernels {
namespace {

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
      const float angle = pos * p.inv_freq[8 * part + j];
      float sn, cs;
      sincosf(angle, &sn, &cs);
      const float c = __bfloat162float(__float2bfloat16_rn(cs * p.concentration));
      const float s = __bfloat162float(__float2bfloat16_rn(sn * p.concentration));
      const float x0 = __bfloat162float(a[j]);
      const float x1 = __bfloat162float(b[j]);
      a[j] = __float2bfloat16_rn(x0 * c - x1 * s);
      b[j] = __float2bfloat16_rn(x1 * c + x0 * s);
    }
  }
  // ---- write ----
  uint16_t* dst = nullptr;
  uint16_t* cache = nullptr;
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
    if (slot >= 0) {
      uint16_t* c = cache + (slot * p.num_kv_heads + cache_head) * kHeadDim;
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
