// launch_rope's work for one head of one token (rope.h), done by the warp that holds the head's 64 values: the
// device side of the RoPE epilogue of the decode QKV GEMV (gemv_fp8.h rope_epilogue). rope_kernel
// (rope_yarn_bf16_sm90.cu) and rope_cpu do the same arithmetic (rope_math.h), so the results are theirs bit
// for bit.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/rope.h"
#include "kernels/rope_math.h"

namespace gossamer::kernels {

// Head `head` (q heads, then k, then v, as in the fused QKV row) of token t: lane l holds elements 2l and 2l + 1
// as bf16 values (x0, x1: floats that are exactly bf16). Rotates q and k (pair i is elements i and i + 32:
// lanes l and l ^ 16), then writes q to r.q_out, k / v to r.k_out / r.v_out when set and into the cache at
// r.slots[t] (skipped when the slot is negative or the cache null). All 32 lanes must call it.
__device__ __forceinline__ void rope_head_from_warp(const RopeParams& r, int64_t t, int head, float x0, float x1) {
  const int lane = threadIdx.x % 32, e = 2 * lane;
  const bool is_v = head >= r.num_q_heads + r.num_kv_heads;
  const float y0 = __shfl_xor_sync(0xffffffffu, x0, 16), y1 = __shfl_xor_sync(0xffffffffu, x1, 16);
  if (!is_v) {
    // ---- rotate: lanes 0–15 hold the pairs' first elements (a), lanes 16–31 their second (b) ----
    const float pos = static_cast<float>(r.positions[t]);
    const bool first = lane < 16;
    float c, s, a_out, b_out;
    rope_cos_sin(pos, r.inv_freq[e % 32], r.concentration, c, s);
    rope_rotate(first ? x0 : y0, first ? y0 : x0, c, s, a_out, b_out);
    x0 = rope_round_bf16(first ? a_out : b_out);
    rope_cos_sin(pos, r.inv_freq[(e + 1) % 32], r.concentration, c, s);
    rope_rotate(first ? x1 : y1, first ? y1 : x1, c, s, a_out, b_out);
    x1 = rope_round_bf16(first ? a_out : b_out);
  }
  // ---- write ----
  const __nv_bfloat162 h = __floats2bfloat162_rn(x0, x1);
  if (head < r.num_q_heads) {
    *reinterpret_cast<__nv_bfloat162*>(r.q_out + (t * r.num_q_heads + head) * kHeadDim + e) = h;
    return;
  }
  const int kv = is_v ? head - r.num_q_heads - r.num_kv_heads : head - r.num_q_heads;
  uint16_t* plain = is_v ? r.v_out : r.k_out;
  if (plain) *reinterpret_cast<__nv_bfloat162*>(plain + (t * r.num_kv_heads + kv) * kHeadDim + e) = h;
  void* cache = is_v ? r.v_cache : r.k_cache;
  const int64_t slot = r.slots ? r.slots[t] : -1;
  if (!cache || slot < 0) return;
  const int64_t at = (slot * r.num_kv_heads + kv) * kHeadDim + e;
  if (r.kv_fp8) {
    const float* scales = is_v ? r.v_scale : r.k_scale;
    *reinterpret_cast<uint16_t*>(static_cast<uint8_t*>(cache) + at) =
        rope_kv_quantize_e4m3x2(x0, x1, scales ? scales[kv] : 1.f);
  } else {
    *reinterpret_cast<__nv_bfloat162*>(static_cast<uint16_t*>(cache) + at) = h;
  }
}

}  // namespace gossamer::kernels
