// The rows on which the samplers must agree (issue #12 §2), shared by the CPU test of the host sampler
// against the device sampler's reference (tests/engine/sampler_rule_test.cpp) and the GPU test of the host
// sampler against the device kernel (tests/engine_gpu/sampler_device_test.cpp):
//   - sampler_rows(): thousands of random requests over random logits (bf16-rounded ties, −inf entries,
//     small vocabularies and the real one) with every setting of the rule (greedy, temperature, top-k,
//     top-p, penalties, logprobs);
//   - reference_penalties(): a request's penalty list built independently of the engine's.
// Where the two may differ at all, draws_within_rounding (tests/kernels/sampling_boundaries.h) says.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "engine/request.h"

namespace gossamer::engine::testing {

struct SamplerRow {
  std::vector<float> logits;  // [vocab] f32
  Request request;            // sampling settings, prompt and output so far, rng_state
};

// `count` rows from a fixed seed: every 400th over the real vocabulary (201,088), the rest over 2–3,001.
inline std::vector<SamplerRow> sampler_rows(int count) {
  std::mt19937_64 rng(2026);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<SamplerRow> rows(static_cast<size_t>(count));
  for (int r = 0; r < count; ++r) {
    SamplerRow& row = rows[static_cast<size_t>(r)];
    const bool full_vocab = r % 400 == 0;
    const int vocab = full_vocab ? 201088 : 2 + static_cast<int>(rng() % 3000);
    const float scale = 0.5f + 6.0f * unit(rng);
    std::normal_distribution<float> normal(0.0f, scale);
    row.logits.resize(static_cast<size_t>(vocab));
    const bool bf16 = r % 2 == 0;  // bf16-rounded logits give real ties
    for (float& z : row.logits) z = bf16 ? round_to_bf16(normal(rng)) : normal(rng);
    std::vector<float>& logits = row.logits;
    if (r % 7 == 0) logits[rng() % logits.size()] = -std::numeric_limits<float>::infinity();
    if (r % 11 == 0) logits[rng() % logits.size()] = logits[rng() % logits.size()];  // an exact tie

    Request& request = row.request;
    SamplingParams& params = request.sampling;
    const int kind = static_cast<int>(rng() % 8);
    params.temperature = kind == 0 ? 0.0f : 0.1f + 1.9f * unit(rng);
    if (kind == 1 || kind == 4 || kind == 6) params.top_k = 1 + static_cast<int32_t>(rng() % std::min(vocab, 300));
    if (kind == 2 || kind == 4 || kind == 7) params.top_p = 0.05f + 0.95f * unit(rng);
    if (kind == 3 || kind == 5 || kind == 6) {
      params.presence_penalty = 4.0f * unit(rng) - 2.0f;
      params.frequency_penalty = 4.0f * unit(rng) - 2.0f;
      params.repetition_penalty = rng() % 2 ? 1.0f : 0.5f + 1.5f * unit(rng);
    }
    params.logprobs = r % 3 == 0 ? static_cast<int32_t>(rng() % 21) : -1;
    for (int i = 0; i < static_cast<int>(rng() % 40); ++i)
      request.prompt.push_back(static_cast<TokenId>(rng() % vocab));
    for (int i = 0; i < static_cast<int>(rng() % 60); ++i) {
      request.output.push_back(static_cast<TokenId>(rng() % std::min(vocab, 50)));  // repeats
    }
    request.rng_state = rng();
  }
  return rows;
}

// The request's penalty list as kernels/sampling.h step 0 defines it, built here from its prompt and
// output (not through the engine's PenaltyState): its distinct tokens in id order, with their output counts
// (prompt tokens count 0 and are listed only when the repetition penalty is on). Empty without penalties.
inline void reference_penalties(const Request& request, std::vector<int32_t>& tokens, std::vector<int32_t>& counts) {
  tokens.clear();
  counts.clear();
  if (!request.sampling.has_penalties()) return;
  std::map<TokenId, int32_t> count_of;
  if (request.sampling.repetition_penalty != 1.0f) {
    for (const TokenId token : request.prompt) count_of[token] += 0;
  }
  for (const TokenId token : request.output) count_of[token] += 1;
  for (const auto& [token, count] : count_of) {
    tokens.push_back(token);
    counts.push_back(count);
  }
}

}  // namespace gossamer::engine::testing
