// Sampler: picks the next token from one row of logits with a request's own settings and RNG.
//
// The rule is kernels/sampling.h's (penalties, greedy, temperature, top-k, top-p, the uniform draw in index
// order); the host and device samplers implement it alike and are tested token for token against its CPU
// reference (tests/engine/sampler_rule_test.cpp). The random stream is the same too: each non-greedy draw takes
// seed = splitmix64(rng_state) and uses sampling_uniform(seed).
//
// Contract: pure function of (logits, params, rng_state[, the request's tokens]); rng_state advances only
// when a random draw is made, so a request preempted and recomputed samples the same tokens.
// temperature <= 1e-5 or top_k 1 is greedy (argmax, lowest id on ties). top_k 0 and top_p 1 disable those
// filters.
#pragma once

#include <cstdint>
#include <span>

#include "engine/request.h"
#include "model/model.h"

namespace gossamer::engine {

// Seeds the per-request RNG state from the request's seed (or a default seed mixed with its id).
uint64_t initial_rng_state(const SamplingParams& params, uint64_t default_seed, RequestId id);

// logits: [vocab_size] float32. No penalties, no logprobs.
TokenId sample_token(std::span<const float> logits, const SamplingParams& params, uint64_t& rng_state);

// The request's next token with its penalties (its prompt and output so far) and, when it asked for them,
// its logprobs appended to request.pending_logprobs. Advances request.rng_state and request.penalty.
TokenId sample_request_token(std::span<const float> logits, Request& request);

// The same request settings for a backend that samples on its device (model::Model::forward_sample):
// greedy where sample_token is greedy (no draw, rng_state unchanged), else one draw of rng_state becomes
// the row's seed, as sample_token does.
model::RowSampling device_row_sampling(const SamplingParams& params, uint64_t& rng_state);

// The request's whole device row: device_row_sampling of its settings and state, its penalty list (brought
// up to date with its output; the spans point into request.penalty and stay valid until its next token)
// and its logprob count.
model::RowSampling device_row_sampling(Request& request);
// A device row's logprobs as the engine reports them.
SampledLogprobs sampled_logprobs(const model::RowLogprobs& logprobs);

// rng_state after `draws` tokens sampled with `params` (greedy ones draw nothing): the state a speculative
// row (engine/speculative.h) samples from, and the request's state once its step's tokens are kept.
uint64_t rng_state_after(const SamplingParams& params, uint64_t rng_state, int32_t draws);

// Raw logprobs of one row (log_softmax of `logits`): `token`'s and the num_top most likely (≤ 20).
SampledLogprobs raw_logprobs(std::span<const float> logits, TokenId token, int32_t num_top);

}  // namespace gossamer::engine
