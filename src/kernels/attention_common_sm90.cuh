// Warp-level building blocks shared by the prefill and decode attention kernels (mma.sync bf16
// m16n8k16, fp32 accumulators), and the launcher of the wgmma prefill kernel. Tiles of 64 rows × 64 bf16
// (128 B) live in shared memory with 16-byte chunks XOR-swizzled by row (chunk c of row r at c ^ (r & 7))
// so ldmatrix is conflict free; the same layout is TMA's and wgmma's 128-byte swizzle.
#pragma once

#include <cuda_fp16.h>

#include <cfloat>
#include <cstdint>

#include "kernels/attention.h"
#include "kernels/cuda_utils.h"
#include "kernels/mma_bf16_sm90.cuh"

namespace gossamer::kernels::attn {

inline constexpr int kHead = 64;
inline constexpr int kKeysPerTile = 64;
inline constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ int swz(int row, int chunk) {
  return row * 128 + ((chunk ^ (row & 7)) << 4);
}

__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ uint32_t pack_bf16(float a, float b) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<const uint32_t*>(&h);
}

// The cache row of position `pos` of a sequence whose page table is `pages`: page_size is a power of two
// (page_shift = log2), so the mapping is shifts and masks.
__device__ __forceinline__ int64_t paged_slot(const int32_t* pages, int pos, int page_shift) {
  return (static_cast<int64_t>(pages[pos >> page_shift]) << page_shift) | (pos & ((1 << page_shift) - 1));
}

// Loads one K tile and one V tile of 64 cache rows (positions kv0…kv0+63 of one sequence, one kv head)
// into swizzled shared memory; positions ≥ kv_len are zero-filled. Rows from row_begin only (decode reloads
// the rows of this step's keys). Called by all `kThreads` threads.
template <int kThreads>
__device__ __forceinline__ void load_kv_tiles(uint8_t* sk, uint8_t* sv, const AttentionParams& p, const int32_t* pages,
                                              int page_shift, int kv_head, int kv0, int kv_len, int tid,
                                              int row_begin = 0) {
  constexpr int kRowsPerPass = kThreads / 8;
  const int c = tid % 8;
#pragma unroll
  for (int r = row_begin + tid / 8; r < kKeysPerTile; r += kRowsPerPass) {
    const int pos = kv0 + r;
    const bool ok = pos < kv_len;
    int64_t off = 0;
    if (ok) {
      const int64_t slot = paged_slot(pages, pos, page_shift);
      off = (slot * p.num_kv_heads + kv_head) * kHead + c * 8;
    }
    cp_async_16(sk + swz(r, c), static_cast<const uint16_t*>(p.k_cache) + off, ok);
    cp_async_16(sv + swz(r, c), static_cast<const uint16_t*>(p.v_cache) + off, ok);
  }
}

// ---- FP8 KV cache (AttentionParams::kv_fp8) ----
// Tiles of 64 cache rows × 64 e4m3 (64 B per row) are staged unswizzled (row r at r·64, 4 KiB per tile),
// then widened in shared memory into the swizzled bf16 tiles that attend_tile reads.
inline constexpr int kFp8TileBytes = kKeysPerTile * kHead;

// Two e4m3 (low byte → low half) to bf16x2; exact (e4m3 ⊂ f16 ∩ bf16).
__device__ __forceinline__ uint32_t e4m3x2_to_bf16x2(uint32_t pair16) {
  const uint32_t h = e4m3x2_to_f16x2(pair16);
  const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&h));
  return pack_bf16(f.x, f.y);
}
// 8 e4m3 (byte i = element i) → 8 bf16 (one 16-byte chunk).
__device__ __forceinline__ uint4 e4m3x8_to_bf16x8(uint2 v) {
  return make_uint4(e4m3x2_to_bf16x2(v.x), e4m3x2_to_bf16x2(v.x >> 16), e4m3x2_to_bf16x2(v.y),
                    e4m3x2_to_bf16x2(v.y >> 16));
}

// Stages one K and one V tile of 64 e4m3 cache rows (positions kv0…kv0+63) with cp.async; positions
// ≥ kv_len are zero-filled. Rows from row_begin only. Called by all `kThreads` threads.
template <int kThreads>
__device__ __forceinline__ void load_kv_tiles_fp8(uint8_t* sk8, uint8_t* sv8, const AttentionParams& p,
                                                  const int32_t* pages, int page_shift, int kv_head, int kv0,
                                                  int kv_len, int tid, int row_begin = 0) {
  constexpr int kRowsPerPass = kThreads / 4;
  const int c = tid % 4;  // 16-byte chunk (16 elements) of the 64-byte row
#pragma unroll
  for (int r = row_begin + tid / 4; r < kKeysPerTile; r += kRowsPerPass) {
    const int pos = kv0 + r;
    const bool ok = pos < kv_len;
    int64_t off = 0;
    if (ok) {
      const int64_t slot = paged_slot(pages, pos, page_shift);
      off = (slot * p.num_kv_heads + kv_head) * kHead + c * 16;
    }
    cp_async_16(sk8 + r * kHead + c * 16, static_cast<const uint8_t*>(p.k_cache) + off, ok);
    cp_async_16(sv8 + r * kHead + c * 16, static_cast<const uint8_t*>(p.v_cache) + off, ok);
  }
}

// Widens the staged e4m3 K and V tiles into swizzled bf16 tiles (the layout load_kv_tiles writes). Called
// by all `kThreads` threads after a barrier that makes the staged tiles visible.
template <int kThreads>
__device__ __forceinline__ void widen_kv_tiles(const uint8_t* sk8, const uint8_t* sv8, uint8_t* sk, uint8_t* sv,
                                               int tid) {
#pragma unroll
  for (int i = tid; i < kKeysPerTile * 8; i += kThreads) {
    const int r = i / 8, c = i % 8;  // bf16 chunk c of row r = e4m3 bytes [8c, 8c + 8)
    const uint2 k = *reinterpret_cast<const uint2*>(sk8 + r * kHead + c * 8);
    const uint2 v = *reinterpret_cast<const uint2*>(sv8 + r * kHead + c * 8);
    *reinterpret_cast<uint4*>(sk + swz(r, c)) = e4m3x8_to_bf16x8(k);
    *reinterpret_cast<uint4*>(sv + swz(r, c)) = e4m3x8_to_bf16x8(v);
  }
}

// The dequantization scales of KV head h (1 without scales or without kv_fp8).
__device__ __forceinline__ float kv_k_scale(const AttentionParams& p, int h) {
  return p.kv_fp8 && p.k_scale ? p.k_scale[h] : 1.f;
}
__device__ __forceinline__ float kv_v_scale(const AttentionParams& p, int h) {
  return p.kv_fp8 && p.v_scale ? p.v_scale[h] : 1.f;
}

// Per-warp online-softmax state for 16 query rows (this thread: rows lane/4 and lane/4 + 8).
struct RowState {
  float m[2];     // running max, log2 domain
  float l[2];     // this thread's partial row sum (quad-reduced at the end)
  float o[8][4];  // 16 × 64 output accumulator fragment
};

// Processes `kNumKeys` keys (a slice of a 64-key tile starting at key_off) for one warp:
// S = Q Kᵀ, mask, online softmax, O += P V. q_frag: the warp's Q A-fragments (4 k-steps over dims).
// row_pos[h]: position of this thread's row h (−1: padding row); key positions are kv0 + key index.
template <int kNumKeys, bool kMask>
__device__ __forceinline__ void attend_tile(RowState& st, const uint32_t (&q_frag)[4][4], const uint8_t* sk,
                                            const uint8_t* sv, int key_off, int kv0, const int (&row_pos)[2],
                                            int window, float scale_log2) {
  constexpr int kNT = kNumKeys / 8;  // n-tiles of S
  const int lane = threadIdx.x % 32;
  float s[kNT][4];
#pragma unroll
  for (int n = 0; n < kNT; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
    // ---- S = Q Kᵀ ----
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
    for (int n = 0; n < kNT; n += 2) {
      const int i = lane / 8;
      const int key = key_off + (n + i / 2) * 8 + lane % 8;
      uint32_t b[4];
      ldmatrix_x4(b, sk + swz(key, 2 * kk + (i % 2)));
      mma_bf16(s[n], q_frag[kk], b[0], b[1]);
      mma_bf16(s[n + 1], q_frag[kk], b[2], b[3]);
    }
  }
  // ---- mask and online softmax ----
  float row_max[2] = {st.m[0], st.m[1]};
#pragma unroll
  for (int n = 0; n < kNT; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      float v = s[n][e] * scale_log2;
      if constexpr (kMask) {
        const int h = e / 2;
        const int kpos = kv0 + key_off + n * 8 + 2 * (lane % 4) + (e % 2);
        const int qpos = row_pos[h];
        if (kpos > qpos || (window > 0 && qpos - kpos >= window)) v = -INFINITY;
      }
      s[n][e] = v;
      row_max[e / 2] = fmaxf(row_max[e / 2], v);
    }
  }
  float alpha[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    row_max[h] = fmaxf(row_max[h], __shfl_xor_sync(0xffffffffu, row_max[h], 1));
    row_max[h] = fmaxf(row_max[h], __shfl_xor_sync(0xffffffffu, row_max[h], 2));
    const float m_safe = row_max[h] == -INFINITY ? 0.f : row_max[h];
    alpha[h] = ex2(st.m[h] - m_safe);
    st.m[h] = row_max[h];
    st.l[h] *= alpha[h];
#pragma unroll
    for (int n = 0; n < kNT; ++n) {
      s[n][2 * h] = ex2(s[n][2 * h] - m_safe);
      s[n][2 * h + 1] = ex2(s[n][2 * h + 1] - m_safe);
      st.l[h] += s[n][2 * h] + s[n][2 * h + 1];
    }
  }
#pragma unroll
  for (int d = 0; d < 8; ++d) {
    st.o[d][0] *= alpha[0];
    st.o[d][1] *= alpha[0];
    st.o[d][2] *= alpha[1];
    st.o[d][3] *= alpha[1];
  }
  // ---- O += P V ----
#pragma unroll
  for (int kk = 0; kk < kNumKeys / 16; ++kk) {
    uint32_t a[4];
    a[0] = pack_bf16(s[2 * kk][0], s[2 * kk][1]);
    a[1] = pack_bf16(s[2 * kk][2], s[2 * kk][3]);
    a[2] = pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]);
    a[3] = pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
    for (int d = 0; d < 8; d += 2) {
      const int i = lane / 8;
      const int key = key_off + kk * 16 + (i % 2) * 8 + lane % 8;
      uint32_t b[4];
      ldmatrix_x4_trans(b, sv + swz(key, d + i / 2));
      mma_bf16(st.o[d], a, b[0], b[1]);
      mma_bf16(st.o[d + 1], a, b[2], b[3]);
    }
  }
}

// Issues the cp.async copies of a 64-query Q tile (queries q_lo … q_lo + 63 of the sequence starting at token
// q_begin, head `head`) into swizzled shared memory; queries ≥ q_len are zero-filled. Called by all kThreads threads.
template <int kThreads>
__device__ __forceinline__ void load_q_tile(uint8_t* sq, const AttentionParams& p, int q_begin, int q_lo, int q_len,
                                            int head, int tid) {
  for (int i = tid; i < 64 * 8; i += kThreads) {
    const int r = i / 8, c = i % 8;
    const bool ok = q_lo + r < q_len;
    const uint16_t* src =
        ok ? p.q + (static_cast<int64_t>(q_begin + q_lo + r) * p.num_q_heads + head) * kHead + c * 8 : p.q;
    cp_async_16(sq + swz(r, c), src, ok);
  }
}

// The warp's rows before their first key tile: row_pos[h] the cache position of row h (query q_lo + 16·warp +
// lane / 4 + 8h; −1 past q_len), the running max at the sink logit (log2 domain; −∞ without sinks), l counting the
// sink's own exp2(sink − m) = 1 once per row (lane t = 0), O zero.
__device__ __forceinline__ void start_rows(RowState& st, int (&row_pos)[2], const AttentionParams& p, int q_lo,
                                           int q_len, int first_pos, float sink) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int qi = q_lo + warp * 16 + lane / 4 + 8 * h;
    row_pos[h] = qi < q_len ? first_pos + qi : -1;
    st.m[h] = sink;
    st.l[h] = (p.sinks && lane % 4 == 0) ? 1.f : 0.f;
  }
#pragma unroll
  for (int d = 0; d < 8; ++d) st.o[d][0] = st.o[d][1] = st.o[d][2] = st.o[d][3] = 0.f;
}

// The warp's finished rows: O / l (l quad-reduced, times out_scale: the FP8 cache's v_scale, else 1) as bf16 into
// out[q_begin + query index][head][64] for query indices q_lo + 16·warp + lane / 4 (+ 8); padding rows
// (row_pos −1) skipped.
__device__ __forceinline__ void store_rows(const AttentionParams& p, const RowState& st, const int (&row_pos)[2],
                                           int q_begin, int q_lo, int head, float out_scale) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float l = st.l[h];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    if (row_pos[h] < 0) continue;
    const float inv = l > 0.f ? out_scale / l : 0.f;
    const int qi = q_lo + warp * 16 + lane / 4 + 8 * h;
    uint16_t* dst = p.out + (static_cast<int64_t>(q_begin + qi) * p.num_q_heads + head) * kHead;
#pragma unroll
    for (int d = 0; d < 8; ++d) {
      *reinterpret_cast<uint32_t*>(dst + 8 * d + 2 * (lane % 4)) =
          pack_bf16(st.o[d][2 * h] * inv, st.o[d][2 * h + 1] * inv);
    }
  }
}

// Loads the warp's 16×64 Q A-fragments from a swizzled smem tile (rows row0…row0+15).
__device__ __forceinline__ void load_q_frag(uint32_t (&q)[4][4], const uint8_t* sq, int row0) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    const int row = row0 + (lane % 8) + 8 * ((lane / 8) % 2);
    ldmatrix_x4(q[kk], sq + swz(row, 2 * kk + lane / 16));
  }
}

// The FA3-design prefill kernel (attention_prefill_bf16_wgmma_sm90.cu), behind launch_attention_prefill.
void launch_prefill_wgmma(const AttentionParams& p, cudaStream_t stream);

// The sliding-window prefill kernel with a K/V ring (attention_prefill_sliding_sm90.cu), behind
// launch_attention_prefill for the launches it applies to: window ≤ 128, bf16 cache.
bool prefill_sliding_ring_applies(const AttentionParams& p);
void launch_prefill_sliding_ring(const AttentionParams& p, cudaStream_t stream);

}  // namespace gossamer::kernels::attn
