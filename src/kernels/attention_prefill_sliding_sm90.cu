// Prefill attention with sinks on sliding-window layers (window ≤ 128, bf16 cache), the mma.sync kernel with a
// K/V ring: one CTA per (kEntries consecutive entries of the 64-query tile list, query head), 4 warps of 16 query
// rows. attention_prefill_bf16_sm90.cu's CTA loads every key tile its 64 queries' windows touch (three of 64 keys
// for window 128), so neighbouring query tiles of a sequence load each key tile three times. Here a CTA walks its
// entries' query tiles forward through a sequence and keeps the last kRing key tiles in a ring keyed by tile index
// (tile j in slot j % kRing): the next 64 queries load only the key tile they add, and it is prefetched, with their
// Q, while the current entry's queries attend. Same per-tile math as that kernel (attend_tile), so bit-identical to
// it. Measured (H100, 1 × 32,768 tokens, window 128): 697 → 584 µs; 4 entries per CTA beat 8 at short sequences
// (docs/PERF.md, 2026-12-06).
#include "kernels/attention_common_sm90.cuh"

namespace gossamer::kernels::attn {
namespace {

constexpr int kBM = 64;        // query rows per entry (the list's 64-query tiles)
constexpr int kThreads = 128;  // 4 warps × 16 query rows
constexpr int kRing = 4;       // key tiles held: an entry needs ≤ 4 (3 where its first query is tile-aligned)
constexpr int kEntries = 4;    // query tiles per CTA
constexpr int kTileBytes = kKeysPerTile * 128;
constexpr int kSmemBytes = kBM * 128 + 2 * kRing * kTileBytes;  // Q, then K [kRing] and V [kRing] (swizzled)
static_assert(kRing * kKeysPerTile >= (kBM + 128 - 1) + (kKeysPerTile - 1),
              "an entry's keys (≤ 64 + 127 positions) fit the ring however they straddle key tiles");

// One entry of the 64-query tile list: its sequence, query rows and the key tiles its windows touch.
struct Entry {
  int b, q_begin, q_len, first_pos, q_lo, q0pos, q1pos, tile_begin, tile_end, kv_len;
  const int32_t* pages;
};
__device__ __forceinline__ Entry entry_of(const AttentionParams& p, int e) {
  Entry g;
  const int32_t packed = p.q_tiles_64[e];  // (sequence << 16) | tile
  g.b = packed >> 16;
  g.q_begin = p.cu_seqlens_q[g.b];
  g.q_len = p.cu_seqlens_q[g.b + 1] - g.q_begin;
  g.kv_len = p.kv_lens[g.b];
  g.first_pos = g.kv_len - g.q_len;
  g.q_lo = (packed & 0xffff) * kBM;
  g.q0pos = g.first_pos + g.q_lo;
  g.q1pos = g.first_pos + min(g.q_len, g.q_lo + kBM) - 1;
  g.tile_begin = max(0, g.q0pos - p.window + 1) / kKeysPerTile;
  g.tile_end = ceil_div(g.q1pos + 1, kKeysPerTile);
  g.pages = p.page_indices + p.page_indptr[g.b];
  return g;
}

__global__ void __launch_bounds__(kThreads) attention_prefill_sliding_kernel(const AttentionParams p) {
  extern __shared__ __align__(128) uint8_t smem_dyn[];
  uint8_t* sq = smem_dyn;                 // [64 queries][128 B]
  uint8_t* sk = smem_dyn + kBM * 128;     // [kRing][kTileBytes]
  uint8_t* sv = sk + kRing * kTileBytes;  // [kRing][kTileBytes]
  const int head = blockIdx.y;
  const int kv_head = head / (p.num_q_heads / p.num_kv_heads);
  const int page_shift = __ffs(p.page_size) - 1;
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32;
  const float scale_log2 = p.scale * kLog2e;
  const float sink = p.sinks ? p.sinks[head] * kLog2e : -INFINITY;
  auto load_q = [&](const Entry& g) { load_q_tile<kThreads>(sq, p, g.q_begin, g.q_lo, g.q_len, head, tid); };
  auto load_tile = [&](const Entry& g, int j) {
    load_kv_tiles<kThreads>(sk + (j % kRing) * kTileBytes, sv + (j % kRing) * kTileBytes, p, g.pages, page_shift,
                            kv_head, j * kKeysPerTile, g.kv_len, tid);
  };
  int ring_b = -1, ring_hi = 0;  // key tiles [ring_hi − kRing, ring_hi) of sequence ring_b are in the ring
  bool q_ready = false;          // sq holds this entry's Q (prefetched under the previous entry)
  // The list gives a sequence's query tiles last first (attention_prefill_tiles): walk the chunk backwards, so that
  // the queries move forward and the window's key tiles slide along the ring.
  for (int k = kEntries - 1; k >= 0; --k) {
    const int e = static_cast<int>(blockIdx.x) * kEntries + k;
    if (e >= p.num_q_tiles_64) continue;
    const Entry g = entry_of(p, e);
    // Reusable: the same sequence, and the ring still holds tile_begin … ring_hi − 1.
    const bool reuse = g.b == ring_b && g.tile_begin <= ring_hi && ring_hi - kRing < g.tile_begin;
    __syncthreads();  // every warp is done with the previous entry's ring slots and Q fragments
    if (!q_ready) load_q(g);
    for (int j = reuse ? ring_hi : g.tile_begin; j < g.tile_end; ++j) load_tile(g, j);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    ring_b = g.b;
    ring_hi = reuse ? max(ring_hi, g.tile_end) : g.tile_end;
    uint32_t q_frag[4][4];
    load_q_frag(q_frag, sq, warp * 16);
    q_ready = false;
    // The next entry's Q and the key tiles it adds, into slots this entry does not read, under this entry's math.
    if (k > 0 && e - 1 < p.num_q_tiles_64) {
      __syncthreads();  // every warp holds its Q fragments: sq is free
      const Entry n = entry_of(p, e - 1);
      load_q(n);
      q_ready = true;
      if (n.b == g.b) {
        for (int j = ring_hi; j < n.tile_end && j - kRing < g.tile_begin; ++j) {
          load_tile(n, j);
          ring_hi = j + 1;
        }
      }
      cp_async_commit();
    }
    RowState st;
    int row_pos[2];
    start_rows(st, row_pos, p, g.q_lo, g.q_len, g.first_pos, sink);
    for (int j = g.tile_begin; j < g.tile_end; ++j) {
      const int kv0 = j * kKeysPerTile;
      const uint8_t* k_tile = sk + (j % kRing) * kTileBytes;
      const uint8_t* v_tile = sv + (j % kRing) * kTileBytes;
      const bool need_mask = kv0 + kKeysPerTile - 1 > g.q0pos || kv0 <= g.q1pos - p.window;
      if (need_mask) {
        attend_tile<kKeysPerTile, true>(st, q_frag, k_tile, v_tile, 0, kv0, row_pos, p.window, scale_log2);
      } else {
        attend_tile<kKeysPerTile, false>(st, q_frag, k_tile, v_tile, 0, kv0, row_pos, p.window, scale_log2);
      }
    }
    store_rows(p, st, row_pos, g.q_begin, g.q_lo, head, 1.f);
  }
}

}  // namespace

bool prefill_sliding_ring_applies(const AttentionParams& p) {
  return p.window > 0 && p.window <= 128 && !p.kv_fp8;
}

void launch_prefill_sliding_ring(const AttentionParams& p, cudaStream_t stream) {
  GOSSAMER_CHECK(prefill_sliding_ring_applies(p),
                 "attention prefill: the sliding ring takes windows ≤ 128, bf16 cache");
  if (p.num_q_tiles_64 == 0) return;
  static const bool configured = [] {
    GOSSAMER_CUDA_CHECK(cudaFuncSetAttribute(attention_prefill_sliding_kernel,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
    return true;
  }();
  (void)configured;
  const dim3 grid(ceil_div(p.num_q_tiles_64, kEntries), p.num_q_heads);
  attention_prefill_sliding_kernel<<<grid, kThreads, kSmemBytes, stream>>>(p);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

}  // namespace gossamer::kernels::attn
