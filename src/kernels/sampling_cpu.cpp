// CPU reference of kernels/sampling.h's rule: plain loops, double sums, a full sort for top-p.
#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "kernels/sampling.h"

namespace gossamer::kernels {
namespace {

// Raw log-probabilities: the drawn token's and the row's top ones (by logit, ties → lowest index).
void row_logprobs(const SamplingParams& p, int r, const float* z, int32_t token) {
  const LogitNormalizer whole = sampling_normalizer_cpu(z, p.vocab);
  const double log_total = sampling_log_total(&whole, 1);
  p.out_logprobs[r] = static_cast<float>(static_cast<double>(z[token]) - log_total);
  const int n = p.num_top ? std::clamp(p.num_top[r], 0, std::min(kMaxTopLogprobs, p.vocab)) : 0;
  if (n == 0) return;
  int32_t* ids = p.out_top_tokens + r * kMaxTopLogprobs;
  sampling_top_ids_cpu(z, p.vocab, 0, n, ids);
  for (int j = 0; j < n; ++j)
    p.out_top_logprobs[r * kMaxTopLogprobs + j] = static_cast<float>(static_cast<double>(z[ids[j]]) - log_total);
}

}  // namespace

LogitNormalizer sampling_normalizer_cpu(const float* z, int num_cols) {
  LogitNormalizer part;
  for (int i = 0; i < num_cols; ++i) part.max = std::max(part.max, static_cast<double>(z[i]));
  for (int i = 0; i < num_cols; ++i) part.sum += std::exp(static_cast<double>(z[i]) - part.max);
  return part;
}

double sampling_log_total(const LogitNormalizer* parts, int num_parts) {
  double max = -DBL_MAX, sum = 0.0;
  for (int q = 0; q < num_parts; ++q) max = std::max(max, parts[q].max);
  for (int q = 0; q < num_parts; ++q) sum += parts[q].sum * std::exp(parts[q].max - max);
  return max + std::log(sum);
}

void sampling_top_ids_cpu(const float* z, int num_cols, int32_t id_begin, int n, int32_t* ids) {
  std::vector<int32_t> order(static_cast<size_t>(num_cols));
  for (int c = 0; c < num_cols; ++c) order[static_cast<size_t>(c)] = c;
  std::partial_sort(order.begin(), order.begin() + n, order.end(),
                    [&](int32_t a, int32_t b) { return sampling_top_before(z[a], a, z[b], b); });
  for (int j = 0; j < n; ++j) ids[j] = id_begin + order[static_cast<size_t>(j)];
}

void sampling_cpu(const SamplingParams& p) {
  std::vector<uint32_t> keys(p.vocab);
  std::vector<float> v(p.vocab), row(p.vocab), pen(p.vocab);
  for (int r = 0; r < p.num_rows; ++r) {
    // Raw logits, widened to fp32 (exact for bf16).
    const float* z = p.logits + static_cast<int64_t>(r) * p.vocab;
    if (!p.logits) {
      for (int i = 0; i < p.vocab; ++i) row[i] = bf16_to_float(p.logits_bf16[static_cast<int64_t>(r) * p.vocab + i]);
      z = row.data();
    }
    // 0. penalties
    const float* x = z;
    if (p.penalty_offsets && p.penalty_offsets[r + 1] > p.penalty_offsets[r]) {
      std::copy(z, z + p.vocab, pen.begin());
      for (int e = p.penalty_offsets[r]; e < p.penalty_offsets[r + 1]; ++e) {
        const int t = p.penalty_tokens[e];
        pen[t] = penalized_logit(pen[t], p.penalty_counts[e], p.presence[r], p.frequency[r], p.repetition[r]);
      }
      if (p.penalized) {
        const int64_t slot = p.scratch_rows ? p.scratch_rows[r] : r;
        std::copy(pen.begin(), pen.end(), p.penalized + slot * p.vocab);
      }
      x = pen.data();
    }
    const float temp = p.temperature ? p.temperature[r] : 0.f;
    int32_t chosen_token = 0;
    if (temp <= 0.f) {  // 1. greedy
      int best = 0;
      for (int i = 1; i < p.vocab; ++i)
        if (x[i] > x[best]) best = i;
      chosen_token = best;
    } else {
      const float inv_t = 1.0f / temp;
      float mx = -FLT_MAX;
      for (int i = 0; i < p.vocab; ++i) {
        v[i] = x[i] * inv_t;
        keys[i] = sampling_order_key(v[i]);
        mx = std::max(mx, v[i]);
      }
      // 2. top-k
      std::vector<uint32_t> sorted = keys;
      std::sort(sorted.begin(), sorted.end(), std::greater<>());
      const int k = p.top_k ? p.top_k[r] : 0;
      uint32_t t = (k > 0 && k < p.vocab) ? sorted[k - 1] : 0u;
      auto mass_above = [&](uint32_t th) {
        double s = 0;
        for (int i = 0; i < p.vocab; ++i)
          if (keys[i] >= th) s += std::exp(static_cast<double>(v[i]) - mx);
        return s;
      };
      // 3. top-p: walk (key desc, index asc); the threshold is the first key whose cumulative mass reaches target.
      const float top_p = p.top_p ? p.top_p[r] : 1.f;
      if (top_p < 1.f) {
        const double target = top_p * mass_above(t);
        std::vector<std::pair<uint32_t, int>> by_key;
        for (int i = 0; i < p.vocab; ++i)
          if (keys[i] >= t) by_key.push_back({keys[i], i});
        std::sort(by_key.begin(), by_key.end(), [](const auto& a, const auto& b) {
          return a.first > b.first || (a.first == b.first && a.second < b.second);
        });
        double cum = 0;
        for (size_t i = 0; i < by_key.size(); ++i) {
          cum += std::exp(static_cast<double>(v[by_key[i].second]) - mx);
          const bool last_of_key = i + 1 == by_key.size() || by_key[i + 1].first != by_key[i].first;
          if (last_of_key && cum >= target) {
            t = std::max(t, by_key[i].first);
            break;
          }
        }
      }
      // 4. the draw, in index order
      const double total = mass_above(t);
      const double target = static_cast<double>(sampling_uniform(p.seeds ? p.seeds[r] : 0ull)) * total;
      double run = 0;
      int chosen = -1, last = -1;
      for (int i = 0; i < p.vocab; ++i) {
        if (keys[i] < t) continue;
        last = i;
        run += std::exp(static_cast<double>(v[i]) - mx);
        if (run > target) {
          chosen = i;
          break;
        }
      }
      chosen_token = chosen >= 0 ? chosen : last;
    }
    p.out_tokens[r] = chosen_token;
    if (p.out_logprobs) row_logprobs(p, r, z, chosen_token);
  }
}

}  // namespace gossamer::kernels
