// The device side of launch_rope's writes (rope.h), shared by rope_kernel (rope_yarn_bf16_sm90.cu) and the RoPE
// epilogue of the decode QKV GEMV (gemv_fp8.h rope_epilogue): where a head's rotated q / k and its v go, in bf16
// or as e4m3 cache codes. The arithmetic of a rotation pair is rope_math.h's; together they make the two kernels'
// results the same bits.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/rope.h"
#include "kernels/rope_math.h"

namespace gossamer::kernels {

// kWords bf16 pairs `w` (low half first: elements e … e + 2·kWords − 1 of head `head` of token t, q and k already
// rotated; heads q, then k, then v as in the fused QKV row) where launch_rope puts them: q into r.q_out; k / v
// into r.k_out / r.v_out when set and into the paged cache at r.slots[t] (skipped where the slot is negative or
// the cache null), as e4m3 codes under r.kv_fp8 (kv_cache_fp8.h's rule). kWords 1 or 4; e a multiple of 2·kWords.
template <int kWords>
__device__ __forceinline__ void rope_write(const RopeParams& r, int64_t t, int head, int e,
                                           const uint32_t (&w)[kWords]) {
  static_assert(kWords == 1 || kWords == 4, "one bf16 pair or four (16 bytes)");
  auto store_bf16 = [&](uint16_t* dst) {
    if constexpr (kWords == 4) {
      *reinterpret_cast<uint4*>(dst) = make_uint4(w[0], w[1], w[2], w[3]);
    } else {
      *reinterpret_cast<uint32_t*>(dst) = w[0];
    }
  };
  if (head < r.num_q_heads) {
    store_bf16(r.q_out + (t * r.num_q_heads + head) * kHeadDim + e);
    return;
  }
  const bool is_v = head >= r.num_q_heads + r.num_kv_heads;
  const int kv = is_v ? head - r.num_q_heads - r.num_kv_heads : head - r.num_q_heads;
  uint16_t* plain = is_v ? r.v_out : r.k_out;
  if (plain) store_bf16(plain + (t * r.num_kv_heads + kv) * kHeadDim + e);
  void* cache = is_v ? r.v_cache : r.k_cache;
  const int64_t slot = r.slots ? r.slots[t] : -1;
  if (!cache || slot < 0) return;
  const int64_t at = (slot * r.num_kv_heads + kv) * kHeadDim + e;
  if (!r.kv_fp8) return store_bf16(static_cast<uint16_t*>(cache) + at);
  const float* scales = is_v ? r.v_scale : r.k_scale;
  const float scale = scales ? scales[kv] : 1.f;
  uint16_t codes[kWords];
#pragma unroll
  for (int i = 0; i < kWords; ++i) {
    codes[i] = rope_kv_quantize_e4m3x2(__uint_as_float(w[i] << 16), __uint_as_float(w[i] & 0xFFFF0000u), scale);
  }
  uint8_t* dst = static_cast<uint8_t*>(cache) + at;
  if constexpr (kWords == 4) {
    *reinterpret_cast<uint2*>(dst) =
        make_uint2(codes[0] | (uint32_t{codes[1]} << 16), codes[2] | (uint32_t{codes[3]} << 16));
  } else {
    *reinterpret_cast<uint16_t*>(dst) = codes[0];
  }
}

// Head `head` of token t (launch_rope's work for it), by the warp that holds the head's 64 values: lane l holds
// elements 2l and 2l + 1 as bf16 values (x0, x1: floats that are exactly bf16). Rotates q and k (pair i is
// elements i and i + 32: lanes l and l ^ 16), then writes as rope_write. All 32 lanes must call it.
__device__ __forceinline__ void rope_head_from_warp(const RopeParams& r, int64_t t, int head, float x0, float x1) {
  const int lane = threadIdx.x % 32, e = 2 * lane;
  const float y0 = __shfl_xor_sync(0xffffffffu, x0, 16), y1 = __shfl_xor_sync(0xffffffffu, x1, 16);
  if (head < r.num_q_heads + r.num_kv_heads) {
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
  const __nv_bfloat162 h = __floats2bfloat162_rn(x0, x1);
  const uint32_t w[1] = {*reinterpret_cast<const uint32_t*>(&h)};
  rope_write(r, t, head, e, w);
}

}  // namespace gossamer::kernels
