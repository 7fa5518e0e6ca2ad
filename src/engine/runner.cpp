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
      async_scheduling_(config.async_scheduling && config.device_sampling && model.samples_on_device() &&
                        model.feeds_pending_tokens_on_device()),
      vocab_size_(model.config().vocab_size),
      masks_(model.config().vocab_size) {}

bool Runner::can_launch_ahead(const SchedulerOutput& step) const {
  if (!async_scheduling_ || num_in_flight_ != 1 || step.empty()) return false;
  const LaunchedStep& in_flight = newest();
  if (!in_flight.on_device) return false;  // its tokens are drawn on the host, from its logits
  for (const ScheduledSequence& seq : step.sequences) {
    const Request& request = *seq.request;
    if (seq.sample && request.sampling.constraint) return false;  // its mask needs the grammar advanced first
    if (seq.num_draft > 0) return false;  // its draft came from the tokens of the step in flight
    if (request.num_pending == 0) continue;
    // NOTE: a pending token is always the sequence's one new token here (the decode after a sampled step).
    if (request.num_pending != 1 || request.sampled_launch != in_flight.launch || !seq.sample) return false;
    if (request.sampling.has_penalties()) return false;  // its counts need the pending token
  }
  return true;
}

void Runner::launch(const SchedulerOutput& step) {
  GOSSAMER_ASSERT(num_in_flight_ == 0 || can_launch_ahead(step), "Runner::launch with a step in flight");
  const int64_t in_flight_launch = num_in_flight_ > 0 ? newest().launch : -1;
  LaunchedStep& launched = launched_[static_cast<size_t>((first_ + num_in_flight_) % 2)];
  launched.launch = num_launches_ + 1;
  launched.sampled.clear();
  // Build the batch: each sequence's new tokens are a contiguous slice of its known tokens (a step launched
  // ahead: the last one may be pending, read on the device from the step in flight's row).
  // NOTE: tokens_ is sized first and never grown below, so the spans into it stay valid.
  size_t num_tokens = 0;
  for (const ScheduledSequence& seq : step.sequences) num_tokens += static_cast<size_t>(seq.num_new + seq.num_draft);
  tokens_.resize(num_tokens);
  batch_.sequences.clear();
  size_t offset = 0;
  for (const ScheduledSequence& seq : step.sequences) {
    Request* request = seq.request;
    const std::span<TokenId> tokens(tokens_.data() + offset, static_cast<size_t>(seq.num_new + seq.num_draft));
    model::SequenceInput input;
    GOSSAMER_ASSERT(seq.num_draft == 0 ||
                        (seq.sample && seq.num_new == 1 && request->draft.size() == static_cast<size_t>(seq.num_draft)),
                    "request ", request->id, ": a draft needs a sampled decode row and its tokens");
    for (int32_t j = 0; j < seq.num_draft; ++j)
      tokens[static_cast<size_t>(seq.num_new + j)] = request->draft[static_cast<size_t>(j)];
    for (int32_t i = 0; i < seq.num_new; ++i) {
      tokens[static_cast<size_t>(i)] = request->token_at(request->num_computed + i);
      if (tokens[static_cast<size_t>(i)] != kPendingToken) continue;
      GOSSAMER_ASSERT(i + 1 == seq.num_new && request->sampled_launch == in_flight_launch, "request ", request->id,
                      " runs a token not known yet");
      input.pending_from_row = request->sampled_row;
    }
    offset += tokens.size();
    input.tokens = tokens;
    input.num_cached = request->num_computed;
    input.block_table = request->block_table;
    input.sliding_block_table = request->sliding_block_table;
    input.logits = seq.num_draft > 0 ? model::LogitsWanted::kAll
                   : seq.sample      ? model::LogitsWanted::kLast
                                     : model::LogitsWanted::kNone;
    batch_.sequences.push_back(input);
    if (seq.num_draft > 0) {
      uint64_t state = request->rng_state;  // row i: the state after i draws
      for (int32_t i = 0; i <= seq.num_draft; ++i) {
        SampledRow row{seq.request, 0, false};
        row.speculative = true;
        row.num_draft = i == 0 ? seq.num_draft : 0;
        row.rng_state = state;
        state = rng_state_after(request->sampling, state, 1);
        launched.sampled.push_back(row);
      }
    } else if (seq.sample) {
      launched.sampled.push_back({seq.request, 0, false});
    }
  }
  constraints_.clear();
  for (const SampledRow& row : launched.sampled) constraints_.push_back(row.request->sampling.constraint.get());
  const bool any_constrained =
      std::any_of(constraints_.begin(), constraints_.end(), [](TokenConstraint* c) { return c != nullptr; });
  // On the device when the backend can: only token ids cross back (no [rows, vocab] logits copy and
  // host softmax). The rows' RNG states advance here, before the step.
  // NOTE: a step with a masked row samples on the host unless the backend applies token masks itself
  // (kernels/token_mask.h).
  if (any_constrained && device_sampling_ && model_.samples_on_device() && model_.samples_with_token_masks()) {
    // Only the sampling reads the masks: the forward starts first, and they are filled while it runs.
    launched.on_device = true;
    model_.launch_forward(batch_);
    try {
      fill_token_masks(launched);
    } catch (...) {
      abandon_forward(launched);
      throw;
    }
    build_rows(launched);
    model_.launch_sampling(std::span<const model::RowSampling>(rows_));
  } else {
    fill_token_masks(launched);
    launched.on_device =
        device_sampling_ && model_.samples_on_device() && (!masks_.any_masked() || model_.samples_with_token_masks());
    if (launched.on_device) {
      build_rows(launched);
      model_.launch_step(batch_, std::span<const model::RowSampling>(rows_));
    } else {
      model_.launch_step(batch_, std::nullopt);
    }
  }
  ++num_launches_;
  ++num_in_flight_;
  // The marks a step launched on top of this one reads its pending tokens' rows from.
  for (size_t row = 0; row < launched.sampled.size(); ++row) {
    Request& request = *launched.sampled[row].request;
    request.sampled_launch = launched.launch;
    request.sampled_row = static_cast<int32_t>(row);
  }
}

void Runner::fill_token_masks(LaunchedStep& step) {
  // Structured output: each constrained row's token mask (rows in parallel, each constraint owned by its
  // request).
  masks_.fill(constraints_);
  for (size_t row = 0; row < step.sampled.size(); ++row) step.sampled[row].no_token_allowed = masks_.none_allowed(row);
}

void Runner::build_rows(const LaunchedStep& step) {
  rows_.clear();
  for (size_t row = 0; row < step.sampled.size(); ++row) {
    const SampledRow& sampled = step.sampled[row];
    if (sampled.speculative) {  // an eligible request (speculative.h): no penalties or mask
      uint64_t state = sampled.rng_state;
      rows_.push_back(device_row_sampling(sampled.request->sampling, state));
      rows_.back().num_top_logprobs = sampled.request->sampling.logprobs;
    } else {
      rows_.push_back(device_row_sampling(*sampled.request));
      rows_.back().token_mask = masks_.mask(row);
    }
  }
}

void Runner::abandon_forward(const LaunchedStep& step) {
  // A constraint threw after the forward started: finish the step unmasked and drop its tokens, so that
  // nothing is in flight when the error reaches the engine (which aborts the step's requests).
  try {
    rows_.clear();
    for (const SampledRow& row : step.sampled) rows_.push_back(device_row_sampling(*row.request));
    model_.launch_sampling(std::span<const model::RowSampling>(rows_));
    model_.wait_step(result_);
  } catch (...) {  // NOTE: the constraint's error is the one reported
  }
}

const std::vector<SampledRow>& Runner::wait() {
  GOSSAMER_ASSERT(num_in_flight_ > 0, "Runner::wait with no step in flight");
  LaunchedStep& step = launched_[static_cast<size_t>(first_)];
  first_ = (first_ + 1) % 2;
  --num_in_flight_;  // NOTE: also when wait_step throws: the step is over either way
  model_.wait_step(result_);
  if (step.on_device) {
    GOSSAMER_CHECK(result_.tokens.size() == step.sampled.size(), "the model drew ", result_.tokens.size(),
                   " tokens for ", step.sampled.size(), " sampled rows");
    for (size_t row = 0; row < step.sampled.size(); ++row) {
      step.sampled[row].token = result_.tokens[row];
      Request& request = *step.sampled[row].request;
      if (request.sampling.logprobs < 0) continue;
      if (step.sampled[row].speculative) {
        step.sampled[row].logprobs = sampled_logprobs(result_.logprobs[row]);
      } else {
        request.pending_logprobs.push_back(sampled_logprobs(result_.logprobs[row]));
      }
    }
  } else {
    sample_on_host(step);
  }
  return step.sampled;
}

void Runner::sample_on_host(LaunchedStep& step) {
  // NOTE: masks_ are still this step's: no step is launched on top of one sampled on the host.
  // Every logits row in parallel (each request owns its RNG state, so the result does not depend on the
  // thread count): a full-vocabulary softmax per sequence dominated the step on the CPU.
  GOSSAMER_CHECK(result_.logits.size() == step.sampled.size() * static_cast<size_t>(vocab_size_), "the model returned ",
                 result_.logits.size(), " logits for ", step.sampled.size(), " rows");
  const auto words = static_cast<size_t>(token_mask_words(vocab_size_));
  parallel_for(static_cast<int64_t>(step.sampled.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const std::span<float> logits(result_.logits.data() + row * vocab_size_, static_cast<size_t>(vocab_size_));
      SampledRow& sampled = step.sampled[static_cast<size_t>(row)];
      if (sampled.speculative) {  // its own copy of the RNG state; no penalties or mask
        uint64_t state = sampled.rng_state;
        const SamplingParams& params = sampled.request->sampling;
        sampled.token = sample_token(logits, params, state);
        if (params.logprobs >= 0) sampled.logprobs = raw_logprobs(logits, sampled.token, params.logprobs);
        continue;
      }
      if (const uint32_t* mask = masks_.mask(static_cast<size_t>(row))) {
        apply_token_mask(logits, std::span<const uint32_t>(mask, words));
      }
      sampled.token = sample_request_token(logits, *sampled.request);
    }
  });
}

}  // namespace gossamer::engine
