// Decode attention with sinks, split-KV: one CTA per (sequence, kv head, split). The CTA's 16 mma rows
// are (query token, query head of the group) pairs, so the 8 query heads sharing a KV head read each
// K/V tile once. The 4 warps split every 64-key tile into 16-key slices with independent softmax states,
// merged at the end; the sink enters only split 0. With one split the CTA writes O itself; with more, each
// split writes its normalised partial and log-sum-exp to the workspace and the last split of its (sequence,
// kv head) to arrive (an atomic counter in the workspace, reset by that CTA) merges them: no combine
// kernel. With decode_rows_apart (a mixed step) the kernel skips the sequences of more than kDecodeMaxQ
// queries.
// FP8 KV cache (kKvFp8): the e4m3 tiles (half the bytes) stream through a 3-stage cp.async ring, two tiles
// in flight while one is widened to bf16 into a single bf16 stage and attended; k_scale enters the logit
// scale and v_scale the split's output.
#include <algorithm>

#include "kernels/attention_common_sm90.cuh"

namespace gossamer::kernels {
namespace {

using namespace attn;
constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kRows = 16;
static_assert(kAttentionMaxGroup * kDecodeMaxQ <= kRows, "attention.h promises groups of kAttentionMaxGroup");
constexpr int kMaxSplits = 64;  // a multiple of 32 (the merge spreads a row's splits over a warp)
static_assert(kMaxSplits % 32 == 0 && kRows * kMaxSplits * 4 <= 4 * kKeysPerTile * 128,
              "the merge's split weights fit the tile buffers");
constexpr int kTileBytes = kKeysPerTile * 128;
constexpr int kFp8Stages = 3;        // e4m3 K+V tiles in the cp.async ring (2 in flight while one is widened)
constexpr int kSplitCtas = 6 * 132;  // ~6 CTAs per SM keep enough loads in flight
// NOTE: more than one split only while num_seqs · num_kv_heads < kSplitCtas, so that many arrival counters
// (one per (sequence, kv head)) always suffice.
constexpr size_t kArrivalBytes = (kSplitCtas * sizeof(int32_t) + 255) / 256 * 256;

int decode_num_splits(const AttentionParams& p) {
  // Mixed steps: one split (the scratch is per token of the whole step, prefill chunks included).
  if (p.decode_rows_apart) return 1;
  const int ctas = std::max(1, p.num_seqs * p.num_kv_heads);
  const int want = ceil_div(kSplitCtas, ctas);
  const int tiles = std::max(
      1, ceil_div(p.window > 0 ? std::min(p.max_kv_len, p.window + kDecodeMaxQ) : p.max_kv_len, kKeysPerTile) + 1);
  return std::clamp(std::min(want, tiles), 1, kMaxSplits);
}

// The merge of one (sequence, kv head)'s splits 0..used − 1 by their log-sum-exp, by the last split's CTA:
// rows r < num_rows, row r at [token, head] index base + (r / group) · num_q_heads + r % group; o_part /
// lse_part as the kernel writes them (num_splits per row); loads through L2 (other SMs wrote them). O sums the splits
// in split order; Σ weights is a warp tree.
//   s_f: [kRows][kMaxSplits] fp32 shared (split weights ex2(lse − m)); s_row_l: [kRows] fp32 shared (Σ weights)
__device__ __forceinline__ void merge_splits(const float* o_part, const float* lse_part, uint16_t* out, int64_t base,
                                             int group, int num_q_heads, int num_rows, int num_splits, int used,
                                             float* s_f, float* s_row_l) {
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  auto token_head = [&](int r) { return base + static_cast<int64_t>(r / group) * num_q_heads + r % group; };
  // ---- split weights and their sum: one warp per row, lane l holds splits l and l + 32 ----
  for (int r = warp; r < num_rows; r += kWarps) {
    float lse[kMaxSplits / 32];
    float m = -INFINITY;
#pragma unroll
    for (int j = 0; j < kMaxSplits / 32; ++j) {
      const int s = lane + 32 * j;
      lse[j] = s < used ? __ldcg(lse_part + token_head(r) * num_splits + s) : -INFINITY;
      m = fmaxf(m, lse[j]);
    }
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float l = 0.f;
#pragma unroll
    for (int j = 0; j < kMaxSplits / 32; ++j) {
      const int s = lane + 32 * j;
      const float f = m != -INFINITY ? ex2(lse[j] - m) : 0.f;  // ex2(−inf) = 0: empty splits and padding
      if (s < used) s_f[r * kMaxSplits + s] = f;
      l += f;
    }
    for (int o = 16; o > 0; o >>= 1) l += __shfl_xor_sync(0xffffffffu, l, o);
    if (lane == 0) s_row_l[r] = l;
  }
  __syncthreads();
  // ---- O = Σ_s f_s · o_s / Σ_s f_s, four dims per thread ----
  for (int i = tid; i < num_rows * (kHead / 4); i += kThreads) {
    const int r = i / (kHead / 4), c = i % (kHead / 4);
    const float4* part = reinterpret_cast<const float4*>(o_part + token_head(r) * num_splits * kHead) + c;
    const float* f = s_f + r * kMaxSplits;
    float o[4] = {};
#pragma unroll 8
    for (int s = 0; s < used; ++s) {
      const float4 v = __ldcg(part + s * (kHead / 4));
      o[0] += f[s] * v.x;
      o[1] += f[s] * v.y;
      o[2] += f[s] * v.z;
      o[3] += f[s] * v.w;
    }
    const float l = s_row_l[r];
    const __nv_bfloat162 lo = __floats2bfloat162_rn(l > 0.f ? o[0] / l : 0.f, l > 0.f ? o[1] / l : 0.f);
    const __nv_bfloat162 hi = __floats2bfloat162_rn(l > 0.f ? o[2] / l : 0.f, l > 0.f ? o[3] / l : 0.f);
    uint2 packed;
    packed.x = *reinterpret_cast<const uint32_t*>(&lo);
    packed.y = *reinterpret_cast<const uint32_t*>(&hi);
    *reinterpret_cast<uint2*>(out + token_head(r) * kHead + 4 * c) = packed;
  }
}

// NOTE: FP8 held to 5 CTAs per SM (its shared memory allows 5; 96 registers, no spills): without the bound
// the arrival and merge tail push it to 117 registers, 4 CTAs.
template <bool kKvFp8>
__global__ void __launch_bounds__(kThreads, kKvFp8 ? 5 : 1)
    attention_decode_kernel(const AttentionParams p, int num_splits, int32_t* arrivals, float* o_part, float* lse_part,
                            int two_waves) {
  // NOTE: before the PDL wait only the step's plan (written before the graph's first kernel), the first key
  // tile and the sinks are read; q and this step's keys come from the kernel before (their tile rows are
  // copied again after the wait).
  __shared__ __align__(128) uint8_t sq[kRows * 128];
  // bf16: K0 V0 K1 V1. kKvFp8: K V (bf16, one stage), then the e4m3 ring: kFp8Stages K tiles, then
  // kFp8Stages V tiles (4 KiB each; 42.5 KiB of static shared memory in all). Reused for the warp merge.
  __shared__ __align__(128) uint8_t skv[kKvFp8 ? 5 : 4][kTileBytes];
  static_assert(!kKvFp8 || 2 * kFp8Stages * kFp8TileBytes <= 3 * kTileBytes, "the e4m3 ring exceeds its space");
  uint8_t* const ring_k = &skv[0][0] + 2 * kTileBytes;  // kKvFp8: [kFp8Stages][64 keys][64] e4m3
  uint8_t* const ring_v = ring_k + kFp8Stages * kFp8TileBytes;
  __shared__ float s_m[kWarps][kRows], s_l[kWarps][kRows];
  const int b = blockIdx.x, g = blockIdx.y, split = blockIdx.z;
  const int group = p.num_q_heads / p.num_kv_heads;
  const int q_begin = p.cu_seqlens_q[b];
  const int q_len = p.cu_seqlens_q[b + 1] - q_begin;
  // A prefill chunk's sequence (launch_attention_prefill's) and unused splits leave, after the PDL wait.
  bool leave = p.decode_rows_apart && q_len > kDecodeMaxQ;
  const int kv_len = p.kv_lens[b];
  const int first_pos = kv_len - q_len;
  const int kv_start = p.window > 0 ? max(0, first_pos - p.window + 1) : 0;
  const int t_begin = kv_start / kKeysPerTile, t_end = ceil_div(kv_len, kKeysPerTile);
  // The splits this (sequence, kv head) uses: one per key tile up to the launch's, fewer (at least
  // decode_min_tiles_per_split tiles each) where that many for every (sequence, kv head) would exceed two
  // waves of CTAs (two_waves: 2 × the SMs); the other splits' CTAs leave.
  int used = min(num_splits, max(1, t_end - t_begin));
  if (int64_t{gridDim.x} * gridDim.y * used > two_waves) {
    used = min(used, max(1, (t_end - t_begin) / p.decode_min_tiles_per_split));
  }
  leave = leave || split >= used;
  const int per_split = ceil_div(t_end - t_begin, used);
  const int my_begin = t_begin + split * per_split;
  const int my_end = min(t_end, my_begin + per_split);
  const int32_t* pages = p.page_indices + p.page_indptr[b];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int page_shift = __ffs(p.page_size) - 1;
  // Issues the copies of key tile j (its rows from row_begin) into stage `stage`.
  auto load_tile = [&](int j, int stage, int row_begin = 0) {
    if constexpr (kKvFp8) {
      load_kv_tiles_fp8<kThreads>(ring_k + stage * kFp8TileBytes, ring_v + stage * kFp8TileBytes, p, pages, page_shift,
                                  g, j * kKeysPerTile, kv_len, tid, row_begin);
    } else {
      load_kv_tiles<kThreads>(skv[2 * stage], skv[2 * stage + 1], p, pages, page_shift, g, j * kKeysPerTile, kv_len,
                              tid, row_begin);
    }
  };
  // The first tile before the PDL wait (AttentionParams::decode_prefetch_kv). Rows of this step's keys (written
  // by the kernel before, maybe while they are copied) are copied again after the wait; on sliding layers a row
  // before the window may be a ring slot this step rewrites, but the window masks it (weight 0 on finite values).
  const bool first_early = !leave && p.decode_prefetch_kv && my_begin < my_end;
  const int reload_from = max(0, first_pos - my_begin * kKeysPerTile);  // the tile's first row of this step's keys
  if (first_early) {
    load_tile(my_begin, 0);
    cp_async_commit();  // group: the early tile
  }
  pdl_wait();
  pdl_trigger();
  if (leave) return;

  // ---- load Q rows (row i: token i / group, head g·group + i % group) ----
  for (int i = tid; i < kRows * 8; i += kThreads) {
    const int r = i / 8, c = i % 8;
    const int qi = r / group;
    const bool ok = qi < q_len;
    const uint16_t* src =
        ok ? p.q + (static_cast<int64_t>(q_begin + qi) * p.num_q_heads + g * group + r % group) * kHead + c * 8 : p.q;
    cp_async_16(sq + swz(r, c), src, ok);
  }
  if (my_begin < my_end && !first_early) load_tile(my_begin, 0);
  cp_async_commit();  // group: Q and the first tile
  if (first_early && reload_from < kKeysPerTile) {
    cp_async_wait<1>();  // the early copies have landed (Q may fly), so the rows copied now land last
    load_tile(my_begin, 0, reload_from);
    cp_async_commit();  // group: this step's keys
  }
  if constexpr (kKvFp8) {
    if (my_begin + 1 < my_end) load_tile(my_begin + 1, 1);
    cp_async_commit();  // group: the second tile (may be empty)
  }

  RowState st;
  int row_pos[2];
  const float scale_log2 = p.scale * kv_k_scale(p, g) * kLog2e;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = lane / 4 + 8 * h;
    const int qi = r / group;
    row_pos[h] = qi < q_len ? first_pos + qi : -1;
    // NOTE: the sink enters once per row: split 0, warp 0 (the warps' states are merged below).
    const bool sink = split == 0 && warp == 0 && p.sinks && qi < q_len;
    st.m[h] = sink ? p.sinks[g * group + r % group] * kLog2e : -INFINITY;
    st.l[h] = (sink && lane % 4 == 0) ? 1.f : 0.f;
  }
#pragma unroll
  for (int d = 0; d < 8; ++d) st.o[d][0] = st.o[d][1] = st.o[d][2] = st.o[d][3] = 0.f;
  uint32_t q_frag[4][4];
  if constexpr (kKvFp8) {
    cp_async_wait<1>();  // Q and the first tile; the second may still fly
  } else {
    cp_async_wait<0>();
  }
  __syncthreads();
  load_q_frag(q_frag, sq, 0);

  // ---- key tiles of this split ----
  for (int j = my_begin; j < my_end; ++j) {
    if constexpr (kKvFp8) {
      const int i = j - my_begin;
      // NOTE: stage (i + 2) % 3 held tile j − 1, widened before the barriers of the previous iteration.
      if (j + 2 < my_end) load_tile(j + 2, (i + 2) % kFp8Stages);
      cp_async_commit();   // one group per iteration (possibly empty), so the count below is uniform
      cp_async_wait<2>();  // tile j has landed (tiles j + 1, j + 2 may still fly)
      __syncthreads();
      // NOTE: the bf16 stage is free: every warp passed the barrier after the previous tile's attend.
      widen_kv_tiles<kThreads>(ring_k + (i % kFp8Stages) * kFp8TileBytes, ring_v + (i % kFp8Stages) * kFp8TileBytes,
                               skv[0], skv[1], tid);
      __syncthreads();
      attend_tile<16, true>(st, q_frag, skv[0], skv[1], warp * 16, j * kKeysPerTile, row_pos, p.window, scale_log2);
    } else {
      const int stage = (j - my_begin) % 2;
      if (j + 1 < my_end) {
        load_tile(j + 1, stage ^ 1);
        cp_async_commit();
        cp_async_wait<1>();
      } else {
        cp_async_wait<0>();
      }
      __syncthreads();
      attend_tile<16, true>(st, q_frag, skv[2 * stage], skv[2 * stage + 1], warp * 16, j * kKeysPerTile, row_pos,
                            p.window, scale_log2);
    }
    __syncthreads();
  }
  if constexpr (kKvFp8) cp_async_wait<0>();  // leave with no copy in flight (the ring's last groups are empty)

  // ---- merge the 4 warps ----
  float* s_o = reinterpret_cast<float*>(&skv[0][0]);  // [kWarps][kRows][64]
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float l = st.l[h];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const int r = lane / 4 + 8 * h;
    if (lane % 4 == 0) {
      s_m[warp][r] = st.m[h];
      s_l[warp][r] = l;
    }
#pragma unroll
    for (int d = 0; d < 8; ++d) {
      s_o[(warp * kRows + r) * kHead + 8 * d + 2 * (lane % 4)] = st.o[d][2 * h];
      s_o[(warp * kRows + r) * kHead + 8 * d + 2 * (lane % 4) + 1] = st.o[d][2 * h + 1];
    }
  }
  __syncthreads();
  const int num_rows = min(q_len, kDecodeMaxQ) * group;  // rows r < num_rows hold a query (r / group < q_len)
  // Row r's query token and head: [num_tokens, num_q_heads] index.
  auto token_head = [&](int r) {
    return static_cast<int64_t>(q_begin + r / group) * p.num_q_heads + g * group + r % group;
  };
  // ---- per row (one thread each): the warps' weights f_w · v_scale / l, and this split's log-sum-exp ----
  __shared__ float s_w[kWarps][kRows];
  if (tid < num_rows) {
    const int r = tid;
    float m = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) m = fmaxf(m, s_m[w][r]);
    float f[kWarps], l = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      f[w] = m != -INFINITY ? ex2(s_m[w][r] - m) : 0.f;
      l += s_l[w][r] * f[w];
    }
    const float inv = l > 0.f ? kv_v_scale(p, g) / l : 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) s_w[w][r] = f[w] * inv;
    if (used > 1) lse_part[token_head(r) * num_splits + split] = l > 0.f ? m + __log2f(l) : -INFINITY;
  }
  __syncthreads();
  // ---- write O (one split) or this split's partial: o_part [token, head, split, 64], lse_part [.., split] fp32;
  //      four dims per thread ----
  for (int i = tid; i < num_rows * (kHead / 4); i += kThreads) {
    const int r = i / (kHead / 4), c = i % (kHead / 4);
    float4 o = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float4 v = reinterpret_cast<const float4*>(s_o + (w * kRows + r) * kHead)[c];
      const float f = s_w[w][r];
      o.x += v.x * f, o.y += v.y * f, o.z += v.z * f, o.w += v.w * f;
    }
    if (used == 1) {
      const __nv_bfloat162 lo = __floats2bfloat162_rn(o.x, o.y), hi = __floats2bfloat162_rn(o.z, o.w);
      uint2 packed;
      packed.x = *reinterpret_cast<const uint32_t*>(&lo);
      packed.y = *reinterpret_cast<const uint32_t*>(&hi);
      *reinterpret_cast<uint2*>(p.out + token_head(r) * kHead + 4 * c) = packed;
    } else {
      reinterpret_cast<float4*>(o_part + (token_head(r) * num_splits + split) * kHead)[c] = o;
    }
  }
  if (used == 1) return;

  // ---- arrive: the last split of (sequence, kv head) to finish merges them all ----
  // One acquire-release add by thread 0 after a CTA barrier: the barrier orders every thread's partial stores
  // before its release, and the last CTA's acquire (reading the chain of adds) with its barrier orders its
  // merge's loads after every split's stores (the release pattern; no thread-wide fences).
  __shared__ int s_last;
  __syncthreads();
  if (tid == 0) {
    int32_t* counter = &arrivals[b * p.num_kv_heads + g];
    int prior;
    asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], 1;" : "=r"(prior) : "l"(counter) : "memory");
    s_last = prior == used - 1;
    // NOTE: every split has arrived, so nothing else touches the counter in this launch: reset it for the next.
    if (s_last) atomicExch(counter, 0);
  }
  __syncthreads();
  if (!s_last) return;

  merge_splits(o_part, lse_part, p.out, token_head(0), group, p.num_q_heads, num_rows, num_splits, used, s_o,
               &s_l[0][0]);
}

}  // namespace

size_t attention_decode_workspace_bytes(const AttentionParams& p) {
  const int splits = decode_num_splits(p);
  if (splits == 1) return kArrivalBytes;
  const size_t per = static_cast<size_t>(p.num_tokens) * p.num_q_heads * splits;
  return kArrivalBytes + per * (kHead + 1) * sizeof(float);
}

void attention_decode_workspace_init(void* workspace, size_t bytes, cudaStream_t stream) {
  if (bytes > 0) GOSSAMER_CUDA_CHECK(cudaMemsetAsync(workspace, 0, std::min(bytes, kArrivalBytes), stream));
}

void launch_attention_decode(const AttentionParams& p, cudaStream_t stream) {
  GOSSAMER_CHECK(p.num_kv_heads > 0 && p.num_q_heads % p.num_kv_heads == 0 &&
                     p.num_q_heads / p.num_kv_heads * kDecodeMaxQ <= kRows,
                 "attention decode: needs at most 8 query heads per kv head");
  GOSSAMER_CHECK(p.workspace != nullptr, "attention decode: workspace missing");
  GOSSAMER_CHECK(p.page_size > 0 && (p.page_size & (p.page_size - 1)) == 0, "attention: page_size ", p.page_size,
                 " must be a power of two");
  if (p.num_tokens == 0) return;
  GOSSAMER_CHECK(p.decode_min_tiles_per_split >= 1, "attention decode: decode_min_tiles_per_split must be ≥ 1");
  const int splits = decode_num_splits(p);
  GOSSAMER_CHECK(splits == 1 || p.num_seqs * p.num_kv_heads <= kSplitCtas, "attention decode: ", p.num_seqs,
                 " sequences split ", splits, " ways exceed the arrival counters");
  auto* arrivals = static_cast<int32_t*>(p.workspace);
  float* o_part = reinterpret_cast<float*>(static_cast<uint8_t*>(p.workspace) + kArrivalBytes);
  float* lse_part = o_part + static_cast<size_t>(p.num_tokens) * p.num_q_heads * splits * kHead;
  launch_pdl(p.kv_fp8 ? attention_decode_kernel<true> : attention_decode_kernel<false>,
             dim3(p.num_seqs, p.num_kv_heads, splits), dim3(kThreads), 0, stream, p, splits, arrivals, o_part, lse_part,
             2 * current_sm_count());
  GOSSAMER_CUDA_CHECK_LAUNCH();
}

}  // namespace gossamer::kernels
