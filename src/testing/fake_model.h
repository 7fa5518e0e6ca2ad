// FakeModel: a Model with no weights, for engine and server tests and for `gossamer serve --test-backend`.
//
// Its "KV cache" stores token ids in pages, so every forward reads a sequence's history back through the
// block table it was given: a wrong block table changes the output, which is what the tests want to catch.
// The next token is a deterministic function of the whole history (a hash → an ordinary token id, with a
// few runner-up tokens so that sampling has a distribution to draw from; every other token is at -30, so
// sampling at temperature 1 stays on those four). Scripts force exact outputs: the
// first script whose trigger (token ids) occurs in the history plays its tokens in order after the prompt
// (the position in the script is the longest suffix of the history that is a prefix of the script); a
// scripted token gets all the probability mass, so scripts play the same at any temperature.
//
// Contract: same as model::Model (validates block tables, throws gossamer::Error on bad input).
// Thread-compatible: one forward at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/model.h"

namespace gossamer::engine {

struct FakeScript {
  std::vector<int32_t> trigger;  // token ids that must occur in the history (empty = always)
  std::vector<int32_t> output;   // tokens to emit, usually ending with <|return|> or <|call|>
};

struct FakeModelOptions {
  int32_t vocab_size = 201088;
  int32_t max_position_embeddings = 8192;
  int32_t step_delay_us = 0;  // sleep per forward, to make streams last in tests
  int32_t stop_one_in = 0;    // without a script: emit <|return|> when hash % stop_one_in == 0 (0 = never)
  std::vector<FakeScript> scripts;
  bool device_sampling = false;  // offer forward_sample (drawn with the host sampler from each row's seed)
  // With device_sampling: take a second sampled step on top of one in flight, its pending rows fed from the
  // first's tokens (model.h; the default launch_step's two copies), as the cuda backend does on its device.
  bool feeds_pending_tokens = false;
};

class FakeModel : public model::Model {
 public:
  explicit FakeModel(FakeModelOptions options = {});

  const model::GptOssConfig& config() const override { return config_; }
  std::string backend_name() const override { return "fake"; }
  // (The sliding pool of the ring is accepted and ignored: the fake keeps one cache.)
  void allocate_kv_cache_impl(int32_t num_blocks, int32_t block_size, int32_t num_sliding_blocks) override;
  int32_t kv_num_blocks() const override { return num_blocks_; }
  int32_t kv_block_size() const override { return block_size_; }
  int64_t kv_bytes_per_block() const override { return static_cast<int64_t>(block_size_ > 0 ? block_size_ : 16) * 4; }
  void forward(const model::ForwardBatch& batch, std::vector<float>& logits) override;
  bool samples_on_device() const override { return options_.device_sampling; }
  bool samples_with_token_masks() const override { return options_.device_sampling; }
  bool feeds_pending_tokens_on_device() const override {
    return options_.device_sampling && options_.feeds_pending_tokens;
  }
  void forward_sample(const model::ForwardBatch& batch, std::span<const model::RowSampling> rows,
                      std::vector<int32_t>& tokens, std::vector<model::RowLogprobs>& logprobs) override;
  using model::Model::forward_sample;
  int64_t num_forward_sample_calls() const { return num_forward_sample_calls_; }

  // The token the model would put first in its logits after `history` (for tests).
  int32_t next_token(const std::vector<int32_t>& history) const;
  // The script's next token when a script is playing, else nullopt.
  std::optional<int32_t> scripted_token(const std::vector<int32_t>& history) const;
  int64_t num_forward_calls() const { return num_forward_calls_; }

 private:
  FakeModelOptions options_;
  model::GptOssConfig config_;
  int32_t num_blocks_ = 0;
  int32_t block_size_ = 0;
  std::vector<int32_t> cache_;  // [num_blocks * block_size] token ids, -1 = never written
  int64_t num_forward_calls_ = 0;
  int64_t num_forward_sample_calls_ = 0;
};

}  // namespace gossamer::engine
