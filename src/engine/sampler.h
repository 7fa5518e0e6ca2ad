// Sampler: picks the next token from one row of logits with a request's own settings and RNG.
//
// Contract: pure function of (logits, params, rng_state); rng_state advances only when a random draw is
// made, so a request preempted and recomputed samples the same tokens. temperature <= 1e-5 is greedy
// (argmax, lowest id on ties). top_k 0 and top_p 1 disable those filters. Logits at -inf never win.
#pragma once

#include <cstdint>
#include <span>

#include "engine/request.h"
#include "model/model.h"

namespace gossamer::engine {

// Seeds the per-request RNG state from the request's seed (or a default seed mixed with its id).
uint64_t initial_rng_state(const SamplingParams& params, uint64_t default_seed, RequestId id);

// logits: [vocab_size] float32.
TokenId sample_token(std::span<const float> logits, const SamplingParams& params, uint64_t& rng_state);

// The same request settings for a backend that samples on its device (model::Model::forward_sample):
// greedy where sample_token is greedy (no draw, rng_state unchanged), else one draw of rng_state becomes
// the row's seed. The device sampler's filters differ from sample_token's in rounding only.
model::RowSampling device_row_sampling(const SamplingParams& params, uint64_t& rng_state);

}  // namespace gossamer::engine
