#include "engine/sampler.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "core/error.h"
#include "kernels/sampling.h"

namespace gossamer::engine {

namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint32_t order_key(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

bool is_greedy(const SamplingParams& params) {
  return params.temperature <= 1e-5f || params.top_k == 1;
}

TokenId argmax(std::span<const float> logits) {
  TokenId best = 0;
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[best]) best = static_cast<TokenId>(i);
  }
  return best;
}

// Steps 1-4 of kernels/sampling.h for a non-greedy row, with the reference's arithmetic (double sums in
// the same order) but without its full sorts: nth_element for top-k, a growing partial sort for top-p.
TokenId draw(std::span<const float> x, float temperature, int32_t top_k, float top_p, uint64_t seed) {
  const size_t vocab = x.size();
  thread_local std::vector<uint32_t> keys;
  thread_local std::vector<double> weights;
  keys.resize(vocab);
  weights.resize(vocab);
  const float inv_t = 1.0f / temperature;
  float mx = -std::numeric_limits<float>::max();
  for (size_t i = 0; i < vocab; ++i) {
    const float v = x[i] * inv_t;
    keys[i] = order_key(v);
    mx = std::max(mx, v);
  }
  for (size_t i = 0; i < vocab; ++i) weights[i] = std::exp(static_cast<double>(x[i] * inv_t) - mx);
  uint32_t threshold = 0;
  if (top_k > 0 && static_cast<size_t>(top_k) < vocab) {
    thread_local std::vector<uint32_t> selected;
    selected = keys;
    std::nth_element(selected.begin(), selected.begin() + (top_k - 1), selected.end(), std::greater<>());
    threshold = selected[static_cast<size_t>(top_k - 1)];
  }
  const auto mass_above = [&](uint32_t t) {
    double sum = 0;
    for (size_t i = 0; i < vocab; ++i) {
      if (keys[i] >= t) sum += weights[i];
    }
    return sum;
  };
  if (top_p < 1.0f) {
    const double target = top_p * mass_above(threshold);
    thread_local std::vector<std::pair<uint32_t, int32_t>> candidates;
    candidates.clear();
    for (size_t i = 0; i < vocab; ++i) {
      if (keys[i] >= threshold) candidates.emplace_back(keys[i], static_cast<int32_t>(i));
    }
    const auto by_key = [](const auto& a, const auto& b) {
      return a.first > b.first || (a.first == b.first && a.second < b.second);
    };
    // NOTE: (key desc, index asc) is a total order, so every sorted prefix is the reference's prefix.
    size_t length = std::min<size_t>(candidates.size(), 256);
    size_t sorted = 0;
    for (;;) {
      if (sorted < length) {  // [0, sorted) holds the first candidates already; order the next ones after them
        std::partial_sort(candidates.begin() + static_cast<std::ptrdiff_t>(sorted),
                          candidates.begin() + static_cast<std::ptrdiff_t>(length), candidates.end(), by_key);
        sorted = length;
      }
      const bool complete = length == candidates.size();
      double cum = 0;
      bool found = false;
      for (size_t i = 0; i < length; ++i) {
        if (i + 1 == length && !complete) break;  // its tie group may continue past the sorted prefix
        cum += weights[static_cast<size_t>(candidates[i].second)];
        const bool last_of_key = i + 1 == candidates.size() || candidates[i + 1].first != candidates[i].first;
        if (last_of_key && cum >= target) {
          threshold = std::max(threshold, candidates[i].first);
          found = true;
          break;
        }
      }
      if (found || complete) break;
      length = std::min(candidates.size(), length * 8);
    }
  }
  const double total = mass_above(threshold);
  const double target = static_cast<double>(kernels::sampling_uniform(seed)) * total;
  double run = 0;
  TokenId last = -1;
  for (size_t i = 0; i < vocab; ++i) {
    if (keys[i] < threshold) continue;
    last = static_cast<TokenId>(i);
    run += weights[i];
    if (run > target) return last;
  }
  return last;
}

TokenId sample_row(std::span<const float> x, const SamplingParams& params, uint64_t& rng_state) {
  GOSSAMER_ASSERT(!x.empty(), "empty logits row");
  if (is_greedy(params)) return argmax(x);
  return draw(x, params.temperature, params.top_k, params.top_p, splitmix64(rng_state));
}

// Brings the request's penalty list up to date with its prompt (repetition only) and output.
void update_penalties(Request& request) {
  PenaltyState& state = request.penalty;
  const auto add = [&](TokenId token, int32_t count) {
    const auto [it, inserted] = state.index.emplace(token, static_cast<int32_t>(state.tokens.size()));
    if (inserted) {
      state.tokens.push_back(token);
      state.counts.push_back(0);
    }
    state.counts[static_cast<size_t>(it->second)] += count;
  };
  if (!state.prompt_listed) {
    if (request.sampling.repetition_penalty != 1.0f) {
      for (const TokenId token : request.prompt) add(token, 0);
    }
    state.prompt_listed = true;
  }
  // NOTE: a pending last token (the one being drawn, engine.h) is not counted.
  for (const auto known = static_cast<size_t>(request.num_known_output()); state.num_output_counted < known;
       ++state.num_output_counted)
    add(request.output[state.num_output_counted], 1);
}

SampledLogprobs row_raw_logprobs(std::span<const float> z, TokenId token, int32_t num_top) {
  double mx = -std::numeric_limits<double>::max();
  for (const float value : z) mx = std::max(mx, static_cast<double>(value));
  double sum = 0;
  for (const float value : z) sum += std::exp(static_cast<double>(value) - mx);
  const double log_total = mx + std::log(sum);
  SampledLogprobs out;
  out.logprob = static_cast<float>(static_cast<double>(z[static_cast<size_t>(token)]) - log_total);
  const auto n = static_cast<size_t>(std::clamp(num_top, 0, kernels::kMaxTopLogprobs));
  if (n == 0) return out;
  thread_local std::vector<int32_t> order;
  order.resize(z.size());
  for (size_t i = 0; i < z.size(); ++i) order[i] = static_cast<int32_t>(i);
  const size_t kept = std::min(n, z.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(kept), order.end(),
                    [&](int32_t a, int32_t b) {
                      return z[static_cast<size_t>(a)] > z[static_cast<size_t>(b)] ||
                             (z[static_cast<size_t>(a)] == z[static_cast<size_t>(b)] && a < b);
                    });
  for (size_t j = 0; j < kept; ++j) {
    out.top.push_back(
        {order[j], static_cast<float>(static_cast<double>(z[static_cast<size_t>(order[j])]) - log_total)});
  }
  return out;
}

}  // namespace

uint64_t initial_rng_state(const SamplingParams& params, uint64_t default_seed, RequestId id) {
  uint64_t state = params.seed ? *params.seed : default_seed ^ (id * 0xd1b54a32d192ed03ULL);
  splitmix64(state);
  return state;
}

TokenId sample_token(std::span<const float> logits, const SamplingParams& params, uint64_t& rng_state) {
  return sample_row(logits, params, rng_state);
}

TokenId sample_request_token(std::span<const float> logits, Request& request) {
  const SamplingParams& params = request.sampling;
  std::span<const float> x = logits;
  if (params.has_penalties()) {
    update_penalties(request);
    thread_local std::vector<float> penalized;
    penalized.assign(logits.begin(), logits.end());
    const PenaltyState& state = request.penalty;
    for (size_t e = 0; e < state.tokens.size(); ++e) {
      float& z = penalized[static_cast<size_t>(state.tokens[e])];
      z = kernels::penalized_logit(z, state.counts[e], params.presence_penalty, params.frequency_penalty,
                                   params.repetition_penalty);
    }
    x = penalized;
  }
  const TokenId token = sample_row(x, params, request.rng_state);
  if (params.logprobs >= 0) request.pending_logprobs.push_back(row_raw_logprobs(logits, token, params.logprobs));
  return token;
}

SampledLogprobs raw_logprobs(std::span<const float> logits, TokenId token, int32_t num_top) {
  return row_raw_logprobs(logits, token, num_top);
}

model::RowSampling device_row_sampling(const SamplingParams& params, uint64_t& rng_state) {
  model::RowSampling row;
  if (is_greedy(params)) return row;  // greedy
  row.temperature = params.temperature;
  row.top_k = params.top_k;
  row.top_p = params.top_p;
  row.seed = splitmix64(rng_state);
  return row;
}

model::RowSampling device_row_sampling(Request& request) {
  model::RowSampling row = device_row_sampling(request.sampling, request.rng_state);
  const SamplingParams& params = request.sampling;
  if (params.has_penalties()) {
    update_penalties(request);
    row.penalty_tokens = request.penalty.tokens;
    row.penalty_counts = request.penalty.counts;
    row.presence = params.presence_penalty;
    row.frequency = params.frequency_penalty;
    row.repetition = params.repetition_penalty;
  }
  row.num_top_logprobs = params.logprobs;
  return row;
}

uint64_t rng_state_after(const SamplingParams& params, uint64_t rng_state, int32_t draws) {
  if (is_greedy(params)) return rng_state;
  for (int32_t i = 0; i < draws; ++i) splitmix64(rng_state);
  return rng_state;
}

SampledLogprobs sampled_logprobs(const model::RowLogprobs& logprobs) {
  SampledLogprobs out;
  out.logprob = logprobs.logprob;
  for (const auto& [token, logprob] : logprobs.top) out.top.push_back({token, logprob});
  return out;
}

}  // namespace gossamer::engine
