// The `cuda` backend (sm_90a): gpt-oss on one GPU with FP8 128×128 block-scaled dense linears and the
// checkpoint's MXFP4 experts (default), FP8 experts too, or bf16 everything (cuda_weights.h WeightFormat), bf16
// activations and a paged bf16 KV cache (or, CudaOptions::kv_cache_fp8, e4m3 on the full-attention layers),
// attention with sinks from src/kernels.
//
// Contract: the constructor uploads and converts all weights (host views may be released afterwards)
// and throws gossamer::Error when the config is outside what the kernels support (head_dim 64, top-4,
// dims multiples of 16, experts a multiple of 8). forward() runs on one stream and returns float32
// logits (converted from bf16). Not thread-safe: one forward at a time.
//
// Paths of a step: rows ≤ 8 (decode) use weight-only GEMVs (activations stay bf16), larger steps the
// FP8 GEMMs with per-token 1×128 activation quantization (or the bf16 GEMMs in bf16 mode). With MXFP4
// experts (--weights mxfp4, the default) steps of ≤ 8 tokens read them as MXFP4 in the decode MoE; larger steps run
// grouped GEMMs on the experts as stored, each warp decoding its weights into the
// MMA's registers: below kMxfp4W4A8MinRowsPerExpert rows per expert the W4A16 GEMMs (kernels/gemm_w4a16.h: bf16
// activations), from it the W4A8 GEMMs (kernels/gemm_w4a8.h: e4m3 activations, e5m2 weights, the FP8 tensor rate).
// Steps that CudaModel::streams_experts picks (by
// default 9–64 tokens with FP8 experts, none with MXFP4) run the experts of either format on the
// weight-streaming grouped GEMM (kernels/moe.h launch_moe_stream) instead. Pure decode
// steps (one new token per sequence, ≤ kMaxGraphBatch sequences) replay a CUDA graph captured once per
// padded batch size; padding sequences compute on a scratch KV block that no caller can own.
//
// Async scheduling (model.h, feeds_pending_tokens_on_device): a sampled step may be launched while the one
// before it is in flight. Its pending ids are copied on the stream, before its graph or its first kernel,
// from where the step before drew them (sampling_) into its plan's ids (kernels/feed_tokens.h); the pinned
// staging a step's asynchronous copies read or write (plan, sampling settings and results) has two slots,
// one per step in flight; device buffers are shared, ordered by the one stream, and a device buffer that has
// to grow while a step is in flight waits for it first.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <functional>
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "core/cuda/device_buffer.h"
#include "kernels/attention.h"
#include "kernels/gemm_fp8.h"
#include "kernels/gemm_fp8_cublaslt.h"
#include "kernels/gemv_mxfp4.h"
#include "kernels/moe.h"
#include "model/cuda/cuda_phase_timer.h"
#include "model/cuda/cuda_weights.h"
#include "model/model.h"
#include "model/rope.h"

namespace gossamer::model::cuda {

// The experts of decode-sized steps (--moe-decode): kGemv never streams (GEMV chunks up to kMxfp4GemvMaxTokens with
// MXFP4 experts), kGemm never streams and takes the grouped GEMMs past kernels::kGemvMaxRows tokens.
enum class MoeDecodePath : uint8_t { kAuto, kGemv, kStream, kGemm };

struct CudaOptions {
  // The GPU (device ordinal) this model lives on: every entry point makes it the calling thread's current
  // device (core/cuda/current_device.h), so models on several GPUs share a process and any thread may call
  // them (model/loader.h gpu_of places data-parallel replicas and their ranks).
  int device = 0;
  WeightFormat weights = WeightFormat::kMxfp4;
  bool cuda_graphs = true;  // replay decode steps as CUDA graphs
  // One rank of a tensor/expert-parallel group (the weights and config are the rank's shard:
  // model/shard_weights.h): the partial outputs of the O-projection and the experts are summed over
  // `comm` (two all-reduces per layer, on the step's stream, inside the decode graphs too); null = the
  // whole model on one GPU. The rank runs experts [expert_begin, expert_begin + num_local_experts)
  // (0 = all of them).
  std::shared_ptr<comm::Communicator> comm;
  int expert_begin = 0;
  int num_local_experts = 0;
  // Vocab-parallel embedding and unembedding (with comm): this rank's embedding and unembedding hold
  // vocabulary rows [rank · vocab_shard_rows, + vocab_rows) (model/sharding.h; the constructor checks the
  // weights' rows). The embedding looks up the step's tokens in its rows (zeros for the others' tokens) and
  // the group sums the [tokens, hidden] rows (one more all-reduce per step, exact: x + 0 = x). The
  // unembedding computes this rank's logits. Sampled steps sample on the slices (token masks applied to each
  // rank's slice, penalties to f32 copies of it, then kernels/vocab_sampling.h and kernels/vocab_logprobs.h:
  // per-row records cross ranks, never the logits); forward()'s logits gather every rank's slice into the
  // full [rows, vocab] (all_gather, or on a group without one a sum of zero-padded slots: exact). 0 = this
  // rank holds the whole embedding and unembedding (no all-reduce of the embedding). vocab_rows: this rank's
  // own rows (model/sharding.h RankShard::vocab; random weights are made of that size).
  int64_t vocab_shard_rows = 0;
  int64_t vocab_rows = 0;
  // FP8 qkv/o linears of more rows than the decode GEMV takes run on cuBLASLt where it has an algorithm
  // (gemm_fp8_cublaslt.h: it measures faster than gemm_fp8 there), from a row-major copy of those weights
  // (+0.64 GiB for 20b); false: gemm_fp8 everywhere.
  bool cublaslt_dense = true;
  // The prefill attention kernel (kernels/attention.h).
  kernels::PrefillKernel prefill_kernel = kernels::PrefillKernel::kAuto;
  // Its consumer warpgroups (kernels::AttentionParams::prefill_consumer_warpgroups: 0 auto, 2 or 3).
  int prefill_attention_warpgroups = 0;
  bool prefill_attention_fixed_max = true;       // kernels::AttentionParams::prefill_fixed_max
  int decode_attention_min_tiles_per_split = 4;  // kernels::AttentionParams::decode_min_tiles_per_split
  bool decode_attention_prefetch_kv = true;      // kernels::AttentionParams::decode_prefetch_kv
  // The FP8 QKV GEMV of a decode step (≤ kGemvMaxRows tokens) applies RoPE and writes the K/V cache in its
  // epilogue (kernels::GemvFp8Params::rope_epilogue) instead of a separate RoPE launch.
  bool decode_qkv_rope = true;
  // The attention norm of a prefill step whose QKV projection runs the FP8 GEMM (> kGemvMaxRows tokens) writes its
  // rows quantized for that GEMM (kernels::RmsNormParams::out_q) instead of bf16 rows that the GEMM's input pass
  // then quantizes: one pass and ~3 bytes per element fewer, the same bits.
  bool prefill_norm_fp8 = true;
  // The grouped-GEMM MoE (launch_moe: prefill steps) leaves its combine to the next RMSNorm, which sums the experts'
  // rows itself, as the decode MoE does (defers_moe_combine): the combine launch and delta_'s write and read go, the
  // same bits.
  bool prefill_moe_combine_deferred = true;
  // Which decode-sized steps run the FP8 or MXFP4 experts on the weight-streaming grouped GEMM
  // (kernels/moe.h launch_moe_stream) instead of the GEMV decode MoE (≤ 8 tokens, MXFP4 in chunks of 8 up
  // to kMxfp4GemvMaxTokens) or the grouped expert GEMMs: kAuto where it measured faster (FP8 experts 9–64 tokens:
  // H200, 2026-12-01; MXFP4 experts never since W4A16's 16-token tiles: H100, 2026-12-07; docs/PERF.md), kStream
  // every step of ≤ kMoeStreamMaxTokens, kGemv and kGemm never (A/B runs; kGemv runs MXFP4 experts on GEMV chunks
  // up to kMxfp4GemvMaxTokens, kGemm on the grouped GEMMs from 9 tokens, as kAuto does).
  MoeDecodePath moe_decode = MoeDecodePath::kAuto;
  // --kv-cache-dtype fp8: the full-attention layers cache K and V as e4m3 with static per-KV-head scales of
  // kernels::kKvFp8DefaultScale (kernels/kv_cache_fp8.h, docs/kv-cache-fp8.md), half the bytes per position;
  // the sliding-window layers stay bf16. false = bf16 everywhere ("auto").
  bool kv_cache_fp8 = false;
  // Mixed steps (decodes beside prefill chunks): the decode sequences' attention on the decode kernel and
  // only the prefill chunks on the prefill kernel (true), or every sequence on the prefill kernel (false:
  // a 1-query sequence then costs a whole query tile per head over all its keys). On by default: +1% / +4%
  // output tok/s at 256 clients (1000/200, 1000/1000) on the H200 (docs/PERF.md, Serving, fifth session).
  bool split_mixed_attention = true;
  // A/B candidates of the MoE kernels (kernels::MoeParams::gemv_mxfp4_shape, gemm_tile); the defaults are the
  // product's.
  kernels::GemvMxfp4Shape moe_gemv_shape = kernels::GemvMxfp4Shape::kRule;
  bool moe_gemv_single_row = true;  // kernels::MoeParams::gemv_single_row
  bool moe_gemv_x_shared = true;    // kernels::MoeParams::gemv_x_shared
  kernels::GemmTile moe_gemm_tile = kernels::GemmTile::kAuto;
  bool moe_quantize_tokens_once = true;  // kernels::MoeParams::quantize_tokens_once
  // MXFP4 experts on the grouped GEMMs (launch_moe) from kMxfp4W4A8MinRowsPerExpert rows per expert run the W4A8
  // GEMMs (kernels::MoeParams::mxfp4_w4a8); off: the W4A16 ones at every size (A/B).
  bool moe_mxfp4_w4a8 = true;
  int moe_w4a16_narrow_max_rows = kernels::kW4A16NarrowMaxRows;  // kernels::MoeParams::w4a16_narrow_max_rows
};

// Selects CudaModel's constructor that makes random weights on the GPU (CudaWeights::random).
struct RandomWeights {
  uint64_t seed = 0;
};

class CudaModel final : public Model {
 public:
  CudaModel(GptOssConfig config, const GptOssWeights& host_weights, CudaOptions options = {});
  CudaModel(GptOssConfig config, RandomWeights random, CudaOptions options = {});
  ~CudaModel() override;

  const GptOssConfig& config() const override { return config_; }
  std::string backend_name() const override { return "cuda"; }
  int32_t kv_num_blocks() const override { return num_blocks_; }
  int32_t kv_num_sliding_blocks() const override { return num_sliding_blocks_; }
  int32_t kv_block_size() const override { return block_size_; }
  int64_t kv_bytes_per_block() const override;
  int64_t kv_bytes_per_token() const override;
  // bf16: 2·kv_width·2 bytes per layer; a full-attention layer with kv_cache_fp8: 2·kv_width·1.
  int64_t kv_layer_bytes_per_token(bool sliding) const override;
  std::string kv_cache_dtype_name() const override;
  void forward(const ForwardBatch& batch, std::vector<float>& logits) override;
  bool samples_on_device() const override { return true; }
  bool samples_with_token_masks() const override { return true; }
  // Samples straight from the bf16 logits on the GPU (kernels/sampling.h); only token ids come back.
  void forward_sample(const ForwardBatch& batch, std::span<const RowSampling> rows, std::vector<int32_t>& tokens,
                      std::vector<RowLogprobs>& logprobs) override;
  using Model::forward_sample;
  // Sampled steps return once enqueued: the drawn tokens (and logprobs) are copied into pinned memory behind
  // the step, and wait_step waits on an event recorded after that copy. Logits steps: the default (nothing
  // in flight). A sampled step may go on top of a sampled one in flight, its pending rows fed on the GPU.
  void launch_step(const ForwardBatch& batch, std::optional<std::span<const RowSampling>> rows) override;
  void wait_step(StepResult& result) override;
  bool feeds_pending_tokens_on_device() const override { return true; }
  // A sampled step in two calls: launch_forward enqueues the forward at once, launch_sampling the sampling
  // behind it (structured output fills the token masks in between, while the forward runs).
  void launch_forward(const ForwardBatch& batch) override;
  void launch_sampling(std::span<const RowSampling> rows) override;

  // Phase timing (model/step_phases.h): events between the launch groups, every step eager (no graphs).
  bool set_phase_timing(bool on) override;
  PhaseSeconds last_phase_seconds() override;
  // Routing trace (model/routing_trace.h): every step eager, the router logits copied back after each layer's router.
  bool set_routing_trace(bool on) override;
  RoutingCounts last_routing() override { return routing_trace_ ? routing_trace_->counts() : RoutingCounts{}; }

  uint64_t weight_bytes() const override { return weights_.device_bytes; }
  // Vocabulary rows of the embedding on this GPU: config().vocab_size, or this rank's vocab_rows.
  int64_t embedding_rows() const { return weights_.embedding_rows; }
  WeightFormat weight_format() const { return weights_.format; }
  // Waits for the GPU (for timing).
  void synchronize() const;
  // Decode steps replayed from graphs so far (for tests and benchmarks).
  int64_t graph_replays() const { return graph_replays_; }

  static constexpr int kMaxGraphBatch = 1024;  // --max-num-seqs 1024 decodes in graphs too (#14)
  // --moe-decode gemv with --weights mxfp4: up to this many tokens run the MXFP4 decode MoE in chunks of 8 tokens,
  // larger ones the grouped W4A16 GEMMs (by default steps of 9 tokens and more take the grouped GEMMs: their
  // 16-token tiles measured faster, H100, 2026-12-07, thirty-fifth session, `bench decode` ms per step: 20b 12 / 16
  // tokens 6.33 / 6.71 against the stream kernel's 7.28 / 7.72, 120b 16 tokens 14.40 against the chunks' 14.67).
  static constexpr int kMxfp4GemvMaxTokens = 16;
  // --moe-decode stream streams steps of up to this many tokens (larger ones take the grouped GEMMs).
  static constexpr int kMoeStreamMaxTokens = 4096;
  // MoeDecodePath::kAuto streams FP8 experts from kGemvMaxRows + 1 up to this many tokens (the grouped GEMMs win at
  // 128; H200, 2026-12-01). MXFP4 experts are not streamed by default: W4A16's 16-token tiles beat the stream kernel
  // at 9–16 tokens (kMxfp4GemvMaxTokens's note) and the 32–64-token ones above (thirty-third session: 20b 24 / 32
  // tokens 7.23 / 7.47 ms against 8.24 / 8.53 streamed; docs/PERF.md).
  static constexpr int kMoeStreamAutoMaxTokensFp8 = 64;
  // Whether a step of num_tokens runs its experts on launch_moe_stream (CudaOptions::moe_decode).
  bool streams_experts(int num_tokens) const;
  // Whether a step of num_tokens runs its FP8 or MXFP4 experts on the decode GEMVs (launch_moe_decode, in chunks of
  // kGemvMaxRows tokens), else (not streamed) on the grouped GEMMs (launch_moe).
  bool experts_on_gemvs(int num_tokens) const;
  // Whether launch_moe runs the MXFP4 experts on the W4A8 GEMMs (else, reading MXFP4 experts, the W4A16 ones):
  // from kMxfp4W4A8MinRowsPerExpert rows per expert, unless CudaOptions::moe_mxfp4_w4a8 is off.
  bool experts_gemm_w4a8(int num_tokens) const;
  // Whether a step of num_tokens leaves the MoE combine to the next RMSNorm, which sums the experts' rows
  // itself (kernels/rmsnorm.h moe_y): the decode MoE (launch_moe_decode, one chunk) and, with
  // CudaOptions::prefill_moe_combine_deferred, the grouped GEMMs (launch_moe), on one GPU, where no all-reduce of
  // delta_ sits between the two.
  bool defers_moe_combine(int num_tokens) const;
  // The pieces the next norm sums where defers_moe_combine (in moe_workspace_), else none.
  kernels::MoeCombineParams deferred_moe_pieces(int num_tokens) const;
  // Whether the experts are MXFP4 (--weights mxfp4), read as stored by every step.
  bool reads_mxfp4_experts() const { return weights_.format == WeightFormat::kMxfp4; }
  // MXFP4 experts on the grouped GEMMs (steps past the decode MoE and the stream path): the W4A16 GEMMs below this
  // many (token, expert) rows per expert on average (num_tokens · 4 / E), the W4A8 GEMMs from it (their 256-token
  // tiles run half empty below it). H100, 2026-12-07 (thirty-first session), `gossamer_kernels_bench moe-mxfp4`
  // (route → combine, µs, W4A16 / W4A8 with its 3-stage ring, one call): E = 32 486 / 494 at 128 rows per expert,
  // 743 / 535 at 192, 3,386 / 2,269 at 1,024; E = 128 1,518 / 1,908 at 96, 3,375 / 2,428 at 192; the 4-stage ring
  // (another call) took W4A8 2–8% lower (E = 128 at 128 rows ≈ 2,000 against W4A16's 2,256). The W4A8 GEMMs beat
  // converting the experts to FP8 at every size (8,192 tokens: E = 32 2,269 against 2,542, E = 128 3,313 against
  // 5,229), which they replaced.
  static constexpr int kMxfp4W4A8MinRowsPerExpert = 128;

 protected:
  void allocate_kv_cache_impl(int32_t num_blocks, int32_t block_size, int32_t num_sliding_blocks) override;

 private:
  // Makes options_.device the calling thread's current device (first thing in every public entry point).
  void bind_device() const;
  // Checks the config and the GPU, then takes the weights `make` builds.
  CudaModel(GptOssConfig config, CudaOptions options, const std::function<CudaWeights(const GptOssConfig&)>& make);

  // Word offsets (int32 words) of the step's arrays in one plan buffer, and the step's sizes.
  struct StepPlan {
    int num_tokens = 0, num_seqs = 0, num_rows = 0, max_q = 0, max_kv = 0;
    // Sequences of ≤ kernels::kDecodeMaxQ queries: in a mixed step (max_q above that) they take the decode
    // attention kernel when mixed_step_attention_split() (kernels/attention.h decode_rows_apart).
    int num_decode_seqs = 0;
    // The prefill attention's query tiles (kernels/attention.h q_tiles_64 / q_tiles_128 / q_tiles_192), counted by
    // fill_and_upload_plan; 0 in decode steps.
    int num_q_tiles_64 = 0, num_q_tiles_128 = 0, num_q_tiles_192 = 0;
    size_t q_tiles_64 = 0, q_tiles_128 = 0, q_tiles_192 = 0;
    size_t ids = 0, positions = 0, slots = 0, cu_seqlens = 0, kv_lens = 0, page_indptr = 0, page_indices = 0, rows = 0,
           total_words = 0;
    // Pending tokens: [seqs, 2] (index into ids, row of the step before's drawn tokens), the first few used.
    size_t feeds = 0;
    // The ring's sliding-pool slots and page table (aliases of slots / page_* without a ring).
    size_t sliding_slots = 0, sliding_page_indptr = 0, sliding_page_indices = 0;
    // Row i is token i for every token (fill_and_upload_plan; always so in a decode graph: one token per sequence,
    // each wanting logits): the unembedding reads the final norm's rows in place, no gather.
    bool rows_are_tokens = false;
  };
  struct DecodeGraph {
    int batch = 0;
    StepPlan plan;
    DeviceBuffer device_plan;
    cudaGraphExec_t exec = nullptr;
    uint64_t generation = 0;  // workspace generation the graph was captured against
    bool warmed_up = false;   // one eager run first (launchers set kernel attributes on first use)
  };

  // prefill: the step launches the prefill attention (room for its query-tile lists).
  StepPlan layout_plan(int tokens, int seqs, int pages, int rows, bool prefill = false) const;
  // Writes the plan of `batch` into the launching slot's host plan (padding with scratch sequences up to
  // plan.num_seqs) and uploads the used words (two ranges with a ring: its page table sits after the main
  // one) to `device`; then copies the pending ids from the step in flight's drawn tokens (feed_pending_tokens).
  // With a prefill launch it also lists the query tiles (plan's num_q_tiles_*).
  void fill_and_upload_plan(const ForwardBatch& batch, StepPlan& plan, DeviceBuffer& device);
  // Throws unless every pending row of `batch` names a row of the sampled step in flight.
  void check_pending_rows(const ForwardBatch& batch) const;
  // Grows a device buffer that a step in flight may use: waits for the stream first when it must move.
  bool grow_shared(DeviceBuffer& buffer, size_t bytes);
  // Grows every step buffer for `plan` (bumping workspace_generation_ when anything moves).
  void prepare_workspace(const StepPlan& plan);
  // Whether a step's attention runs its decode sequences on the decode kernel beside a prefill launch for
  // the rest (CudaOptions::split_mixed_attention, a step with both kinds).
  bool mixed_step_attention_split(const StepPlan& plan) const {
    return options_.split_mixed_attention && plan.max_q > kernels::kDecodeMaxQ && plan.num_decode_seqs > 0;
  }
  // Enqueues the whole step on stream_ (no synchronisation, no allocation: graph capturable).
  void enqueue_step(const StepPlan& plan, const int32_t* device_plan);
  void copy_logits_out(int num_rows, std::vector<float>& logits);
  // The step up to logits_ ([rows, vocab] bf16 on the device, enqueued on stream_); returns the rows.
  int enqueue_forward(const ForwardBatch& batch);
  bool run_decode_graph(const ForwardBatch& batch);
  // A sampled step: enqueue_sampled_step enqueues the forward, the sampling (enqueue_sampling: settings up,
  // results down into the launching slot's pinned staging) and records its event; collect_sampled_step waits on it
  // and reads the results.
  void enqueue_sampled_step(const ForwardBatch& batch, std::span<const RowSampling> rows);
  // The sampling half of a sampled step whose forward (num_rows logits rows) is already enqueued.
  void enqueue_sampling_after_forward(int num_rows, std::span<const RowSampling> rows);
  void enqueue_sampling(std::span<const RowSampling> rows);
  struct StepSlot;
  // Waits for the step staged in `slot` and reads its results.
  void collect_sampled_step(const StepSlot& slot, std::vector<int32_t>& tokens, std::vector<RowLogprobs>& logprobs);
  // The sampled steps in flight (launch_step and launch_sampling enqueued, wait_step not yet collected).
  bool any_in_flight() const { return num_in_flight_ > 0; }

  // out [m, w.n] bf16 = x [m, w.k] bf16 · wᵀ + bias (GEMV for m ≤ 8, else FP8 or bf16 GEMM). x_quantized: act_ /
  // act_scales_ already hold x quantized for the FP8 GEMM (linear_quantizes(m, w); the norm wrote them), x unused.
  void add_row_major_copies();
  void linear(const uint16_t* x, int m, const DeviceLinear& w, uint16_t* out, bool x_quantized = false);
  // Whether linear(·, m, w, ·) quantizes its input into act_ for the FP8 GEMM.
  static bool linear_quantizes(int m, const DeviceLinear& w) { return w.fp8 && m > kernels::kGemvMaxRows; }
  // The decode GEMV's parameters for linear (m ≤ kGemvMaxRows, FP8 w).
  kernels::GemvFp8Params decode_gemv(const uint16_t* x, int m, const DeviceLinear& w, uint16_t* out) const;
  // qkv [m, w.n] bf16 = linear(x), then RoPE as `rope` says (rope.qkv is set here): in the decode GEMV's
  // epilogue where options_.decode_qkv_rope and the GEMV applies (qkv untouched), else launch_rope.
  void qkv_rope(const uint16_t* x, int m, const DeviceLinear& w, uint16_t* qkv, kernels::RopeParams rope,
                bool x_quantized = false);
  void experts(int layer, int num_tokens);

  // delta_ [T, hidden] bf16 ← Σ over the group's ranks (no-op without a group).
  void reduce_partial_outputs(int num_tokens);
  // Vocab-parallel unembedding: vocab_local_ [rows, local vocab] of every rank → logits_ [rows, vocab]
  // (forward()'s logits; sampled steps never gather).
  void gather_vocab_shards(int num_rows);
  // A sampled step's rows as sample_vocab_slices reads them (device pointers into sampling_).
  struct VocabSampledRows {
    const float* temperature = nullptr;  // [rows]
    const int32_t* top_k = nullptr;      // [rows]
    const float* top_p = nullptr;        // [rows]
    const uint64_t* seeds = nullptr;     // [rows]
    // The sampled rows (temperature > 0): all of them (s_rows), those with 0 < top_k < vocab (k_rows) and
    // those with top_p < 1 (p_rows), ascending.
    const int32_t *k_rows = nullptr, *p_rows = nullptr, *s_rows = nullptr;
    size_t num_k = 0, num_p = 0, num_s = 0;
    int32_t* tokens = nullptr;  // [rows] out
    // Penalties (penalty_offsets null: none): row r's entries [penalty_offsets[r], penalty_offsets[r + 1]) of
    // global ids and counts, its factors, and its f32 copy's row in penalized_ (penalized_rows[r] < 0: none).
    const int32_t *penalty_offsets = nullptr, *penalty_tokens = nullptr, *penalty_counts = nullptr;
    const float *presence = nullptr, *frequency = nullptr, *repetition = nullptr;
    const int32_t* penalized_rows = nullptr;  // [rows]
    int num_penalized = 0;
    // Log-probabilities (num_top null: none): kernels/sampling.h's outputs, written for every row.
    const int32_t* num_top = nullptr;   // [rows]
    float* out_logprobs = nullptr;      // [rows]
    int32_t* out_top_tokens = nullptr;  // [rows, kMaxTopLogprobs]
    float* out_top_logprobs = nullptr;  // [rows, kMaxTopLogprobs]
  };
  // Sampling on the vocab-parallel slices (kernels/vocab_sampling.h, kernels/vocab_logprobs.h,
  // model/cuda/cuda_vocab_sampling.cpp): tokens (and logprobs) ← the single-device rule's over vocab_local_
  // of every rank (penalized rows from their f32 slice copies in penalized_), exchanging only per-row records
  // (12·world bytes per row for the argmax; sampled rows add ≤ 8 KB: 2 × 4 rounds of 256-bin histograms,
  // masses and picks; logprobs 172·world bytes per row) instead of the [rows, vocab] logits. Greedy rows:
  // exactly the single-device token.
  void sample_vocab_slices(int num_rows, const VocabSampledRows& rows);
  bool vocab_parallel() const { return options_.comm != nullptr && options_.vocab_shard_rows > 0; }
  // The first vocabulary row this rank's embedding and unembedding hold (0 unless vocab_parallel()).
  int64_t vocab_begin() const { return vocab_parallel() ? options_.comm->rank() * options_.vocab_shard_rows : 0; }
  void mark(StepPhase phase) {
    if (phase_timer_) phase_timer_->mark(phase, stream_);
  }
  // With the routing traced: waits for this layer's router and records its logits [T, E] (eager steps only).
  void trace_routing(int num_tokens);

  GptOssConfig config_;
  CudaOptions options_;
  CudaWeights weights_;
  RopeTables rope_;
  cudaStream_t stream_ = nullptr;
  int32_t num_blocks_ = 0;
  int32_t block_size_ = 0;
  int32_t num_sliding_blocks_ = 0;  // > 0: sliding layers use their own pool (the ring)
  // Whether `layer` runs with a sliding window (its K/V stay bf16 under kv_cache_fp8).
  bool layer_has_window(int layer) const {
    return config_.sliding_window > 0 && config_.layer_is_sliding[static_cast<size_t>(layer)];
  }
  // Whether `layer` caches K/V as e4m3 (kv_cache_fp8 and a full-attention layer).
  bool layer_kv_fp8(int layer) const { return options_.kv_cache_fp8 && !layer_has_window(layer); }
  // per layer: [(blocks + 1)·block_size, kv_heads, 64] bf16 (e4m3 where layer_kv_fp8), blocks =
  // num_sliding_blocks_ for ring layers
  std::vector<DeviceBuffer> k_cache_, v_cache_;
  // [num_layers, 2, kv_heads] fp32: the K then V dequantization scales of each layer (read where
  // layer_kv_fp8), all kernels::kKvFp8DefaultScale.
  DeviceBuffer kv_scales_;

  // Step workspace, grown on demand (never shrunk); captured graphs hold its pointers.
  PinnedBuffer host_logits_;
  // What one step stages in pinned memory, one slot per step in flight (a step launched on top of another
  // must not overwrite what the other's copies still read or write): its plan, its sampling settings and
  // results (sampling, laid out by `layout`), and the event recorded after its results reach `sampling`.
  struct SampledLayout {  // byte offsets in StepSlot::sampling
    int num_rows = 0;
    size_t at_tokens = 0, at_logprob = 0, at_top_tokens = 0, at_top_logprobs = 0;
    bool any_logprobs = false;
    std::vector<int32_t> num_top;  // per row, when any_logprobs
  };
  struct StepSlot {
    PinnedBuffer plan, sampling;
    SampledLayout layout;
    cudaEvent_t done = nullptr;
  };
  std::array<StepSlot, 2> slots_;
  int first_in_flight_ = 0;  // the oldest step in flight's slot
  int num_in_flight_ = 0;    // sampled steps enqueued that wait_step has not collected (≤ 2)
  // The slot the step being enqueued stages in, and the newest step in flight's (the one pending rows read).
  StepSlot& launching_slot() { return slots_[static_cast<size_t>((first_in_flight_ + num_in_flight_) % 2)]; }
  const StepSlot& newest_in_flight() const {
    return slots_[static_cast<size_t>((first_in_flight_ + num_in_flight_ + 1) % 2)];
  }
  int forward_rows_ = -1;  // launch_forward's logits rows until launch_sampling, else −1
  DeviceBuffer sampling_;  // forward_sample's per-row settings and drawn tokens
  struct SliceRows {
    std::vector<int32_t> sampled, top_k, top_p;  // enqueue_sampling's lists for sample_vocab_slices (reused)
  };
  SliceRows slice_rows_;
  // forward_sample's penalized rows [penalized rows, vocab] fp32 (vocab-parallel: [.., local vocab] of the slice)
  DeviceBuffer penalized_;
  DeviceBuffer plan_;  // eager steps' plan
  DeviceBuffer residual_, delta_, normed_, qkv_, q_, attn_out_, act_, act_scales_, router_logits_, moe_workspace_,
      decode_workspace_, final_rows_, logits_;
  // Vocab-parallel unembedding: this rank's logits [rows, vocab_shard_rows] and every rank's slot
  // [world, rows · vocab_shard_rows] bf16.
  DeviceBuffer vocab_local_, vocab_slots_;
  // sample_vocab_slices's records, row states, histograms, masses and picks (grown per sampled step).
  DeviceBuffer vocab_exchange_;
  uint64_t workspace_generation_ = 0;
  std::vector<DecodeGraph> graphs_;
  int64_t graph_replays_ = 0;
  std::unique_ptr<kernels::CublasLtFp8Gemm> cublaslt_;  // null unless options_.cublaslt_dense with FP8 linears
  std::unique_ptr<CudaPhaseTimer> phase_timer_;         // null unless phase timing is on (benchmarks)
  std::unique_ptr<RoutingTrace> routing_trace_;         // null unless the routing is traced (benchmarks)
};

}  // namespace gossamer::model::cuda
