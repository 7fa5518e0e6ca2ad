// Attention with sinks over a paged KV cache (the reference: attention_cpu.cpp; the model: src/model/cpu_model.cpp),
// GQA, head_dim 64, bf16 in/out; the KV cache bf16 or FP8 e4m3 (kv_fp8, with per-KV-head scales).
//
// Logits l = (q·k)·scale; the per-head sink S_h is a raw logit appended as one extra column whose
// probability is dropped: o = Σ_s exp(l_s − m) v_s / (Σ_s exp(l_s − m) + exp(S_h − m)). Causal; with
// window W > 0 a query at position t sees keys t−W < s ≤ t. Softmax in fp32 (running max initialised to
// the sink logit), QK and PV on bf16 tensor cores with fp32 accumulation.
//
// Batch layout (varlen): sequence b owns query tokens [cu_seqlens_q[b], cu_seqlens_q[b+1]); they are the
// LAST q_len_b positions of its kv_lens[b] cached tokens (the new K/V must already be in the cache:
// launch_rope writes them). Cache: token at position s of sequence b lives in physical page
// page_indices[page_indptr[b] + s / page_size], row s % page_size; each row is [num_kv_heads, 64] bf16.
// Sliding layers read only their last W positions, so the engine may recycle older pages (a ring).
//
// FP8 KV cache (kv_fp8, --kv-cache-dtype fp8; docs/kv-cache-fp8.md): each row is [num_kv_heads, 64] e4m3
// bytes, and the attention runs on the dequantized values K = e4m3(k)·k_scale[h], V = e4m3(v)·v_scale[h]
// (kv_cache_fp8.h has the quantizer). The kernels widen e4m3 to bf16 exactly and fold the scales into the
// logit scale and the output, so QK and PV stay bf16 tensor-core MMAs; the reference dequantizes in fp32.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/cuda/cuda_types.h"  // cudaStream_t, GOSSAMER_HOST_DEVICE

namespace gossamer::kernels {

// Prefill kernel. kWgmma: the FA3-design kernel (128-query tiles, a cp.async producer warpgroup, two wgmma
// consumer warpgroups in ping-pong; attention_prefill_bf16_wgmma_sm90.cu). kMmaSync: the mma.sync kernel
// with 64-query tiles (4 warps). kAuto: kWgmma for full-causal layers (window 0), kMmaSync for sliding-window
// ones: on the H200 the wgmma kernel ran 1.47–1.71× the mma.sync one on causal shapes and 0.81–0.93× on
// window 128 (docs/PERF.md, 2026-12-01). All of them handle every case of this contract.
enum class PrefillKernel : int { kAuto = 0, kWgmma = 1, kMmaSync = 2 };

struct AttentionParams {
  const uint16_t* q = nullptr;  // [num_tokens, num_q_heads, 64] bf16 (after RoPE)
  uint16_t* out = nullptr;      // [num_tokens, num_q_heads, 64] bf16
  // [num_pages·page_size, num_kv_heads, 64] bf16, or e4m3 (one byte per element) when kv_fp8
  const void* k_cache = nullptr;
  const void* v_cache = nullptr;
  const int32_t* page_indptr = nullptr;   // [num_seqs + 1]
  const int32_t* page_indices = nullptr;  // [page_indptr[num_seqs]]
  const int32_t* cu_seqlens_q = nullptr;  // [num_seqs + 1]
  const int32_t* kv_lens = nullptr;       // [num_seqs], ≥ the sequence's query count
  const float* sinks = nullptr;           // [num_q_heads] fp32 raw logits
  int num_seqs = 0;
  int num_tokens = 0;
  int num_q_heads = 64;
  int num_kv_heads = 8;
  int page_size = 16;  // tokens per page, a power of two
  int window = 0;      // 0: full causal; else sliding window (128)
  float scale = 0.125f;
  bool kv_fp8 = false;             // the cache holds e4m3 (see above)
  const float* k_scale = nullptr;  // [num_kv_heads] fp32 dequantization scales (kv_fp8 only); null = 1
  const float* v_scale = nullptr;  // [num_kv_heads] fp32, likewise
  // Mixed steps (decodes beside prefill chunks): the sequences of ≤ kDecodeMaxQ queries go to
  // launch_attention_decode and the others to launch_attention_prefill, both launched with this set and the
  // same sequences; each then leaves the other's sequences alone (their out rows untouched). The decode
  // launch uses one split per (sequence, kv head) then, each CTA writing its O rows itself.
  // Without it a prefill launch computes every sequence: a 1-query sequence costs it a whole 64/128-row
  // tile per query head over all its keys.
  bool decode_rows_apart = false;
  // Prefill: the query tiles to run, one entry (sequence << 16) | tile per tile of 64 queries (q_tiles_64,
  // the mma.sync kernel), of 128 (q_tiles_128, wgmma) and of 192 (q_tiles_192, wgmma with 3 consumer warpgroups); tile
  // i of a sequence covers its queries [i·R, (i+1)·R). Every tile of every sequence, in any order (with
  // decode_rows_apart: not the decode sequences'); build them with attention_prefill_tiles. A prefill grid is its list
  // × the query heads: a step of ~600 sequences whose CTAs each scanned the sequences for their tile spent ~650 µs per
  // layer on that (docs/PERF.md, Serving, fifth session).
  const int32_t* q_tiles_64 = nullptr;   // [num_q_tiles_64]
  const int32_t* q_tiles_128 = nullptr;  // [num_q_tiles_128]
  const int32_t* q_tiles_192 = nullptr;  // [num_q_tiles_192]
  int num_q_tiles_64 = 0;
  int num_q_tiles_128 = 0;
  int num_q_tiles_192 = 0;
  // Host-side plan facts (upper bounds), used to size grids and splits.
  int max_kv_len = 0;
  PrefillKernel prefill_kernel = PrefillKernel::kAuto;
  // The wgmma prefill kernel's consumer warpgroups: 2 on 128-query tiles (q_tiles_128), 3 on 192-query tiles
  // (q_tiles_192; FlashAttention-3's hd64 shape), or 0: 3 where the grid fills four waves of the GPU's SMs,
  // else 2 (measured, docs/PERF.md 2026-12-05). Both tile lists must be set either way.
  int prefill_consumer_warpgroups = 0;
  // The wgmma prefill kernel with three consumer warpgroups keeps each row's running max as it is on key tiles that
  // need no mask after the first (no row max there, p = exp2(s·scale − m)); a CTA whose rows overflowed that way
  // (logits past the max by more than ~2^7 in log2 units: its sums turn non-finite) runs its tiles again with the
  // max on every tile. Rounding differs from the lazy softmax's as that one's from the eager one's. The model turns it
  // on (CudaOptions::prefill_attention_fixed_max; measured faster on the H100, docs/PERF.md 2026-12-05 seventeenth
  // session: 20b prefill at 131,072 tokens −4%); ignored with two warpgroups.
  bool prefill_fixed_max = false;
  // Decode only: a (sequence, kv head) uses one of the launch's splits per key tile of its real length (counted
  // on the device: the launch's split count comes from max_kv_len, a graph's bound), the other splits' CTAs
  // leaving at once; where that grid would pass two waves of CTAs, splits of at least this many tiles (one CTA
  // and no merge below 2 · this). 4: H200, 2026-12-05, ctx 1,024: batch 8 2.68 → 2.60 ms, but batch 1 (136
  // CTAs) 1.87 → 1.88 when applied there too, hence the two-wave condition; 1: no floor (A/B).
  int decode_min_tiles_per_split = 4;
  // Decode only: a CTA loads its first key tile before its PDL wait, so its bytes arrive while the kernel
  // before (the QKV GEMV with RoPE, or RoPE) finishes; the rows of this step's keys, which that kernel writes,
  // are copied again after the wait (since the fourteenth session; before, only tiles without them).
  // Bit-identical either way; H200, 2026-12-05: batch 1 1.66 → 1.64 ms (ctx 1,024), batch 8 2.42 → 2.40
  // (docs/PERF.md, thirteenth session); false for A/B.
  bool decode_prefetch_kv = true;
  // Decode only: split-KV scratch of attention_decode_workspace_bytes: the splits' arrival counters, then
  // their partial outputs. The counters must be zero before the first launch on a workspace
  // (attention_decode_workspace_init once after allocating it); every launch leaves them zero.
  void* workspace = nullptr;
};

// Prefill / chunked prefill / mixed batches: any q_len per sequence (every tile list set).
void launch_attention_prefill(const AttentionParams& p, cudaStream_t stream);
// Writes the tile list of `tile_rows` (64, 128 or 192) rows for host cu_seqlens_q [num_seqs + 1] into `out` (room
// for num_tokens / tile_rows + num_seqs entries), each sequence's last (longest) tile first; returns the
// count. With decode_rows_apart the sequences of ≤ kDecodeMaxQ queries get none.
int attention_prefill_tiles(const int32_t* cu_seqlens_q, int num_seqs, int tile_rows, bool decode_rows_apart,
                            int32_t* out);

// Decode: at most kDecodeMaxQ query tokens per sequence (speculative decoding), split-KV across the GPU,
// the sink counted once (first split). One kernel: the last split of each (sequence, kv head) to finish
// merges the splits (arrival counters in the workspace). Graph capturable. At most 64 splits per (sequence,
// kv head): a cap of 128 was measured slower at batch 1 (H200, 2026-12-05; bench decode, context 8,192:
// 2.16 ms against 2.09; 32,768: 2.36 against 2.25).
inline constexpr int kDecodeMaxQ = 2;
// Query heads per KV head the decode kernel handles (its 16-row MMA tile holds group × kDecodeMaxQ rows).
inline constexpr int kAttentionMaxGroup = 8;
// Scratch the decode launch needs for these params (host fields: num_seqs, num_tokens, heads, max_kv_len).
size_t attention_decode_workspace_bytes(const AttentionParams& p);
// Zeroes the arrival counters at the start of a decode workspace of `bytes` bytes, on `stream`. Once per
// allocation: launches keep them zero.
void attention_decode_workspace_init(void* workspace, size_t bytes, cudaStream_t stream);
void launch_attention_decode(const AttentionParams& p, cudaStream_t stream);

// fp32 reference (bf16 inputs as uint16_t bits, host memory; with kv_fp8 the cache rows are e4m3 bytes and
// the scales host pointers).
void attention_cpu(const AttentionParams& p);

}  // namespace gossamer::kernels
