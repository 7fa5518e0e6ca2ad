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

}  // namespace

uint64_t initial_rng_state(const SamplingParams& params, uint64_t default_seed, RequestId id) {
  uint64_t state = params.seed ? *params.seed : default_seed ^ (id * 0xd1b54a32d192ed03ULL);
  splitmix64(state);
  return state;
}

TokenId sample_token(std::span<const float> logits, const SamplingParams& params, uint64_t& rng_state) {
  GOSSAMER_ASSERT(!logits.empty(), "empty logits row");
  if (params.temperature <= 1e-5f || params.top_k == 1) return argmax(logits);

  // Candidates (token, scaled logit), restricted to top_k when asked.
  std::vector<std::pair<float, TokenId>> candidates;
  candidates.reserve(logits.size());
  const float inv_temperature = 1.0f / params.temperature;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (std::isfinite(logits[i])) candidates.emplace_back(logits[i] * inv_temperature, static_cast<TokenId>(i));
  }
  if (candidates.empty()) return argmax(logits);
  const auto by_logit_desc = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  const bool need_order = params.top_p < 1.0f || (params.top_k > 0 && static_cast<size_t>(params.top_k) < candidates.size());
  if (params.top_k > 0 && static_cast<size_t>(params.top_k) < candidates.size()) {
    std::partial_sort(candidates.begin(), candidates.begin() + params.top_k, candidates.end(), by_logit_desc);
    candidates.resize(params.top_k);
  } else if (need_order) {
    std::sort(candidates.begin(), candidates.end(), by_logit_desc);
  }

  // Softmax over the candidates.
  float max_logit = -std::numeric_limits<float>::infinity();
  for (const auto& [logit, token] : candidates) max_logit = std::max(max_logit, logit);
  std::vector<double> probs(candidates.size());
  double total = 0.0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    probs[i] = std::exp(static_cast<double>(candidates[i].first - max_logit));
    total += probs[i];
  }

  // Nucleus: keep the smallest prefix (candidates are sorted) whose mass reaches top_p.
  size_t kept = candidates.size();
  if (params.top_p < 1.0f) {
    double mass = 0.0;
    for (size_t i = 0; i < candidates.size(); ++i) {
      mass += probs[i] / total;
      if (mass >= params.top_p) {
        kept = i + 1;
        break;
      }
    }
    total = 0.0;
    for (size_t i = 0; i < kept; ++i) total += probs[i];
  }

  double draw = uniform01(rng_state) * total;
  for (size_t i = 0; i < kept; ++i) {
    draw -= probs[i];
    if (draw < 0.0) return candidates[i].second;
  }
  return candidates[kept - 1].second;
}

}  // namespace gossamer::engine
