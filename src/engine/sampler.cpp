#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "core/error.h"

namespace gossamer::engine {

namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double uniform01(uint64_t& state) { return static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53; }

TokenId argmax(std::span<const float> logits) {
  TokenId best = 0;
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[best]) best = static_cast<TokenId>(i);
  }
  return best;
}

// No top-k / top-p: one pass in token order, no copies. softmax(logit / T) in double, one draw.
TokenId sample_unfiltered(std::span<const float> logits, float inv_temperature, uint64_t& rng_state) {
  float max_logit = -std::numeric_limits<float>::infinity();
  for (const float logit : logits) {
    if (std::isfinite(logit)) max_logit = std::max(max_logit, logit * inv_temperature);
  }
  if (!std::isfinite(max_logit)) return argmax(logits);
  thread_local std::vector<double> probs;
  probs.resize(logits.size());
  double total = 0.0;
  TokenId last = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    const bool finite = std::isfinite(logits[i]);
    probs[i] = finite ? std::exp(static_cast<double>(logits[i] * inv_temperature - max_logit)) : 0.0;
    total += probs[i];
    if (finite) last = static_cast<TokenId>(i);
  }
  double draw = uniform01(rng_state) * total;
  for (size_t i = 0; i < logits.size(); ++i) {
    draw -= probs[i];
    if (draw < 0.0 && probs[i] > 0.0) return static_cast<TokenId>(i);
  }
  return last;
}

}  // namespace

uint64_t initial_rng_state(const SamplingParams& params, uint64_t default_seed, RequestId id) {
  uint64_t state = params.seed ? *params.seed : default_seed ^ (id * 0xd1b54a32d192ed03ULL);
  splitmix64(state);
  return state;
}

TokenId sample_token(std::span<const float> logits, const SamplingParams& params, uint64_t& rng_state) {
  GOSSAMER_ASSERT(!logits.empty(), "empty logits row");
  if (params.temperature <= 1e-5f || params.top_k == 1) return argmax(logits);
  const float inv_temperature = 1.0f / params.temperature;
  const bool top_k_filters = params.top_k > 0 && static_cast<size_t>(params.top_k) < logits.size();
  if (!top_k_filters && params.top_p >= 1.0f) return sample_unfiltered(logits, inv_temperature, rng_state);

  // Candidates (scaled logit, token), finite only.
  thread_local std::vector<std::pair<float, TokenId>> candidates;
  candidates.clear();
  candidates.reserve(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) {
    if (std::isfinite(logits[i])) candidates.emplace_back(logits[i] * inv_temperature, static_cast<TokenId>(i));
  }
  if (candidates.empty()) return argmax(logits);
  const auto by_logit_desc = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  float max_logit = -std::numeric_limits<float>::infinity();
  for (const auto& [logit, token] : candidates) max_logit = std::max(max_logit, logit);
  size_t kept = candidates.size();
  if (top_k_filters && static_cast<size_t>(params.top_k) < candidates.size()) {
    std::partial_sort(candidates.begin(), candidates.begin() + params.top_k, candidates.end(), by_logit_desc);
    kept = static_cast<size_t>(params.top_k);
  }
  thread_local std::vector<double> probs;
  probs.resize(kept);
  double total = 0.0;
  if (kept < candidates.size()) {  // top-k: the softmax runs over the k (sorted)
    for (size_t i = 0; i < kept; ++i) total += (probs[i] = std::exp(static_cast<double>(candidates[i].first - max_logit)));
  } else {  // the whole row's mass (token order), needed by the nucleus below
    for (size_t i = 0; i < kept; ++i) total += std::exp(static_cast<double>(candidates[i].first - max_logit));
  }

  // Nucleus: the smallest prefix of the candidates sorted by logit whose mass reaches top_p. Only that
  // prefix is ordered: partial sorts of growing length (a full sort of 201,088 candidates cost ~20 ms).
  if (params.top_p < 1.0f) {
    const size_t pool = kept;
    size_t sorted = kept < candidates.size() ? kept : 0;
    size_t length = std::min<size_t>(pool, 256);
    for (;;) {
      if (sorted < length) {
        std::partial_sort(candidates.begin(), candidates.begin() + length, candidates.begin() + pool, by_logit_desc);
        sorted = length;
      }
      double mass = 0.0;
      size_t found = 0;
      for (size_t i = 0; i < length; ++i) {
        mass += std::exp(static_cast<double>(candidates[i].first - max_logit)) / total;
        if (mass >= params.top_p) {
          found = i + 1;
          break;
        }
      }
      if (found > 0 || length == pool) {
        kept = found > 0 ? found : pool;
        break;
      }
      length = std::min(pool, length * 8);
    }
    probs.resize(kept);
    total = 0.0;
    for (size_t i = 0; i < kept; ++i) total += (probs[i] = std::exp(static_cast<double>(candidates[i].first - max_logit)));
  }

  double draw = uniform01(rng_state) * total;
  for (size_t i = 0; i < kept; ++i) {
    draw -= probs[i];
    if (draw < 0.0) return candidates[i].second;
  }
  return candidates[kept - 1].second;
}

model::RowSampling device_row_sampling(const SamplingParams& params, uint64_t& rng_state) {
  model::RowSampling row;
  if (params.temperature <= 1e-5f || params.top_k == 1) return row;  // greedy
  row.temperature = params.temperature;
  row.top_k = params.top_k;
  row.top_p = params.top_p;
  row.seed = splitmix64(rng_state);
  return row;
}

}  // namespace gossamer::engine
