#include "kernels/cuda_utils.h"
#include "kernels/rope.h"
#include "kernels/rope_math.h"
#include "kernels/rope_sm90.cuh"

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
      float c, s, a_out, b_out;
      rope_cos_sin(pos, p.inv_freq[8 * part + j], p.concentration, c, s);
      rope_rotate(__bfloat162float(a[j]), __bfloat162float(b[j]), c, s, a_out, b_out);
      a[j] = __float2bfloat16_rn(a_out);
      b[j] = __float2bfloat16_rn(b_out);
    }
  }
  // ---- write ----
  const uint32_t lo_words[4] = {lo.x, lo.y, lo.z, lo.w}, hi_words[4] = {hi.x, hi.y, hi.z, hi.w};
  rope_write(p, t, head, 8 * part, lo_words);
  rope_write(p, t, head, 32 + 8 * part, hi_words);
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
