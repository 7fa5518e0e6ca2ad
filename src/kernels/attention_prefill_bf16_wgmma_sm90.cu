// Prefill attention with sinks on Hopper's own machinery (issue #13 §3, the FlashAttention-3 design):
// one CTA per (query tile of one sequence, query head): 128 queries and 384 threads with two consumer
// warpgroups, or 192 queries and 512 threads with three (AttentionParams::prefill_consumer_warpgroups).
//   warpgroup 0  producer: its 128 threads gather 128-key K and V tiles from the paged cache (any
//                power-of-two page size; each 128-byte cache row is one kv head's 64 dims, so rows are
//                gathered one by one) with cp.async into a ring of kStages stages, 128B-swizzled; rows
//                past kv_len are zero-filled. Each thread's copies arrive on the stage's full barrier
//                (cp.async.mbarrier.arrive.noinc, 128 arrivals); consumer warps release a stage through
//                its empty barrier (one arrival per warp). It hands its registers to the consumers.
//   warpgroups 1 … consumers: query rows 64·(w − 1) … 64·w − 1 of the tile. Per key tile t:
//                S = Q·Kᵀ (wgmma m64n128k16, Q and K from shared memory), mask (diagonal and window-edge
//                tiles only), online softmax in fp32 (running max initialised to the sink logit), then
//                O += P·V (wgmma m64n64k16, P from registers, V from shared memory as an N-major B operand).
//                Within a warpgroup, S of tile t is computed while the PV of tile t − 1 runs, and the
//                softmax of tile t overlaps that PV; between the warpgroups, named barriers hand the issue
//                of their wgmma round (ping-pong), so one's softmax overlaps the others' MMAs.
// FP8 KV cache (kKvFp8): the producer stages each tile's e4m3 rows with cp.async (one tile ahead, two
//                staging buffers), then widens the chunks it copied itself to bf16 into the swizzled stage
//                (st.shared, a proxy fence) and arrives on the full barrier with a plain arrive (128
//                arrivals, as before); k_scale enters the logit scale and v_scale the output.
// kFixedMax (AttentionParams::prefill_fixed_max, the model's choice; three consumer warpgroups): a key tile that needs
// no mask and is not the first keeps the running max m as it is (alpha 1): no row max, no shuffles, just p =
// exp2(s·scale − m). m was set by the first tile (or the sink) and moves on masked tiles, and probabilities are only
// relative to it, so the bf16 P and the fp32 sums keep their precision; only a row whose later logits pass m by more
// than ~2^7 can overflow, which turns its sum or O non-finite. The CTA then runs its tiles once more with the row max
// on every tile (producer included: a barrier after the first pass ORs the consumers' verdicts). Sliding layers visit
// only the key tiles that intersect some query's window. Consumer warpgroups with no query row (a sequence's last tile)
// leave at once and the others run alone. Row sums on the tensor core and K/V tiles by TMA were measured slower
// (docs/PERF.md, 2026-12-05 seventeenth session) and retired.
#include <cfloat>
#include <cstdint>
#include <type_traits>

#include "kernels/attention_common_sm90.cuh"
#include "kernels/mbarrier_sm90.cuh"
#include "kernels/tma_sm90.cuh"
#include "kernels/wgmma_bf16_sm90.cuh"

namespace gossamer::kernels::attn {
namespace {

constexpr int kBN = 128;  // keys per K/V tile
constexpr int kStages = 4;
// The CTA's shape for kConsumers consumer warpgroups (AttentionParams::prefill_consumer_warpgroups; 2: 128-query
// tiles, 3: 192-query tiles): 64 query rows per consumer warpgroup, and the registers the producer hands them
// (128·producer + 128·kConsumers·consumer ≤ 65,536).
template <int kConsumers>
struct CtaShape {
  static constexpr int kBM = 64 * kConsumers;  // query rows per CTA
  static constexpr int kThreads = 128 * (kConsumers + 1);
  static constexpr int kProducerRegs = kConsumers == 2 ? 40 : 32;
  static constexpr int kConsumerRegs = kConsumers == 2 ? 232 : 160;
  static constexpr int kQBytes = kBM * 128;  // [kBM rows][64] bf16, swizzled
  static_assert(128 * kProducerRegs + 128 * kConsumers * kConsumerRegs <= 65536, "the register file");
};
constexpr int kKvBytes = kBN * 128;  // one K or V tile: [128 keys][64] bf16, swizzled
constexpr int kStageBytes = 2 * kKvBytes;
constexpr int kFp8RowsBytes = kBN * kHead;           // one e4m3 K or V tile: [128 keys][64] bytes, unswizzled
constexpr int kFp8StagingBytes = 2 * kFp8RowsBytes;  // K then V of one tile
template <bool kKvFp8, int kConsumers>
constexpr int kSmemBytes = 1024 + CtaShape<kConsumers>::kQBytes + kStages* kStageBytes +
                           (kKvFp8 ? 2 * kFp8StagingBytes : 0) + 2 * kStages * 8;
static_assert(kSmemBytes<true, 3> <= 227 * 1024, "the FP8-KV wgmma prefill exceeds shared memory");
// Named barriers (0 is __syncthreads): Q of consumer warpgroup w ready (kBarQ + w, 128 threads), and
// the issue turn of warpgroup w (kBarTurn + w, 256 threads: it and the warpgroup handing over).
constexpr int kBarQ = 1;
constexpr int kBarTurn = 4;
constexpr int kBarRedo = 8;  // kFixedMax: producer and active consumers, whether a second pass is needed
using mbar::named_arrive;
using mbar::named_sync;
using mbar::named_sync_or;

// How far (log2 units) a tile's row max may pass the running max m before the lazy softmax moves m (three
// consumer warpgroups; measured 1.03× at 1×8,192 and 1.05× at 1×32,768 causal on an H100, docs/PERF.md
// 2026-12-05): the probabilities exp2(s·scale_log2 − m) stay ≤ 2^8, far inside
// fp32 and bf16 (FlashAttention-4's rescale threshold).
constexpr float kLazyRescaleLog2 = 8.f;

// Online-softmax step on one warpgroup's S tile (64 rows × 128 keys in the wgmma D fragment: s[4j + e]
// is row g + 8·(e / 2), key 8j + 2t + e % 2, g = 16·warp + lane / 4, t = lane % 4). Leaves the
// probabilities exp2(s·scale_log2 − m) in s, updates m (log2 domain) and this thread's partial row sums l,
// and sets alpha, the factor by which O must be rescaled. kLazy: m moves only when the tile's row max passes it by more
// than kLazyRescaleLog2 (then to that max), so alpha is exactly 1 on most tiles; m is then an upper bound of the row's
// max minus at most 8, not the max, and O / l is unchanged up to rounding (numerator and denominator carry the same
// factor).
template <bool kMask, bool kLazy>
__device__ __forceinline__ void softmax_tile(float (&s)[64], float (&m)[2], float (&l)[2], float (&alpha)[2], int kv0,
                                             const int (&row_pos)[2], int window, float scale_log2) {
  const int lane = threadIdx.x % 32;
  float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int j = 0; j < kBN / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if constexpr (kMask) {
        const int kpos = kv0 + 8 * j + 2 * (lane % 4) + (e % 2);
        const int qpos = row_pos[e / 2];
        if (kpos > qpos || (window > 0 && qpos - kpos >= window)) s[4 * j + e] = -INFINITY;
      }
      mx[e / 2] = fmaxf(mx[e / 2], s[4 * j + e]);
    }
  }
  float m_safe[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
    mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
    const float m_tile = mx[h] * scale_log2;  // scale > 0: max commutes with the scaling
    // Lazy: m = −∞ (no sink, nothing seen) moves to any finite m_tile; a −∞ m_tile (all masked) never moves m.
    const float m_new = kLazy ? (m_tile > m[h] + kLazyRescaleLog2 ? m_tile : m[h]) : fmaxf(m[h], m_tile);
    m_safe[h] = m_new == -INFINITY ? 0.f : m_new;
    // Lazy: exactly 1 where m stays (the caller's skip tests alpha against 1, whatever ex2.approx gives for 0).
    alpha[h] = kLazy && m_new == m[h] ? 1.f : ex2(m[h] - m_safe[h]);
    m[h] = m_new;
    l[h] *= alpha[h];
  }
#pragma unroll
  for (int j = 0; j < kBN / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float arg = fmaf(s[4 * j + e], scale_log2, -m_safe[e / 2]);
      const float pr = ex2(arg);
      s[4 * j + e] = pr;
      l[e / 2] += pr;
    }
  }
}

// kFixedMax's step on an unmasked key tile after the first: p = exp2(s·scale_log2 − m) with m as it is (the caller
// sets alpha to 1), this thread's partial row sums l updated.
__device__ __forceinline__ void softmax_tile_fixed_max(float (&s)[64], const float (&m)[2], float (&l)[2],
                                                       float scale_log2) {
  const float m_safe[2] = {m[0] == -INFINITY ? 0.f : m[0], m[1] == -INFINITY ? 0.f : m[1]};
#pragma unroll
  for (int j = 0; j < kBN / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float pr = ex2(fmaf(s[4 * j + e], scale_log2, -m_safe[e / 2]));
      s[4 * j + e] = pr;
      l[e / 2] += pr;
    }
  }
}

template <bool kKvFp8, int kConsumers, bool kFixedMax>
__global__ void __launch_bounds__(CtaShape<kConsumers>::kThreads, 1)
    attention_prefill_wgmma_kernel(const AttentionParams p) {
  static_assert(!kFixedMax || kConsumers == 3, "the fixed max builds on the three warpgroups' lazy softmax");
  using Shape = CtaShape<kConsumers>;
  constexpr int kBM = Shape::kBM;
  // Three warpgroups run the lazy online softmax (kLazyRescaleLog2); two, which run only where the grid is
  // small, keep the eager one (the lazy form was not measured there).
  constexpr bool kLazy = kConsumers == 3;
  // ---- which (sequence, query tile, head): heads fastest, so the CTAs of one query tile (and the 8
  // query heads of each KV head) run together and share K/V through L2; within a sequence the last
  // (longest) query tiles come first ----
  const int head = blockIdx.x % p.num_q_heads;
  const int32_t* q_tiles = kConsumers == 2 ? p.q_tiles_128 : p.q_tiles_192;
  const int32_t entry = q_tiles[blockIdx.x / p.num_q_heads];  // (sequence << 16) | tile
  const int b = entry >> 16, q_tile = entry & 0xffff;
  const int kv_head = head / (p.num_q_heads / p.num_kv_heads);
  const int q_begin = p.cu_seqlens_q[b];
  const int q_len = p.cu_seqlens_q[b + 1] - q_begin;
  const int kv_len = p.kv_lens[b];
  const int first_pos = kv_len - q_len;  // position of query 0 (chunked prefill: the cached prefix before it)
  const int q_lo = q_tile * kBM;
  const int q0pos = first_pos + q_lo, q1pos = first_pos + min(q_len, q_lo + kBM) - 1;
  const int kv_start = p.window > 0 ? max(0, q0pos - p.window + 1) : 0;
  const int tile_begin = kv_start / kBN;
  const int num_kv_tiles = ceil_div(q1pos + 1, kBN) - tile_begin;  // ≥ 1
  // Consumer warpgroups with at least one query row (the others leave at once).
  const int active_wgs = min(kConsumers, ceil_div(q_len - q_lo, 64));

  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint8_t* smem_q = smem;                               // [kBM rows][128 B]
  uint8_t* smem_kv = smem + Shape::kQBytes;             // [kStages][K tile, V tile]
  uint8_t* smem_fp8 = smem_kv + kStages * kStageBytes;  // kKvFp8: [2][K rows, V rows] e4m3 staging
  uint64_t* full = reinterpret_cast<uint64_t*>(smem_fp8 + (kKvFp8 ? 2 * kFp8StagingBytes : 0));
  uint64_t* empty = full + kStages;
  const int tid = threadIdx.x;
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar::init(&full[s], 128);              // every producer thread's cp.async arrival
      mbar::init(&empty[s], 4 * active_wgs);  // one arrival per active consumer warp
    }
    tma::fence_barrier_init();
  }
  __syncthreads();

  if (tid < 128) {
    // ================= producer: the K/V tiles of a pass into the ring, iterations ring0 … =================
    tma::regs_release<Shape::kProducerRegs>();
    const int page_shift = __ffs(p.page_size) - 1;
    const int32_t* pages = p.page_indices + p.page_indptr[b];
    auto produce = [&](int ring0) {
      if constexpr (kKvFp8) {
        // FP8: thread = (rows r0 + 32·i, e4m3 bytes [16·c, 16·c + 16) of each)
        const int c = tid % 4, r0 = tid / 4;
        const int64_t head_off = static_cast<int64_t>(kv_head) * kHead + c * 16;
        const uint8_t* k_bytes = static_cast<const uint8_t*>(p.k_cache);
        const uint8_t* v_bytes = static_cast<const uint8_t*>(p.v_cache);
        auto stage_tile = [&](int it) {  // cp.async of tile `it`'s rows into staging buffer it % 2
          const int kv0 = (tile_begin + it) * kBN;
          uint8_t* k8 = smem_fp8 + (it % 2) * kFp8StagingBytes;
#pragma unroll
          for (int i = 0; i < kBN / 32; ++i) {
            const int r = r0 + 32 * i, pos = kv0 + r;
            const bool ok = pos < kv_len;
            const int slot =
                ok ? (__ldg(pages + (pos >> page_shift)) << page_shift) | (pos & ((1 << page_shift) - 1)) : 0;
            const int64_t off = static_cast<int64_t>(slot) * p.num_kv_heads * kHead + head_off;
            cp_async_16(k8 + r * kHead + c * 16, k_bytes + off, ok);
            cp_async_16(k8 + kFp8RowsBytes + r * kHead + c * 16, v_bytes + off, ok);
          }
          cp_async_commit();
        };
        stage_tile(0);
        for (int it = 0; it < num_kv_tiles; ++it) {
          if (it + 1 < num_kv_tiles) {
            // NOTE: buffer (it + 1) % 2 was last read by this same thread (its own chunks) in iteration it − 1.
            stage_tile(it + 1);
            cp_async_wait<1>();
          } else {
            cp_async_wait<0>();
          }
          const int s = (ring0 + it) % kStages;
          mbar::wait(&empty[s], (((ring0 + it) / kStages) & 1) ^ 1);
          const uint8_t* k8 = smem_fp8 + (it % 2) * kFp8StagingBytes;
          uint8_t* sk = smem_kv + s * kStageBytes;
          uint8_t* sv = sk + kKvBytes;
#pragma unroll
          for (int i = 0; i < kBN / 32; ++i) {
            const int r = r0 + 32 * i;
            const uint4 k = *reinterpret_cast<const uint4*>(k8 + r * kHead + c * 16);
            const uint4 v = *reinterpret_cast<const uint4*>(k8 + kFp8RowsBytes + r * kHead + c * 16);
            *reinterpret_cast<uint4*>(sk + swz(r, 2 * c)) = e4m3x8_to_bf16x8(make_uint2(k.x, k.y));
            *reinterpret_cast<uint4*>(sk + swz(r, 2 * c + 1)) = e4m3x8_to_bf16x8(make_uint2(k.z, k.w));
            *reinterpret_cast<uint4*>(sv + swz(r, 2 * c)) = e4m3x8_to_bf16x8(make_uint2(v.x, v.y));
            *reinterpret_cast<uint4*>(sv + swz(r, 2 * c + 1)) = e4m3x8_to_bf16x8(make_uint2(v.z, v.w));
          }
          fence_proxy_async();  // these generic-proxy writes → the consumers' wgmma reads (async proxy)
          mbar::arrive(&full[s]);
        }
      } else {
        // Tile `it` into its stage by the warpgroup's cp.async, thread = (row r0 + 16·i, 16-byte chunk c), rows past
        // kv_len zero-filled; the slots are looked up before the stage's empty wait.
        auto gather_tile = [&](int it) {
          const int c = tid % 8, r0 = tid / 8;
          const int64_t head_off = static_cast<int64_t>(kv_head) * kHead + c * 8;
          const int kv0 = (tile_begin + it) * kBN;
          int slot[kBN / 16];  // cache rows (page · page_size + offset)
#pragma unroll
          for (int i = 0; i < kBN / 16; ++i) {
            const int pos = kv0 + r0 + 16 * i;
            slot[i] =
                pos < kv_len ? (__ldg(pages + (pos >> page_shift)) << page_shift) | (pos & ((1 << page_shift) - 1)) : 0;
          }
          const int s = (ring0 + it) % kStages;
          mbar::wait(&empty[s], (((ring0 + it) / kStages) & 1) ^ 1);
          uint8_t* sk = smem_kv + s * kStageBytes;
          uint8_t* sv = sk + kKvBytes;
#pragma unroll
          for (int i = 0; i < kBN / 16; ++i) {
            const int r = r0 + 16 * i;
            const bool ok = kv0 + r < kv_len;
            const int64_t off = static_cast<int64_t>(slot[i]) * p.num_kv_heads * kHead + head_off;
            cp_async_16(sk + swz(r, c), static_cast<const uint16_t*>(p.k_cache) + off, ok);
            cp_async_16(sv + swz(r, c), static_cast<const uint16_t*>(p.v_cache) + off, ok);
          }
        };
        for (int it = 0; it < num_kv_tiles; ++it) {
          gather_tile(it);
          mbar::cp_async_arrive(&full[(ring0 + it) % kStages]);
        }
        cp_async_commit();  // leave with no copy in flight
        cp_async_wait<0>();
      }
    };
    produce(0);
    // kFixedMax: the tiles once more where some consumer row overflowed (the ring's iterations go on).
    if (kFixedMax && named_sync_or(kBarRedo, 128 * (active_wgs + 1), false)) produce(num_kv_tiles);
    return;
  }

  // ================= consumers =================
  tma::regs_claim<Shape::kConsumerRegs>();
  const int wg = tid / 128 - 1;  // rows 64·wg … of the tile
  if (wg >= active_wgs) return;
  const int wtid = tid % 128, warp = wtid / 32, lane = tid % 32;

  // ---- this warpgroup's 64 Q rows → shared memory (zero past q_len) ----
  uint8_t* sq = smem_q + wg * 64 * 128;
  for (int i = wtid; i < 64 * 8; i += 128) {
    const int r = i / 8, c = i % 8;
    const int qi = q_lo + 64 * wg + r;
    const bool ok = qi < q_len;
    const uint16_t* src = ok ? p.q + (static_cast<int64_t>(q_begin + qi) * p.num_q_heads + head) * kHead + c * 8 : p.q;
    cp_async_16(sq + swz(r, c), src, ok);
  }
  cp_async_commit();
  cp_async_wait<0>();
  fence_proxy_async();  // Q (generic-proxy writes) → wgmma operand reads (async proxy)
  named_sync(kBarQ + wg, 128);

  int row_pos[2];  // positions of this thread's rows g and g + 8 (−1: past q_len)
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int qi = q_lo + 64 * wg + 16 * warp + lane / 4 + 8 * h;
    row_pos[h] = qi < q_len ? first_pos + qi : -1;
  }
  const int wg_q0pos = first_pos + q_lo + 64 * wg;
  const int wg_q1pos = first_pos + min(q_len, q_lo + 64 * wg + 64) - 1;
  // Only tiles that reach past the warpgroup's first query (causal) or below its last query's window
  // need the per-element mask.
  auto need_mask = [&](int kv0) { return kv0 + kBN - 1 > wg_q0pos || (p.window > 0 && kv0 <= wg_q1pos - p.window); };

  const float scale_log2 = p.scale * kv_k_scale(p, kv_head) * kLog2e;
  const float sink = p.sinks ? p.sinks[head] * kLog2e : -INFINITY;
  float m[2], l[2];
  float o[32];
  float s[64];
  uint32_t pa[kBN / 16][4];
  float alpha[2] = {1.f, 1.f};
  // kFixedMax: whether this pass keeps m on unmasked tiles after the first (the first pass; a second, after an
  // overflow, moves it on every tile), and the ring iteration of the pass's first tile.
  bool fixed_max = kFixedMax;
  int ring0 = 0;

  // Descriptors of stage 0 (a stage advances them: wgmma::desc_plus).
  const uint64_t desc_q = wgmma::desc_k128_sw128(sq);
  const uint64_t desc_k0 = wgmma::desc_k128_sw128(smem_kv);
  const uint64_t desc_v0 = wgmma::desc_mn_sw128(smem_kv + kKvBytes, kKvBytes);
  auto issue_qk = [&](int it) {
    const uint64_t dk = wgmma::desc_plus(desc_k0, (ring0 + it) % kStages * kStageBytes);
#pragma unroll
    for (int kk = 0; kk < kHead / 16; ++kk) {  // 16 dims = 32 bytes per step, inside the 128-byte row
      wgmma::wgmma_m64n128k16_bf16_ss(s, wgmma::desc_plus(desc_q, 32 * kk), wgmma::desc_plus(dk, 32 * kk), kk > 0);
    }
  };
  auto issue_pv = [&](int it) {
    const uint64_t dv = wgmma::desc_plus(desc_v0, (ring0 + it) % kStages * kStageBytes);
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk) {  // 16 keys = 2048 bytes per step
      wgmma::wgmma_m64n64k16_bf16_rs_tb(o, pa[kk], wgmma::desc_plus(dv, kk * 2048), 1);
    }
  };
  auto softmax = [&](int it) {
    const int kv0 = (tile_begin + it) * kBN;
    if (need_mask(kv0)) {
      softmax_tile<true, kLazy>(s, m, l, alpha, kv0, row_pos, p.window, scale_log2);
    } else if (kFixedMax && fixed_max && it > 0) {
      softmax_tile_fixed_max(s, m, l, scale_log2);
      alpha[0] = alpha[1] = 1.f;
    } else {
      softmax_tile<false, kLazy>(s, m, l, alpha, kv0, row_pos, p.window, scale_log2);
    }
  };
  auto wait_full = [&](int it) {
    mbar::wait(&full[(ring0 + it) % kStages], ((ring0 + it) / kStages) & 1);
    fence_proxy_async();  // the producer's cp.async writes (generic proxy) → this thread's wgmma reads
  };
  auto release = [&](int it) {
    if (lane == 0) mbar::arrive(&empty[(ring0 + it) % kStages]);
  };
  // Before wgmma::fence: every write to S, O and P by ordinary instructions stays before it (the compiler
  // may not sink them past the fence into the wgmma's asynchronous window).
  auto fence_operands = [&] {
    wgmma::fence_operand(s);
    wgmma::fence_operand(o);
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk) wgmma::fence_operand(pa[kk]);
  };
  // Ping-pong (round robin over the active warpgroups): warpgroup w issues its wgmma only in its turn
  // (barrier kBarTurn + w) and then hands the turn to the next. Each warpgroup has num_kv_tiles + 1 issue
  // sections per pass; the last warpgroup gives warpgroup 0 the first turn and does not hand over after its
  // last section, so every barrier phase completes.
  const bool pingpong = active_wgs > 1;
  const bool last_wg = wg == active_wgs - 1;
  auto turn_wait = [&] {
    if (pingpong) named_sync(kBarTurn + wg, 256);
  };
  auto turn_pass = [&] {
    if (pingpong) named_arrive(kBarTurn + (last_wg ? 0 : wg + 1), 256);
  };

  float sum[2];  // the rows' sums of probabilities, sink included
  for (;;) {     // one pass, or (kFixedMax) two
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      m[h] = sink;
      l[h] = (p.sinks && lane % 4 == 0) ? 1.f : 0.f;  // the sink's own exp2(sink − m), counted by one lane
    }
#pragma unroll
    for (int i = 0; i < 32; ++i) o[i] = 0.f;
    if (pingpong && last_wg) turn_pass();

    // ---- section 0: S of the first tile ----
    wait_full(0);
    turn_wait();
    fence_operands();
    wgmma::fence();
    issue_qk(0);
    wgmma::commit();
    turn_pass();
    wgmma::wait<0>();
    wgmma::fence_operand(s);
    softmax(0);  // O is still 0: alpha needs no application
    wgmma::d_to_a_bf16(pa, s);

    // ---- sections 1 … n − 1: S of tile it and PV of tile it − 1 in flight, then the softmax of tile it ----
    for (int it = 1; it < num_kv_tiles; ++it) {
      wait_full(it);
      turn_wait();
      fence_operands();
      wgmma::fence();
      issue_qk(it);
      wgmma::commit();
      issue_pv(it - 1);
      wgmma::commit();
      turn_pass();
      wgmma::wait<1>();  // S done (groups complete in order); the PV still runs
      wgmma::fence_operand(s);
      softmax(it);
      wgmma::wait<0>();
      wgmma::fence_operand(o);
      release(it - 1);
      wgmma::d_to_a_bf16(pa, s);
      // Lazy: the warp skips O's 32 multiplies per thread when all its 16 rows kept m (alpha exactly 1).
      if (!kLazy || __any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          o[4 * j + 0] *= alpha[0];
          o[4 * j + 1] *= alpha[0];
          o[4 * j + 2] *= alpha[1];
          o[4 * j + 3] *= alpha[1];
        }
      }
    }

    // ---- last section: PV of the last tile ----
    turn_wait();
    fence_operands();
    wgmma::fence();
    issue_pv(num_kv_tiles - 1);
    wgmma::commit();
    if (!last_wg) turn_pass();
    wgmma::wait<0>();
    wgmma::fence_operand(o);
    release(num_kv_tiles - 1);

#pragma unroll
    for (int h = 0; h < 2; ++h) {
      sum[h] = l[h];
      sum[h] += __shfl_xor_sync(0xffffffffu, sum[h], 1);
      sum[h] += __shfl_xor_sync(0xffffffffu, sum[h], 2);
    }
    if constexpr (kFixedMax) {
      // An overflowed row (some p or a sum past the fp32 range) left its sum or O non-finite: then the whole CTA
      // runs its tiles again, moving m on every tile.
      bool overflow = !isfinite(sum[0]) || !isfinite(sum[1]);
#pragma unroll
      for (int i = 0; i < 32; ++i) overflow |= !isfinite(o[i]);
      if (fixed_max && named_sync_or(kBarRedo, 128 * (active_wgs + 1), overflow)) {
        fixed_max = false;
        ring0 = num_kv_tiles;
        continue;
      }
    }
    break;
  }

  // ---- O / l → out ----
  const float v_scale = kv_v_scale(p, kv_head);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if (row_pos[h] < 0) continue;
    const float inv = sum[h] > 0.f ? v_scale / sum[h] : 0.f;
    const int qi = q_lo + 64 * wg + 16 * warp + lane / 4 + 8 * h;
    uint16_t* dst = p.out + (static_cast<int64_t>(q_begin + qi) * p.num_q_heads + head) * kHead + 2 * (lane % 4);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      *reinterpret_cast<uint32_t*>(dst + 8 * j) = pack_bf16(o[4 * j + 2 * h] * inv, o[4 * j + 2 * h + 1] * inv);
    }
  }
}

template <bool kKvFp8, int kConsumers, bool kFixedMax>
void launch_prefill_wgmma_for(const AttentionParams& p, cudaStream_t stream) {
  constexpr int kSmem = kSmemBytes<kKvFp8, kConsumers>;
  auto* kernel = attention_prefill_wgmma_kernel<kKvFp8, kConsumers, kFixedMax>;
  static bool configured = false;
  if (!configured) {
    GOSSAMER_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
    configured = true;
  }
  // One CTA per (listed query tile, head), heads fastest.
  const int32_t* tiles = kConsumers == 2 ? p.q_tiles_128 : p.q_tiles_192;
  const int num_tiles = kConsumers == 2 ? p.num_q_tiles_128 : p.num_q_tiles_192;
  GOSSAMER_CHECK(tiles != nullptr || num_tiles == 0, "attention prefill: the ", CtaShape<kConsumers>::kBM,
                 "-row query tiles are missing");
  if (num_tiles == 0) return;
  const int64_t grid = static_cast<int64_t>(num_tiles) * p.num_q_heads;
  GOSSAMER_CHECK(grid < (int64_t{1} << 31), "attention: too many query tiles (", grid, " CTAs)");
  kernel<<<static_cast<unsigned>(grid), CtaShape<kConsumers>::kThreads, kSmem, stream>>>(p);
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_prefill_wgmma(const AttentionParams& p, cudaStream_t stream) {
  GOSSAMER_CHECK(
      p.prefill_consumer_warpgroups >= 0 && p.prefill_consumer_warpgroups <= 3 && p.prefill_consumer_warpgroups != 1,
      "attention prefill: 0 (auto), 2 or 3 consumer warpgroups, not ", p.prefill_consumer_warpgroups);
  bool three = p.prefill_consumer_warpgroups == 3;
  if (p.prefill_consumer_warpgroups == 0) {
    // Measured on the H200 (docs/PERF.md, 2026-12-05, ninth session): three warpgroups 1.15–1.22× faster from
    // 8×2,048 to 1×32,768 queries, 0.83× at 1×512 (192 CTAs: 1.45 waves of one CTA per SM). Three wherever
    // their grid fills four waves.
    three = static_cast<int64_t>(p.num_q_tiles_192) * p.num_q_heads >= 4 * static_cast<int64_t>(current_sm_count());
  }
  // The six instantiations: (cache dtype, consumer warpgroups, and with three warpgroups the fixed max).
  auto launch = [&](auto kv_fp8) {
    constexpr bool kFp8 = decltype(kv_fp8)::value;
    if (three && p.prefill_fixed_max) return launch_prefill_wgmma_for<kFp8, 3, true>(p, stream);
    if (three) return launch_prefill_wgmma_for<kFp8, 3, false>(p, stream);
    launch_prefill_wgmma_for<kFp8, 2, false>(p, stream);
  };
  return p.kv_fp8 ? launch(std::true_type{}) : launch(std::false_type{});
}

}  // namespace gossamer::kernels::attn
