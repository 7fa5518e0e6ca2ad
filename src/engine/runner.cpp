#include "engine/runner.h"

#include <algorithm>
#include <span>

#include "core/error.h"
#include "core/parallel.h"
#include "engine/sampler.h"
#include "engine/token_constraint.h"

namespace gossamer::engine {

Runner::Runner(model::Model& model, const EngineConfig& config)
    : model_(model),
      device_sampling_(config.device_sampling),
      vocab_size_(model.config().vocab_size),
      masks_(model.config().vocab_size) {}

void Runner::launch(const SchedulerOutput& step) {
  GOSSAMER_ASSERT(!in_flight_, "Runner::launch with a step in flight");
  // Build the batch: each sequence's new tokens are a contiguous slice of its known tokens.
  // NOTE: tokens_ is sized first and never grown below, so the spans into it stay valid.
  size_t num_tokens = 0;
  for (const ScheduledSequence& seq : step.sequences) num_tokens += static_cast<size_t>(seq.num_new);
  tokens_.resize(num_tokens);
  batch_.sequences.clear();
  sampled_.clear();
  size_t offset = 0;
  for (const ScheduledSequence& seq : step.sequences) {
    const Request* request = seq.request;
    const std::span<TokenId> tokens(tokens_.data() + offset, static_cast<size_t>(seq.num_new));
    for (int32_t i = 0; i < seq.num_new; ++i) {
      tokens[static_cast<size_t>(i)] = request->token_at(request->num_computed + i);
      GOSSAMER_ASSERT(tokens[static_cast<size_t>(i)] != kPendingToken, "request ", request->id,
                      " runs a token not known yet");
    }
    offset += tokens.size();
    model::SequenceInput input;
    input.tokens = tokens;
    input.num_cached = request->num_computed;
    input.block_table = request->block_table;
    input.sliding_block_table = request->sliding_block_table;
    input.logits = seq.sample ? model::LogitsWanted::kLast : model::LogitsWanted::kNone;
    batch_.sequences.push_back(input);
    if (seq.sample) sampled_.push_back({seq.request, 0, false});
  }
  constraints_.clear();
  for (const SampledRow& row : sampled_) constraints_.push_back(row.request->sampling.constraint.get());
  const bool any_constrained =
      std::any_of(constraints_.begin(), constraints_.end(), [](TokenConstraint* c) { return c != nullptr; });
  // On the device when the backend can: only token ids cross back (no [rows, vocab] logits copy and
  // host softmax). The rows' RNG states advance here, before the step.
  // NOTE: a step with a masked row samples on the host unless the backend applies token masks itself
  // (kernels/token_mask.h).
  if (any_constrained && device_sampling_ && model_.samples_on_device() && model_.samples_with_token_masks()) {
    // Only the sampling reads the masks: the forward starts first, and they are filled while it runs.
    on_device_ = true;
    model_.launch_forward(batch_);
    try {
      fill_token_masks();
    } catch (...) {
      abandon_forward();
      throw;
    }
    build_rows();
    model_.launch_sampling(std::span<const model::RowSampling>(rows_));
  } else {
    fill_token_masks();
    on_device_ =
        device_sampling_ && model_.samples_on_device() && (!masks_.any_masked() || model_.samples_with_token_masks());
    if (on_device_) {
      build_rows();
      model_.launch_step(batch_, std::span<const model::RowSampling>(rows_));
    } else {
      model_.launch_step(batch_, std::nullopt);
    }
  }
  in_flight_ = true;
}

void Runner::fill_token_masks() {
  // Structured output: each constrained row's token mask (rows in parallel, each constraint owned by its
  // request).
  masks_.fill(constraints_);
  for (size_t row = 0; row < sampled_.size(); ++row) sampled_[row].no_token_allowed = masks_.none_allowed(row);
}

void Runner::build_rows() {
  rows_.clear();
  for (size_t row = 0; row < sampled_.size(); ++row) {
    rows_.push_back(device_row_sampling(*sampled_[row].request));
    rows_.back().token_mask = masks_.mask(row);
  }
}

void Runner::abandon_forward() {
  // A constraint threw after the forward started: finish the step unmasked and drop its tokens, so that
  // nothing is in flight when the error reaches the engine (which aborts the step's requests).
  try {
    rows_.clear();
    for (const SampledRow& row : sampled_) rows_.push_back(device_row_sampling(*row.request));
    model_.launch_sampling(std::span<const model::RowSampling>(rows_));
    model_.wait_step(result_);
  } catch (...) {  // NOTE: the constraint's error is the one reported
  }
}

const std::vector<SampledRow>& Runner::wait() {
  GOSSAMER_ASSERT(in_flight_, "Runner::wait with no step in flight");
  in_flight_ = false;  // NOTE: also when wait_step throws: the step is over either way
  model_.wait_step(result_);
  if (on_device_) {
    GOSSAMER_CHECK(result_.tokens.size() == sampled_.size(), "the model drew ", result_.tokens.size(), " tokens for ",
                   sampled_.size(), " sampled rows");
    for (size_t row = 0; row < sampled_.size(); ++row) {
      sampled_[row].token = result_.tokens[row];
      Request& request = *sampled_[row].request;
      if (request.sampling.logprobs >= 0) take_device_logprobs(request, result_.logprobs[row]);
    }
  } else {
    sample_on_host();
  }
  return sampled_;
}

void Runner::sample_on_host() {
  // Every logits row in parallel (each request owns its RNG state, so the result does not depend on the
  // thread count): a full-vocabulary softmax per sequence dominated the step on the CPU.
  GOSSAMER_CHECK(result_.logits.size() == sampled_.size() * static_cast<size_t>(vocab_size_), "the model returned ",
                 result_.logits.size(), " logits for ", sampled_.size(), " rows");
  const auto words = static_cast<size_t>(token_mask_words(vocab_size_));
  parallel_for(static_cast<int64_t>(sampled_.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const std::span<float> logits(result_.logits.data() + row * vocab_size_, static_cast<size_t>(vocab_size_));
      SampledRow& sampled = sampled_[static_cast<size_t>(row)];
      if (const uint32_t* mask = masks_.mask(static_cast<size_t>(row))) {
        apply_token_mask(logits, std::span<const uint32_t>(mask, words));
      }
      sampled.token = sample_request_token(logits, *sampled.request);
    }
  });
}

}  // namespace gossamer::engine
