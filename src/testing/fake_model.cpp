#include "testing/fake_model.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/error.h"
#include "engine/sampler.h"
#include "engine/token_constraint.h"
#include "kernels/sampling.h"

namespace gossamer::engine {

namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdULL;
  return h ^ (h >> 33);
}

constexpr int32_t kOrdinaryTokens = 199998;
constexpr int32_t kReturnToken = 200002;

}  // namespace

FakeModel::FakeModel(FakeModelOptions options) : options_(std::move(options)) {
  config_.num_layers = 1;
  config_.num_experts = 1;
  config_.experts_per_token = 1;
  config_.vocab_size = options_.vocab_size;
  config_.hidden_size = 64;
  config_.intermediate_size = 64;
  config_.head_dim = 64;
  config_.num_q_heads = 1;
  config_.num_kv_heads = 1;
  config_.layer_is_sliding = {false};
  config_.max_position_embeddings = options_.max_position_embeddings;
}

void FakeModel::allocate_kv_cache_impl(int32_t num_blocks, int32_t block_size, int32_t /*num_sliding_blocks*/) {
  GOSSAMER_CHECK(num_blocks > 0 && block_size > 0, "FakeModel: bad KV cache shape");
  num_blocks_ = num_blocks;
  block_size_ = block_size;
  cache_.assign(static_cast<size_t>(num_blocks) * block_size, -1);
}

std::optional<int32_t> FakeModel::scripted_token(const std::vector<int32_t>& history) const {
  for (const FakeScript& script : options_.scripts) {
    const bool triggered = script.trigger.empty() || std::search(history.begin(), history.end(), script.trigger.begin(),
                                                                 script.trigger.end()) != history.end();
    if (!triggered || script.output.empty()) continue;
    // Longest k < |output| with history ending in output[0, k).
    const size_t limit = std::min(script.output.size() - 1, history.size());
    for (size_t k = limit + 1; k-- > 0;) {
      if (std::equal(script.output.begin(), script.output.begin() + k, history.end() - k)) {
        // NOTE: k = 0 always matches, so a finished script would restart; only play it if the history
        // does not already end with the whole script.
        const size_t n = script.output.size();
        if (history.size() >= n && std::equal(script.output.begin(), script.output.end(), history.end() - n)) break;
        return script.output[k];
      }
    }
  }
  return std::nullopt;
}

int32_t FakeModel::next_token(const std::vector<int32_t>& history) const {
  if (const auto scripted = scripted_token(history)) return *scripted;
  uint64_t h = 0x1234567;
  for (const int32_t token : history) h = mix(h, static_cast<uint64_t>(token));
  if (options_.stop_one_in > 0 && h % options_.stop_one_in == 0) return kReturnToken;
  return static_cast<int32_t>((h >> 7) % std::min(kOrdinaryTokens, options_.vocab_size));
}

void FakeModel::forward(const model::ForwardBatch& batch, std::vector<float>& logits) {
  GOSSAMER_CHECK(block_size_ > 0, "FakeModel: allocate_kv_cache was not called");
  // Validate everything before writing anything.
  size_t num_rows = 0;
  for (const model::SequenceInput& seq : batch.sequences) {
    const int64_t end = static_cast<int64_t>(seq.num_cached) + static_cast<int64_t>(seq.tokens.size());
    GOSSAMER_CHECK(seq.num_cached >= 0 && !seq.tokens.empty(), "FakeModel: empty sequence slice");
    GOSSAMER_CHECK(end <= config_.max_position_embeddings, "FakeModel: position ", end, " past the context");
    GOSSAMER_CHECK(static_cast<int64_t>(seq.block_table.size()) * block_size_ >= end, "FakeModel: block table of ",
                   seq.block_table.size(), " blocks is too short for ", end, " positions");
    for (const int32_t block : seq.block_table) {
      GOSSAMER_CHECK(block >= 0 && block < num_blocks_, "FakeModel: block id ", block, " out of range");
    }
    for (const int32_t token : seq.tokens) {
      GOSSAMER_CHECK(token >= 0 && token < config_.vocab_size, "FakeModel: token id ", token, " out of range");
    }
    if (seq.logits == model::LogitsWanted::kLast) num_rows += 1;
    if (seq.logits == model::LogitsWanted::kAll) num_rows += seq.tokens.size();
  }
  if (options_.step_delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(options_.step_delay_us));
  ++num_forward_calls_;

  const size_t vocab = static_cast<size_t>(config_.vocab_size);
  logits.assign(num_rows * vocab, -30.0f);
  // Write every sequence's new tokens into the cache first (as a model writes a layer's K/V before its
  // attention), then read each whole history back through its block table.
  for (const model::SequenceInput& seq : batch.sequences) {
    for (size_t i = 0; i < seq.tokens.size(); ++i) {
      const int32_t position = seq.num_cached + static_cast<int32_t>(i);
      cache_[static_cast<size_t>(seq.block_table[position / block_size_]) * block_size_ + position % block_size_] =
          seq.tokens[i];
    }
  }
  size_t row = 0;
  for (const model::SequenceInput& seq : batch.sequences) {
    const auto slot = [&](int32_t position) -> int32_t& {
      return cache_[static_cast<size_t>(seq.block_table[position / block_size_]) * block_size_ +
                    position % block_size_];
    };
    const int32_t end = seq.num_cached + static_cast<int32_t>(seq.tokens.size());
    const int32_t first_row_position = seq.logits == model::LogitsWanted::kAll ? seq.num_cached + 1 : end;
    if (seq.logits == model::LogitsWanted::kNone) continue;
    std::vector<int32_t> history;
    history.reserve(end);
    for (int32_t p = 0; p < end; ++p) {
      const int32_t token = slot(p);
      GOSSAMER_CHECK(token >= 0, "FakeModel: position ", p, " was never written to the cache");
      history.push_back(token);
    }
    for (int32_t length = first_row_position; length <= end; ++length) {
      const std::vector<int32_t> prefix(history.begin(), history.begin() + length);
      const std::optional<int32_t> scripted = scripted_token(prefix);
      const int32_t best = scripted ? *scripted : next_token(prefix);
      float* out = logits.data() + row * vocab;
      uint64_t h = static_cast<uint64_t>(best) * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(length);
      for (int i = 1; i <= (scripted ? 0 : 3); ++i) {
        h = mix(h, static_cast<uint64_t>(i));
        out[(h >> 5) % std::min<size_t>(vocab, kOrdinaryTokens)] = 7.0f - static_cast<float>(i);
      }
      out[best] = 10.0f;
      ++row;
    }
  }
}

void FakeModel::forward_sample(const model::ForwardBatch& batch, std::span<const model::RowSampling> rows,
                               std::vector<int32_t>& tokens, std::vector<model::RowLogprobs>& logprobs) {
  GOSSAMER_CHECK(options_.device_sampling, "FakeModel: device sampling is off");
  std::vector<float> logits;
  forward(batch, logits);
  const size_t vocab = static_cast<size_t>(config_.vocab_size), n = logits.size() / vocab;
  GOSSAMER_CHECK(rows.size() == n, "FakeModel: ", rows.size(), " sampling rows for ", n, " logits rows");
  ++num_forward_sample_calls_;
  tokens.resize(n);
  logprobs.assign(n, {});
  std::vector<float> penalized;
  for (size_t r = 0; r < n; ++r) {
    const model::RowSampling& row = rows[r];
    SamplingParams params;
    params.temperature = row.temperature;
    params.top_k = row.top_k;
    params.top_p = row.top_p;
    uint64_t state = row.seed;
    std::span<const float> raw(logits.data() + r * vocab, vocab);
    if (row.token_mask != nullptr) {  // structured output: refused tokens are -inf before everything else
      apply_token_mask(std::span<float>(logits.data() + r * vocab, vocab),
                       std::span<const uint32_t>(row.token_mask, (vocab + 31) / 32));
    }
    std::span<const float> x = raw;
    if (!row.penalty_tokens.empty()) {  // kernels/sampling.h step 0
      penalized.assign(raw.begin(), raw.end());
      for (size_t e = 0; e < row.penalty_tokens.size(); ++e) {
        float& z = penalized[static_cast<size_t>(row.penalty_tokens[e])];
        z = kernels::penalized_logit(z, row.penalty_counts[e], row.presence, row.frequency, row.repetition);
      }
      x = penalized;
    }
    tokens[r] = sample_token(x, params, state);
    if (row.num_top_logprobs >= 0) {
      const SampledLogprobs drawn = raw_logprobs(raw, tokens[r], row.num_top_logprobs);
      logprobs[r].logprob = drawn.logprob;
      for (const TokenLogprob& top : drawn.top) logprobs[r].top.emplace_back(top.token, top.logprob);
    }
  }
}

}  // namespace gossamer::engine
