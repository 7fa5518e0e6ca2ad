#include "model/routing_trace.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "kernels/moe.h"  // moe_topk_softmax_cpu

namespace gossamer::model {

void RoutingTrace::add_layer(std::span<const float> logits, int32_t tokens, int32_t experts, int32_t top_k) {
  GOSSAMER_CHECK(tokens >= 0 && experts > 0 && top_k > 0 && top_k <= experts &&
                     logits.size() == static_cast<size_t>(tokens) * static_cast<size_t>(experts),
                 "routing trace: ", logits.size(), " logits for ", tokens, " tokens × ", experts, " experts, top ",
                 top_k);
  GOSSAMER_CHECK(!counts_.valid() || (counts_.tokens == tokens && counts_.experts == experts && counts_.top_k == top_k),
                 "routing trace: a layer of ", tokens, " tokens × ", experts, " experts in a step of ", counts_.tokens,
                 " × ", counts_.experts);
  counts_.tokens = tokens;
  counts_.experts = experts;
  counts_.top_k = top_k;
  std::vector<int32_t>& rows = counts_.rows.emplace_back(static_cast<size_t>(experts), 0);
  std::vector<int32_t> chosen(static_cast<size_t>(top_k));
  std::vector<float> weights(chosen.size());
  for (int32_t t = 0; t < tokens; ++t) {
    kernels::moe_topk_softmax_cpu(logits.data() + static_cast<size_t>(t) * static_cast<size_t>(experts), experts, top_k,
                                  chosen.data(), weights.data());
    for (int32_t e : chosen) ++rows[static_cast<size_t>(e)];
  }
}

RoutingSpread routing_spread(const RoutingCounts& counts) {
  RoutingSpread spread;
  if (!counts.valid()) return spread;
  const double experts = counts.experts;
  for (const std::vector<int32_t>& rows : counts.rows) {
    spread.experts_touched +=
        static_cast<double>(std::count_if(rows.begin(), rows.end(), [](int32_t r) { return r > 0; }));
    spread.busiest_rows += *std::max_element(rows.begin(), rows.end());
  }
  const double layers = static_cast<double>(counts.rows.size());
  spread.experts_touched /= layers;
  spread.busiest_rows /= layers;
  spread.uniform_touched = experts * (1.0 - std::pow(1.0 - counts.top_k / experts, counts.tokens));
  spread.mean_rows = static_cast<double>(counts.tokens) * counts.top_k / experts;
  return spread;
}

}  // namespace gossamer::model
