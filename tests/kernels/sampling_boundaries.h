// Where a sampled token may differ between two implementations of kernels/sampling.h's rule that sum the
// weights w in different precision (the kernel in fp32, its CPU reference and the host sampler in fp64):
// only where the draw, or the top-p cut, lies within rounding of a boundary. Shared by the kernel's test
// (tests/kernels/sampling_test.cpp), the device sampler's test (tests/engine_gpu) and, on the CPU, the host
// sampler's (tests/engine/sampler_rule_test.cpp, which checks that exact sums admit exactly the draw).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "kernels/sampling.h"

namespace gossamer::kernels::test {

// The rows the sampling kernels' tests draw (sampling_test.cpp, vocab_sampling_test.cpp): two greedy, plain
// temperature, top-k, top-p, both, top-k 1, a tight top-p, a wide top-k with top-p and a hot top-k.
struct SamplingTestRow {
  float temp;
  int top_k;
  float top_p;
};
inline constexpr SamplingTestRow kSamplingTestRows[] = {
    {0.f, 0, 1.f},     {0.f, 0, 1.f},  {1.f, 0, 1.f},  {0.7f, 50, 1.f},    {1.f, 0, 0.9f},
    {0.8f, 40, 0.95f}, {1.3f, 1, 1.f}, {1.f, 0, 0.5f}, {0.6f, 1000, 0.8f}, {2.f, 5, 1.f}};

// The tokens kernels/sampling.h's rule may draw from `x` ([vocab] f32 logits, penalties applied) with these
// settings and seed when every sum of w it forms is off by a relative `eps`: the exact draw, plus any token
// whose slice of the running sum lies within eps · total of the draw, under any top-p cut whose mass lies
// within eps of the target. Greedy rows: the argmax (lowest index) and any other logit within eps of it.
inline std::vector<int32_t> draws_within_rounding(std::span<const float> x, float temperature, int32_t top_k,
                                                  float top_p, uint64_t seed, double eps) {
  const int vocab = static_cast<int>(x.size());
  std::vector<int32_t> out;
  if (temperature <= 0.0f) {
    int best = 0;
    for (int i = 1; i < vocab; ++i)
      if (x[static_cast<size_t>(i)] > x[static_cast<size_t>(best)]) best = i;
    out.push_back(best);
    const double top = x[static_cast<size_t>(best)];
    for (int i = 0; i < vocab; ++i) {
      const double z = x[static_cast<size_t>(i)];
      if (z != top && std::abs(z - top) <= eps * std::abs(top)) out.push_back(i);
    }
    return out;
  }
  const auto order_key = [](float v) {
    const uint32_t u = std::bit_cast<uint32_t>(v);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  };
  const float inv_t = 1.0f / temperature;
  std::vector<float> v(x.size());
  std::vector<uint32_t> keys(x.size());
  float mx = -std::numeric_limits<float>::max();
  for (size_t i = 0; i < x.size(); ++i) {
    v[i] = x[i] * inv_t;
    keys[i] = order_key(v[i]);
    mx = std::max(mx, v[i]);
  }
  std::vector<double> w(x.size());
  for (size_t i = 0; i < x.size(); ++i) w[i] = std::exp(static_cast<double>(v[i]) - mx);
  // Top-k: integer keys, no rounding.
  std::vector<uint32_t> sorted = keys;
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  const uint32_t t_k = top_k > 0 && top_k < vocab ? sorted[static_cast<size_t>(top_k - 1)] : 0u;
  // Top-p: every key group that a sum off by eps could make the first to reach the target.
  std::vector<uint32_t> cuts = {t_k};
  if (top_p < 1.0f) {
    cuts.clear();
    double mass = 0.0;
    for (size_t i = 0; i < x.size(); ++i) mass += keys[i] >= t_k ? w[i] : 0.0;
    const double target = top_p * mass;
    std::vector<std::pair<uint32_t, double>> groups;  // (key, w of the key's tokens), key descending
    std::vector<std::pair<uint32_t, double>> kept;
    for (size_t i = 0; i < x.size(); ++i)
      if (keys[i] >= t_k) kept.push_back({keys[i], w[i]});
    std::sort(kept.begin(), kept.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (const auto& [key, weight] : kept) {
      if (!groups.empty() && groups.back().first == key) {
        groups.back().second += weight;
      } else {
        groups.push_back({key, weight});
      }
    }
    double before = 0.0;
    for (const auto& [key, weight] : groups) {
      const double after = before + weight;
      if (after * (1.0 + eps) >= target && before * (1.0 - eps) < target) cuts.push_back(std::max(key, t_k));
      before = after;
    }
    if (cuts.empty()) cuts.push_back(t_k);  // nothing reaches the target: everything kept
  }
  // The draw under each cut: tokens whose slice [run, run + w) meets [(u − eps) · total, (u + eps) · total].
  const double u = sampling_uniform(seed);
  for (const uint32_t cut : cuts) {
    double total = 0.0;
    for (size_t i = 0; i < x.size(); ++i) total += keys[i] >= cut ? w[i] : 0.0;
    const double lo = (u - eps) * total, hi = (u + eps) * total;
    double run = 0.0;
    int last = -1;
    for (int i = 0; i < vocab; ++i) {
      if (keys[static_cast<size_t>(i)] < cut) continue;
      last = i;
      const double next = run + w[static_cast<size_t>(i)];
      if (run <= hi && next > lo && next > run) out.push_back(i);
      run = next;
    }
    if (u + 2 * eps >= 1.0 && last >= 0) out.push_back(last);  // rounding may leave no slice above the draw
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace gossamer::kernels::test
