// Prefill attention with sinks, the mma.sync kernel: one CTA per (64-query tile of one sequence, query
// head), 4 warps of 16 query rows, 64-key K/V tiles double-buffered with cp.async from the paged cache.
// Sliding layers visit only the key tiles that intersect some query's window. The launcher runs the mma.sync
// kernels for sliding-window layers (PrefillKernel::kAuto; they beat the wgmma kernel there, docs/PERF.md
// 2026-12-01) or when asked (kMmaSync): windows ≤ 128 on a bf16 cache go to the K/V-ring variant
// (attention_prefill_sliding_sm90.cu), the rest (wider windows, FP8 cache, full causal) to this kernel;
// full-causal layers under kAuto go to attention_prefill_bf16_wgmma_sm90.cu. (A 128-query, 8-warp variant was
// slower on every bench shape and was removed.)
// FP8 KV cache (kKvFp8): the e4m3 tiles are double-buffered with cp.async in the second K and V stage's
// shared memory and widened to bf16 into the first (a single bf16 stage), one tile at a time; k_scale
// enters the logit scale and v_scale the output.
#include "kernels/attention_common_sm90.cuh"

namespace gossamer::kernels {
namespace {

using namespace attn;
constexpr int kTileBytes = kKeysPerTile * 128;

constexpr int kWarps = 4;  // 64 query rows per CTA
template <bool kKvFp8>
__global__ void __launch_bounds__(32 * kWarps) attention_prefill_kernel(const AttentionParams p) {
  constexpr int kBM = 16 * kWarps;
  constexpr int kThreads = 32 * kWarps;
  __shared__ __align__(128) uint8_t sq[kBM * 128];
  // bf16: two stages. kKvFp8: stage 0 is the bf16 tile, stage 1 the two e4m3 staging tiles.
  __shared__ __align__(128) uint8_t sk[2][kTileBytes];
  __shared__ __align__(128) uint8_t sv[2][kTileBytes];
  // ---- which (sequence, query tile) ----
  static_assert(kBM == 64, "the tile list is of 64-query tiles");
  const int32_t entry = p.q_tiles_64[blockIdx.x];  // (sequence << 16) | tile
  const int b = entry >> 16, t = entry & 0xffff;
  const int head = blockIdx.y;
  const int kv_head = head / (p.num_q_heads / p.num_kv_heads);
  const int q_begin = p.cu_seqlens_q[b];
  const int q_len = p.cu_seqlens_q[b + 1] - q_begin;
  const int kv_len = p.kv_lens[b];
  const int first_pos = kv_len - q_len;
  const int q_lo = t * kBM, q_hi = min(q_len, q_lo + kBM);  // query indices of this tile
  const int q0pos = first_pos + q_lo, q1pos = first_pos + q_hi - 1;
  const int kv_start = p.window > 0 ? max(0, q0pos - p.window + 1) : 0;
  const int tile_begin = kv_start / kKeysPerTile;
  const int tile_end = ceil_div(q1pos + 1, kKeysPerTile);
  const int32_t* pages = p.page_indices + p.page_indptr[b];
  const int tid = threadIdx.x, warp = tid / 32;

  // ---- load Q tile and the first K/V tile ----
  load_q_tile<kThreads>(sq, p, q_begin, q_lo, q_len, head, tid);
  const int page_shift = __ffs(p.page_size) - 1;
  // Issues the copies of key tile j into stage `stage`.
  auto load_tile = [&](int j, int stage) {
    if constexpr (kKvFp8) {
      load_kv_tiles_fp8<kThreads>(sk[1] + stage * kFp8TileBytes, sv[1] + stage * kFp8TileBytes, p, pages, page_shift,
                                  kv_head, j * kKeysPerTile, kv_len, tid);
    } else {
      load_kv_tiles<kThreads>(sk[stage], sv[stage], p, pages, page_shift, kv_head, j * kKeysPerTile, kv_len, tid);
    }
  };
  load_tile(tile_begin, 0);
  cp_async_commit();

  RowState st;
  const float scale_log2 = p.scale * kv_k_scale(p, kv_head) * kLog2e;
  const float sink = p.sinks ? p.sinks[head] * kLog2e : -INFINITY;
  int row_pos[2];
  start_rows(st, row_pos, p, q_lo, q_len, first_pos, sink);
  uint32_t q_frag[4][4];

  // ---- main loop over key tiles ----
  for (int j = tile_begin; j < tile_end; ++j) {
    const int stage = (j - tile_begin) % 2;
    if (j + 1 < tile_end) {
      load_tile(j + 1, stage ^ 1);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    if (j == tile_begin) load_q_frag(q_frag, sq, warp * 16);
    const uint8_t* k_tile = sk[stage];
    const uint8_t* v_tile = sv[stage];
    if constexpr (kKvFp8) {
      // NOTE: the bf16 stage is free: every warp passed the barrier after the previous tile's attend.
      widen_kv_tiles<kThreads>(sk[1] + stage * kFp8TileBytes, sv[1] + stage * kFp8TileBytes, sk[0], sv[0], tid);
      __syncthreads();
      k_tile = sk[0];
      v_tile = sv[0];
    }
    const int kv0 = j * kKeysPerTile;
    const bool need_mask = kv0 + kKeysPerTile - 1 > q0pos || (p.window > 0 && kv0 <= q1pos - p.window);
    if (need_mask) {
      attend_tile<kKeysPerTile, true>(st, q_frag, k_tile, v_tile, 0, kv0, row_pos, p.window, scale_log2);
    } else {
      attend_tile<kKeysPerTile, false>(st, q_frag, k_tile, v_tile, 0, kv0, row_pos, p.window, scale_log2);
    }
    __syncthreads();  // NOTE: the next iteration refills the other stage only after everyone read it.
  }

  // ---- write O ----
  store_rows(p, st, row_pos, q_begin, q_lo, head, kv_v_scale(p, kv_head));
}

}  // namespace

void launch_attention_prefill(const AttentionParams& p, cudaStream_t stream) {
  GOSSAMER_CHECK(p.num_kv_heads > 0 && p.num_q_heads % p.num_kv_heads == 0, "attention: bad head counts");
  GOSSAMER_CHECK(p.page_size > 0 && (p.page_size & (p.page_size - 1)) == 0, "attention: page_size ", p.page_size,
                 " must be a power of two");
  if (p.num_tokens == 0) return;
  const bool wgmma =
      p.prefill_kernel == PrefillKernel::kWgmma || (p.prefill_kernel == PrefillKernel::kAuto && p.window == 0);
  if (wgmma) return attn::launch_prefill_wgmma(p, stream);
  GOSSAMER_CHECK(p.q_tiles_64 != nullptr || p.num_q_tiles_64 == 0, "attention prefill: q_tiles_64 missing");
  if (p.num_q_tiles_64 == 0) return;
  if (attn::prefill_sliding_ring_applies(p)) return attn::launch_prefill_sliding_ring(p, stream);
  const dim3 grid(p.num_q_tiles_64, p.num_q_heads);
  if (p.kv_fp8) {
    attention_prefill_kernel<true><<<grid, 128, 0, stream>>>(p);
  } else {
    attention_prefill_kernel<false><<<grid, 128, 0, stream>>>(p);
  }
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

}  // namespace gossamer::kernels
