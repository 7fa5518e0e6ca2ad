#include "model/model.h"

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace gossamer::model {

// The default launch_step's copy: the batch and the sampling rows with every span re-pointed into `ints`
// and `masks`, which are sized before the copy so that nothing moves under the spans.
struct Model::DeferredStep {
  bool launched = false;
  bool sampled = false;
  std::vector<int32_t> ints;    // tokens, block tables, sliding tables, penalty tokens and counts
  std::vector<uint32_t> masks;  // [masked rows, ceil(vocab / 32)] token masks
  ForwardBatch batch;
  std::vector<RowSampling> rows;
};

Model::Model() = default;
Model::~Model() = default;

void Model::forward_sample(const ForwardBatch&, std::span<const RowSampling>, std::vector<int32_t>&,
                           std::vector<RowLogprobs>&) {
  GOSSAMER_THROW("the ", backend_name(), " backend does not sample on its device (use forward)");
}

void Model::launch_step(const ForwardBatch& batch, std::optional<std::span<const RowSampling>> rows) {
  if (!deferred_) deferred_ = std::make_unique<DeferredStep>();
  DeferredStep& step = *deferred_;
  GOSSAMER_CHECK(!step.launched, "launch_step: a step is already in flight");
  const size_t mask_words = (static_cast<size_t>(config().vocab_size) + 31) / 32;
  size_t num_ints = 0, num_words = 0;
  for (const SequenceInput& seq : batch.sequences)
    num_ints += seq.tokens.size() + seq.block_table.size() + seq.sliding_block_table.size();
  if (rows) {
    for (const RowSampling& row : *rows) {
      num_ints += row.penalty_tokens.size() + row.penalty_counts.size();
      num_words += row.token_mask != nullptr ? mask_words : 0;
    }
  }
  step.ints.resize(num_ints);
  step.masks.resize(num_words);
  size_t at = 0, at_mask = 0;
  const auto copy = [&](std::span<const int32_t> from) {
    std::copy(from.begin(), from.end(), step.ints.begin() + static_cast<std::ptrdiff_t>(at));
    const std::span<const int32_t> to(step.ints.data() + at, from.size());
    at += from.size();
    return to;
  };
  step.batch.sequences.assign(batch.sequences.begin(), batch.sequences.end());
  for (SequenceInput& seq : step.batch.sequences) {
    seq.tokens = copy(seq.tokens);
    seq.block_table = copy(seq.block_table);
    seq.sliding_block_table = copy(seq.sliding_block_table);
  }
  step.sampled = rows.has_value();
  step.rows.clear();
  if (rows) step.rows.assign(rows->begin(), rows->end());
  for (RowSampling& row : step.rows) {
    row.penalty_tokens = copy(row.penalty_tokens);
    row.penalty_counts = copy(row.penalty_counts);
    if (row.token_mask != nullptr) {
      std::copy_n(row.token_mask, mask_words, step.masks.begin() + static_cast<std::ptrdiff_t>(at_mask));
      row.token_mask = step.masks.data() + at_mask;
      at_mask += mask_words;
    }
  }
  step.launched = true;
}

void Model::launch_forward(const ForwardBatch& batch) {
  GOSSAMER_CHECK(forward_waiting_ == nullptr, "launch_forward: a forward already waits for its rows");
  forward_waiting_ = &batch;
}

void Model::launch_sampling(std::span<const RowSampling> rows) {
  GOSSAMER_CHECK(forward_waiting_ != nullptr, "launch_sampling without launch_forward");
  const ForwardBatch& batch = *std::exchange(forward_waiting_, nullptr);
  launch_step(batch, rows);
}

void Model::wait_step(StepResult& result) {
  GOSSAMER_CHECK(deferred_ && deferred_->launched, "wait_step: no step in flight");
  DeferredStep& step = *deferred_;
  step.launched = false;  // NOTE: the step is over even when it throws
  if (step.sampled) {
    forward_sample(step.batch, step.rows, result.tokens, result.logprobs);
  } else {
    forward(step.batch, result.logits);
  }
}

}  // namespace gossamer::model
