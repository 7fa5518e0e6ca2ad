#include "engine/engine_config.h"

#include <algorithm>

#include "core/error.h"
#include "core/log.h"
#include "model/model.h"

namespace gossamer::engine {
namespace {

// The ring's blocks per running sequence (window + margin positions, +2 blocks of rounding, +1 for the
// step's new positions; with speculative decoding the drafts and the position after them, +1 block of
// rounding) and for one step's new positions (max_num_batched_tokens), so that
// ring_blocks_needed = per_seq · max_num_seqs + chunk (engine_config.h).
int64_t ring_blocks_per_seq(int32_t window, int32_t block_size, const SpeculativeConfig& speculative) {
  const int64_t draft_positions = speculative.enabled() ? speculative.num_speculative_tokens + 1 : 0;
  const int64_t draft_blocks = draft_positions > 0 ? (draft_positions + block_size - 1) / block_size + 1 : 0;
  return (int64_t{window} - 1 + model::kSlidingKeepMargin + block_size - 1) / block_size + 3 + draft_blocks;
}
int64_t ring_blocks_per_step(int32_t max_num_batched_tokens, int32_t block_size) {
  return (int64_t{max_num_batched_tokens} + block_size - 1) / block_size;
}

}  // namespace

void EngineConfig::resolve_budgets() {
  if (!decode_first) {
    if (max_num_batched_tokens == 0) max_num_batched_tokens = kLegacyBatchedTokens;
    if (max_prefill_tokens == 0) max_prefill_tokens = max_num_batched_tokens;
    return;
  }
  if (max_prefill_tokens == 0) {
    const int32_t wanted = max_step_ms > 0.0 ? kAdaptivePrefillTokensCap : kDefaultPrefillTokens;
    max_prefill_tokens = max_num_batched_tokens > 0 ? std::max(1, std::min(wanted, max_num_batched_tokens)) : wanted;
  }
  if (max_num_batched_tokens == 0) {
    max_num_batched_tokens =
        static_cast<int32_t>(std::min<int64_t>(int64_t{max_num_seqs} + max_prefill_tokens, int64_t{1} << 30));
  }
}

void EngineConfig::validate() const {
  EngineConfig resolved = *this;
  resolved.resolve_budgets();
  resolved.validate_resolved();
}

void EngineConfig::validate_resolved() const {
  GOSSAMER_CHECK(max_num_seqs >= 1, "max_num_seqs must be >= 1 (got ", max_num_seqs, ")");
  GOSSAMER_CHECK(max_num_batched_tokens >= 1, "max_num_batched_tokens must be >= 1 (got ", max_num_batched_tokens,
                 "; 0 = auto is resolved before validation)");
  GOSSAMER_CHECK(max_prefill_tokens >= 1, "max_prefill_tokens must be >= 1 (got ", max_prefill_tokens, ")");
  GOSSAMER_CHECK(long_prefill_token_threshold >= 0, "long_prefill_token_threshold must be >= 0 (got ",
                 long_prefill_token_threshold, ")");
  GOSSAMER_CHECK(max_step_ms >= 0.0, "max_step_ms must be >= 0 (got ", max_step_ms, ")");
  GOSSAMER_CHECK(max_num_partial_prefills >= 0, "max_num_partial_prefills must be >= 0 (got ", max_num_partial_prefills,
                 ")");
  GOSSAMER_CHECK(max_model_len >= 2, "max_model_len must be >= 2 (got ", max_model_len, ")");
  GOSSAMER_CHECK(block_size >= 1 && block_size <= 1024, "block_size must be in [1, 1024] (got ", block_size, ")");
  GOSSAMER_CHECK(num_kv_blocks >= 1, "num_kv_blocks must be >= 1 (got ", num_kv_blocks, ")");
  GOSSAMER_CHECK(max_queued_requests >= 0, "max_queued_requests must be >= 0 (got ", max_queued_requests, ")");
  speculative.validate();
  GOSSAMER_CHECK(!speculative.enabled() || !async_scheduling,
                 "speculative decoding needs async scheduling off (--no-async-scheduling): a step's drafts come "
                 "from the tokens the step before it kept");
  const int64_t blocks_for_one = (static_cast<int64_t>(max_model_len) + block_size - 1) / block_size;
  GOSSAMER_CHECK(num_kv_blocks >= blocks_for_one, "the KV cache (", num_kv_blocks, " blocks of ", block_size,
                 " positions) cannot hold one sequence of max_model_len ", max_model_len,
                 " tokens: lower --max-model-len or give the cache more memory");
}

int32_t EngineConfig::ring_blocks_needed(int32_t window) const {
  const int64_t per_seq = ring_blocks_per_seq(window, block_size, speculative);
  const int64_t chunk = ring_blocks_per_step(max_num_batched_tokens, block_size);
  return static_cast<int32_t>(std::min<int64_t>(per_seq * max_num_seqs + chunk, 1 << 30));
}

int32_t EngineConfig::max_num_seqs_for_ring(int32_t window, int64_t ring_blocks) const {
  const int64_t per_seq = ring_blocks_per_seq(window, block_size, speculative);
  const int64_t chunk = ring_blocks_per_step(max_num_batched_tokens, block_size);
  return static_cast<int32_t>(std::clamp<int64_t>((ring_blocks - chunk) / per_seq, 0, 1 << 30));
}

EngineConfig EngineConfig::resolve(const model::Model& model) const {
  EngineConfig out = *this;
  out.resolve_budgets();
  const bool ring = out.sliding_window_ring && model.num_sliding_layers() > 0;
  out.sliding_window = ring ? model.config().sliding_window : 0;
  out.num_sliding_kv_blocks = ring ? out.ring_blocks_needed(out.sliding_window) : 0;
  const int32_t context = model.config().max_position_embeddings;
  if (out.max_model_len == 0) out.max_model_len = context;
  GOSSAMER_CHECK(context <= 0 || out.max_model_len <= context, "max_model_len ", out.max_model_len,
                 " exceeds the model's context of ", context, " tokens");
  if (out.num_kv_blocks == 0) {
    // NOTE: the model's own bytes per position and pool (bf16 or, --kv-cache-dtype fp8, e4m3 full layers on
    // cuda; float32 on cpu), known before allocation. The ring's pool first, the rest for the main pool.
    const model::KvPoolBytes pool = model::kv_pool_bytes_per_token(model, ring);
    const int64_t ring_block_bytes = std::max<int64_t>(1, pool.ring * out.block_size);
    const auto ring_share = static_cast<int64_t>(static_cast<double>(out.kv_cache_memory_bytes) * kMaxRingShare);
    const auto ring_gib = [&] {
      return static_cast<double>(ring_block_bytes * out.num_sliding_kv_blocks) / double(int64_t{1} << 30);
    };
    if (ring && ring_block_bytes * out.num_sliding_kv_blocks > ring_share) {
      const int32_t fits = std::max(1, out.max_num_seqs_for_ring(out.sliding_window, ring_share / ring_block_bytes));
      if (fits < out.max_num_seqs) {
        const int32_t asked = out.max_num_seqs;
        const double asked_gib = ring_gib();
        out.max_num_seqs = fits;
        out.num_sliding_kv_blocks = out.ring_blocks_needed(out.sliding_window);
        GOSSAMER_LOG_WARN("max_num_seqs lowered from ", asked, " to ", fits, ": the sliding-window ring for ", asked,
                          " sequences would take ", asked_gib, " GiB of the ",
                          static_cast<double>(out.kv_cache_memory_bytes) / double(int64_t{1} << 30),
                          " GiB KV budget, more than a quarter, and starve the full-attention pool; with max_num_seqs ",
                          fits, " it takes ", ring_gib(),
                          " GiB. Give the KV cache more memory to admit more sequences at once");
      }
    }
    const int64_t per_block = std::max<int64_t>(1, pool.main * out.block_size);
    const int64_t memory = out.kv_cache_memory_bytes - pool.ring * out.block_size * out.num_sliding_kv_blocks;
    const int64_t by_memory = std::max<int64_t>(0, memory) / per_block;
    const int64_t blocks_per_seq = (static_cast<int64_t>(out.max_model_len) + out.block_size - 1) / out.block_size;
    const int64_t wanted = blocks_per_seq * out.max_num_seqs;
    out.num_kv_blocks = static_cast<int32_t>(std::clamp<int64_t>(std::min(by_memory, wanted), 1, 1 << 30));
  }
  out.validate();
  return out;
}

}  // namespace gossamer::engine
