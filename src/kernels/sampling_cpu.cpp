#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <vector>

#include "core/dtype.h"
#include "kernels/sampling.h"

namespace gossamer::kernels {
namespace {

uint32_t order_key(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

}  // namespace

void sampling_cpu(const SamplingParams& p) {
  std::vector<uint32_t> keys(p.vocab);
  std::vector<float> v(p.vocab), row(p.logits ? 0 : p.vocab);
  for (int r = 0; r < p.num_rows; ++r) {
    const float* x = p.logits + static_cast<int64_t>(r) * p.vocab;
    if (!p.logits) {  // bf16 logits: widen the row (exact)
      for (int i = 0; i < p.vocab; ++i) row[i] = bf16_to_float(p.logits_bf16[static_cast<int64_t>(r) * p.vocab + i]);
      x = row.data();
    }
    const float temp = p.temperature ? p.temperature[r] : 0.f;
    if (temp <= 0.f) {
      int best = 0;
      for (int i = 1; i < p.vocab; ++i)
        if (x[i] > x[best]) best = i;
      p.out_tokens[r] = best;
      continue;
    }
    const float inv_t = 1.0f / temp;
    float mx = -FLT_MAX;
    for (int i = 0; i < p.vocab; ++i) {
      v[i] = x[i] * inv_t;
      keys[i] = order_key(v[i]);
      mx = std::max(mx, v[i]);
    }
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
    const float top_p = p.top_p ? p.top_p[r] : 1.f;
    if (top_p < 1.f) {
      const double target = top_p * mass_above(t);
      // Walk distinct keys from the top; the threshold is the first whose cumulative mass reaches target.
      double cum = 0;
      std::vector<std::pair<uint32_t, double>> by_key;
      for (int i = 0; i < p.vocab; ++i)
        if (keys[i] >= t) by_key.push_back({keys[i], std::exp(static_cast<double>(v[i]) - mx)});
      std::sort(by_key.begin(), by_key.end(), [](auto& a, auto& b) { return a.first > b.first; });
      for (size_t i = 0; i < by_key.size(); ++i) {
        cum += by_key[i].second;
        const bool last_of_key = i + 1 == by_key.size() || by_key[i + 1].first != by_key[i].first;
        if (last_of_key && cum >= target) {
          t = std::max(t, by_key[i].first);
          break;
        }
      }
    }
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
    p.out_tokens[r] = chosen >= 0 ? chosen : last;
  }
}

}  // namespace gossamer::kernels
