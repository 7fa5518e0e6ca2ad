// The penalized-logprobs pass of tests/model_gpu/tp_model_gpu_test.cpp's sampling test, shared by the test
// and its worker (tests/model_gpu/worker/tp_model_worker.cpp): which penalty entries a row gets, from that
// row's logits, and its settings. The entries are the row's 3 largest logits (counts 2, 1, 0: the argmax
// usually moves) and 8 ids spread over the vocabulary (every rank's slice has some).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/sampling.h"

namespace gossamer::testing {

inline constexpr float kTpPresence = 0.5f, kTpFrequency = 0.4f, kTpRepetition = 1.3f;
inline constexpr int kTpTopLogprobs = 5;

struct PenaltyEntries {
  std::vector<int32_t> tokens, counts;  // distinct, ascending
};

// z [vocab] f32: one row's logits.
inline PenaltyEntries tp_penalty_entries(const float* z, int64_t vocab) {
  std::vector<int32_t> order(static_cast<size_t>(vocab));
  for (int64_t t = 0; t < vocab; ++t) order[static_cast<size_t>(t)] = static_cast<int32_t>(t);
  std::partial_sort(order.begin(), order.begin() + 3, order.end(),
                    [&](int32_t a, int32_t b) { return kernels::sampling_top_before(z[a], a, z[b], b); });
  std::vector<std::pair<int32_t, int32_t>> entries = {{order[0], 2}, {order[1], 1}, {order[2], 0}};
  for (int64_t k = 0; k < 8; ++k) {
    const auto t = static_cast<int32_t>(k * vocab / 8 + 1);
    if (std::none_of(entries.begin(), entries.end(), [&](const auto& e) { return e.first == t; }))
      entries.emplace_back(t, 1);
  }
  std::sort(entries.begin(), entries.end());
  PenaltyEntries out;
  for (const auto& [t, c] : entries) {
    out.tokens.push_back(t);
    out.counts.push_back(c);
  }
  return out;
}

}  // namespace gossamer::testing
