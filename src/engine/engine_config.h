// EngineConfig: the engine's knobs, filled from the CLI, validated once, never written back.
//
// Contract: validate() throws gossamer::Error naming the first bad field. resolve() fills the derived
// fields that depend on the model (max_model_len 0 → the model's context, num_kv_blocks 0 → enough
// blocks for max_num_seqs full-length sequences capped by kv_cache_memory_bytes) and then validates.
// With the ring (a model with sliding-window layers and sliding_window_ring), the sliding layers get a
// pool sized so that it can never run out (ring_blocks_needed), and num_kv_blocks counts blocks of the
// full-attention layers only, so the same memory holds about twice the tokens on gpt-oss. With num_kv_blocks 0
// and a ring for max_num_seqs sequences that would take more than kMaxRingShare of kv_cache_memory_bytes,
// resolve() lowers max_num_seqs to the most sequences whose ring fits in that share (at least 1) and logs a
// warning; max_num_batched_tokens stays as resolved. Everything downstream (Engine, Scheduler, Runner, the
// server) reads the resolved copy, so it sees the lowered max_num_seqs.
#pragma once

#include <cstdint>

#include "engine/speculative.h"

namespace gossamer::model {
class Model;
}

namespace gossamer::engine {

struct EngineConfig {
  int32_t max_num_seqs = 256;                // most sequences in one step (running batch size); see kMaxRingShare
  int32_t max_num_batched_tokens = 0;        // token budget of one step (decodes + prompt chunks); 0 = auto (below)
  int32_t max_prefill_tokens = 0;            // prompt tokens per step next to decodes; 0 = auto (below)
  int32_t long_prefill_token_threshold = 0;  // most prompt tokens one request gets per step (0 = no cap)
  int32_t max_num_partial_prefills = 1;      // requests admitted mid-prompt at once (0 = no cap)
  bool decode_first = false;  // the decode-first policy (scheduler.h), opt-in: H200-measured below; false = one budget
  double max_step_ms = 0.0;   // > 0: the prompt budget adapts (≤ max_prefill_tokens) so that steps with decodes
                              // take about this long by the measured step times (scheduler.h); 0 = fixed
  int32_t max_model_len = 0;  // prompt + output limit per request; 0 = the model's context
  int32_t block_size = 16;    // KV positions per cache block
  int32_t num_kv_blocks = 0;  // KV cache blocks; 0 = derived from kv_cache_memory_bytes
  int64_t kv_cache_memory_bytes = 1LL << 30;  // KV budget used when num_kv_blocks is 0
  int32_t max_queued_requests = 1024;         // waiting requests beyond which submit() is refused (HTTP 429)
  bool sliding_window_ring = true;            // sliding-window layers keep only their window (a second pool)
  int32_t num_sliding_kv_blocks = 0;          // derived: the ring's pool (0 = no ring)
  int32_t sliding_window = 0;                 // derived: the model's window when the ring is on
  uint64_t default_seed = 0;                  // seed for requests that give none (mixed with the request id)
  bool device_sampling = true;                // draw tokens on the model's device when it can (forward_sample)
  bool enable_prefix_caching = true;          // reuse the cached KV blocks of shared prompt prefixes
  // Launch step N+1 before step N's tokens are read back, its pending ids fed on the device (engine.h), where
  // the model can (feeds_pending_tokens_on_device) and device_sampling is on. Off by default until measured
  // on the H200 (A/B: --async-scheduling / --no-async-scheduling).
  bool async_scheduling = false;
  // Speculative decoding by prompt lookup (speculative.h; serve --speculative-config); off by default. Needs
  // async_scheduling off: a step's drafts come from the tokens the step before it kept.
  SpeculativeConfig speculative;

  // The step budgets when left at 0 (docs/engine-scheduler.md "Scheduling at load"): prompt tokens per step
  // kDefaultPrefillTokens, and a step of every decode plus that: max_num_seqs + max_prefill_tokens.
  // Without decode_first the old default: one budget of 2048 shared in running order.
  static constexpr int32_t kDefaultPrefillTokens = 768;
  // With max_step_ms the prompt budget adapts within [kMinAdaptivePrefillTokens, max_prefill_tokens], whose
  // default is then kAdaptivePrefillTokensCap.
  static constexpr int32_t kMinAdaptivePrefillTokens = 128;
  static constexpr int32_t kAdaptivePrefillTokensCap = 8192;
  static constexpr int32_t kLegacyBatchedTokens = 2048;
  // The most of an automatic KV budget the ring may take. NOTE: the ring is reserved per admitted sequence
  // (window + margin each, whether or not the sequence is long), while the full-attention pool is what bounds
  // how many sequences actually run; past this share the full pool starves (gpt-oss-120b on one H200 with
  // --max-num-seqs 1024: the ring alone would exceed the whole budget), so max_num_seqs is lowered instead.
  static constexpr double kMaxRingShare = 0.25;
  void resolve_budgets();

  // Validates a copy with the budgets resolved (so 0 = auto passes).
  void validate() const;
  void validate_resolved() const;
  // Sliding-pool blocks that always suffice: every running sequence keeps window + margin positions
  // (+2 blocks of rounding) and one step adds at most max_num_batched_tokens positions (+1 block each).
  int32_t ring_blocks_needed(int32_t window) const;
  // The most max_num_seqs whose ring_blocks_needed(window) is at most ring_blocks (0 if not even one fits),
  // with this config's block_size and max_num_batched_tokens.
  int32_t max_num_seqs_for_ring(int32_t window, int64_t ring_blocks) const;
  // Fills max_model_len and num_kv_blocks from the model (lowering max_num_seqs when the ring would take more
  // than kMaxRingShare of an automatic budget, above), then validates. Returns the resolved copy.
  EngineConfig resolve(const model::Model& model) const;
};

}  // namespace gossamer::engine
