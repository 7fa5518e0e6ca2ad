// Opens a checkpoint directory and returns a ready model on the requested backend.
//
// `device` is "cpu" (float32 reference) or "cuda". Throws gossamer::Error with a clear message for a
// bad checkpoint or an unavailable backend.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "model/model.h"
#include "model/sharding.h"

namespace gossamer::model {

// "auto" → "cuda" when this build has CUDA and a GPU is visible, else "cpu"; other names pass through.
std::string resolve_device(const std::string& device);

// `--gpu-memory-limit-gib`: makes GPU `device` behave as one of `limit_bytes` (e.g. an 80 GB part on an
// H200) by allocating and holding the rest for the life of the process; call before loading, once per
// GPU (a second call for the same GPU is a no-op). Throws when the GPU is smaller than the limit or the rest
// cannot be taken. 0 = no limit (a no-op). No-op without CUDA.
void limit_gpu_memory(int64_t limit_bytes, int device);

// Bytes the KV cache may take on GPU `device` so that everything allocated on it so far plus the cache
// stays within `utilization` of its memory (of the limit when limit_gpu_memory set one), keeping
// `headroom_bytes` for step activations. 0 without CUDA.
int64_t gpu_kv_cache_budget_bytes(double utilization, int device, int64_t headroom_bytes = int64_t{4} << 30);

// Backend options (weights and cuda_graphs: cuda only).
struct ModelOptions {
  // cuda weight format (cuda_weights.h WeightFormat): "mxfp4" (experts as shipped, FP8 dense layers), "fp8"
  // (experts too as 128×128 block-scaled FP8) or "bf16"
  std::string weights = "mxfp4";
  bool cuda_graphs = true;  // false = vLLM's --enforce-eager: no decode graphs
  // cuda: "cublaslt" (default) = the FP8 qkv/o linears above the decode GEMV's rows run on cuBLASLt where it
  // has an algorithm (it measures faster there: kernels/gemm_fp8_cublaslt.h); "gossamer" = our kernels
  // everywhere (for A/B runs).
  std::string dense_gemm = "cublaslt";
  // cuda: the prefill attention kernel (kernels/attention.h PrefillKernel): "auto" (the FA3-design wgmma
  // kernel on full-causal layers, mma.sync on sliding-window ones: each where it measured faster), "mma" or
  // "wgmma" everywhere (for A/B runs).
  std::string prefill_attention = "auto";
  // cuda: the wgmma prefill kernel's consumer warpgroups (CudaOptions::prefill_attention_warpgroups): 0 (auto:
  // 3 on 192-query tiles where the grid fills four waves, else 2 on 128), 2 or 3 (hidden bench flag
  // --prefill-attention-warpgroups, for A/B runs).
  int prefill_attention_warpgroups = 0;
  // cuda: the wgmma prefill kernel keeps the running max on unmasked key tiles after the first
  // (CudaOptions::prefill_attention_fixed_max; on: measured faster, docs/PERF.md 2026-12-05 seventeenth session;
  // hidden bench flag --no-prefill-attention-fixed-max for A/B).
  bool prefill_attention_fixed_max = true;
  // cuda: the experts of decode-sized steps (CudaOptions::moe_decode): "auto" (the weight-streaming grouped
  // GEMM where it measured faster: 9–64 tokens with FP8 experts; MXFP4 experts on the grouped GEMMs from 9 tokens),
  // "gemv" (never, and MXFP4 experts on GEMV chunks up to 16 tokens), "stream" (every step of ≤ 4,096 tokens) or
  // "gemm" (never, and the grouped GEMMs from kGemvMaxRows + 1 tokens).
  std::string moe_decode = "auto";
  // cuda: mixed steps run their decode sequences on the decode attention kernel and only the prefill chunks
  // on the prefill kernel (CudaOptions::split_mixed_attention); on by default (measured faster on the H200).
  bool split_mixed_attention = true;
  // cuda, A/B candidates of the MoE kernels (hidden bench flags; the defaults are the measured product):
  // the MXFP4 decode GEMVs' launch shape ("rule", "warps4", "warps4-stages4";
  // CudaOptions::moe_gemv_shape), the expert GEMMs' tile at 128-row tiles ("auto", "128x192tma2",
  // "128x256tma2", "128x256tma2b"; CudaOptions::moe_gemm_tile).
  std::string moe_gemv_shape = "rule";
  std::string moe_gemm_tile = "auto";
  // cuda: the MoE's tokens quantized once each and scattered to their expert-order rows
  // (CudaOptions::moe_quantize_tokens_once; on: measured faster, docs/PERF.md 2026-12-05 seventeenth session;
  // hidden bench flag --no-moe-quantize-tokens-once for A/B).
  bool moe_quantize_tokens_once = true;
  // cuda: MXFP4 experts on the W4A8 GEMMs from CudaModel::kMxfp4W4A8MinRowsPerExpert rows per expert
  // (CudaOptions::moe_mxfp4_w4a8; on: measured faster, docs/PERF.md 2026-12-07 thirty-first session; hidden bench
  // flag --no-moe-mxfp4-w4a8 for A/B: W4A16 at every size).
  bool moe_mxfp4_w4a8 = true;
  // cuda: the W4A16 GEMMs' 32-token tiles for experts of up to this many rows on average
  // (CudaOptions::moe_w4a16_narrow_max_rows; −1: kernels::kW4A16NarrowMaxRows, from docs/PERF.md's thirty-third
  // session; hidden bench option --moe-w4a16-narrow-max-rows for A/B, 0: 128-token tiles at every size).
  int moe_w4a16_narrow_max_rows = -1;
  // cuda: kernels::AttentionParams::decode_min_tiles_per_split (CudaOptions::decode_attention_min_tiles_per_split;
  // a candidate, hidden bench option --decode-attention-min-tiles-per-split).
  int decode_attention_min_tiles_per_split = 4;
  // cuda: kernels::AttentionParams::decode_prefetch_kv (CudaOptions::decode_attention_prefetch_kv; on: measured
  // faster, docs/PERF.md 2026-12-05 thirteenth session; hidden bench flag --no-decode-attention-prefetch-kv).
  bool decode_attention_prefetch_kv = true;
  // cuda: RoPE and the K/V cache write in the decode QKV GEMV's epilogue (CudaOptions::decode_qkv_rope; on:
  // measured faster, docs/PERF.md 2026-12-05 fourteenth session; hidden bench flag --no-decode-qkv-rope for A/B).
  bool decode_qkv_rope = true;
  // cuda: a prefill step's attention norm writes its rows quantized for the FP8 QKV GEMM
  // (CudaOptions::prefill_norm_fp8; on: bit-identical, one pass fewer; hidden --no-prefill-norm-fp8 for A/B).
  bool prefill_norm_fp8 = true;
  // cuda: the prefill MoE's combine summed by the next norm (CudaOptions::prefill_moe_combine_deferred; on:
  // bit-identical, one launch and a round trip fewer; hidden --no-prefill-moe-combine-deferred for A/B).
  bool prefill_moe_combine_deferred = true;
  // cuda: the MXFP4 decode GEMVs' single-row kernel at one token (CudaOptions::moe_gemv_single_row; on: measured
  // faster, docs/PERF.md 2026-12-05 twelfth session; hidden bench flag --no-moe-gemv-single-row for A/B).
  bool moe_gemv_single_row = true;
  // cuda: the single-row MXFP4 gate_up GEMV stages x in shared memory (CudaOptions::moe_gemv_x_shared; on:
  // measured faster, docs/PERF.md 2026-12-05 fifteenth session; hidden bench flag --no-moe-gemv-x-shared for A/B).
  bool moe_gemv_x_shared = true;
  // vLLM's --kv-cache-dtype: "auto" (bf16 on cuda, float32 on cpu) or "fp8" (alias "fp8_e4m3"): e4m3 K/V
  // with static per-KV-head scales of 1.0 on the full-attention layers, the sliding-window layers bf16
  // (docs/kv-cache-fp8.md). On cpu (one rank) the float32 cache holds the e4m3-rounded values (the cuda
  // backend's numerics); fp8_e5m2 is refused.
  std::string kv_cache_dtype = "auto";
  // Tensor/expert parallelism of the one replica loaded here (data_parallel is checked against the GPUs
  // present, then left to the caller: a replica per model). On cpu the ranks are simulated by threads;
  // on cuda this process is rank `rank` of data-parallel replica `replica` (on GPU gpu_of(options)), one
  // process per GPU, and the group meets through its rank 0's TCP bootstrap at dist_host:dist_port
  // (docs/scaling.md).
  ParallelLayout layout;
  int32_t replica = 0;
  int32_t rank = 0;
  std::string dist_host = "127.0.0.1";
  int dist_port = 0;
  // Tests of the multi-process and multi-replica paths on one GPU (hidden `--test-colocate-gpus`): every
  // replica and rank on GPU 0, the GPU count not checked, the ranks reducing through CUDA IPC alone (NCCL
  // refuses two ranks on one GPU).
  bool colocate_on_gpu0 = false;
};

// The GPU of this process's rank: replica · tensor_parallel + rank (replica r takes GPUs
// [r·TP, (r+1)·TP)), or 0 with colocate_on_gpu0.
int32_t gpu_of(const ModelOptions& options);

// Parses ModelOptions::kv_cache_dtype: true for fp8 / fp8_e4m3, false for auto; throws on anything else.
bool kv_cache_dtype_is_fp8(const std::string& kv_cache_dtype);

// GPUs visible to this process (0 without CUDA).
int visible_gpu_count();

std::unique_ptr<Model> load_model(const std::string& dir, const std::string& device = "cpu",
                                  const ModelOptions& options = {});

// `--load-format dummy`: random weights of a preset's real shapes, with no disk. On cpu the host dummy
// weights of model/dummy_checkpoint.h; on cuda made directly in GPU memory (CudaWeights::random: same
// scales, other values), so even 120b is ready in seconds.
std::unique_ptr<Model> load_dummy_model(const std::string& preset, uint64_t seed, const std::string& device,
                                        const ModelOptions& options = {});

}  // namespace gossamer::model
